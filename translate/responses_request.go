package translate

// The request half of the Responses bridge: a Responses create body becomes a Chat Completions request in
// OpenAI's shape (the hub's), which the target's chat rules then render like any chat client's body.
//
// What maps, and how (responsesFields is the top-level table; every field not in it is refused, so nothing
// a client asks for is ignored without the table saying so):
//
//   - instructions becomes the first message, role system. input, a string, becomes one user message; an
//     array of items becomes the messages after it:
//   - message items keep their role (developer becomes system unless the target takes developer). User
//     messages with parts keep the array form (input_text → text, input_image → image_url, input_file with
//     file_data → file where the target takes OpenAI's file parts). System and developer messages take text
//     only, and assistant history is text (output_text, input_text or refusal parts): their parts are
//     joined into one string, back to back as OpenAI's output_text is, because chat-only providers such as
//     Azure AI take a system message's content as a string only.
//   - function_call items become tool_calls of an assistant message: consecutive calls, and the assistant
//     text message right before them, are one assistant message, as chat providers expect a turn's calls.
//   - function_call_output items become tool messages; text parts are joined.
//   - reasoning items are dropped: chat has no place for them (encrypted_content is readable only by
//     OpenAI), and the model reasons afresh. They do not end the assistant turn around them.
//   - item_reference items (or an item that is only an id) point at items stored at OpenAI; the gateway
//     stores none, so they are refused, as are items only OpenAI's servers produce or run (built-in tool
//     calls, custom tool calls, MCP, shell, compaction).
//   - function tools are nested under "function"; built-in tools and custom (freeform) tools are refused.
//   - text.format becomes response_format (json_schema nested under json_schema), max_output_tokens the
//     target's max-tokens field, reasoning.effort reasoning_effort; OpenAI's own chat parameters pass only to
//     a target that takes them (bridgeOptions).
//
// Strings are copied as the client wrote them (raw JSON, already validated by RequestBody.Parse); only
// types and roles are read. Joined text is the raw string contents back to back: each escape sequence is
// whole inside its literal, so the concatenation is a valid literal too.
//
// One scan finds the top-level fields (jsonscan.Skim), and each array the bridge walks (items, parts,
// tools) is read element by element by the scan that lists the element's members and finds its end, so
// each level of the input is scanned once more than the level above it, with loops: an input nested a
// million levels deep costs no stack. (gjson's ForEach would add a scan of every array, and decode every
// escaped string it passes.) The only allocations are the output's and the echo's buffers when they are
// too small, and error messages.

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// fieldHandling is what the bridge does with a top-level field of a Responses request.
type fieldHandling uint8

const (
	// copyModel: the model, a string, copied.
	copyModel fieldHandling = iota
	// takeInstructions: read by writeInput, which makes it the first message.
	takeInstructions
	// writeInput: input (and instructions) become messages.
	writeInput
	// writeTools: function tools in chat's nested form; other tools refused.
	writeTools
	// writeToolChoice: tool_choice in chat's form.
	writeToolChoice
	// writeText: text.format becomes response_format, text.verbosity verbosity (OpenAI targets).
	writeText
	// writeReasoning: reasoning.effort becomes reasoning_effort where the target takes it.
	writeReasoning
	// writeMaxTokens: max_output_tokens becomes the target's max-tokens field.
	writeMaxTokens
	// copyValue: copied under the same name (null left out).
	copyValue
	// copyOpenAIParam: copied under the same name when the target takes OpenAI's chat parameters.
	copyOpenAIParam
	// writeStream: stream copied, with stream_options.include_usage where the target takes it.
	writeStream
	// readStore: left out (chat's store means stored chat completions); the echo records what was asked.
	readStore
	// ignored: accepted and left out, for it changes nothing a stateless bridge could honour (see the rows).
	ignored
	// refuseUnlessNull: needs server state; refused unless null.
	refuseUnlessNull
	// refuseIfTrue: needs server state when true; false and null are accepted and left out.
	refuseIfTrue
)

// echoSlot names the responsesEcho member a field's raw value is kept in, for the Response to repeat.
type echoSlot uint8

const (
	echoNothing echoSlot = iota
	echoModel
	echoInstructions
	echoTools
	echoToolChoice
	echoParallelToolCalls
	echoTemperature
	echoTopP
	echoMaxOutputTokens
	echoText
	echoReasoning
	echoMetadata
	echoUser
	echoSafetyIdentifier
	echoPromptCacheKey
	echoServiceTier
	echoTruncation
	echoTopLogprobs
	echoMaxToolCalls
)

// slot is the member of e that s names (nil for echoNothing).
func (e *responsesEcho) slot(s echoSlot) *[]byte {
	switch s {
	case echoModel:
		return &e.model
	case echoInstructions:
		return &e.instructions
	case echoTools:
		return &e.tools
	case echoToolChoice:
		return &e.toolChoice
	case echoParallelToolCalls:
		return &e.parallelToolCalls
	case echoTemperature:
		return &e.temperature
	case echoTopP:
		return &e.topP
	case echoMaxOutputTokens:
		return &e.maxOutputTokens
	case echoText:
		return &e.text
	case echoReasoning:
		return &e.reasoning
	case echoMetadata:
		return &e.metadata
	case echoUser:
		return &e.user
	case echoSafetyIdentifier:
		return &e.safetyIdentifier
	case echoPromptCacheKey:
		return &e.promptCacheKey
	case echoServiceTier:
		return &e.serviceTier
	case echoTruncation:
		return &e.truncation
	case echoTopLogprobs:
		return &e.topLogprobs
	case echoMaxToolCalls:
		return &e.maxToolCalls
	}
	return nil
}

// responsesField is one top-level field of a Responses request and what the bridge does with it.
type responsesField struct {
	name     string
	handling fieldHandling
	echo     echoSlot
	// refusal is the message of a refuseUnlessNull or refuseIfTrue field: what is wrong and what to do.
	refusal string
}

// storeFalseFix is how a client stops relying on state the gateway does not keep.
const storeFalseFix = "send store: false and the whole conversation in input (AI SDK: providerOptions.openai.store = false)"

// responsesFields is every top-level field of a Responses request the bridge accepts, in the order the chat
// request is written.
var responsesFields = [...]responsesField{
	{name: "model", handling: copyModel, echo: echoModel},
	{name: "instructions", handling: takeInstructions, echo: echoInstructions},
	{name: "input", handling: writeInput},
	{name: "tools", handling: writeTools, echo: echoTools},
	{name: "tool_choice", handling: writeToolChoice, echo: echoToolChoice},
	{name: "parallel_tool_calls", handling: copyOpenAIParam, echo: echoParallelToolCalls},
	{name: "text", handling: writeText, echo: echoText},
	{name: "reasoning", handling: writeReasoning, echo: echoReasoning},
	{name: "max_output_tokens", handling: writeMaxTokens, echo: echoMaxOutputTokens},
	{name: "temperature", handling: copyValue, echo: echoTemperature},
	{name: "top_p", handling: copyValue, echo: echoTopP},
	{name: "user", handling: copyOpenAIParam, echo: echoUser},
	{name: "safety_identifier", handling: copyOpenAIParam, echo: echoSafetyIdentifier},
	{name: "prompt_cache_key", handling: copyOpenAIParam, echo: echoPromptCacheKey},
	{name: "service_tier", handling: copyOpenAIParam, echo: echoServiceTier},
	{name: "stream", handling: writeStream},
	{name: "store", handling: readStore},
	// Metadata is the client's own labels for a stored response; the Response repeats them.
	{name: "metadata", handling: ignored, echo: echoMetadata},
	// stream_options has only include_obfuscation, the padding of OpenAI's text deltas; the bridge's events
	// carry none.
	{name: "stream_options", handling: ignored},
	// include asks for extra data in the answer (encrypted reasoning, image URLs, built-in tool results,
	// logprobs) that the bridged Response does not carry; it changes what the answer carries, not what the
	// model writes. The AI SDK and Codex send it by default.
	{name: "include", handling: ignored},
	// top_logprobs acts only with include's message.output_text.logprobs, which is not bridged (as above).
	{name: "top_logprobs", handling: ignored, echo: echoTopLogprobs},
	// truncation: auto lets OpenAI drop the oldest items of an oversized input; without it, an oversized
	// conversation gets the provider's own 400, as under truncation: disabled (the default).
	{name: "truncation", handling: ignored, echo: echoTruncation},
	// context_management asks OpenAI to compact a long conversation; without it, as with truncation.
	{name: "context_management", handling: ignored},
	// max_tool_calls bounds built-in tool calls, which are refused here.
	{name: "max_tool_calls", handling: ignored, echo: echoMaxToolCalls},
	// prompt_cache_retention tunes OpenAI's prompt cache: cost and latency, not the answer.
	{name: "prompt_cache_retention", handling: ignored},
	{name: "previous_response_id", handling: refuseUnlessNull, refusal: "previous_response_id needs the gateway " +
		"to keep earlier responses, which it does not for providers that have only Chat Completions: " + storeFalseFix},
	{name: "conversation", handling: refuseUnlessNull, refusal: "conversation needs the gateway to keep the " +
		"conversation's items, which it does not for providers that have only Chat Completions: " + storeFalseFix},
	{name: "prompt", handling: refuseUnlessNull, refusal: "prompt names a prompt template stored at OpenAI, " +
		"which a provider that has only Chat Completions cannot read: send the template's text as instructions " +
		"and input instead"},
	{name: "background", handling: refuseIfTrue, refusal: "background: true needs the gateway to run the " +
		"response as a job and keep it for polling, which it does not for providers that have only Chat " +
		"Completions: leave background out (or false) and wait for the answer, or stream it"},
}

// Duplicate fields are found with one bit per row.
var _ [64 - len(responsesFields)]struct{}

// responsesFieldRow is the row of each field name in responsesFields.
var responsesFieldRow = func() map[string]int {
	rows := make(map[string]int, len(responsesFields))
	for i, f := range responsesFields {
		rows[f.name] = i
	}
	return rows
}()

// instructionsRow is the row writeInput reads the instructions from.
var instructionsRow = responsesFieldRow["instructions"]

// bridgedMemberLimit bounds the members of an object the bridge reads (an item, a part, a tool), so its
// member table is a fixed array. Real objects have fewer than ten.
const bridgedMemberLimit = 64

// requestBridge is the state of one bridgeRequest call; it lives on the caller's stack.
type requestBridge struct {
	out  []byte
	opts *bridgeOptions
	// leftOut collects the fields sent that the target's chat API lacks (they are left out, and listed in
	// x-aidialect-dropped-params as the extra parameters a chat request loses are).
	leftOut *[]string
	// located are the body's top-level members when the caller has them.
	located []jsonscan.Member
	// members is the member table of the object being read; each read is done with it before the next.
	members [bridgedMemberLimit]jsonscan.Member
	// messages counts the messages written, instructions included; inputMessages those input made.
	messages, inputMessages int
	// turn is the assistant message left open, so function calls after it join it.
	turn assistantTurn
	// item and part hold the members of the array elements being written: an input item (or a tool) and a
	// content part of it. They live here, not in eachObject's frame, because a pointer passed through its
	// visit function would move them to the heap.
	item, part objectFields
}

// assistantTurn is what is open of the last assistant message written.
type assistantTurn uint8

const (
	noTurn        assistantTurn = iota
	turnText                    // {"role":"assistant","content":... written, not closed
	turnToolCalls               // ... ,"tool_calls":[ written with at least one call, not closed
)

// bridgeRequest writes into dst[:0] the Chat Completions request (OpenAI's shape) for the Responses create
// body src, and fills echo with what the Response repeats. src is one JSON object that RequestBody.Parse
// accepted. A request the bridge cannot serve statelessly, or that uses a feature the target's chat API
// lacks, is refused with a 400 naming the field and the fix; echo is then left empty.
func bridgeRequest(dst, src []byte, opts *bridgeOptions, echo *responsesEcho) ([]byte, *Error) {
	return bridgeLocated(dst, src, nil, opts, echo)
}

// bridgeLocated is bridgeRequest for a body whose top-level members are already located (RequestBody.Parse
// did it): the bridge reads them instead of scanning the body once more. nil: the bridge locates them.
func bridgeLocated(dst, src []byte, located []jsonscan.Member, opts *bridgeOptions, echo *responsesEcho) ([]byte, *Error) {
	*echo = responsesEcho{buf: echo.buf[:0], leftOut: echo.leftOut[:0], storeAsked: true}
	var values [len(responsesFields)][]byte
	b := requestBridge{opts: opts, leftOut: &echo.leftOut, located: located}
	if e := b.locate(src, &values); e != nil {
		return dst[:0], e
	}
	// Most of the chat request is the input copied: one allocation when dst is new.
	b.out = dst[:0]
	if cap(b.out) < len(src)+256 {
		b.out = make([]byte, 0, len(src)+256)
	}
	b.out = append(b.out, '{')
	for row := range values {
		raw := values[row]
		if raw == nil {
			if responsesFields[row].handling == writeInput {
				return b.out[:0], NewError(ErrInvalidParameter, "input", "input is required: send the "+
					"conversation as a string or an array of items (the gateway keeps no earlier turns)")
			}
			continue
		}
		if e := b.writeField(&responsesFields[row], raw, &values); e != nil {
			return b.out[:0], e
		}
	}
	b.out = append(b.out, '}')
	fillEcho(echo, &values)
	return b.out, nil
}

// locate finds each top-level field's value (values, by row), refusing unknown and repeated fields and
// those that need server state.
func (b *requestBridge) locate(src []byte, values *[len(responsesFields)][]byte) *Error {
	// One member more than the table has rows: a body with more has an unknown or repeated field among its
	// first len(responsesFields)+1 members, which is then named.
	limit := len(responsesFields) + 1
	members, err := b.located, error(nil)
	if members == nil {
		members, err = jsonscan.Skim(src, b.members[:0], limit)
	} else if len(members) > limit {
		members, err = members[:limit], jsonscan.ErrTooManyMembers
	}
	if err != nil && err != jsonscan.ErrTooManyMembers {
		return NewError(ErrInvalidJSON, "", "the request body is not a JSON object: "+err.Error())
	}
	var seen uint64
	for _, m := range members {
		var name string
		if m.KeyEscaped {
			name = decodeJSONString(src[m.KeyStart:m.KeyEnd])
		} else {
			name = bytesAsString(m.Key(src))
		}
		row, known := responsesFieldRow[name]
		if !known {
			name = strings.Clone(name) // a view of src would outlive it in the error
			return NewError(ErrUnsupportedParameter, name, "unknown parameter: "+quoteForMessage(name)+
				" is not a Responses API field the gateway can bridge to a provider that has only Chat Completions: "+
				"remove it, or route to an openai or azure-openai model, which take the Responses API natively")
		}
		if seen&(1<<row) != 0 {
			name = strings.Clone(name)
			return NewError(ErrInvalidJSON, name, "the request body has the field "+quoteForMessage(name)+
				" more than once: send each field once")
		}
		seen |= 1 << row
		raw := m.Value(src)
		values[row] = raw
		f := &responsesFields[row]
		switch f.handling {
		case refuseUnlessNull:
			if !isJSONNull(raw) {
				return NewError(ErrUnsupportedParameter, f.name, f.refusal)
			}
		case refuseIfTrue:
			switch string(raw) {
			case "true":
				return NewError(ErrUnsupportedParameter, f.name, f.refusal)
			case "false", "null":
			default:
				return NewError(ErrInvalidParameter, f.name, f.name+" must be true or false")
			}
		case readStore:
			switch string(raw) {
			case "true", "false", "null":
			default:
				return NewError(ErrInvalidParameter, f.name, "store must be true or false")
			}
		}
	}
	if err != nil {
		return NewError(ErrInvalidJSON, "", "the request body has more top-level fields than the Responses API has")
	}
	return nil
}

// fillEcho copies the echoed values into echo.buf, sized once so the views into it stay valid, and sets
// echo's flags.
func fillEcho(echo *responsesEcho, values *[len(responsesFields)][]byte) {
	need := 0
	for row, raw := range values {
		switch f := &responsesFields[row]; {
		case f.echo != echoNothing:
			need += len(raw)
		case f.handling == writeStream:
			echo.stream = string(raw) == "true"
		case f.handling == readStore:
			// Absent or null: store's default, true.
			echo.storeAsked = string(raw) != "false"
		}
	}
	buf := echo.buf[:0]
	if cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	for row, raw := range values {
		if slot := responsesFields[row].echo; slot != echoNothing && raw != nil {
			start := len(buf)
			buf = append(buf, raw...)
			*echo.slot(slot) = buf[start:len(buf):len(buf)]
		}
	}
	echo.buf = buf
}

// writeField writes what field f, with value raw, becomes in the chat request.
func (b *requestBridge) writeField(f *responsesField, raw []byte, values *[len(responsesFields)][]byte) *Error {
	switch f.handling {
	case copyModel:
		if raw[0] != '"' {
			return NewError(ErrInvalidParameter, "model", "model must be a string naming the model")
		}
		b.key("model")
		b.out = append(b.out, raw...)
	case writeInput:
		return b.writeMessages(values[instructionsRow], raw)
	case writeTools:
		return b.writeTools(raw)
	case writeToolChoice:
		return b.writeToolChoice(raw)
	case writeText:
		return b.writeText(raw)
	case writeReasoning:
		return b.writeReasoning(raw)
	case writeMaxTokens:
		if isJSONNull(raw) {
			return nil
		}
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || isFractionOrExponent(raw) {
			return NewError(ErrInvalidParameter, f.name, "max_output_tokens must be an integer")
		}
		b.key(orDefault(b.opts.maxTokensField, "max_completion_tokens"))
		b.out = append(b.out, raw...)
	case copyValue:
		b.copyUnlessNull(f.name, raw)
	case copyOpenAIParam:
		if b.opts.openAIParams {
			b.copyUnlessNull(f.name, raw)
		} else if !isJSONNull(raw) {
			*b.leftOut = append(*b.leftOut, f.name)
		}
	case writeStream:
		switch string(raw) {
		case "null":
		case "true":
			b.key("stream")
			b.out = append(b.out, "true"...)
			if b.opts.streamUsage {
				// The terminal event of a Responses stream carries usage; only this chunk can give it.
				b.out = append(b.out, `,"stream_options":{"include_usage":true}`...)
			}
		case "false":
			b.key("stream")
			b.out = append(b.out, "false"...)
		default:
			return NewError(ErrInvalidParameter, "stream", "stream must be true or false")
		}
	}
	return nil
}

// key writes the name of the next member of the object being written, after a comma unless it is the
// first.
func (b *requestBridge) key(name string) {
	if b.out[len(b.out)-1] != '{' {
		b.out = append(b.out, ',')
	}
	b.out = append(b.out, '"')
	b.out = append(b.out, name...)
	b.out = append(b.out, '"', ':')
}

// copyUnlessNull writes the member name: raw, unless raw is null.
func (b *requestBridge) copyUnlessNull(name string, raw []byte) {
	if raw != nil && !isJSONNull(raw) {
		b.key(name)
		b.out = append(b.out, raw...)
	}
}

// objectFields are the members of a Responses object (an item, a content part, a tool, tool_choice, text,
// text.format, reasoning) the bridge reads, as raw JSON views of the request; nil when absent or null.
// Other members are passed over: replayed items carry id, status, phase, annotations and logprobs, which
// chat has no place for.
type objectFields struct {
	typ, role, content, id, callID, name, arguments, output, text, refusal, imageURL, detail, fileID,
	fileData, fileURL, filename, description, parameters, strict, mode, tools, format, verbosity, schema,
	effort []byte
}

// objectRead is how reading an object went.
type objectRead uint8

const (
	readOK objectRead = iota
	readNotObject
	readTooManyMembers
)

// read fills f with the members of the object that starts at raw[0] and returns the offset after it.
func (b *requestBridge) read(raw []byte, f *objectFields) (int, objectRead) {
	*f = objectFields{}
	members, err := jsonscan.Skim(raw, b.members[:0], len(b.members))
	if err == jsonscan.ErrTooManyMembers {
		return 0, readTooManyMembers
	}
	if err != nil {
		return 0, readNotObject
	}
	// Skim returned at the object's closing brace: after the last value (or the opening brace) and
	// whitespace.
	end := 1
	if len(members) > 0 {
		end = members[len(members)-1].ValEnd
	}
	end = skipJSONSpace(raw, end) + 1
	for _, m := range members {
		v := m.Value(raw)
		if isJSONNull(v) {
			continue
		}
		var name string
		if m.KeyEscaped {
			name = decodeJSONString(raw[m.KeyStart:m.KeyEnd])
		} else {
			name = bytesAsString(m.Key(raw))
		}
		switch name {
		case "type":
			f.typ = v
		case "role":
			f.role = v
		case "content":
			f.content = v
		case "id":
			f.id = v
		case "call_id":
			f.callID = v
		case "name":
			f.name = v
		case "arguments":
			f.arguments = v
		case "output":
			f.output = v
		case "text":
			f.text = v
		case "refusal":
			f.refusal = v
		case "image_url":
			f.imageURL = v
		case "detail":
			f.detail = v
		case "file_id":
			f.fileID = v
		case "file_data":
			f.fileData = v
		case "file_url":
			f.fileURL = v
		case "filename":
			f.filename = v
		case "description":
			f.description = v
		case "parameters":
			f.parameters = v
		case "strict":
			f.strict = v
		case "mode":
			f.mode = v
		case "tools":
			f.tools = v
		case "format":
			f.format = v
		case "verbosity":
			f.verbosity = v
		case "schema":
			f.schema = v
		case "effort":
			f.effort = v
		}
	}
	return end, readOK
}

// readObject is read, refusing (as the value at at) a value that is not an object or too big an object.
func (b *requestBridge) readObject(raw []byte, f *objectFields, at paramPath) *Error {
	_, read := b.read(raw, f)
	return readRefusal(read, at)
}

// readRefusal is the refusal of a read of the value at at that went wrong; nil if it went well.
func readRefusal(read objectRead, at paramPath) *Error {
	switch read {
	case readNotObject:
		return NewError(ErrInvalidParameter, at.String(), at.String()+" must be an object")
	case readTooManyMembers:
		return NewError(ErrInvalidParameter, at.String(), at.String()+" has more than "+
			strconv.Itoa(bridgedMemberLimit)+" fields: send only the fields of the Responses API")
	}
	return nil
}

// eachObject reads each element of the array raw, which must be an object, into f and calls visit with
// its index, until visit fails. Each element is read by the one scan that finds where it ends. The
// elements are found at place: place's list itself when inner is "", else the array inner in place.
func (b *requestBridge) eachObject(raw []byte, place paramPath, inner string, f *objectFields, visit func(i int) *Error) *Error {
	pos := skipJSONSpace(raw, 1) // after the '['
	if pos < len(raw) && raw[pos] == ']' {
		return nil
	}
	for i := 0; ; i++ {
		n, read := b.read(raw[pos:], f)
		if e := readRefusal(read, place.element(inner, i)); e != nil {
			return e
		}
		if e := visit(i); e != nil {
			return e
		}
		pos = skipJSONSpace(raw, pos+n)
		switch {
		case pos < len(raw) && raw[pos] == ',':
			pos = skipJSONSpace(raw, pos+1)
		case pos < len(raw) && raw[pos] == ']':
			return nil
		default:
			// Only a body that skipped Parse gets here.
			return NewError(ErrInvalidJSON, place.String(), place.String()+" is not a valid JSON array")
		}
	}
}

// skipJSONSpace is the offset of the first byte at or after i that is not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// paramPath is the place in the request of a value the bridge reads, written out (it allocates) only for an
// error's param: list, list[i], or list[i].inner[j].
type paramPath struct {
	list  string
	i     int // -1: list is an object, not an array
	inner string
	j     int
}

// fieldPath is the top-level field (or member path) name, not an array.
func fieldPath(name string) paramPath { return paramPath{list: name, i: -1} }

// elementPath is list[i].
func elementPath(list string, i int) paramPath { return paramPath{list: list, i: i} }

// part is the element j of the array inner in w.
func (w paramPath) part(inner string, j int) paramPath { w.inner, w.j = inner, j; return w }

// element is element i of w's list when inner is "", else part(inner, i).
func (w paramPath) element(inner string, i int) paramPath {
	if inner == "" {
		return paramPath{list: w.list, i: i}
	}
	return w.part(inner, i)
}

func (w paramPath) String() string {
	s := w.list
	if w.i >= 0 {
		s += "[" + strconv.Itoa(w.i) + "]"
	}
	if w.inner != "" {
		s += "." + w.inner + "[" + strconv.Itoa(w.j) + "]"
	}
	return s
}

// member is the member name of the object at w.
func (w paramPath) member(name string) string { return w.String() + "." + name }

// writeMessages writes the chat messages: the instructions, then what each input item becomes.
func (b *requestBridge) writeMessages(instructions, input []byte) *Error {
	b.key("messages")
	b.out = append(b.out, '[')
	if instructions != nil && !isJSONNull(instructions) {
		if !isJSONString(instructions) {
			return NewError(ErrInvalidParameter, "instructions", "instructions must be a string")
		}
		b.openMessage("system")
		b.out = append(b.out, `,"content":`...)
		b.out = append(b.out, instructions...)
		b.out = append(b.out, '}')
	}
	switch {
	case isJSONString(input):
		b.openMessage("user")
		b.out = append(b.out, `,"content":`...)
		b.out = append(b.out, input...)
		b.out = append(b.out, '}')
		b.inputMessages++
	case input[0] == '[':
		if e := b.eachObject(input, fieldPath("input"), "", &b.item, b.writeItem); e != nil {
			return e
		}
		b.closeTurn()
	default:
		return NewError(ErrInvalidParameter, "input", "input must be a string or an array of items")
	}
	if b.inputMessages == 0 {
		return NewError(ErrInvalidParameter, "input", "input has no message: send at least one message, "+
			"function_call or function_call_output item (reasoning items alone are dropped, for chat has no place for them)")
	}
	b.out = append(b.out, ']')
	return nil
}

// openMessage starts a message object with its role; the caller writes the rest and closes it.
func (b *requestBridge) openMessage(role string) {
	if b.messages > 0 {
		b.out = append(b.out, ',')
	}
	b.messages++
	b.out = append(b.out, `{"role":"`...)
	b.out = append(b.out, role...)
	b.out = append(b.out, '"')
}

// closeTurn closes the assistant message left open for function calls to join, if one is.
func (b *requestBridge) closeTurn() {
	switch b.turn {
	case turnText:
		b.out = append(b.out, '}')
	case turnToolCalls:
		b.out = append(b.out, "]}"...)
	}
	b.turn = noTurn
}

// writeItem writes what input item i, whose members are in b.item, becomes.
func (b *requestBridge) writeItem(i int) *Error {
	at, f := elementPath("input", i), &b.item
	switch {
	case f.typ == nil && f.role != nil, jsonStringIs(f.typ, "message"):
		b.closeTurn()
		return b.writeMessage(at, f)
	case jsonStringIs(f.typ, "function_call"):
		return b.writeFunctionCall(at, f)
	case jsonStringIs(f.typ, "function_call_output"):
		b.closeTurn()
		return b.writeFunctionOutput(at, f)
	case jsonStringIs(f.typ, "reasoning"):
		return nil
	case jsonStringIs(f.typ, "item_reference"), f.typ == nil && f.id != nil:
		return NewError(ErrUnsupportedParameter, "input", at.String()+" is an item_reference, a pointer to an "+
			"item stored at OpenAI, and the gateway keeps no stored items: send store: false with the full "+
			"history in input (AI SDK: providerOptions.openai.store = false)")
	case f.typ == nil:
		return NewError(ErrInvalidParameter, at.member("type"), at.String()+" has neither type nor role: "+
			"send a message (role and content), function_call or function_call_output item")
	case !isJSONString(f.typ):
		return NewError(ErrInvalidParameter, at.member("type"), at.member("type")+" must be a string")
	}
	return NewError(ErrUnsupportedParameter, at.member("type"), at.String()+" is a "+
		quoteForMessage(decodeJSONString(f.typ))+" item, which a provider that has only Chat Completions cannot "+
		"take (the bridge takes message, function_call, function_call_output and reasoning items): remove it, "+
		"or route to an openai or azure-openai model")
}

// writeMessage writes the message item at.
func (b *requestBridge) writeMessage(at paramPath, f *objectFields) *Error {
	if f.content == nil || !isJSONString(f.content) && f.content[0] != '[' {
		return NewError(ErrInvalidParameter, at.member("content"), at.member("content")+
			" must be a string or an array of content parts")
	}
	var role string
	switch {
	case jsonStringIs(f.role, "user"):
		role = "user"
	case jsonStringIs(f.role, "assistant"):
		role = "assistant"
	case jsonStringIs(f.role, "system"):
		role = "system"
	case jsonStringIs(f.role, "developer"):
		role = "system"
		if b.opts.developerRole {
			role = "developer"
		}
	default:
		return NewError(ErrInvalidParameter, at.member("role"), at.member("role")+
			" must be user, assistant, system or developer")
	}
	b.inputMessages++
	b.openMessage(role)
	b.out = append(b.out, `,"content":`...)
	switch {
	case isJSONString(f.content):
		b.out = append(b.out, f.content...)
	case role == "user":
		if e := b.writeUserParts(at, f.content); e != nil {
			return e
		}
	default:
		if e := b.writeJoinedText(at, f.content, role == "assistant"); e != nil {
			return e
		}
	}
	if role == "assistant" {
		// Left open: function calls right after it are this turn's.
		b.turn = turnText
		return nil
	}
	b.out = append(b.out, '}')
	return nil
}

// writeUserParts writes the content parts of the user message at, in chat's form.
func (b *requestBridge) writeUserParts(at paramPath, content []byte) *Error {
	b.out = append(b.out, '[')
	e := b.eachObject(content, at, "content", &b.part, func(j int) *Error {
		part, f := at.part("content", j), &b.part
		if j > 0 {
			b.out = append(b.out, ',')
		}
		switch {
		case jsonStringIs(f.typ, "input_text"):
			if !isJSONString(f.text) {
				return NewError(ErrInvalidParameter, part.member("text"), part.member("text")+" must be a string")
			}
			b.out = append(b.out, `{"type":"text","text":`...)
			b.out = append(b.out, f.text...)
			b.out = append(b.out, '}')
		case jsonStringIs(f.typ, "input_image"):
			return b.writeImage(part, f)
		case jsonStringIs(f.typ, "input_file"):
			return b.writeFile(part, f)
		case jsonStringIs(f.typ, "output_text"), jsonStringIs(f.typ, "refusal"):
			return NewError(ErrInvalidParameter, part.member("type"), part.String()+" is an assistant's part in a "+
				"user message: send the user's text as input_text")
		case f.typ == nil:
			return NewError(ErrInvalidParameter, part.member("type"), part.String()+" has no type: send "+
				"input_text, input_image or input_file")
		default:
			return unsupportedPart(part, f.typ)
		}
		return nil
	})
	b.out = append(b.out, ']')
	return e
}

// unsupportedPart refuses a content part of a type chat messages cannot carry.
func unsupportedPart(part paramPath, typ []byte) *Error {
	name := "a part whose type is not a string"
	if isJSONString(typ) {
		name = "a " + quoteForMessage(decodeJSONString(typ)) + " part"
	}
	return NewError(ErrUnsupportedParameter, part.member("type"), part.String()+" is "+name+", which the bridge "+
		"to Chat Completions cannot carry: send input_text, input_image (image_url) or input_file (file_data)")
}

// writeImage writes the input_image part as an image_url part.
func (b *requestBridge) writeImage(part paramPath, f *objectFields) *Error {
	if f.imageURL == nil {
		if f.fileID != nil {
			return NewError(ErrUnsupportedParameter, part.String(), part.String()+" names an image by "+
				"file_id, a file uploaded to OpenAI, which a provider that has only Chat Completions cannot read: "+
				"send the image as image_url, an https or data: URL (data:image/png;base64,...)")
		}
		return NewError(ErrInvalidParameter, part.member("image_url"), part.String()+" has no image_url: send "+
			"the image as an https or data: URL")
	}
	if !isJSONString(f.imageURL) {
		return NewError(ErrInvalidParameter, part.member("image_url"), part.member("image_url")+
			" must be a string, an https or data: URL")
	}
	b.out = append(b.out, `{"type":"image_url","image_url":{"url":`...)
	b.out = append(b.out, f.imageURL...)
	// "original" (full resolution) has no chat value; the provider's default applies.
	if f.detail != nil && !jsonStringIs(f.detail, "original") {
		b.out = append(b.out, `,"detail":`...)
		b.out = append(b.out, f.detail...)
	}
	b.out = append(b.out, "}}"...)
	return nil
}

// writeFile writes the input_file part as a file part, for a target that takes OpenAI's file parts.
func (b *requestBridge) writeFile(part paramPath, f *objectFields) *Error {
	fix := "send the file's text as input_text, or route to an openai or azure-openai model"
	if b.opts.openAIParams {
		fix = "send its content as file_data (a data: URL such as data:application/pdf;base64,...) with a filename"
	}
	switch {
	case f.fileData != nil && !b.opts.openAIParams:
		return NewError(ErrUnsupportedParameter, part.String(), part.String()+" is a file, which "+
			"this model's provider does not take in Chat Completions: "+fix)
	case f.fileData != nil:
		if !isJSONString(f.fileData) || f.filename != nil && !isJSONString(f.filename) {
			return NewError(ErrInvalidParameter, part.member("file_data"), part.String()+
				": file_data and filename must be strings")
		}
		b.out = append(b.out, `{"type":"file","file":{"file_data":`...)
		b.out = append(b.out, f.fileData...)
		if f.filename != nil {
			b.out = append(b.out, `,"filename":`...)
			b.out = append(b.out, f.filename...)
		}
		b.out = append(b.out, "}}"...)
		return nil
	case f.fileID != nil:
		return NewError(ErrUnsupportedParameter, part.String(), part.String()+" names a file by "+
			"file_id, a file uploaded to OpenAI, which a provider that has only Chat Completions cannot read: "+fix)
	case f.fileURL != nil:
		return NewError(ErrUnsupportedParameter, part.String(), part.String()+" names a file by "+
			"file_url, which Chat Completions has no equivalent for: "+fix)
	}
	return NewError(ErrInvalidParameter, part.member("file_data"), part.String()+" has no file_data: "+fix)
}

// writeJoinedText writes the text parts of the content array of the message at as one string, back to
// back: the content of a system or developer message, or of an assistant turn (whose refusal parts count
// as text).
func (b *requestBridge) writeJoinedText(at paramPath, content []byte, assistant bool) *Error {
	b.out = append(b.out, '"')
	e := b.eachObject(content, at, "content", &b.part, func(j int) *Error {
		part, f := at.part("content", j), &b.part
		text, name := f.text, "text"
		switch {
		case jsonStringIs(f.typ, "input_text"), jsonStringIs(f.typ, "output_text"):
		case assistant && jsonStringIs(f.typ, "refusal"):
			text, name = f.refusal, "refusal"
		default:
			fix := "a system message takes text only: send input_text parts"
			if assistant {
				fix = "assistant history is text to Chat Completions: send output_text or refusal parts"
			}
			return NewError(ErrUnsupportedParameter, part.member("type"), part.String()+" is not a text part, and "+fix)
		}
		if !isJSONString(text) {
			return NewError(ErrInvalidParameter, part.member(name), part.member(name)+" must be a string")
		}
		b.out = append(b.out, text[1:len(text)-1]...)
		return nil
	})
	b.out = append(b.out, '"')
	return e
}

// writeFunctionCall writes the function_call item at as a tool call of the open assistant turn, opening
// one if none is.
func (b *requestBridge) writeFunctionCall(at paramPath, f *objectFields) *Error {
	switch {
	case !isJSONString(f.callID):
		return NewError(ErrInvalidParameter, at.member("call_id"), at.member("call_id")+" must be a string")
	case !isJSONString(f.name):
		return NewError(ErrInvalidParameter, at.member("name"), at.member("name")+" must be a string")
	case !isJSONString(f.arguments):
		return NewError(ErrInvalidParameter, at.member("arguments"), at.member("arguments")+
			" must be a string (the arguments as JSON text)")
	}
	switch b.turn {
	case noTurn:
		b.inputMessages++
		b.openMessage("assistant")
		b.out = append(b.out, `,"tool_calls":[`...)
	case turnText:
		b.out = append(b.out, `,"tool_calls":[`...)
	case turnToolCalls:
		b.out = append(b.out, ',')
	}
	b.turn = turnToolCalls
	b.out = append(b.out, `{"id":`...)
	b.out = append(b.out, f.callID...)
	b.out = append(b.out, `,"type":"function","function":{"name":`...)
	b.out = append(b.out, f.name...)
	b.out = append(b.out, `,"arguments":`...)
	b.out = append(b.out, f.arguments...)
	b.out = append(b.out, "}}"...)
	return nil
}

// writeFunctionOutput writes the function_call_output item at as a tool message.
func (b *requestBridge) writeFunctionOutput(at paramPath, f *objectFields) *Error {
	if !isJSONString(f.callID) {
		return NewError(ErrInvalidParameter, at.member("call_id"), at.member("call_id")+" must be a string")
	}
	if f.output == nil || !isJSONString(f.output) && f.output[0] != '[' {
		return NewError(ErrInvalidParameter, at.member("output"), at.member("output")+
			" must be a string or an array of input_text parts")
	}
	b.inputMessages++
	b.openMessage("tool")
	b.out = append(b.out, `,"tool_call_id":`...)
	b.out = append(b.out, f.callID...)
	b.out = append(b.out, `,"content":`...)
	if isJSONString(f.output) {
		b.out = append(b.out, f.output...)
		b.out = append(b.out, '}')
		return nil
	}
	b.out = append(b.out, '"')
	e := b.eachObject(f.output, at, "output", &b.part, func(j int) *Error {
		part, p := at.part("output", j), &b.part
		if !jsonStringIs(p.typ, "input_text") && !jsonStringIs(p.typ, "output_text") {
			return NewError(ErrUnsupportedParameter, part.member("type"), part.String()+" is not a text part, "+
				"and a tool message in Chat Completions holds text only: return the tool's result as text (input_text)")
		}
		if !isJSONString(p.text) {
			return NewError(ErrInvalidParameter, part.member("text"), part.member("text")+" must be a string")
		}
		b.out = append(b.out, p.text[1:len(p.text)-1]...)
		return nil
	})
	b.out = append(b.out, `"}`...)
	return e
}

// writeTools writes the function tools in chat's form; the member is left out when there are none.
func (b *requestBridge) writeTools(raw []byte) *Error {
	if isJSONNull(raw) {
		return nil
	}
	if raw[0] != '[' {
		return NewError(ErrInvalidParameter, "tools", "tools must be an array")
	}
	start := len(b.out)
	b.key("tools")
	b.out = append(b.out, '[')
	e := b.eachObject(raw, fieldPath("tools"), "", &b.item, func(i int) *Error {
		at, f := elementPath("tools", i), &b.item
		if !jsonStringIs(f.typ, "function") {
			return unsupportedTool(at, f.typ)
		}
		if !isJSONString(f.name) {
			return NewError(ErrInvalidParameter, at.member("name"), at.member("name")+" must be a string")
		}
		// Parse bounds the request's nesting, and the schema sits one level deeper in chat's form than in
		// the request: a schema at the bound would make a chat request Parse refuses.
		if f.parameters != nil && nestingDepth(f.parameters) > maxSchemaDepth {
			return NewError(ErrInvalidParameter, at.member("parameters"), at.member("parameters")+
				" nests deeper than "+strconv.Itoa(maxSchemaDepth)+" levels: flatten the schema")
		}
		if i > 0 {
			b.out = append(b.out, ',')
		}
		b.out = append(b.out, `{"type":"function","function":{"name":`...)
		b.out = append(b.out, f.name...)
		b.copyUnlessNull("description", f.description)
		b.copyUnlessNull("parameters", f.parameters)
		b.copyUnlessNull("strict", f.strict)
		b.out = append(b.out, "}}"...)
		return nil
	})
	if e != nil {
		return e
	}
	if b.out[len(b.out)-1] == '[' {
		b.out = b.out[:start] // an empty tools array means none, and some providers refuse it
		return nil
	}
	b.out = append(b.out, ']')
	return nil
}

// maxSchemaDepth is the deepest a function tool's parameters may nest: in the chat request they sit four
// levels down (the body, tools, the tool, function), and the whole must stay within jsonscan.MaxDepth.
const maxSchemaDepth = jsonscan.MaxDepth - 4

// unsupportedTool refuses a tool that is not a function tool.
func unsupportedTool(at paramPath, typ []byte) *Error {
	if !isJSONString(typ) {
		return NewError(ErrInvalidParameter, at.member("type"), at.member("type")+
			" must be a string such as \"function\"")
	}
	why := "runs on OpenAI's servers"
	if jsonStringIs(typ, "custom") {
		why = "is a freeform tool, which Chat Completions cannot declare"
	}
	return NewError(ErrUnsupportedParameter, at.member("type"), at.String()+" is a "+
		quoteForMessage(decodeJSONString(typ))+" tool, which "+why+", and this model's provider has only Chat "+
		"Completions: remove it, or route to an openai or azure-openai model")
}

// writeToolChoice writes tool_choice in chat's form.
func (b *requestBridge) writeToolChoice(raw []byte) *Error {
	switch {
	case isJSONNull(raw):
		return nil
	case jsonStringIs(raw, "none"), jsonStringIs(raw, "auto"), jsonStringIs(raw, "required"):
		b.key("tool_choice")
		b.out = append(b.out, raw...)
		return nil
	case raw[0] != '{':
		return NewError(ErrInvalidParameter, "tool_choice", "tool_choice must be none, auto, required or an object")
	}
	var f objectFields
	if e := b.readObject(raw, &f, fieldPath("tool_choice")); e != nil {
		return e
	}
	switch {
	case jsonStringIs(f.typ, "function"):
		if !isJSONString(f.name) {
			return NewError(ErrInvalidParameter, "tool_choice.name", "tool_choice.name must be a string")
		}
		b.key("tool_choice")
		b.out = append(b.out, `{"type":"function","function":{"name":`...)
		b.out = append(b.out, f.name...)
		b.out = append(b.out, "}}"...)
		return nil
	case jsonStringIs(f.typ, "allowed_tools"):
		return b.writeAllowedTools(&f)
	}
	return NewError(ErrUnsupportedParameter, "tool_choice", "tool_choice names a tool that is not a function "+
		"(a built-in, MCP or custom tool), which a provider that has only Chat Completions cannot run: choose "+
		"none, auto, required or a function, or route to an openai or azure-openai model")
}

// writeAllowedTools writes an allowed_tools choice in OpenAI chat's form, its tools nested as chat's are.
func (b *requestBridge) writeAllowedTools(f *objectFields) *Error {
	if !b.opts.openAIParams {
		return NewError(ErrUnsupportedParameter, "tool_choice", "tool_choice allowed_tools has no Chat "+
			"Completions form at this model's provider: send only the allowed tools in tools, with tool_choice "+
			"auto or required")
	}
	if !isJSONString(f.mode) {
		return NewError(ErrInvalidParameter, "tool_choice.mode", "tool_choice.mode must be auto or required")
	}
	if f.tools == nil || f.tools[0] != '[' {
		return NewError(ErrInvalidParameter, "tool_choice.tools", "tool_choice.tools must be an array of tools")
	}
	b.key("tool_choice")
	b.out = append(b.out, `{"type":"allowed_tools","allowed_tools":{"mode":`...)
	b.out = append(b.out, f.mode...)
	b.out = append(b.out, `,"tools":[`...)
	e := b.eachObject(f.tools, fieldPath("tool_choice.tools"), "", &b.item, func(i int) *Error {
		at, t := elementPath("tool_choice.tools", i), &b.item
		if !jsonStringIs(t.typ, "function") {
			return unsupportedTool(at, t.typ)
		}
		if !isJSONString(t.name) {
			return NewError(ErrInvalidParameter, at.member("name"), at.member("name")+" must be a string")
		}
		if i > 0 {
			b.out = append(b.out, ',')
		}
		b.out = append(b.out, `{"type":"function","function":{"name":`...)
		b.out = append(b.out, t.name...)
		b.out = append(b.out, "}}"...)
		return nil
	})
	b.out = append(b.out, "]}}"...)
	return e
}

// writeText writes text.format as response_format and text.verbosity as verbosity (OpenAI targets).
func (b *requestBridge) writeText(raw []byte) *Error {
	if isJSONNull(raw) {
		return nil
	}
	var text objectFields
	if e := b.readObject(raw, &text, fieldPath("text")); e != nil {
		return e
	}
	if text.format != nil {
		var f objectFields
		if e := b.readObject(text.format, &f, fieldPath("text.format")); e != nil {
			return e
		}
		switch {
		case jsonStringIs(f.typ, "text"):
			// Chat's default.
		case jsonStringIs(f.typ, "json_object"):
			b.key("response_format")
			b.out = append(b.out, `{"type":"json_object"}`...)
		case jsonStringIs(f.typ, "json_schema"):
			// Responses writes the schema's members flat in format; chat nests them under json_schema.
			b.key("response_format")
			b.out = append(b.out, `{"type":"json_schema","json_schema":{`...)
			b.copyUnlessNull("name", f.name)
			b.copyUnlessNull("schema", f.schema)
			b.copyUnlessNull("strict", f.strict)
			b.copyUnlessNull("description", f.description)
			b.out = append(b.out, "}}"...)
		default:
			return NewError(ErrInvalidParameter, "text.format.type", "text.format.type must be text, json_object or json_schema")
		}
	}
	if b.opts.openAIParams {
		b.copyUnlessNull("verbosity", text.verbosity)
	} else if text.verbosity != nil && !isJSONNull(text.verbosity) {
		*b.leftOut = append(*b.leftOut, "text.verbosity")
	}
	return nil
}

// writeReasoning writes reasoning.effort as reasoning_effort where the target takes it; summary has no chat
// equivalent.
func (b *requestBridge) writeReasoning(raw []byte) *Error {
	if isJSONNull(raw) {
		return nil
	}
	var f objectFields
	if e := b.readObject(raw, &f, fieldPath("reasoning")); e != nil {
		return e
	}
	if b.opts.reasoningEffort {
		b.copyUnlessNull("reasoning_effort", f.effort)
	} else if f.effort != nil && !isJSONNull(f.effort) {
		*b.leftOut = append(*b.leftOut, "reasoning.effort")
	}
	return nil
}

// nestingDepth is how deeply the JSON value raw nests arrays and objects (0 for a scalar), counted with a
// loop.
func nestingDepth(raw []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

func isJSONNull(raw []byte) bool { return string(raw) == "null" }

// isJSONString reports whether raw is a JSON string literal.
func isJSONString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// jsonStringIs reports whether raw is the string literal of s; one written with escapes is decoded (and
// allocates), which no client does for the types and roles compared.
func jsonStringIs(raw []byte, s string) bool {
	if isJSONStringOf(raw, s) {
		return true
	}
	return isJSONString(raw) && strings.IndexByte(bytesAsString(raw), '\\') >= 0 && decodeJSONString(raw) == s
}

// bytesAsString is b as a string, without a copy: b must not change while the string is in use.
func bytesAsString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

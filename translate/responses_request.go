//go:build !aidialect_no_bridge

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
//   - function_call_output (and custom_tool_call_output) items become tool messages; text parts are joined.
//   - reasoning items are dropped: chat has no place for them (encrypted_content is readable only by
//     OpenAI), and the model reasons afresh. They do not end the assistant turn around them.
//   - item_reference items (or an item that is only an id) point at items stored at OpenAI; the gateway
//     stores none, so they are refused, as are items only OpenAI's servers produce or run (hosted tool
//     calls unless hosted tools are dropped, computer use, shell, compaction).
//   - tools, and the calls and outputs of namespace, custom and client tool_search tools: responses_tools.go.
//   - text.format becomes response_format (json_schema nested under json_schema), max_output_tokens the
//     target's max-tokens field, reasoning.effort reasoning_effort; OpenAI's own chat parameters pass only to
//     a target that takes them (bridgeOptions).
//
// Strings are copied as the client wrote them (raw JSON, already validated by RequestBody.Parse); only
// types and roles are read. Joined text is the raw string contents back to back: each escape sequence is
// whole inside its literal, so the concatenation is a valid literal too.
//
// The top-level fields are those RequestBody.Parse located (or one jsonscan.Skim finds them), and each
// array the bridge walks (items, parts, tools) is read element by element by the scan that reads the
// element's members and finds its end (readObject: the input was validated, so strings are skipped to their
// closing quote and containers by counting brackets), so each level of the input is scanned once more than
// the level above it, with loops: an input nested a million levels deep costs no stack. The chat request's
// own top-level members are recorded as they are written, so it is not scanned again either. The only
// allocations are the output's and the echo's buffers when they are too small, and error messages.
//
// The compiled module is small when each write is one call: the writers (write, writeRaw, writeFramed...)
// are kept out of line, and refusals are built by two helpers (mustBe, refusal) from their text.

import (
	"math/bits"
	"strconv"
	"strings"

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
	// leaveOutNamed: left out, and named in x-aidialect-dropped-params (see the rows).
	leaveOutNamed
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
const storeFalseFix = "send store: false and the whole conversation in input (AI SDK: providerOptions.openai.store = false; LangChain: use_previous_response_id=False)"

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
	// client_metadata is the Codex CLI's analytics ids; no chat API has it (and OpenAI's own Responses API
	// refuses it: planClientMetadata).
	{name: "client_metadata", handling: leaveOutNamed},
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

// responsesFieldRows finds a field's row in responsesFields by its name.
var responsesFieldRows = func() map[string]int {
	rows := make(map[string]int, len(responsesFields))
	for row, f := range responsesFields {
		rows[f.name] = row
	}
	return rows
}()

// responsesFieldRow is the row of the field name in responsesFields, and whether it has one.
func responsesFieldRow(name string) (int, bool) {
	row, ok := responsesFieldRows[name]
	return row, ok
}

// instructionsRow is the row writeInput reads the instructions from.
var instructionsRow, _ = responsesFieldRow("instructions")

// inputRow is input's row: the one field required.
var inputRow, _ = responsesFieldRow("input")

// toolsRow is tools' row, written also when the request has none but its history loaded some.
var toolsRow, _ = responsesFieldRow("tools")

// bridgedMemberLimit bounds the members of an object the bridge reads (an item, a part, a tool). Real
// objects have fewer than ten.
const bridgedMemberLimit = 64

// requestBridge is the state of one bridgeRequest call; it lives on the caller's stack.
type requestBridge struct {
	bridgeWriter // the chat request
	opts         *bridgeOptions
	// leftOut collects the fields sent that the target's chat API lacks (they are left out, and listed in
	// x-aidialect-dropped-params as the extra parameters a chat request loses are).
	leftOut *[]string
	// located are the body's top-level members when the caller has them.
	located []jsonscan.Member
	// written, when not nil, receives the chat request's top-level members as they are written, so that
	// it is parsed without another scan (RequestBody.parseWritten). nested is set while the members written
	// belong to an object inside a top-level value (a tool's function, a json_schema format).
	written []jsonscan.Member
	nested  bool
	// messages counts the messages written, instructions included; inputMessages those input made.
	messages, inputMessages int
	// turn is the assistant message left open, so function calls after it join it.
	turn assistantTurn
	// item holds the members of the array element being written: an input item, or a tool. (A content
	// part's are a local of the writer of the parts, zeroed only for the messages that have some.)
	item objectFields
	// tools records the chat tools written, for the answer's calls to find (responses_tools.go).
	tools *bridgedTools
	// loaded are the tools arrays of the history's tool_search_output items (at loadedAt), declared after
	// the request's own tools.
	loaded   [][]byte
	loadedAt []paramPath
	// dropHosted: hosted tools, and their calls in the history, are left out rather than refused.
	dropHosted bool
	// leftOutKinds has a bit per kind of hosted tool or item left out so far (leaveOutOnce).
	leftOutKinds uint32
	// scratch holds a chat tool name made from a namespace and a name.
	scratch []byte
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
	out, _, e := bridgeLocated(dst, src, nil, nil, opts, echo)
	return out, e
}

// bridgeLocated is bridgeRequest for a body whose top-level members are already located (RequestBody.Parse
// did it): the bridge reads them instead of scanning the body once more. nil: the bridge locates them.
// written, when not nil, is a buffer for the chat request's top-level members, which it returns recorded as
// they were written (for RequestBody.parseWritten); nil: they are not recorded.
func bridgeLocated(dst, src []byte, located, written []jsonscan.Member, opts *bridgeOptions,
	echo *responsesEcho) (chat []byte, members []jsonscan.Member, e *Error) {
	*echo = responsesEcho{buf: echo.buf[:0], leftOut: echo.leftOut[:0], omitted: echo.omitted[:0], storeAsked: true,
		toolCalls: echo.toolCalls}
	echo.toolCalls.reset()
	var values [len(responsesFields)][]byte
	b := requestBridge{opts: opts, leftOut: &echo.leftOut, located: located, written: written[:0],
		tools: &echo.toolCalls, dropHosted: opts.dropHostedTools, scratch: echo.toolCalls.scratch[:0]}
	present, e := b.locate(src, &values)
	if e != nil {
		return dst[:0], written, e
	}
	// Most of the chat request is the input copied: one allocation when dst is new.
	b.out = dst[:0]
	if cap(b.out) < len(src)+256 {
		b.out = make([]byte, 0, len(src)+256)
	}
	b.writeByte('{')
	// The fields sent, in the table's order, input's row, whose absence is refused there, and tools' row,
	// for the tools that tool_search_output items of the input loaded.
	for rows := present | 1<<inputRow | 1<<toolsRow; rows != 0; rows &= rows - 1 {
		row := bits.TrailingZeros64(rows)
		if values[row] == nil && row == inputRow {
			return b.out[:0], b.written, NewError(ErrInvalidParameter, "input", "input is required: send the "+
				"conversation as a string or an array of items (the gateway keeps no earlier turns)")
		}
		if e := b.writeField(&responsesFields[row], values[row], &values); e != nil {
			return b.out[:0], b.written, e
		}
	}
	b.writeByte('}')
	b.endWritten()
	fillEcho(echo, &values, present)
	echo.toolCalls.scratch = b.scratch
	return b.out, b.written, nil
}

// locate finds each top-level field's value (values, by row; present has a bit per row found), refusing
// unknown and repeated fields and those that need server state.
func (b *requestBridge) locate(src []byte, values *[len(responsesFields)][]byte) (present uint64, e *Error) {
	// One member more than the table has rows: a body with more has an unknown or repeated field among its
	// first len(responsesFields)+1 members, which is then named.
	const limit = len(responsesFields) + 1
	members, err := b.located, error(nil)
	if members == nil {
		var table [limit]jsonscan.Member
		members, err = jsonscan.Skim(src, table[:0], limit)
	} else if len(members) > limit {
		members, err = members[:limit], jsonscan.ErrTooManyMembers
	}
	if err != nil && err != jsonscan.ErrTooManyMembers {
		return 0, NewError(ErrInvalidJSON, "", "the request body is not a JSON object: "+err.Error())
	}
	for _, m := range members {
		var name string
		if m.KeyEscaped {
			name = decodeJSONString(src[m.KeyStart:m.KeyEnd])
		} else {
			name = bytesAsString(m.Key(src))
		}
		row, known := responsesFieldRow(name)
		if !known {
			return 0, fieldRefusal(ErrUnsupportedParameter, name, "unknown parameter: ", " is not a Responses "+
				"API field the gateway can bridge to a provider that has only Chat Completions: remove it, or "+
				"route to an openai or azure-openai model, which take the Responses API natively")
		}
		if present&(1<<row) != 0 {
			return 0, fieldRefusal(ErrInvalidJSON, name, "the request body has the field ",
				" more than once: send each field once")
		}
		present |= 1 << row
		raw := m.Value(src)
		values[row] = raw
		f := &responsesFields[row]
		if f.handling != refuseUnlessNull && f.handling != refuseIfTrue && f.handling != readStore {
			continue
		}
		if f.handling == refuseUnlessNull && !isJSONNull(raw) || f.handling == refuseIfTrue && string(raw) == "true" {
			return 0, NewError(ErrUnsupportedParameter, f.name, f.refusal)
		}
		if f.handling != refuseUnlessNull && string(raw) != "true" && string(raw) != "false" && !isJSONNull(raw) {
			return 0, fieldPath(f.name).mustBe("", "true or false")
		}
		if f.handling == readStore && string(raw) == "true" {
			// Nothing is stored: said in x-aidialect-dropped-params now, rather than by the refusal of the
			// next turn's previous_response_id or item_reference.
			b.leaveOut(f.name)
		}
	}
	if err != nil {
		return 0, NewError(ErrInvalidJSON, "", "the request body has more top-level fields than the Responses API has")
	}
	return present, nil
}

// fieldRefusal refuses the top-level field name: its message is before, the name quoted, then after. name,
// a view of the body, is copied: the error outlives the body.
func fieldRefusal(code ErrorCode, name, before, after string) *Error {
	name = strings.Clone(name)
	return NewError(code, name, before+quoteForMessage(name)+after)
}

// maxEchoBytes bounds the request values a bridged Response repeats, all members together. The Responses
// API repeats instructions, tools and the other settings in every Response object, and a bridged stream in
// three events (response.created, response.in_progress and the terminal one): kept in full whatever their
// size, 8 MiB of instructions held 8 MiB more per request and became 25 MB of stream. 256 KiB holds the
// instructions and tool lists of Codex and the agent SDKs (tens of KiB) many times over.
const maxEchoBytes = 256 << 10

// fillEcho copies the echoed values (of the rows present) into echo.buf, sized once so the views into it
// stay valid, and sets echo's flags. Values are kept whole in the table's order while they fit in
// maxEchoBytes together; one that does not is left out (the Response then states the API's value for an
// absent member) and named in echo.omitted, which the answer's x-aidialect-echo-omitted header lists.
func fillEcho(echo *responsesEcho, values *[len(responsesFields)][]byte, present uint64) {
	need := 0
	kept := present
	for rows := present; rows != 0; rows &= rows - 1 {
		row := bits.TrailingZeros64(rows)
		raw := values[row]
		switch f := &responsesFields[row]; {
		case f.echo != echoNothing && need+len(raw) <= maxEchoBytes:
			need += len(raw)
		case f.echo != echoNothing:
			kept &^= 1 << row
			echo.omitted = append(echo.omitted, f.name)
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
	for rows := kept; rows != 0; rows &= rows - 1 {
		row := bits.TrailingZeros64(rows)
		if slot := responsesFields[row].echo; slot != echoNothing {
			raw := values[row]
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
			return fieldPath("model").mustBe("", "a string naming the model")
		}
		b.writeMember("model", raw)
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
			return fieldPath(f.name).mustBe("", "an integer")
		}
		b.writeMember(orDefault(b.opts.maxTokensField, "max_completion_tokens"), raw)
	case copyValue:
		b.copyUnlessNull(f.name, raw)
	case leaveOutNamed:
		if !isJSONNull(raw) {
			b.leaveOut(f.name)
		}
	case copyOpenAIParam:
		if b.opts.openAIParams {
			b.copyUnlessNull(f.name, raw)
		} else if !isJSONNull(raw) {
			b.leaveOut(f.name)
		}
	case writeStream:
		switch string(raw) {
		case "null":
		case "true", "false":
			b.writeMember("stream", raw)
			if raw[0] == 't' && b.opts.streamUsage {
				// The terminal event of a Responses stream carries usage; only this chunk can give it.
				b.key("stream_options")
				b.write(`{"include_usage":true}`)
			}
		default:
			return fieldPath("stream").mustBe("", "true or false")
		}
	}
	return nil
}

// bridgeWriter is the buffer the bridge writes JSON into: the chat request, a Response, a stream's events.
// Its writers are kept out of line: an append inlined is several hundred bytes of the compiled module, a
// call a few dozen.
type bridgeWriter struct{ out []byte }

// write appends s.
//
//go:noinline
func (w *bridgeWriter) write(s string) { w.out = append(w.out, s...) }

// writeRaw appends raw: JSON, or JSON string contents, as it came.
//
//go:noinline
func (w *bridgeWriter) writeRaw(raw []byte) { w.out = append(w.out, raw...) }

// writeByte appends c.
//
//go:noinline
func (w *bridgeWriter) writeByte(c byte) { w.out = append(w.out, c) }

// writeFramed appends prefix, raw and suffix: a value as it came between two fixed fragments.
//
//go:noinline
func (w *bridgeWriter) writeFramed(prefix string, raw []byte, suffix string) {
	w.out = append(append(append(w.out, prefix...), raw...), suffix...)
}

// writeInt appends n in decimal.
//
//go:noinline
func (w *bridgeWriter) writeInt(n int64) { w.out = strconv.AppendInt(w.out, n, 10) }

// key writes the name of the next member of the object being written, after a comma unless it is the
// first, and records a top-level member for written.
//
//go:noinline
func (b *requestBridge) key(name string) {
	if b.out[len(b.out)-1] != '{' {
		b.writeByte(',')
	}
	if b.written != nil && !b.nested {
		// The value's end is known when the next member starts (endWritten).
		start := len(b.out)
		b.written = append(b.written, jsonscan.Member{KeyStart: start, KeyEnd: start + len(name) + 2,
			ValStart: start + len(name) + 3})
	}
	b.writeByte('"')
	b.write(name)
	b.write(`":`)
}

// endWritten sets the ends of the recorded top-level members once the object is closed: each value ends at
// the comma before the next member, the last at the closing brace (the bridge writes no whitespace).
func (b *requestBridge) endWritten() {
	members := b.written
	for i := range members {
		end := len(b.out) - 1
		if i+1 < len(members) {
			end = members[i+1].KeyStart - 1
		}
		members[i].ValEnd = end
	}
}

// unwrite drops what was written from start on, a member recorded there included.
func (b *requestBridge) unwrite(start int) {
	b.out = b.out[:start]
	for n := len(b.written); n > 0 && b.written[n-1].KeyStart >= start; n-- {
		b.written = b.written[:n-1]
	}
}

// writeMember writes the member name: raw.
//
//go:noinline
func (b *requestBridge) writeMember(name string, raw []byte) {
	b.key(name)
	b.out = append(b.out, raw...)
}

// copyUnlessNull writes the member name: raw, unless raw is absent or null.
//
//go:noinline
func (b *requestBridge) copyUnlessNull(name string, raw []byte) {
	if raw != nil && !isJSONNull(raw) {
		b.writeMember(name, raw)
	}
}

// leaveOut records a field sent that the target's chat API lacks.
//
//go:noinline
func (b *requestBridge) leaveOut(name string) { *b.leftOut = append(*b.leftOut, name) }

// objectKey names a member of a Responses object the bridge reads.
type objectKey uint8

const (
	keyType objectKey = iota
	keyRole
	keyContent
	keyID
	keyCallID
	keyName
	keyArguments
	keyOutput
	keyText
	keyRefusal
	keyImageURL
	keyDetail
	keyFileID
	keyFileData
	keyFileURL
	keyFilename
	keyDescription
	keyParameters
	keyStrict
	keyMode
	keyTools
	keyFormat
	keyVerbosity
	keySchema
	keyEffort
	keyNamespace
	keyInput
	keySyntax
	keyDefinition
	keyExecution
	objectKeyCount
)

// objectKeyNames are the member names, by objectKey.
var objectKeyNames = [objectKeyCount]string{keyType: "type", keyRole: "role", keyContent: "content", keyID: "id",
	keyCallID: "call_id", keyName: "name", keyArguments: "arguments", keyOutput: "output", keyText: "text",
	keyRefusal: "refusal", keyImageURL: "image_url", keyDetail: "detail", keyFileID: "file_id",
	keyFileData: "file_data", keyFileURL: "file_url", keyFilename: "filename", keyDescription: "description",
	keyParameters: "parameters", keyStrict: "strict", keyMode: "mode", keyTools: "tools", keyFormat: "format",
	keyVerbosity: "verbosity", keySchema: "schema", keyEffort: "effort", keyNamespace: "namespace", keyInput: "input",
	keySyntax: "syntax", keyDefinition: "definition", keyExecution: "execution"}

// objectKeyOf is the objectKey of a member's key (the literal, with its quotes), and whether the bridge reads
// it. A key written with escapes is decoded (it allocates; no client does it). A switch, which the compiler
// makes a search by length and then by value: a perfect hash placed the names in a table of 64 before, and
// new names kept colliding in it. TestObjectKeys keeps the switch and objectKeyNames in step.
func objectKeyOf(literal []byte, escaped bool) (objectKey, bool) {
	name := literal[1 : len(literal)-1]
	if escaped {
		name = []byte(decodeJSONString(literal))
	}
	switch string(name) {
	case "type":
		return keyType, true
	case "role":
		return keyRole, true
	case "content":
		return keyContent, true
	case "id":
		return keyID, true
	case "call_id":
		return keyCallID, true
	case "name":
		return keyName, true
	case "arguments":
		return keyArguments, true
	case "output":
		return keyOutput, true
	case "text":
		return keyText, true
	case "refusal":
		return keyRefusal, true
	case "image_url":
		return keyImageURL, true
	case "detail":
		return keyDetail, true
	case "file_id":
		return keyFileID, true
	case "file_data":
		return keyFileData, true
	case "file_url":
		return keyFileURL, true
	case "filename":
		return keyFilename, true
	case "description":
		return keyDescription, true
	case "parameters":
		return keyParameters, true
	case "strict":
		return keyStrict, true
	case "mode":
		return keyMode, true
	case "tools":
		return keyTools, true
	case "format":
		return keyFormat, true
	case "verbosity":
		return keyVerbosity, true
	case "schema":
		return keySchema, true
	case "effort":
		return keyEffort, true
	case "namespace":
		return keyNamespace, true
	case "input":
		return keyInput, true
	case "syntax":
		return keySyntax, true
	case "definition":
		return keyDefinition, true
	case "execution":
		return keyExecution, true
	}
	return 0, false
}

// objectFields are the members of a Responses object (an item, a content part, a tool, tool_choice, text,
// text.format, reasoning) the bridge reads, as raw JSON views of the request: value[k] is nil when absent or
// null. Other members are passed over: replayed items carry id, status, phase, annotations and logprobs,
// which chat has no place for.
type objectFields struct {
	value [objectKeyCount][]byte
	// set has a bit per value the last read set: the next read clears those only.
	set uint32
}

// objectRead is how reading an object went.
type objectRead uint8

const (
	readOK objectRead = iota
	readNotObject
	readTooManyMembers
)

// readObject fills f with the members of the object that starts at raw[0] and returns the offset after it.
// The input was validated by Parse, so values are skipped without being checked again; a broken one (a
// body that skipped Parse) ends the read as not an object, never a panic. A repeated member's last value
// counts.
func readObject(raw []byte, f *objectFields) (int, objectRead) {
	for set := f.set; set != 0; set &= set - 1 {
		f.value[bits.TrailingZeros32(set)] = nil
	}
	f.set = 0
	if len(raw) == 0 || raw[0] != '{' {
		return 0, readNotObject
	}
	i := jsonscan.SkipSpace(raw, 1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1, readOK
	}
	for n := 1; ; n++ {
		if i >= len(raw) || raw[i] != '"' {
			return 0, readNotObject
		}
		keyStart := i
		keyEnd, keyEscaped := jsonscan.StringEnd(raw, i)
		if keyEnd < 0 {
			return 0, readNotObject
		}
		if i = jsonscan.SkipSpace(raw, keyEnd); i >= len(raw) || raw[i] != ':' {
			return 0, readNotObject
		}
		valStart := jsonscan.SkipSpace(raw, i+1)
		valEnd := jsonscan.SkimValue(raw, valStart)
		if valEnd <= valStart {
			return 0, readNotObject
		}
		if n > bridgedMemberLimit {
			return 0, readTooManyMembers
		}
		if v := raw[valStart:valEnd]; !isJSONNull(v) {
			if k, ok := objectKeyOf(raw[keyStart:keyEnd], keyEscaped); ok {
				f.value[k] = v
				f.set |= 1 << k
			}
		}
		if i = jsonscan.SkipSpace(raw, valEnd); i >= len(raw) {
			return 0, readNotObject
		}
		switch raw[i] {
		case ',':
			i = jsonscan.SkipSpace(raw, i+1)
		case '}':
			return i + 1, readOK
		default:
			return 0, readNotObject
		}
	}
}

// readObjectAt is readObject, refusing (as the value at at) a value that is not an object or too big an
// object.
func readObjectAt(raw []byte, f *objectFields, at paramPath) *Error {
	_, read := readObject(raw, f)
	return readRefusal(read, at)
}

// readRefusal is the refusal of a read of the value at at that went wrong; nil if it went well.
func readRefusal(read objectRead, at paramPath) *Error {
	switch read {
	case readNotObject:
		return at.mustBe("", "an object")
	case readTooManyMembers:
		return at.refusal(ErrInvalidParameter, "", " has more than "+strconv.Itoa(bridgedMemberLimit)+
			" fields: send only the fields of the Responses API")
	}
	return nil
}

// objectList walks an array of objects, reading each element by the one scan that finds where it ends:
//
//	for list.next(&f) { ... list.at() ... }
//	if list.err != nil { ... }
type objectList struct {
	raw []byte
	pos int
	// i is the index of the element at pos (being read, or read last), -1 before the first.
	i int
	// place and inner say where the elements are: place's list itself when inner is "", else the array
	// inner in place.
	place paramPath
	inner string
	// err is why the walk stopped early: an element that is not an object, or an array that does not end
	// (only a body that skipped Parse has one).
	err *Error
}

func newObjectList(raw []byte, place paramPath, inner string) objectList {
	return objectList{raw: raw, i: -1, place: place, inner: inner}
}

// next reads the next element into f; false at the end of the array or on a failure (err).
func (l *objectList) next(f *objectFields) bool { return l.more() && l.read(f) }

// more moves to the next element (element is its bytes on); false at the end of the array or on a failure
// (err).
func (l *objectList) more() bool {
	if l.i < 0 {
		if l.pos = jsonscan.SkipSpace(l.raw, 1); l.pos < len(l.raw) && l.raw[l.pos] == ']' { // after the '['
			return false
		}
	} else {
		l.pos = jsonscan.SkipSpace(l.raw, l.pos)
		switch {
		case l.pos < len(l.raw) && l.raw[l.pos] == ',':
			l.pos = jsonscan.SkipSpace(l.raw, l.pos+1)
		case l.pos < len(l.raw) && l.raw[l.pos] == ']':
			return false
		default:
			l.err = l.place.refusal(ErrInvalidJSON, "", " is not a valid JSON array")
			return false
		}
	}
	l.i++
	return true
}

// element is the array from the element more moved to on.
func (l *objectList) element() []byte { return l.raw[l.pos:] }

// passed takes the element more moved to, and the count-1 after it, as n bytes long, when they were read
// another way than read's.
func (l *objectList) passed(n, count int) { l.pos, l.i = l.pos+n, l.i+count-1 }

// read reads the element more moved to into f; false on a failure (err).
func (l *objectList) read(f *objectFields) bool {
	n, read := readObject(l.raw[l.pos:], f)
	if l.err = readRefusal(read, l.at()); l.err != nil {
		return false
	}
	l.pos += n
	return true
}

// at is the place of the element read last.
func (l *objectList) at() paramPath { return l.place.element(l.inner, l.i) }

// writeMessages writes the chat messages: the instructions, then what each input item becomes.
func (b *requestBridge) writeMessages(instructions, input []byte) *Error {
	b.key("messages")
	b.writeByte('[')
	if instructions != nil && !isJSONNull(instructions) {
		if !isJSONString(instructions) {
			return fieldPath("instructions").mustBe("", "a string")
		}
		b.openMessage("system")
		b.writeFramed(`,"content":`, instructions, "}")
	}
	switch {
	case isJSONString(input):
		b.openMessage("user")
		b.writeFramed(`,"content":`, input, "}")
		b.inputMessages++
	case input[0] == '[':
		items := newObjectList(input, fieldPath("input"), "")
		for items.more() {
			if n, count := b.copyTextMessages(items.element()); count > 0 {
				items.passed(n, count)
				continue
			}
			if !items.read(&b.item) {
				break
			}
			if e := b.writeItem(items.at(), &b.item); e != nil {
				return e
			}
		}
		if items.err != nil {
			return items.err
		}
		b.closeTurn()
	default:
		return fieldPath("input").mustBe("", "a string or an array of items")
	}
	if b.inputMessages == 0 {
		return NewError(ErrInvalidParameter, "input", "input has no message: send at least one message, "+
			"function_call or function_call_output item (reasoning items alone are dropped, for chat has no place for them)")
	}
	b.writeByte(']')
	return nil
}

// openMessage starts a message object with its role; the caller writes the rest and closes it.
//
//go:noinline
func (b *requestBridge) openMessage(role string) {
	if b.messages > 0 {
		b.writeByte(',')
	}
	b.messages++
	b.write(`{"role":"`)
	b.write(role)
	b.writeByte('"')
}

// closeTurn closes the assistant message left open for function calls to join, if one is.
func (b *requestBridge) closeTurn() {
	switch b.turn {
	case turnText:
		b.writeByte('}')
	case turnToolCalls:
		b.write("]}")
	}
	b.turn = noTurn
}

// writeItem writes what the input item at, whose members are f, becomes.
func (b *requestBridge) writeItem(at paramPath, f *objectFields) *Error {
	typ := f.value[keyType]
	switch {
	case typ == nil && f.value[keyRole] != nil, jsonStringIs(typ, "message"):
		b.closeTurn()
		return b.writeMessage(at, f)
	case jsonStringIs(typ, "function_call"):
		return b.writeFunctionCall(at, f)
	case jsonStringIs(typ, "function_call_output"), jsonStringIs(typ, "custom_tool_call_output"):
		b.closeTurn()
		return b.writeFunctionOutput(at, f)
	case jsonStringIs(typ, "custom_tool_call"):
		return b.writeCustomToolCall(at, f)
	case jsonStringIs(typ, "tool_search_call") && !isServerToolSearch(f):
		return b.writeToolSearchCall(at, f)
	case jsonStringIs(typ, "tool_search_output") && !isServerToolSearch(f):
		b.closeTurn()
		return b.writeToolSearchOutput(at, f)
	case jsonStringIs(typ, "additional_tools"):
		return b.takeAdditionalTools(at, f)
	case jsonStringIs(typ, "tool_search_call"), jsonStringIs(typ, "tool_search_output"):
		// A search the server ran: its tools were loaded there, and a chat provider cannot load them.
		if !b.dropHosted {
			return at.refusal(ErrUnsupportedParameter, "execution", " is a tool search the server ran (its "+
				"execution is not \"client\"), whose loaded tools only the Responses API's servers hold, and this "+
				"model's provider has only Chat Completions"+hostedRefusalFix)
		}
		b.leaveOutOnce(len(hostedToolTypes), "tools.tool_search")
		return nil
	case isOneOf(typ, hostedCallItemTypes):
		return b.leaveOutHostedItem(at, indexOf(typ, hostedCallItemTypes))
	case jsonStringIs(typ, "reasoning"):
		return nil
	case jsonStringIs(typ, "item_reference"), typ == nil && f.value[keyID] != nil:
		return NewError(ErrUnsupportedParameter, "input", at.String()+" is an item_reference, a pointer to an "+
			"item stored at OpenAI, and the gateway keeps no stored items: send store: false with the full "+
			"history in input (AI SDK: providerOptions.openai.store = false; LangChain: use_previous_response_id=False)")
	case typ == nil:
		return at.refusal(ErrInvalidParameter, "type", " has neither type nor role: "+
			"send a message (role and content), function_call or function_call_output item")
	case !isJSONString(typ):
		return at.mustBe("type", "a string")
	}
	return at.refusal(ErrUnsupportedParameter, "type", " is a "+quoteForMessage(decodeJSONString(typ))+" item, "+
		"which a provider that has only Chat Completions cannot take (the bridge takes message, function_call, "+
		"custom_tool_call, client tool_search_call, their outputs, and reasoning items): remove it, or route to "+
		"an openai or azure-openai model")
}

// copyTextMessages copies the run of text messages (textMessage) that starts items, separated by bare
// commas, as it is: they are chat messages already, and the commas the chat array's; writeItem would write
// the same bytes, member by member. It returns the bytes and the items it took; 0 when the first item is no
// text message.
func (b *requestBridge) copyTextMessages(items []byte) (n, count int) {
	assistant := false
	for length, isAssistant := textMessage(items); length > 0; {
		n, count, assistant = n+length, count+1, isAssistant
		if n+1 >= len(items) || items[n] != ',' {
			break
		}
		if length, isAssistant = textMessage(items[n+1:]); length > 0 {
			n++ // the comma, copied with the next message
		}
	}
	if count == 0 {
		return 0, 0
	}
	if b.turn != noTurn {
		b.closeTurn()
	}
	comma := ","
	if b.messages == 0 {
		comma = ""
	}
	b.messages += count
	b.inputMessages += count
	run := items[:n]
	if assistant {
		// Left open, as writeMessage leaves it: function calls right after it are this turn's.
		run = run[:len(run)-1]
		b.turn = turnText
	}
	b.writeFramed(comma, run, "")
	return n, count
}

// textMessage is the length of the message item that starts item when it is written the way SDKs write a
// text message, {"role":"user","content":"..."} (role user, assistant or system, nothing else, no
// whitespace), and whether its role is assistant; 0 when the item has another shape.
func textMessage(item []byte) (n int, assistant bool) {
	const rolePrefix, contentKey = `{"role":"`, `","content":"`
	if len(item) < len(rolePrefix)+1 || string(item[:len(rolePrefix)]) != rolePrefix {
		return 0, false
	}
	var role string
	switch item[len(rolePrefix)] {
	case 'u':
		role = "user"
	case 's':
		role = "system"
	case 'a':
		role = "assistant"
	default:
		return 0, false
	}
	i := len(rolePrefix) + len(role)
	if len(item) < i+len(contentKey) || string(item[len(rolePrefix):i]) != role ||
		string(item[i:i+len(contentKey)]) != contentKey {
		return 0, false
	}
	end, _ := jsonscan.StringEnd(item, i+len(contentKey)-1)
	if end < 0 || end >= len(item) || item[end] != '}' {
		return 0, false
	}
	return end + 1, role == "assistant"
}

// messageRole is the chat role of a message item's role, "" for none chat has.
func messageRole(role []byte, developerRole bool) string {
	switch {
	case jsonStringIs(role, "user"):
		return "user"
	case jsonStringIs(role, "assistant"):
		return "assistant"
	case jsonStringIs(role, "system"):
		return "system"
	case jsonStringIs(role, "developer") && developerRole:
		return "developer"
	case jsonStringIs(role, "developer"):
		return "system"
	}
	return ""
}

// writeMessage writes the message item at.
func (b *requestBridge) writeMessage(at paramPath, f *objectFields) *Error {
	content := f.value[keyContent]
	if content == nil || !isJSONString(content) && content[0] != '[' {
		return at.mustBe("content", "a string or an array of content parts")
	}
	role := messageRole(f.value[keyRole], b.opts.developerRole)
	if role == "" {
		return at.mustBe("role", "user, assistant, system or developer")
	}
	b.inputMessages++
	b.openMessage(role)
	end := "}"
	if role == "assistant" {
		// Left open: function calls right after it are this turn's.
		end, b.turn = "", turnText
	}
	if isJSONString(content) {
		b.writeFramed(`,"content":`, content, end)
		return nil
	}
	b.write(`,"content":`)
	var e *Error
	if role == "user" {
		e = b.writeUserParts(at, content)
	} else {
		e = b.writeJoinedText(at, content, role == "assistant")
	}
	b.write(end)
	return e
}

// writeUserParts writes the content parts of the user message at, in chat's form.
func (b *requestBridge) writeUserParts(at paramPath, content []byte) *Error {
	b.writeByte('[')
	parts := newObjectList(content, at, "content")
	var fields objectFields // here, not in b: zeroed only for a message with parts
	for parts.next(&fields) {
		part, f := parts.at(), &fields
		if parts.i > 0 {
			b.writeByte(',')
		}
		typ := f.value[keyType]
		switch {
		case jsonStringIs(typ, "input_text"):
			if !isJSONString(f.value[keyText]) {
				return part.mustBe("text", "a string")
			}
			b.writeFramed(`{"type":"text","text":`, f.value[keyText], "}")
		case jsonStringIs(typ, "input_image"):
			if e := b.writeImage(part, f); e != nil {
				return e
			}
		case jsonStringIs(typ, "input_file"):
			if e := b.writeFile(part, f); e != nil {
				return e
			}
		case jsonStringIs(typ, "output_text"), jsonStringIs(typ, "refusal"):
			return part.refusal(ErrInvalidParameter, "type", " is an assistant's part in a user message: send "+
				"the user's text as input_text")
		case typ == nil:
			return part.refusal(ErrInvalidParameter, "type", " has no type: send input_text, input_image or input_file")
		default:
			return unsupportedPart(part, typ)
		}
	}
	b.writeByte(']')
	return parts.err
}

// unsupportedPart refuses a content part of a type chat messages cannot carry.
func unsupportedPart(part paramPath, typ []byte) *Error {
	name := "a part whose type is not a string"
	if isJSONString(typ) {
		name = "a " + quoteForMessage(decodeJSONString(typ)) + " part"
	}
	return part.refusal(ErrUnsupportedParameter, "type", " is "+name+", which the bridge to Chat Completions "+
		"cannot carry: send input_text, input_image (image_url) or input_file (file_data)")
}

// writeImage writes the input_image part as an image_url part.
func (b *requestBridge) writeImage(part paramPath, f *objectFields) *Error {
	url, detail := f.value[keyImageURL], f.value[keyDetail]
	switch {
	case url == nil && f.value[keyFileID] != nil:
		return part.refusal(ErrUnsupportedParameter, "", " names an image by file_id, a file uploaded to OpenAI, "+
			"which a provider that has only Chat Completions cannot read: send the image as image_url, an https "+
			"or data: URL (data:image/png;base64,...)")
	case url == nil:
		return part.refusal(ErrInvalidParameter, "image_url", " has no image_url: send the image as an https or "+
			"data: URL")
	case !isJSONString(url):
		return part.mustBe("image_url", "a string, an https or data: URL")
	case detail != nil && !isJSONNull(detail) && !isJSONString(detail):
		return part.mustBe("detail", "low, high or auto")
	}
	b.writeFramed(`{"type":"image_url","image_url":{"url":`, url, "")
	// "original" (full resolution) has no chat value; the provider's default applies.
	if detail != nil && !jsonStringIs(detail, "original") {
		b.writeFramed(`,"detail":`, detail, "")
	}
	b.write("}}")
	return nil
}

// writeFile writes the input_file part as a file part, for a target that takes OpenAI's file parts.
func (b *requestBridge) writeFile(part paramPath, f *objectFields) *Error {
	data, filename := f.value[keyFileData], f.value[keyFilename]
	fix := "send the file's text as input_text, or route to an openai or azure-openai model"
	if b.opts.openAIParams {
		fix = "send its content as file_data (a data: URL such as data:application/pdf;base64,...) with a filename"
	}
	switch {
	case data != nil && !b.opts.openAIParams:
		return part.refusal(ErrUnsupportedParameter, "", " is a file, which this model's provider does not take "+
			"in Chat Completions: "+fix)
	case data != nil:
		if !isJSONString(data) || filename != nil && !isJSONString(filename) {
			return part.refusal(ErrInvalidParameter, "file_data", ": file_data and filename must be strings")
		}
		b.writeFramed(`{"type":"file","file":{"file_data":`, data, "")
		if filename != nil {
			b.writeFramed(`,"filename":`, filename, "")
		}
		b.write("}}")
		return nil
	case f.value[keyFileID] != nil:
		return part.refusal(ErrUnsupportedParameter, "", " names a file by file_id, a file uploaded to OpenAI, "+
			"which a provider that has only Chat Completions cannot read: "+fix)
	case f.value[keyFileURL] != nil:
		return part.refusal(ErrUnsupportedParameter, "", " names a file by file_url, which Chat Completions has "+
			"no equivalent for: "+fix)
	}
	return part.refusal(ErrInvalidParameter, "file_data", " has no file_data: "+fix)
}

// writeJoinedText writes the text parts of the content array of the message at as one string, back to
// back: the content of a system or developer message, or of an assistant turn (whose refusal parts count
// as text).
func (b *requestBridge) writeJoinedText(at paramPath, content []byte, assistant bool) *Error {
	b.writeByte('"')
	parts := newObjectList(content, at, "content")
	var fields objectFields // here, not in b: zeroed only for a message with parts
	for parts.next(&fields) {
		part, f := parts.at(), &fields
		typ := f.value[keyType]
		key := keyText
		switch {
		case jsonStringIs(typ, "input_text"), jsonStringIs(typ, "output_text"):
		case assistant && jsonStringIs(typ, "refusal"):
			key = keyRefusal
		case assistant:
			return part.refusal(ErrUnsupportedParameter, "type", " is not a text part, and assistant history is "+
				"text to Chat Completions: send output_text or refusal parts")
		default:
			return part.refusal(ErrUnsupportedParameter, "type", " is not a text part, and a system message takes "+
				"text only: send input_text parts")
		}
		if e := b.writeStringContents(part, f, key); e != nil {
			return e
		}
	}
	b.writeByte('"')
	return parts.err
}

// writeStringContents writes the contents of the string member key of the part at (without its quotes),
// refusing one that is not a string.
func (b *requestBridge) writeStringContents(part paramPath, f *objectFields, key objectKey) *Error {
	text := f.value[key]
	if !isJSONString(text) {
		return part.mustBe(objectKeyNames[key], "a string")
	}
	b.writeRaw(text[1 : len(text)-1])
	return nil
}

// writeFunctionCall writes the function_call item at as a tool call of the open assistant turn, opening
// one if none is; a call of a namespace's member is named as its chat tool is (writeNamespace).
func (b *requestBridge) writeFunctionCall(at paramPath, f *objectFields) *Error {
	callID, name, arguments, namespace := f.value[keyCallID], f.value[keyName], f.value[keyArguments], f.value[keyNamespace]
	switch {
	case !isJSONString(callID):
		return at.mustBe("call_id", "a string")
	case !isJSONString(name):
		return at.mustBe("name", "a string")
	case !isJSONString(arguments):
		return at.mustBe("arguments", "a string (the arguments as JSON text)")
	case namespace != nil && !isPlainToolName(namespace):
		return at.mustBe("namespace", "a name of letters, digits, _ and - (at most 64), as chat tool names are")
	}
	b.openToolCall()
	b.writeFramed(`{"id":`, callID, `,"type":"function","function":{"name":`)
	if namespace == nil {
		b.writeRaw(name)
	} else {
		chatName, e := b.chatToolName(at, name, namespace)
		if e != nil {
			return e
		}
		b.writeFramed(`"`, chatName, `"`)
	}
	b.writeFramed(`,"arguments":`, arguments, "}}")
	return nil
}

// writeFunctionOutput writes the function_call_output item at as a tool message.
func (b *requestBridge) writeFunctionOutput(at paramPath, f *objectFields) *Error {
	callID, output := f.value[keyCallID], f.value[keyOutput]
	if !isJSONString(callID) {
		return at.mustBe("call_id", "a string")
	}
	if output == nil || !isJSONString(output) && output[0] != '[' {
		return at.mustBe("output", "a string or an array of input_text parts")
	}
	b.inputMessages++
	b.openMessage("tool")
	b.writeFramed(`,"tool_call_id":`, callID, `,"content":`)
	if isJSONString(output) {
		b.writeFramed("", output, "}")
		return nil
	}
	b.writeByte('"')
	parts := newObjectList(output, at, "output")
	var fields objectFields
	for parts.next(&fields) {
		part, typ := parts.at(), fields.value[keyType]
		if !jsonStringIs(typ, "input_text") && !jsonStringIs(typ, "output_text") {
			return part.refusal(ErrUnsupportedParameter, "type", " is not a text part, and a tool message in "+
				"Chat Completions holds text only: return the tool's result as text (input_text)")
		}
		if e := b.writeStringContents(part, &fields, keyText); e != nil {
			return e
		}
	}
	b.write(`"}`)
	return parts.err
}

// maxSchemaDepth is the deepest a function tool's parameters may nest: in the chat request they sit four
// levels down (the body, tools, the tool, function), and the whole must stay within jsonscan.MaxDepth.
const maxSchemaDepth = jsonscan.MaxDepth - 4

// writeToolChoice writes tool_choice in chat's form.
func (b *requestBridge) writeToolChoice(raw []byte) *Error {
	switch {
	case isJSONNull(raw):
		return nil
	case jsonStringIs(raw, "none"), jsonStringIs(raw, "auto"), jsonStringIs(raw, "required"):
		b.writeMember("tool_choice", raw)
		return nil
	case raw[0] != '{':
		return fieldPath("tool_choice").mustBe("", "none, auto, required or an object")
	}
	var f objectFields
	if e := readObjectAt(raw, &f, fieldPath("tool_choice")); e != nil {
		return e
	}
	switch {
	case jsonStringIs(f.value[keyType], "function"):
		if !isJSONString(f.value[keyName]) {
			return fieldPath("tool_choice").mustBe("name", "a string")
		}
		b.key("tool_choice")
		b.writeFramed(`{"type":"function","function":{"name":`, f.value[keyName], "}}")
		return nil
	case jsonStringIs(f.value[keyType], "custom"):
		if !isJSONString(f.value[keyName]) {
			return fieldPath("tool_choice").mustBe("name", "a string")
		}
		b.key("tool_choice")
		b.writeChoiceOf(f.value[keyName], true)
		return nil
	case jsonStringIs(f.value[keyType], "allowed_tools"):
		return b.writeAllowedTools(&f)
	case jsonStringIs(f.value[keyType], "tool_search"):
		// The tools are written before tool_choice: a client tool_search is among them by now.
		if tool := b.tools.lookup([]byte(toolSearchChatName)); tool == nil || tool.shape != toolSearchShape {
			return NewError(ErrUnsupportedParameter, "tool_choice", "tool_choice names tool_search, and the request "+
				"declares no tool_search tool with execution \"client\" (a search run by the server cannot run "+
				"toward a provider that has only Chat Completions): declare one, or choose none, auto or required")
		}
		b.key("tool_choice")
		b.write(`{"type":"function","function":{"name":"` + toolSearchChatName + `"}}`)
		return nil
	}
	return NewError(ErrUnsupportedParameter, "tool_choice", "tool_choice names a tool that is neither a function, "+
		"a custom tool nor a client tool_search (a hosted or built-in tool), which a provider that has only Chat "+
		"Completions cannot run: choose none, auto, required, a function or a custom tool, or route to an openai "+
		"or azure-openai model")
}

// writeChoiceOf writes the chat form of a choice of the tool named name (a JSON string literal): a custom
// tool (custom) is one of OpenAI's chat custom tools where the target has them, else the function it became.
func (b *requestBridge) writeChoiceOf(name []byte, custom bool) {
	if custom && b.opts.customTools {
		b.writeFramed(`{"type":"custom","custom":{"name":`, name, "}}")
		return
	}
	b.writeFramed(`{"type":"function","function":{"name":`, name, "}}")
}

// writeAllowedTools writes an allowed_tools choice in OpenAI chat's form, its tools nested as chat's are.
func (b *requestBridge) writeAllowedTools(f *objectFields) *Error {
	at := fieldPath("tool_choice")
	switch {
	case !b.opts.openAIParams:
		return NewError(ErrUnsupportedParameter, "tool_choice", "tool_choice allowed_tools has no Chat "+
			"Completions form at this model's provider: send only the allowed tools in tools, with tool_choice "+
			"auto or required")
	case !isJSONString(f.value[keyMode]):
		return at.mustBe("mode", "auto or required")
	case f.value[keyTools] == nil || f.value[keyTools][0] != '[':
		return at.mustBe("tools", "an array of tools")
	}
	b.key("tool_choice")
	b.writeFramed(`{"type":"allowed_tools","allowed_tools":{"mode":`, f.value[keyMode], `,"tools":[`)
	tools := newObjectList(f.value[keyTools], fieldPath("tool_choice.tools"), "")
	allowed, leftOut := 0, 0
	for tools.next(&b.item) {
		at, t := tools.at(), &b.item
		typ := t.value[keyType]
		custom := jsonStringIs(typ, "custom")
		if !custom && !jsonStringIs(typ, "function") {
			// A hosted tool the target drops from tools is left out of the allowed ones too (named once, as
			// there): refusing it would tell the client to have the operator set what is already set.
			if b.dropHosted && isOneOf(typ, hostedToolTypes) {
				i := indexOf(typ, hostedToolTypes)
				b.leaveOutOnce(i, "tools."+hostedToolTypes[i])
				leftOut++
				continue
			}
			return unsupportedTool(at, t)
		}
		if !isJSONString(t.value[keyName]) {
			return at.mustBe("name", "a string")
		}
		if allowed > 0 {
			b.writeByte(',')
		}
		allowed++
		b.writeChoiceOf(t.value[keyName], custom)
	}
	if tools.err == nil && allowed == 0 && leftOut > 0 {
		return NewError(ErrUnsupportedParameter, "tool_choice.tools", "tool_choice allowed_tools allows only "+
			"hosted tools, which this model's provider cannot run (it has only Chat Completions) and its "+
			"hosted_tools \"drop\" leaves out: allow a function or custom tool, choose none or auto, or route "+
			"to an openai or azure-openai model")
	}
	b.write("]}}")
	return tools.err
}

// writeText writes text.format as response_format and text.verbosity as verbosity (OpenAI targets).
func (b *requestBridge) writeText(raw []byte) *Error {
	if isJSONNull(raw) {
		return nil
	}
	var text objectFields
	if e := readObjectAt(raw, &text, fieldPath("text")); e != nil {
		return e
	}
	if format := text.value[keyFormat]; format != nil {
		var f objectFields
		if e := readObjectAt(format, &f, fieldPath("text.format")); e != nil {
			return e
		}
		switch typ := f.value[keyType]; {
		case jsonStringIs(typ, "text"):
			// Chat's default.
		case jsonStringIs(typ, "json_object"):
			b.key("response_format")
			b.write(`{"type":"json_object"}`)
		case jsonStringIs(typ, "json_schema"):
			// Responses writes the schema's members flat in format; chat nests them under json_schema.
			b.key("response_format")
			b.write(`{"type":"json_schema","json_schema":{`)
			b.nested = true
			for _, k := range [...]objectKey{keyName, keySchema, keyStrict, keyDescription} {
				b.copyUnlessNull(objectKeyNames[k], f.value[k])
			}
			b.nested = false
			b.write("}}")
		default:
			return fieldPath("text.format").mustBe("type", "text, json_object or json_schema")
		}
	}
	b.copyOrLeaveOut(b.opts.openAIParams, "verbosity", "text.verbosity", text.value[keyVerbosity])
	return nil
}

// copyOrLeaveOut writes the member name: raw where the target takes it (takes); otherwise a value that is
// not null is left out, and recorded as field.
func (b *requestBridge) copyOrLeaveOut(takes bool, name, field string, raw []byte) {
	if takes {
		b.copyUnlessNull(name, raw)
	} else if raw != nil && !isJSONNull(raw) {
		b.leaveOut(field)
	}
}

// writeReasoning writes reasoning.effort as reasoning_effort where the target takes it; summary has no chat
// equivalent.
func (b *requestBridge) writeReasoning(raw []byte) *Error {
	if isJSONNull(raw) {
		return nil
	}
	var f objectFields
	if e := readObjectAt(raw, &f, fieldPath("reasoning")); e != nil {
		return e
	}
	b.copyOrLeaveOut(b.opts.reasoningEffort, "reasoning_effort", "reasoning.effort", f.value[keyEffort])
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

//go:build !aidialect_no_bridge

package translate

// The answer half of the Responses bridge: a Chat Completions answer becomes a Response object. The writers
// of the Response object and of its output items are shared with the stream converter
// (responses_stream.go), so that a JSON answer and the terminal event of a stream have one shape. They are
// methods of bridgeWriter, whose out-of-line writes keep the compiled module small; the Response's members
// that repeat the request are written from a table (responseEchoes).
//
// Text is never decoded: every string the Response repeats of the chat answer (text, arguments, names,
// ids) is copied as the JSON string literal the upstream wrote, which the validating scan of the answer (or
// of the stream event) has checked. Past that scan, only the few members the Response needs are located.

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// bridgeHash is the 64-bit FNV-1a hash of b, mixed. A bridged Response's ids (resp_, msg_, rs_, fc_, call_) are
// derived from it: the chat id when the upstream gives one, else the chat body. They must be deterministic,
// for golden files compare bytes, yet differ from one answer to the next, which the upstream's own id
// ensures; a stream derives them the same way, so its created and terminal events and a JSON answer agree.
func bridgeHash(b []byte) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	// FNV-1a leaves ids that differ in their last bytes (chatcmpl-a, chatcmpl-b) with hashes that differ in
	// a few digits; splitmix64's finaliser spreads every input bit over the whole value.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// appendHashHex writes h as 16 lowercase hex digits.
func appendHashHex(dst []byte, h uint64) []byte {
	const digits = "0123456789abcdef"
	var hex [16]byte
	for i := range hex {
		hex[i] = digits[h>>(60-4*i)&0xf]
	}
	return append(dst, hex[:]...)
}

// writeHash writes h as 16 lowercase hex digits.
//
//go:noinline
func (w *bridgeWriter) writeHash(h uint64) { w.out = appendHashHex(w.out, h) }

// bridgedItemKind is the type of an output item a chat answer yields.
type bridgedItemKind uint8

const (
	reasoningItem      bridgedItemKind = iota // from reasoning_content
	messageItem                               // from content and refusal
	functionCallItem                          // from one tool call
	customToolCallItem                        // from one call of a custom tool (responses_tools.go)
	toolSearchCallItem                        // from one call of a client tool_search
	bridgedItemKinds
)

// itemIDPrefixes are the prefixes of the items' ids, by kind.
var itemIDPrefixes = [bridgedItemKinds]string{reasoningItem: "rs_", messageItem: "msg_", functionCallItem: "fc_",
	customToolCallItem: "ctc_", toolSearchCallItem: "tsc_"}

// isCall reports whether the item is a tool call.
func (it *bridgedItem) isCall() bool { return it.kind >= functionCallItem }

// bridgedItem is one output item of a bridged Response. Its strings are JSON string contents as the
// upstream escaped them (a literal without its quotes): views of the chat answer in bridgeAnswer, the
// stream converter's own buffers in responsesEvents.
type bridgedItem struct {
	kind bridgedItemKind
	// ordinal counts the items of its kind before it; it makes the item's id unique within the Response.
	ordinal int
	// callNumber counts a call item's calls of every kind before it; it makes a generated call_id unique
	// within the Response (the ordinal would not: a function_call and a custom_tool_call both have 0).
	callNumber int
	// text is the message's output_text or the reasoning item's summary text.
	text []byte
	// refusal is the message's refusal text.
	refusal []byte
	// textPart and refusalPart are the message's content indexes of its output_text and refusal parts, -1
	// when it has none. Parts appear in the order their first delta came.
	textPart, refusalPart int
	// callID is the chat tool-call id; empty (or already used by an earlier call) means a generated one.
	callID []byte
	// name is the call's name: the chat name, or the name its tool has in the request (bridgedTools);
	// namespace, when not empty, the namespace the tool belongs to.
	name, namespace []byte
	// arguments are a function call's arguments, a custom call's input, a tool search's arguments (once
	// converted: an object).
	arguments []byte
	// shape is how the call's chat form becomes the item (bridgedTools); converted: its arguments were made
	// the item's (a custom call's input, a tool search's object).
	shape     toolCallShape
	converted bool
	// open: the item's .done events are still to come (stream only).
	open bool
}

// parts is the message's content part count.
func (it *bridgedItem) parts() int {
	n := 0
	if it.textPart >= 0 {
		n++
	}
	if it.refusalPart >= 0 {
		n++
	}
	return n
}

// appendItemID writes the item's id without quotes: rs_<h>, msg_<h> (with _<ordinal> from the second of
// its kind on, which only a reasoning item can have) and fc_<h>_<ordinal>. Stream events name their item
// by it, one after the other: it appends directly.
func appendItemID(dst []byte, it *bridgedItem, h uint64) []byte {
	dst = appendHashHex(append(dst, itemIDPrefixes[it.kind]...), h)
	if it.isCall() || it.ordinal > 0 {
		dst = strconv.AppendInt(append(dst, '_'), int64(it.ordinal), 10)
	}
	return dst
}

// writeItemID writes the item's id without quotes (appendItemID).
func (w *bridgeWriter) writeItemID(it *bridgedItem, h uint64) { w.out = appendItemID(w.out, it, h) }

// takesCallID reports whether an upstream's tool-call id (JSON string contents) can be a call's call_id in
// the Response whose ids carry h: not empty, not one an earlier call has (ids keeps them), and not of the
// form the bridge generates, call_<h>_<n>: an upstream that named one call so, and gave the next none, would
// otherwise give two calls one call_id. The form is compared as the client reads the id (decoded).
func takesCallID(id []byte, h uint64, ids *callIDSet) bool {
	if len(id) == 0 {
		return false
	}
	var space [32]byte
	generated := appendHashHex(append(space[:0], "call_"...), h)
	generated = append(generated, '_')
	decoded := id
	if bytes.IndexByte(id, '\\') >= 0 {
		var ok bool
		if decoded, ok = jsonscan.AppendUnquoted(nil, append(append([]byte{'"'}, id...), '"')); !ok {
			decoded = id
		}
	}
	return !bytes.HasPrefix(decoded, generated) && ids.add(id)
}

// writeCallID writes the call's call_id without quotes: the chat tool-call id, or call_<h>_<callNumber> when
// the upstream gave none or repeated one (clients answer a call by its call_id, so it must exist and be
// unique).
func (w *bridgeWriter) writeCallID(it *bridgedItem, h uint64) {
	if len(it.callID) > 0 {
		w.writeRaw(it.callID)
		return
	}
	w.write("call_")
	w.writeHash(h)
	w.writeByte('_')
	w.writeInt(int64(it.callNumber))
}

// The content parts of output items, up to their text (JSON string contents), which `"}` closes.
const (
	textPartPrefix    = `{"type":"output_text","annotations":[],"logprobs":[],"text":"`
	refusalPartPrefix = `{"type":"refusal","refusal":"`
	summaryPartPrefix = `{"type":"summary_text","text":"`
	partEnd           = `"}`
)

// writeMessagePart writes the message's content part number part: its output_text or its refusal.
func (w *bridgeWriter) writeMessagePart(it *bridgedItem, part int) {
	if part == it.textPart {
		w.writeFramed(textPartPrefix, it.text, partEnd)
	} else {
		w.writeFramed(refusalPartPrefix, it.refusal, partEnd)
	}
}

// writeOutputItem writes the item as output_item.added announces it (added: the message without content,
// the reasoning without summary, the call without arguments) or in full, with status (messages and calls).
func (w *bridgeWriter) writeOutputItem(it *bridgedItem, h uint64, status string, added bool) {
	w.write(`{"id":"`)
	w.writeItemID(it, h)
	switch it.kind {
	case reasoningItem:
		w.write(`","type":"reasoning","summary":[`)
		if !added {
			w.writeFramed(summaryPartPrefix, it.text, partEnd)
		}
		w.write("]}")
		return
	case messageItem:
		w.write(`","type":"message","status":"`)
		w.write(status)
		w.write(`","role":"assistant","content":[`)
		if !added {
			for part := range it.parts() {
				if part > 0 {
					w.writeByte(',')
				}
				w.writeMessagePart(it, part)
			}
		}
		w.write("]}")
		return
	}
	switch it.kind {
	case customToolCallItem:
		w.write(`","type":"custom_tool_call","status":"`)
		w.write(status)
		w.write(`","input":"`)
		if !added {
			w.writeRaw(it.arguments)
		}
	case toolSearchCallItem:
		w.write(`","type":"tool_search_call","status":"`)
		w.write(status)
		w.write(`","execution":"client","arguments":`)
		if added || !it.converted {
			w.write(`{}`)
		} else {
			w.writeRaw(it.arguments)
		}
		w.write(`,"call_id":"`)
		w.writeCallID(it, h)
		w.write(`"}`)
		return
	default:
		w.write(`","type":"function_call","status":"`)
		w.write(status)
		w.write(`","arguments":"`)
		if !added {
			w.writeRaw(finalArguments(it.arguments))
		}
	}
	w.write(`","call_id":"`)
	w.writeCallID(it, h)
	w.writeFramed(`","name":"`, it.name, `"`)
	if len(it.namespace) > 0 {
		w.writeFramed(`,"namespace":"`, it.namespace, `"`)
	}
	w.writeByte('}')
}

// resolveCall sets what the call item becomes from the tool its chat name names in the request (nil when
// the request declared none by that name: a function_call named as in chat). native: the chat call is a
// custom tool call (OpenAI's chat custom tools). own: the item's name is its own buffer, and the tool's name
// is copied into it (a stream's items keep their buffers from one stream to the next); otherwise the name
// becomes a view of the table's.
//
// The form of the chat call decides how its payload is read, whatever the tool is: a native custom call's
// input is the item's input (streamed as input deltas), and a function call of a custom tool carries the
// input in its arguments even toward an API that declared the tool natively. An upstream that called a
// function tool natively would otherwise get function_call_arguments deltas on a custom_tool_call item.
func (it *bridgedItem) resolveCall(tool *bridgedTool, tools *bridgedTools, native, own bool) {
	it.kind, it.shape = functionCallItem, functionCallShape
	if native {
		it.kind, it.shape = customToolCallItem, customCallShape
	}
	if tool == nil {
		return
	}
	switch {
	case native:
	case tool.shape == customCallShape, tool.shape == customAsFunctionShape:
		it.kind, it.shape = customToolCallItem, customAsFunctionShape
	case tool.shape == toolSearchShape:
		it.kind, it.shape = toolSearchCallItem, toolSearchShape
	}
	switch {
	case tool.name.end == tool.name.start:
	case own:
		it.name = append(it.name[:0], tools.text(tool.name)...)
	default:
		it.name = tools.text(tool.name)
	}
	it.namespace = tools.text(tool.namespace)
}

// convertArguments makes a custom call's or a tool search's chat arguments (JSON string contents of JSON
// text) what its item carries: a custom call's input is the arguments' string member input (the function the
// custom tool became takes it), or the arguments themselves when the model wrote something else; a tool
// search's arguments are the object, {} when the model wrote no object. A native custom call's input is its
// own already. scratch is a buffer for the decoded arguments, returned for reuse. own: the item's arguments
// are its own buffer, and the result is copied into it; otherwise the result is a view of scratch or of the
// arguments, valid until scratch is reused.
func (it *bridgedItem) convertArguments(scratch []byte, own bool) []byte {
	if it.converted || it.shape != customAsFunctionShape && it.shape != toolSearchShape {
		return scratch
	}
	it.converted = true
	scratch = append(append(append(scratch[:0], '"'), it.arguments...), '"')
	literal := len(scratch)
	scratch, ok := jsonscan.AppendUnquoted(scratch, scratch)
	args := scratch[literal:]
	isObject := ok && len(args) > 0 && jsonscan.Valid(args)
	if isObject {
		args = bytes.TrimSpace(args)
		isObject = args[0] == '{'
	}
	if isObject && it.shape == toolSearchShape {
		// The object goes into the item as it is, and in a stream into one data: line, which a line break
		// would end (the client would read a cut event): in valid JSON a CR or LF is whitespace between
		// tokens, and a space means the same.
		for i, c := range args {
			if c == '\r' || c == '\n' {
				args[i] = ' '
			}
		}
	}
	// A custom call's input stays the arguments when the model wrote no object with one.
	var result []byte
	switch {
	case it.shape == toolSearchShape && isObject:
		result = args
	case it.shape == toolSearchShape:
		result = emptyArguments
	case isObject:
		var input [1][]byte
		var table [8]jsonscan.Member
		lookupMembers(args, table[:0], customInputKeys, input[:])
		if s, ok := jsonStringContents(input[0]); ok {
			result = s
		}
	}
	switch {
	case result == nil:
	case own:
		it.arguments = append(it.arguments[:0], result...)
	default:
		it.arguments = result
	}
	return scratch
}

// customInputKeys is the member of a custom tool's function arguments that holds its input.
var customInputKeys = []string{"input"}

// emptyArguments are the arguments of a call without any: "{}", as OpenAI sends for a call without
// parameters, since clients parse the arguments as a JSON object.
var emptyArguments = []byte("{}")

// finalArguments is a call's complete arguments as written: emptyArguments for none.
func finalArguments(arguments []byte) []byte {
	if len(arguments) == 0 {
		return emptyArguments
	}
	return arguments
}

// bridgedUsage is the Response's usage, from the chat usage object.
type bridgedUsage struct {
	input, cached, output, reasoning, total int64
}

// readBridgedUsage reads a chat usage object; zeros for what it lacks. The total is the sum when the
// upstream does not give it.
func readBridgedUsage(raw []byte) bridgedUsage {
	var u bridgedUsage
	if len(raw) == 0 || raw[0] != '{' {
		return u
	}
	total := int64(-1)
	gjson.Parse(readOnlyString(raw)).ForEach(func(key, value gjson.Result) bool {
		switch key.Str {
		case "prompt_tokens":
			u.input = value.Int()
		case "completion_tokens":
			u.output = value.Int()
		case "total_tokens":
			total = value.Int()
		case "prompt_tokens_details":
			u.cached = value.Get("cached_tokens").Int()
		case "completion_tokens_details":
			u.reasoning = value.Get("reasoning_tokens").Int()
		}
		return true
	})
	u.total = total
	if total < 0 {
		u.total = u.input + u.output
		if u.total < u.input || u.total < u.output { // an upstream's absurd counts must not wrap negative
			u.total = math.MaxInt64
		}
	}
	return u
}

// usageMembers are the members of a Response's usage up to each count, in the order of bridgedUsage's.
var usageMembers = [...]string{`{"input_tokens":`, `,"input_tokens_details":{"cached_tokens":`,
	`},"output_tokens":`, `,"output_tokens_details":{"reasoning_tokens":`, `},"total_tokens":`}

// writeUsage writes usage in the Responses shape, both details objects always: Codex rejects a details
// object without its count, and the AI SDK requires the token counts to be numbers.
func (w *bridgeWriter) writeUsage(u *bridgedUsage) {
	counts := [len(usageMembers)]int64{u.input, u.cached, u.output, u.reasoning, u.total}
	for i, member := range usageMembers {
		w.write(member)
		w.writeInt(counts[i])
	}
	w.writeByte('}')
}

// Response statuses a bridge writes.
const (
	responseStatusInProgress = "in_progress"
	responseStatusCompleted  = "completed"
	responseStatusIncomplete = "incomplete"
	responseStatusFailed     = "failed"
)

// bridgedResponse is what a Response object says beyond its output items and its request's echo.
type bridgedResponse struct {
	hash uint64
	// createdAt is the chat answer's created (a JSON number as written); model its model (a JSON string).
	createdAt, model []byte
	// serviceTier is the tier the upstream reports (a JSON string), nil when it reports none.
	serviceTier []byte
	status      string
	// incompleteReason is incomplete_details.reason, "" for none.
	incompleteReason string
	// failure is the error message of a failed Response, a JSON string literal.
	failure []byte
	// usage is nil while the Response is in progress (usage: null).
	usage *bridgedUsage
}

// finishStatus maps a chat finish_reason (the JSON string contents) to the Response's status and
// incomplete_details.reason. Stop, tool_calls, function_call, none and anything unknown complete the
// Response: the answer ended the way the model meant it to.
func finishStatus(reason []byte) (status, incompleteReason string) {
	switch string(reason) {
	case "length":
		return responseStatusIncomplete, "max_output_tokens"
	case "content_filter":
		return responseStatusIncomplete, "content_filter"
	}
	return responseStatusCompleted, ""
}

// writeEchoed writes the client's value of a request field, or def when it sent none or null: a Response
// states the setting in effect, which for an unset field is the API's default. A value the client wrote
// over several lines has them joined: in a stream it goes into one data: line, which a line break would end
// (in JSON a CR or LF can only be whitespace between tokens, so a space means the same).
func (w *bridgeWriter) writeEchoed(v []byte, def string) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		w.write(def)
		return
	}
	start := len(w.out)
	w.writeRaw(v)
	if bytes.IndexAny(v, "\r\n") >= 0 {
		for i, c := range w.out[start:] {
			if c == '\r' || c == '\n' {
				w.out[start+i] = ' '
			}
		}
	}
}

// defaultEcho stands in for a missing echo: every field then takes its default.
var defaultEcho responsesEcho

// echoedMember is a member of a Response that states a request setting: what precedes its value (the
// member's name, and any fixed members before it), the echo slot the value comes from, and the API's
// default. A slot of echoNothing is usage, which is the Response's own.
type echoedMember struct {
	prefix string
	slot   echoSlot
	def    string
}

// The members of a Response that state request settings, before its output and after it, in the order
// OpenAI writes them.
var (
	responseHeadEchoes = [...]echoedMember{
		{`,"instructions":`, echoInstructions, "null"},
		{`,"max_output_tokens":`, echoMaxOutputTokens, "null"},
		{`,"max_tool_calls":`, echoMaxToolCalls, "null"},
		{`,"model":`, echoModel, `""`},
	}
	responseTailEchoes = [...]echoedMember{
		{`],"parallel_tool_calls":`, echoParallelToolCalls, "true"},
		{`,"previous_response_id":null,"prompt_cache_key":`, echoPromptCacheKey, "null"},
		{`,"reasoning":`, echoReasoning, `{"effort":null,"summary":null}`},
		{`,"safety_identifier":`, echoSafetyIdentifier, "null"},
		{`,"service_tier":`, echoServiceTier, `"default"`},
		// A chat-only provider stores nothing, whatever the client asked.
		{`,"store":false,"temperature":`, echoTemperature, "1"},
		{`,"text":`, echoText, `{"format":{"type":"text"}}`},
		{`,"tool_choice":`, echoToolChoice, `"auto"`},
		{`,"tools":`, echoTools, "[]"},
		{`,"top_logprobs":`, echoTopLogprobs, "0"},
		{`,"top_p":`, echoTopP, "1"},
		{`,"truncation":`, echoTruncation, `"disabled"`},
		{`,"usage":`, echoNothing, ""},
		{`,"user":`, echoUser, "null"},
		{`,"metadata":`, echoMetadata, "{}"},
	}
)

// writeEchoedMembers writes members, each value the echo's unless the Response has its own: the model and
// the service tier the upstream reports, and the usage (null while the Response is in progress).
func (w *bridgeWriter) writeEchoedMembers(members []echoedMember, r *bridgedResponse, echo *responsesEcho) {
	if echo == nil {
		echo = &defaultEcho
	}
	for i := range members {
		m := &members[i]
		w.write(m.prefix)
		switch {
		case m.slot == echoModel && len(r.model) > 2: // a JSON string, not ""
			w.writeRaw(r.model)
		case m.slot == echoServiceTier && r.serviceTier != nil:
			w.writeRaw(r.serviceTier) // the tier that served the answer, as OpenAI reports it
		case m.slot != echoNothing:
			w.writeEchoed(*echo.slot(m.slot), m.def)
		case r.usage != nil:
			w.writeUsage(r.usage)
		default:
			w.write("null")
		}
	}
}

// writeResponseHead writes a Response object up to the opening of its output array.
func (w *bridgeWriter) writeResponseHead(r *bridgedResponse, echo *responsesEcho) {
	w.write(`{"id":"resp_`)
	w.writeHash(r.hash)
	w.write(`","object":"response","created_at":`)
	w.writeEchoed(r.createdAt, "0")
	w.write(`,"status":"`)
	w.write(r.status)
	w.write(`","background":false,"completed_at":`)
	if r.status == responseStatusCompleted {
		// The upstream gives one timestamp, and golden files must be deterministic: a bridged Response
		// completes when it was created, as far as its client can tell.
		w.writeEchoed(r.createdAt, "0")
	} else {
		w.write("null")
	}
	w.write(`,"error":`)
	if r.status == responseStatusFailed {
		w.writeFramed(`{"code":"server_error","message":`, r.failure, "}")
	} else {
		w.write("null")
	}
	w.write(`,"incomplete_details":`)
	if r.incompleteReason != "" {
		w.write(`{"reason":"`)
		w.write(r.incompleteReason)
		w.write(`"}`)
	} else {
		w.write("null")
	}
	w.writeEchoedMembers(responseHeadEchoes[:], r, echo)
	w.write(`,"output":[`)
}

// writeResponseTail closes the output array and writes the rest of the Response object but its closing
// brace (a JSON answer adds output_text first).
func (w *bridgeWriter) writeResponseTail(r *bridgedResponse, echo *responsesEcho) {
	w.writeEchoedMembers(responseTailEchoes[:], r, echo)
}

// appendResponseHead appends writeResponseHead's bytes to dst.
func appendResponseHead(dst []byte, r *bridgedResponse, echo *responsesEcho) []byte {
	w := bridgeWriter{out: dst}
	w.writeResponseHead(r, echo)
	return w.out
}

// appendResponseTail appends writeResponseTail's bytes to dst.
func appendResponseTail(dst []byte, r *bridgedResponse, echo *responsesEcho) []byte {
	w := bridgeWriter{out: dst}
	w.writeResponseTail(r, echo)
	return w.out
}

// readOnlyString is b as a string without a copy, for gjson's reads; the string must not outlive b's contents.
func readOnlyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// jsonStringContents is the contents of a JSON string literal (without its quotes, escapes kept), and whether v
// is one.
func jsonStringContents(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// lookupMembers fills values[i] with the value of keys[i] among obj's top-level members (the first of a
// repeated key; nil when absent) and returns the member table for reuse, and whether obj is an object. obj
// must be part of a validated JSON text: Skim then only locates.
func lookupMembers(obj []byte, table []jsonscan.Member, keys []string, values [][]byte) ([]jsonscan.Member, bool) {
	clear(values)
	table, err := jsonscan.Skim(obj, table[:0], maxTopLevelMembers)
	if err != nil {
		return table, false
	}
	for i := range table {
		m := &table[i]
		key := decodedKey(m, obj)
		for i, k := range keys {
			if values[i] == nil && string(key) == k {
				values[i] = m.Value(obj)
				break
			}
		}
	}
	return table, true
}

// firstArrayElement is the first element of a JSON array, nil when v is not an array or is empty.
func firstArrayElement(v []byte) []byte {
	first, _ := nextElement(v, 0)
	return first
}

// isNonEmptyArray reports whether v is a JSON array with at least one element.
func isNonEmptyArray(v []byte) bool {
	return len(v) > 0 && v[0] == '[' && !isEmptyArray(v)
}

// writeContentText writes a chat message content's text as JSON string contents: a string's own, or the
// text of an array's parts (some providers answer with parts), one after the other.
func (w *bridgeWriter) writeContentText(content []byte) {
	if s, ok := jsonStringContents(content); ok {
		w.writeRaw(s)
		return
	}
	for part, pos := nextElement(content, 0); part != nil; part, pos = nextElement(content, pos) {
		if t := gjson.Get(readOnlyString(part), "text"); t.Type == gjson.String {
			if s, ok := jsonStringContents(readOnlyBytes(t.Raw)); ok {
				w.writeRaw(s)
			}
		}
	}
}

// Keys read from a chat answer and its choices; fixed arrays, so lookup's value tables stay on the stack.
var (
	chatAnswerKeys  = []string{"id", "created", "model", "choices", "usage", "service_tier"}
	chatChoiceKeys  = []string{"message", "finish_reason"}
	chatMessageKeys = []string{"content", "refusal", "reasoning_content", "tool_calls"}
	chatCallKeys    = []string{"id", "function", "index", "custom"}
	chatFuncKeys    = []string{"name", "arguments"}
	chatCustomKeys  = []string{"name", "input"}
)

// The errors of a chat answer that cannot become a Response; the client gets a failed Response instead
// (answerBridged).
var (
	errChatAnswerNotJSON   = errors.New("the chat answer to bridge into a Response is not valid JSON")
	errChatAnswerNotObject = errors.New("the chat answer to bridge into a Response is not a JSON object")
	// The bound a stream has too (maxBridgedItems).
	errChatAnswerTooManyCalls = errors.New("the chat answer to bridge into a Response has more than 1024 tool calls")
)

// bridgeAnswer turns a successful chat.completion answer (OpenAI's shape, already edited for the client's
// dialect; choice 0 is the answer) into a Response object, written into dst[:0]. An answer that is not one
// JSON object is an error: the caller forwards it as it came, and counts it. ids tells the tool calls' ids
// apart (the Bridge's, kept for reuse; nil: one for this call).
func bridgeAnswer(dst, chat []byte, echo *responsesEcho, ids *callIDSet) ([]byte, error) {
	// Valid, then Skim: Members would validate and locate in one pass, but its table escapes to the heap,
	// and this function has no buffer of its own to keep one in; Skim's stays on the stack.
	if !jsonscan.Valid(chat) {
		return nil, errChatAnswerNotJSON
	}
	var tableSpace [32]jsonscan.Member
	var top [6][]byte
	if _, ok := lookupMembers(chat, tableSpace[:0], chatAnswerKeys, top[:]); !ok {
		return nil, errChatAnswerNotObject
	}
	id, created, model, choices, usage, tier := top[0], top[1], top[2], top[3], top[4], top[5]

	var r bridgedResponse
	if s, ok := jsonStringContents(id); ok && len(s) > 0 {
		r.hash = bridgeHash(s)
	} else {
		r.hash = bridgeHash(chat)
	}
	if len(created) > 0 && (created[0] == '-' || created[0] >= '0' && created[0] <= '9') {
		r.createdAt = created
	}
	if _, ok := jsonStringContents(model); ok {
		r.model = model
	}
	if _, ok := jsonStringContents(tier); ok {
		r.serviceTier = tier
	}
	u := readBridgedUsage(usage)
	r.usage = &u

	var choice [2][]byte
	var inner [16]jsonscan.Member
	if c := firstArrayElement(choices); len(c) > 0 && c[0] == '{' {
		lookupMembers(c, inner[:0], chatChoiceKeys, choice[:])
	}
	var reason []byte
	if s, ok := jsonStringContents(choice[1]); ok {
		reason = s
	}
	r.status, r.incompleteReason = finishStatus(reason)
	var fields [4][]byte
	if m := choice[0]; len(m) > 0 && m[0] == '{' {
		lookupMembers(m, inner[:0], chatMessageKeys, fields[:])
	}
	content, refusal, reasoning, toolCalls := fields[0], fields[1], fields[2], fields[3]

	w := bridgeWriter{out: dst[:0]}
	w.writeResponseHead(&r, echo)
	items := 0
	if s, ok := jsonStringContents(reasoning); ok && len(s) > 0 {
		it := bridgedItem{kind: reasoningItem, text: s}
		w.writeOutputItem(&it, r.hash, "", false)
		items++
	}
	// The text is a view of the answer when content is a string; an array of parts (rare: OpenAI-shaped
	// answers carry a string) is joined into a buffer of its own.
	text, _ := jsonStringContents(content)
	if len(content) > 0 && content[0] == '[' {
		joined := bridgeWriter{}
		joined.writeContentText(content)
		text = joined.out
	}
	refusalText, _ := jsonStringContents(refusal)
	calls := isNonEmptyArray(toolCalls)
	messageStatus := responseStatusCompleted
	if r.status == responseStatusIncomplete {
		messageStatus = responseStatusIncomplete
	}
	// A message item carries the text or the refusal; an answer with nothing at all still gets an empty
	// one, so that clients find the message they expect.
	if len(text) > 0 || len(refusalText) > 0 || items == 0 && !calls {
		it := bridgedItem{kind: messageItem, text: text, refusal: refusalText, textPart: -1, refusalPart: -1}
		if len(text) > 0 || len(refusalText) == 0 {
			it.textPart = 0
		}
		if len(refusalText) > 0 {
			it.refusalPart = it.parts()
		}
		if items > 0 {
			w.writeByte(',')
		}
		w.writeOutputItem(&it, r.hash, messageStatus, false)
		items++
	}
	if calls {
		if ids == nil {
			ids = new(callIDSet)
		}
		var tools *bridgedTools
		if echo != nil {
			tools = &echo.toolCalls
		}
		ok := w.writeFunctionCalls(toolCalls, r.hash, items > 0, ids, tools)
		ids.reset() // its views of chat must not outlive this call
		if !ok {
			return nil, errChatAnswerTooManyCalls
		}
	}
	w.writeResponseTail(&r, echo)
	w.writeFramed(`,"output_text":"`, text, partEnd)
	return w.out, nil
}

// writeFunctionCalls writes one item per chat tool call, in order (a function_call, or what the tool the
// call names became in the request: tools); false past maxBridgedItems calls.
func (w *bridgeWriter) writeFunctionCalls(toolCalls []byte, h uint64, comma bool, ids *callIDSet, tools *bridgedTools) bool {
	ids.reset() // the call ids so far: a repeated one is replaced by a generated one
	var inner [8]jsonscan.Member
	var ordinals [bridgedItemKinds]int
	var scratch []byte
	calls := 0
	for call, pos := nextElement(toolCalls, 0); call != nil; call, pos = nextElement(toolCalls, pos) {
		if call[0] != '{' {
			continue
		}
		if calls == maxBridgedItems {
			// As in a stream: each call becomes an item of ~150 bytes, so an upstream's "[{},{},...]" would
			// otherwise grow the answer 50-fold.
			return false
		}
		calls++
		var fields [4][]byte
		var fn [2][]byte
		lookupMembers(call, inner[:0], chatCallKeys, fields[:])
		native := len(fields[3]) > 0 && fields[3][0] == '{'
		switch {
		case native:
			lookupMembers(fields[3], inner[:0], chatCustomKeys, fn[:])
		case len(fields[1]) > 0 && fields[1][0] == '{':
			lookupMembers(fields[1], inner[:0], chatFuncKeys, fn[:])
		}
		it := bridgedItem{}
		if id, ok := jsonStringContents(fields[0]); ok && takesCallID(id, h, ids) {
			it.callID = id
		}
		it.name, _ = jsonStringContents(fn[0])
		it.arguments, _ = jsonStringContents(fn[1])
		it.resolveCall(tools.lookup(it.name), tools, native, false)
		it.ordinal, it.callNumber = ordinals[it.kind], calls-1
		ordinals[it.kind]++
		scratch = it.convertArguments(scratch, false)
		if comma {
			w.writeByte(',')
		}
		comma = true
		w.writeOutputItem(&it, h, responseStatusCompleted, false)
	}
	return true
}

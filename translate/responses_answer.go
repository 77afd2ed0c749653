package translate

// The answer half of the Responses bridge: a Chat Completions answer becomes a Response object. The writers
// of the Response object and of its output items are shared with the stream converter
// (responses_stream.go), so that a JSON answer and the terminal event of a stream have one shape.
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
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, digits[h>>uint(shift)&0xf])
	}
	return dst
}

// bridgedItemKind is the type of an output item a chat answer yields.
type bridgedItemKind uint8

const (
	reasoningItem    bridgedItemKind = iota // from reasoning_content
	messageItem                             // from content and refusal
	functionCallItem                        // from one tool call
)

// bridgedItem is one output item of a bridged Response. Its strings are JSON string contents as the
// upstream escaped them (a literal without its quotes): views of the chat answer in bridgeAnswer, the
// stream converter's own buffers in responsesEvents.
type bridgedItem struct {
	kind bridgedItemKind
	// ordinal counts the items of its kind before it; it makes the item's id unique within the Response.
	ordinal int
	// text is the message's output_text or the reasoning item's summary text.
	text []byte
	// refusal is the message's refusal text.
	refusal []byte
	// textPart and refusalPart are the message's content indexes of its output_text and refusal parts, -1
	// when it has none. Parts appear in the order their first delta came.
	textPart, refusalPart int
	// callID is the chat tool-call id; empty (or already used by an earlier call) means a generated one.
	callID    []byte
	name      []byte
	arguments []byte
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
// its kind on, which only a reasoning item can have) and fc_<h>_<ordinal>.
func appendItemID(dst []byte, it *bridgedItem, h uint64) []byte {
	switch it.kind {
	case reasoningItem:
		dst = append(dst, "rs_"...)
	case messageItem:
		dst = append(dst, "msg_"...)
	default:
		dst = append(dst, "fc_"...)
	}
	dst = appendHashHex(dst, h)
	if it.kind == functionCallItem || it.ordinal > 0 {
		dst = append(dst, '_')
		dst = strconv.AppendInt(dst, int64(it.ordinal), 10)
	}
	return dst
}

// appendCallID writes the function call's call_id without quotes: the chat tool-call id, or
// call_<h>_<ordinal> when the upstream gave none or repeated one (clients answer a call by its call_id, so it
// must exist and be unique).
func appendCallID(dst []byte, it *bridgedItem, h uint64) []byte {
	if len(it.callID) > 0 {
		return append(dst, it.callID...)
	}
	dst = append(dst, "call_"...)
	dst = appendHashHex(dst, h)
	dst = append(dst, '_')
	return strconv.AppendInt(dst, int64(it.ordinal), 10)
}

// appendTextPart writes an output_text part holding text.
func appendTextPart(dst, text []byte) []byte {
	dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":"`...)
	dst = append(dst, text...)
	return append(dst, `"}`...)
}

// appendRefusalPart writes a refusal part holding refusal.
func appendRefusalPart(dst, refusal []byte) []byte {
	dst = append(dst, `{"type":"refusal","refusal":"`...)
	dst = append(dst, refusal...)
	return append(dst, `"}`...)
}

// appendSummaryPart writes a reasoning item's summary_text part.
func appendSummaryPart(dst, text []byte) []byte {
	dst = append(dst, `{"type":"summary_text","text":"`...)
	dst = append(dst, text...)
	return append(dst, `"}`...)
}

// appendOutputItem writes the item as output_item.added announces it (added: the message without content,
// the reasoning without summary, the call without arguments) or in full, with status (messages and calls).
func appendOutputItem(dst []byte, it *bridgedItem, h uint64, status string, added bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = appendItemID(dst, it, h)
	switch it.kind {
	case reasoningItem:
		dst = append(dst, `","type":"reasoning","summary":[`...)
		if !added {
			dst = appendSummaryPart(dst, it.text)
		}
		return append(dst, "]}"...)
	case messageItem:
		dst = append(dst, `","type":"message","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","role":"assistant","content":[`...)
		if !added {
			for part := range it.parts() {
				if part > 0 {
					dst = append(dst, ',')
				}
				if part == it.textPart {
					dst = appendTextPart(dst, it.text)
				} else {
					dst = appendRefusalPart(dst, it.refusal)
				}
			}
		}
		return append(dst, "]}"...)
	}
	dst = append(dst, `","type":"function_call","status":"`...)
	dst = append(dst, status...)
	dst = append(dst, `","arguments":"`...)
	if !added {
		dst = appendFinalArguments(dst, it.arguments)
	}
	dst = append(dst, `","call_id":"`...)
	dst = appendCallID(dst, it, h)
	dst = append(dst, `","name":"`...)
	dst = append(dst, it.name...)
	return append(dst, `"}`...)
}

// appendFinalArguments writes a call's complete arguments: "{}" for none, as OpenAI sends for a call without
// parameters, since clients parse the arguments as a JSON object.
func appendFinalArguments(dst, arguments []byte) []byte {
	if len(arguments) == 0 {
		return append(dst, "{}"...)
	}
	return append(dst, arguments...)
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

// appendResponsesUsage writes usage in the Responses shape, both details objects always: Codex rejects a
// details object without its count, and the AI SDK requires the token counts to be numbers.
func appendResponsesUsage(dst []byte, u *bridgedUsage) []byte {
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, u.input, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.cached, 10)
	dst = append(dst, `},"output_tokens":`...)
	dst = strconv.AppendInt(dst, u.output, 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, u.reasoning, 10)
	dst = append(dst, `},"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.total, 10)
	return append(dst, '}')
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

// appendEchoed writes the client's value of a request field, or def when it sent none or null: a Response
// states the setting in effect, which for an unset field is the API's default. A value the client wrote
// over several lines has them joined: in a stream it goes into one data: line, which a line break would end
// (in JSON a CR or LF can only be whitespace between tokens, so a space means the same).
func appendEchoed(dst, v []byte, def string) []byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return append(dst, def...)
	}
	start := len(dst)
	dst = append(dst, v...)
	if bytes.IndexAny(v, "\r\n") >= 0 {
		for i, c := range dst[start:] {
			if c == '\r' || c == '\n' {
				dst[start+i] = ' '
			}
		}
	}
	return dst
}

// defaultEcho stands in for a missing echo: every field then takes its default.
var defaultEcho responsesEcho

// appendResponseHead writes a Response object up to the opening of its output array.
func appendResponseHead(dst []byte, r *bridgedResponse, echo *responsesEcho) []byte {
	if echo == nil {
		echo = &defaultEcho
	}
	dst = append(dst, `{"id":"resp_`...)
	dst = appendHashHex(dst, r.hash)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = appendEchoed(dst, r.createdAt, "0")
	dst = append(dst, `,"status":"`...)
	dst = append(dst, r.status...)
	dst = append(dst, `","background":false,"completed_at":`...)
	if r.status == responseStatusCompleted {
		// The upstream gives one timestamp, and golden files must be deterministic: a bridged Response
		// completes when it was created, as far as its client can tell.
		dst = appendEchoed(dst, r.createdAt, "0")
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error":`...)
	if r.status == responseStatusFailed {
		dst = append(dst, `{"code":"server_error","message":`...)
		dst = append(dst, r.failure...)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if r.incompleteReason != "" {
		dst = append(dst, `{"reason":"`...)
		dst = append(dst, r.incompleteReason...)
		dst = append(dst, `"}`...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":`...)
	dst = appendEchoed(dst, echo.instructions, "null")
	dst = append(dst, `,"max_output_tokens":`...)
	dst = appendEchoed(dst, echo.maxOutputTokens, "null")
	dst = append(dst, `,"max_tool_calls":`...)
	dst = appendEchoed(dst, echo.maxToolCalls, "null")
	dst = append(dst, `,"model":`...)
	switch {
	case len(r.model) > 2: // a JSON string, not ""
		dst = append(dst, r.model...)
	default:
		dst = appendEchoed(dst, echo.model, `""`)
	}
	return append(dst, `,"output":[`...)
}

// appendResponseTail closes the output array and writes the rest of the Response object but its closing
// brace (a JSON answer adds output_text first).
func appendResponseTail(dst []byte, r *bridgedResponse, echo *responsesEcho) []byte {
	if echo == nil {
		echo = &defaultEcho
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = appendEchoed(dst, echo.parallelToolCalls, "true")
	dst = append(dst, `,"previous_response_id":null,"prompt_cache_key":`...)
	dst = appendEchoed(dst, echo.promptCacheKey, "null")
	dst = append(dst, `,"reasoning":`...)
	dst = appendEchoed(dst, echo.reasoning, `{"effort":null,"summary":null}`)
	dst = append(dst, `,"safety_identifier":`...)
	dst = appendEchoed(dst, echo.safetyIdentifier, "null")
	dst = append(dst, `,"service_tier":`...)
	if r.serviceTier != nil {
		dst = append(dst, r.serviceTier...) // the tier that served the answer, as OpenAI reports it
	} else {
		dst = appendEchoed(dst, echo.serviceTier, `"default"`)
	}
	// A chat-only provider stores nothing, whatever the client asked.
	dst = append(dst, `,"store":false,"temperature":`...)
	dst = appendEchoed(dst, echo.temperature, "1")
	dst = append(dst, `,"text":`...)
	dst = appendEchoed(dst, echo.text, `{"format":{"type":"text"}}`)
	dst = append(dst, `,"tool_choice":`...)
	dst = appendEchoed(dst, echo.toolChoice, `"auto"`)
	dst = append(dst, `,"tools":`...)
	dst = appendEchoed(dst, echo.tools, "[]")
	dst = append(dst, `,"top_logprobs":`...)
	dst = appendEchoed(dst, echo.topLogprobs, "0")
	dst = append(dst, `,"top_p":`...)
	dst = appendEchoed(dst, echo.topP, "1")
	dst = append(dst, `,"truncation":`...)
	dst = appendEchoed(dst, echo.truncation, `"disabled"`)
	dst = append(dst, `,"usage":`...)
	if r.usage != nil {
		dst = appendResponsesUsage(dst, r.usage)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"user":`...)
	dst = appendEchoed(dst, echo.user, "null")
	dst = append(dst, `,"metadata":`...)
	return appendEchoed(dst, echo.metadata, "{}")
}

// readOnlyString is b as a string without a copy, for gjson's reads; the string must not outlive b's contents.
func readOnlyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// readOnlyBytes is the bytes of a string gjson returned as a view of its input, without a copy; read only.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// jsonStringContents is the contents of a JSON string literal (without its quotes, escapes kept), and whether v
// is one.
func jsonStringContents(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// decodedKey is a member's key, decoded when it has escapes: clients decode "con\u0074ent" and "content"
// alike, so must the bridge (rare, so it may allocate).
func decodedKey(m *jsonscan.Member, src []byte) []byte {
	if m.KeyEscaped {
		return decodeEscapedKey(src[m.KeyStart:m.KeyEnd])
	}
	return src[m.KeyStart+1 : m.KeyEnd-1]
}

// decodeEscapedKey is decodedKey's rare path, kept out of line so that the common one inlines.
func decodeEscapedKey(literal []byte) []byte { return []byte(decodeJSONString(literal)) }

// lookupMembers fills values[i] with the value of keys[i] among obj's top-level members (the first of a
// repeated key; nil when absent) and returns the member table for reuse. obj must be part of a validated
// JSON text: Skim then only locates.
func lookupMembers(obj []byte, table []jsonscan.Member, keys []string, values [][]byte) []jsonscan.Member {
	clear(values)
	table, err := jsonscan.Skim(obj, table[:0], maxTopLevelMembers)
	if err != nil {
		return table
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
	return table
}

// firstArrayElement is the first element of a JSON array, nil when v is not an array or is empty.
func firstArrayElement(v []byte) []byte {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	var first []byte
	gjson.Parse(readOnlyString(v)).ForEach(func(_, value gjson.Result) bool {
		first = readOnlyBytes(value.Raw)
		return false
	})
	return first
}

// isNonEmptyArray reports whether v is a JSON array with at least one element.
func isNonEmptyArray(v []byte) bool {
	return len(v) > 0 && v[0] == '[' && !isEmptyArray(v)
}

// appendContentText appends a chat message content's text as JSON string contents: a string's own, or the
// text of an array's parts (some providers answer with parts), one after the other.
func appendContentText(dst, content []byte) []byte {
	if s, ok := jsonStringContents(content); ok {
		return append(dst, s...)
	}
	if len(content) == 0 || content[0] != '[' {
		return dst
	}
	gjson.Parse(readOnlyString(content)).ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String {
			if s, ok := jsonStringContents(readOnlyBytes(t.Raw)); ok {
				dst = append(dst, s...)
			}
		}
		return true
	})
	return dst
}

// Keys read from a chat answer and its choices; fixed arrays, so lookup's value tables stay on the stack.
var (
	chatAnswerKeys  = []string{"id", "created", "model", "choices", "usage", "service_tier"}
	chatChoiceKeys  = []string{"message", "finish_reason"}
	chatMessageKeys = []string{"content", "refusal", "reasoning_content", "tool_calls"}
	chatCallKeys    = []string{"id", "function", "index"}
	chatFuncKeys    = []string{"name", "arguments"}
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
// JSON object is an error: the caller forwards it as it came, and counts it.
func bridgeAnswer(dst, chat []byte, echo *responsesEcho) ([]byte, error) {
	// Valid, then Skim: Members would validate and locate in one pass, but its table escapes to the heap,
	// and this function has no buffer of its own to keep one in; Skim's stays on the stack.
	if !jsonscan.Valid(chat) {
		return nil, errChatAnswerNotJSON
	}
	var tableSpace [32]jsonscan.Member
	table, err := jsonscan.Skim(chat, tableSpace[:0], maxTopLevelMembers)
	if err != nil {
		return nil, errChatAnswerNotObject
	}
	var top [6][]byte
	for i := range table {
		m := &table[i]
		key := decodedKey(m, chat)
		for i, k := range chatAnswerKeys {
			if top[i] == nil && string(key) == k {
				top[i] = m.Value(chat)
				break
			}
		}
	}
	id, created, model, choices, usage, tier := top[0], top[1], top[2], top[3], top[4], top[5]

	r := bridgedResponse{hash: bridgeHash(chat)}
	if s, ok := jsonStringContents(id); ok && len(s) > 0 {
		r.hash = bridgeHash(s)
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

	dst = appendResponseHead(dst[:0], &r, echo)
	items := 0
	if s, ok := jsonStringContents(reasoning); ok && len(s) > 0 {
		it := bridgedItem{kind: reasoningItem, text: s}
		dst = appendOutputItem(dst, &it, r.hash, "", false)
		items++
	}
	// The text is a view of the answer when content is a string; an array of parts (rare: OpenAI-shaped
	// answers carry a string) is joined into a buffer of its own.
	text, _ := jsonStringContents(content)
	if len(content) > 0 && content[0] == '[' {
		text = appendContentText(nil, content)
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
			dst = append(dst, ',')
		}
		dst = appendOutputItem(dst, &it, r.hash, messageStatus, false)
		items++
	}
	if calls {
		var ok bool
		if dst, ok = appendFunctionCalls(dst, toolCalls, r.hash, items > 0); !ok {
			return nil, errChatAnswerTooManyCalls
		}
	}
	dst = appendResponseTail(dst, &r, echo)
	dst = append(dst, `,"output_text":"`...)
	dst = append(dst, text...)
	return append(dst, `"}`...), nil
}

// appendFunctionCalls writes one function_call item per chat tool call, in order.
func appendFunctionCalls(dst, toolCalls []byte, h uint64, comma bool) (_ []byte, ok bool) {
	var seenSpace [8][]byte
	seen := seenSpace[:0] // the call ids so far: a repeated one is replaced by a generated one
	var inner [8]jsonscan.Member
	ordinal := 0
	gjson.Parse(readOnlyString(toolCalls)).ForEach(func(_, call gjson.Result) bool {
		raw := readOnlyBytes(call.Raw)
		if len(raw) == 0 || raw[0] != '{' {
			return true
		}
		var fields [3][]byte
		var fn [2][]byte
		lookupMembers(raw, inner[:0], chatCallKeys, fields[:])
		if len(fields[1]) > 0 && fields[1][0] == '{' {
			lookupMembers(fields[1], inner[:0], chatFuncKeys, fn[:])
		}
		if ordinal == maxBridgedItems {
			// As in a stream: each call becomes an item of ~150 bytes, so an upstream's "[{},{},...]" would
			// otherwise grow the answer 50-fold (and the repeated-id check with it, quadratically).
			ordinal = -1
			return false
		}
		it := bridgedItem{kind: functionCallItem, ordinal: ordinal}
		if id, ok := jsonStringContents(fields[0]); ok && len(id) > 0 && !containsID(seen, id) {
			it.callID = id
			seen = append(seen, id)
		}
		it.name, _ = jsonStringContents(fn[0])
		it.arguments, _ = jsonStringContents(fn[1])
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = appendOutputItem(dst, &it, h, responseStatusCompleted, false)
		ordinal++
		return true
	})
	return dst, ordinal >= 0
}

// containsID reports whether list holds b.
func containsID(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}

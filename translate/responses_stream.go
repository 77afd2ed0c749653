//go:build !aidialect_no_bridge

package translate

// The stream half of the Responses bridge: a chat completion stream (OpenAI's shape, as Stream has edited it
// for the client's dialect) becomes the Responses event sequence. See responses.md §4 and §5.5 for the order
// of events, which strict clients (openai-node's accumulator) check: every item is announced by
// output_item.added at the next output_index, every part by content_part.added at the next content_index,
// every part and arguments event names its item by id, and the terminal event holds every item in full.
//
// The events are written with bridgeWriter's out-of-line writers, and those about an item's text, part or
// arguments by one writer (itemEvent), which keeps the compiled module small.

import (
	"bytes"
	"strconv"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/sse"
	"github.com/tidwall/gjson"
)

// maxBridgedOutputBytes bounds the text, refusal, reasoning and arguments a bridged stream holds: the .done
// events and the terminal event repeat them in full, so the converter keeps them until the stream ends. Four
// mebibytes is about a million tokens of text, far past any model's output limit; an upstream streaming more
// gets response.failed rather than growing the filter's memory without limit.
const maxBridgedOutputBytes = 4 << 20

// maxBridgedItems bounds the output items of one bridged stream (tool calls, in practice): an answer calls a
// handful of tools, and the converter's tables must not grow with what an upstream sends.
const maxBridgedItems = 1024

// retainedItemBytes is the largest buffer an item keeps from one stream to the next: a worker serves many
// streams, and one long answer should not pin its memory for all of them.
const retainedItemBytes = 64 << 10

// Responses stream event types the bridge writes.
const (
	responsesEventCreated          = "response.created"
	responsesEventInProgress       = "response.in_progress"
	responsesEventCompleted        = "response.completed"
	responsesEventIncomplete       = "response.incomplete"
	responsesEventFailed           = "response.failed"
	responsesEventItemAdded        = "response.output_item.added"
	responsesEventItemDone         = "response.output_item.done"
	responsesEventPartAdded        = "response.content_part.added"
	responsesEventPartDone         = "response.content_part.done"
	responsesEventTextDelta        = "response.output_text.delta"
	responsesEventTextDone         = "response.output_text.done"
	responsesEventRefusalDelta     = "response.refusal.delta"
	responsesEventRefusalDone      = "response.refusal.done"
	responsesEventArgumentsDelta   = "response.function_call_arguments.delta"
	responsesEventArgumentsDone    = "response.function_call_arguments.done"
	responsesEventCustomInputDelta = "response.custom_tool_call_input.delta"
	responsesEventCustomInputDone  = "response.custom_tool_call_input.done"
	responsesEventSummaryPartAdded = "response.reasoning_summary_part.added"
	responsesEventSummaryPartDone  = "response.reasoning_summary_part.done"
	responsesEventSummaryTextDelta = "response.reasoning_summary_text.delta"
	responsesEventSummaryTextDone  = "response.reasoning_summary_text.done"
)

// What a bridged stream's response.failed says when the gateway, not the upstream, knows why it ended.
const (
	bridgeStreamEndedMessage   = "the upstream stream ended before the answer was complete; retry the request"
	bridgeUpstreamErrorMessage = "the upstream reported an error in the middle of the answer; retry the request"
	bridgedOutputLimitMessage  = "the answer is larger than the 4 MiB of text and tool-call arguments a " +
		"Responses stream bridged from Chat Completions can hold; ask for a shorter answer (max_output_tokens) " +
		"or stream through Chat Completions"
	bridgedItemsLimitMessage = "the answer has more output items (tool calls) than the 1024 a Responses stream " +
		"bridged from Chat Completions can hold"
	bridgedToolIndexMessage = "the upstream sent a tool call whose index is not an integer from 0 to 1023, so " +
		"its fragments cannot be put together"
)

// Keys read from chat stream events.
var (
	chatChunkKeys      = []string{"id", "created", "model", "choices", "usage", "service_tier", "error"}
	chatDeltaKeys      = []string{"delta", "finish_reason"}
	chatDeltaFieldKeys = []string{"reasoning_content", "content", "refusal", "tool_calls"}
)

// responsesEvents converts one chat completion stream into Responses events. It lives in the Bridge, so its
// buffers serve stream after stream: in steady state an event costs no allocation.
type responsesEvents struct {
	// w holds the caller's buffer while write, close or fail appends events to it; nil between calls.
	w      bridgeWriter
	echo   *responsesEcho
	framer sse.Framer
	// tables for the members of the event, its choice, its delta and a tool call; kept for reuse.
	top, choice, delta, call []jsonscan.Member

	seq     int64 // the next event's sequence_number
	started bool  // response.created and response.in_progress went out
	ended   bool  // a terminal event went out: nothing follows it
	// finish is the finish_reason's contents, once a choice gave one (copied: the event is gone by the end).
	finish    []byte
	sawFinish bool

	resp      bridgedResponse
	usage     bridgedUsage
	createdAt []byte // buffers resp's views point into
	model     []byte
	tier      []byte
	failure   []byte

	items []bridgedItem
	// toolItems maps a chat tool-call index to its item's position + 1 (0: not seen).
	toolItems []int32
	// reasoning is the open reasoning item's position, message the message's, lastCall the latest call's; -1
	// when there is none.
	reasoning, message, lastCall int
	// callIDs are the call ids the function call items have so far.
	callIDs callIDSet
	// kindCount counts the items of each kind, for their ordinals.
	kindCount [bridgedItemKinds]int
	// scratch is where a call's arguments are decoded when its item closes (convertArguments).
	scratch []byte
	// held is the bytes of text and arguments kept for the .done events and the terminal event.
	held int
	// emit, when set (Stream.WriteTo, CloseTo), takes the events written so far, whole, each time they reach
	// pieceBytes and at the end of each call, and the buffer is reused: the end of a stream, which repeats
	// everything held, is never in memory at once.
	emit func(piece []byte)
}

// pieceBytes is the size small events are batched up to before they are handed to emit. A piece is one or
// more whole events, so a key redacted from each piece is found as surely as in one buffer; an event larger
// than this goes with the small ones before it, and then it is the most the buffer holds.
const pieceBytes = 64 << 10

// reset prepares the converter for a new stream with the request's echo; maxEventBytes bounds one input
// event (<= 0: sse.DefaultMaxEventBytes).
func (r *responsesEvents) reset(echo *responsesEcho, maxEventBytes int) {
	r.echo, r.emit = echo, nil
	r.framer.Reset()
	r.framer.SetLimit(maxEventBytes)
	r.seq, r.started, r.ended = 0, false, false
	r.finish, r.sawFinish = r.finish[:0], false
	r.resp, r.usage = bridgedResponse{}, bridgedUsage{}
	r.createdAt, r.model, r.tier, r.failure = r.createdAt[:0], r.model[:0], r.tier[:0], r.failure[:0]
	items := r.items[:cap(r.items)]
	for i := range items {
		it := &items[i]
		it.text, it.refusal = reusableBuffer(it.text), reusableBuffer(it.refusal)
		it.callID, it.name = reusableBuffer(it.callID), reusableBuffer(it.name)
		it.arguments = reusableBuffer(it.arguments)
	}
	r.items = r.items[:0]
	clear(r.toolItems)
	r.toolItems = r.toolItems[:0]
	r.reasoning, r.message, r.lastCall = -1, -1, -1
	r.callIDs.reset()
	r.kindCount = [bridgedItemKinds]int{}
	r.scratch = reusableBuffer(r.scratch)
	r.held = 0
}

// reusableBuffer empties b for reuse, or drops it when one long answer grew it past what is worth keeping.
func reusableBuffer(b []byte) []byte {
	if cap(b) > retainedItemBytes {
		return nil
	}
	return b[:0]
}

// finished reports whether a terminal event (response.completed, .incomplete or .failed) went out.
func (r *responsesEvents) finished() bool { return r.ended }

// begin takes dst as the buffer the events of a call are appended to; end gives it back, grown.
func (r *responsesEvents) begin(dst []byte) { r.w.out = dst }

func (r *responsesEvents) end() []byte {
	if r.emit != nil && len(r.w.out) > 0 {
		r.flush()
	}
	dst := r.w.out
	r.w.out = nil // the caller's buffer, not the converter's to keep
	return dst
}

// flush hands the whole events written so far to emit and empties the buffer for the next ones.
func (r *responsesEvents) flush() {
	r.emit(r.w.out)
	r.w.out = r.w.out[:0]
}

// write takes the next bytes of the chat stream, cut anywhere, and appends the Responses events they
// complete to dst. It returns an error only when the framer refuses the chunk (an event past maxEventBytes),
// and then has written nothing for it: the caller's failure path (fail) continues the sequence numbers.
// After a terminal event it writes nothing more.
func (r *responsesEvents) write(dst, chunk []byte) ([]byte, error) {
	if r.ended || len(chunk) == 0 {
		return dst, nil
	}
	if err := r.framer.Feed(chunk); err != nil {
		return dst, err
	}
	r.begin(dst)
	for !r.ended {
		ev, ok := r.framer.Next()
		if !ok {
			break
		}
		if ev.HasData {
			r.event(ev.Data)
		}
	}
	return r.end(), nil
}

// close ends the chat stream: a last event without its blank line is taken, then a stream that gave a
// finish_reason is finalized as [DONE] would; one that did not was cut short and fails.
func (r *responsesEvents) close(dst []byte) []byte {
	if r.ended {
		return dst
	}
	r.begin(dst)
	for ev, ok := r.framer.Flush(); ok && !r.ended; ev, ok = r.framer.Next() {
		if ev.HasData {
			r.event(ev.Data)
		}
	}
	switch {
	case r.ended:
	case r.sawFinish:
		r.finalize()
	default:
		r.failWith(bridgeStreamEndedMessage)
	}
	return r.end()
}

// fail ends the stream now with response.failed carrying message (the gateway cannot go on: an event too
// large, say). Nothing is written after a terminal event.
func (r *responsesEvents) fail(dst []byte, message string) []byte {
	if r.ended {
		return dst
	}
	r.begin(dst)
	r.failWith(message)
	return r.end()
}

// event converts one chat stream event's data.
func (r *responsesEvents) event(data []byte) {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, doneData) {
		r.finalize()
		return
	}
	table, err := jsonscan.Members(data, r.top[:0], maxTopLevelMembers)
	r.top = table
	if err != nil {
		// Not JSON (a provider's notice, or a fragment): nothing in it can be converted, and guessing
		// would be worse than passing over it. The end of the stream still decides how it ends.
		return
	}
	var v [7][]byte
	for i := range table {
		m := &table[i]
		key := decodedKey(m, data)
		for i, k := range chatChunkKeys {
			if v[i] == nil && string(key) == k {
				v[i] = m.Value(data)
				break
			}
		}
	}
	id, created, model, choices, usage, tier, upstreamError := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	if len(upstreamError) > 0 && string(upstreamError) != "null" {
		// The chat Stream writes one when the upstream was cut; a provider may send its own.
		r.start(id, created, model, data)
		message := upstreamError // {"error":"..."}
		if upstreamError[0] == '{' {
			message = readOnlyBytes(gjson.Get(readOnlyString(upstreamError), "message").Raw)
		}
		if s, ok := jsonStringContents(message); !ok || len(s) == 0 {
			r.failWith(bridgeUpstreamErrorMessage)
			return
		}
		r.failWithLiteral(append(r.failure[:0], message...))
		return
	}
	hasChoices := isNonEmptyArray(choices)
	hasUsage := len(usage) > 0 && usage[0] == '{'
	if !hasChoices && !hasUsage {
		// Azure's prompt annotations (empty id, choices: []) and other events with nothing to convert.
		return
	}
	r.start(id, created, model, data)
	if hasUsage {
		r.usage = readBridgedUsage(usage)
	}
	if s, ok := jsonStringContents(tier); ok && len(s) > 0 {
		r.tier = append(r.tier[:0], tier...)
		r.resp.serviceTier = r.tier
	}
	if !hasChoices {
		return
	}
	// Responses has no n: choice 0, the first, is the answer.
	choice := firstArrayElement(choices)
	if len(choice) == 0 || choice[0] != '{' {
		return
	}
	var c [2][]byte
	r.choice, _ = lookupMembers(choice, r.choice, chatDeltaKeys, c[:])
	if delta := c[0]; len(delta) > 0 && delta[0] == '{' {
		r.applyDelta(delta)
	}
	if reason, ok := jsonStringContents(c[1]); ok && len(reason) > 0 && !r.ended {
		// Remembered, not acted on: the usage chunk comes after it, and [DONE] after that.
		r.finish = append(r.finish[:0], reason...)
		r.sawFinish = true
	}
}

// applyDelta converts one choice delta: reasoning first, as models think before they answer, then text,
// refusal and tool calls.
func (r *responsesEvents) applyDelta(delta []byte) {
	var d [4][]byte
	r.delta, _ = lookupMembers(delta, r.delta, chatDeltaFieldKeys, d[:])
	if s, ok := jsonStringContents(d[0]); ok && len(s) > 0 {
		r.reasoningDelta(d[0])
	}
	if s, ok := jsonStringContents(d[1]); ok && len(s) > 0 && !r.ended {
		r.messageDelta(d[1], false)
	}
	if s, ok := jsonStringContents(d[2]); ok && len(s) > 0 && !r.ended {
		r.messageDelta(d[2], true)
	}
	calls := d[3]
	for call, pos := nextElement(calls, 0); call != nil && !r.ended; call, pos = nextElement(calls, pos) {
		if call[0] == '{' {
			r.toolCallDelta(call)
		}
	}
}

// start writes response.created and response.in_progress before the first event that converts to
// anything, taking the Response's id, created_at and model from it.
func (r *responsesEvents) start(id, created, model, data []byte) {
	if r.started {
		return
	}
	r.started = true
	if s, ok := jsonStringContents(id); ok && len(s) > 0 {
		r.resp.hash = bridgeHash(s)
	} else {
		r.resp.hash = bridgeHash(data)
	}
	if len(created) > 0 && (created[0] == '-' || created[0] >= '0' && created[0] <= '9') {
		r.createdAt = append(r.createdAt[:0], created...)
		r.resp.createdAt = r.createdAt
	}
	if s, ok := jsonStringContents(model); ok && len(s) > 0 {
		r.model = append(r.model[:0], model...)
		r.resp.model = r.model
	}
	r.resp.status = responseStatusInProgress
	for _, typ := range [2]string{responsesEventCreated, responsesEventInProgress} {
		r.responseEvent(typ)
	}
}

// responseEvent writes an event that carries the Response (response.created, .in_progress, and the terminal
// ones), with every item so far in full.
func (r *responsesEvents) responseEvent(typ string) {
	r.open(typ)
	r.w.write(`,"response":`)
	r.w.writeResponseHead(&r.resp, r.echo)
	for i := range r.items {
		if i > 0 {
			r.w.writeByte(',')
		}
		status := responseStatusIncomplete
		if !r.items[i].open {
			status = r.itemStatus(i)
		}
		r.w.writeOutputItem(&r.items[i], r.resp.hash, status, false)
	}
	r.w.writeResponseTail(&r.resp, r.echo)
	r.w.write("}" + eventEnd)
}

// eventEnd ends an event's data object and the event.
const eventEnd = "}\n\n"

// open begins an event: its event line, and its data's type and sequence_number members. Every event
// starts here, so it appends directly rather than through bridgeWriter's calls: the code is here once.
func (r *responsesEvents) open(typ string) {
	if r.emit != nil && len(r.w.out) >= pieceBytes {
		r.flush()
	}
	out := append(r.w.out, "event: "...)
	out = append(out, typ...)
	out = append(out, "\ndata: {\"type\":\""...)
	out = append(out, typ...)
	out = append(out, `","sequence_number":`...)
	r.w.out = strconv.AppendInt(out, r.seq, 10)
	r.seq++
}

// openItemEvent begins an event about item i, and its content part unless part is -1: item_id,
// output_index and content_index. Every delta starts here: it appends directly, as open does.
func (r *responsesEvents) openItemEvent(typ string, i, part int) {
	r.open(typ)
	out := append(r.w.out, `,"item_id":"`...)
	out = appendItemID(out, &r.items[i], r.resp.hash)
	out = append(out, `","output_index":`...)
	out = strconv.AppendInt(out, int64(i), 10)
	if part >= 0 {
		out = append(out, `,"content_index":`...)
		out = strconv.AppendInt(out, int64(part), 10)
	}
	r.w.out = out
}

// itemEvent writes an event about item i (and its content part, unless part is -1) whose last members are
// prefix, value and suffix: a delta, a text done, a part. Kept out of line: it is called from many places.
//
//go:noinline
func (r *responsesEvents) itemEvent(typ string, i, part int, prefix string, value []byte, suffix string) {
	r.openItemEvent(typ, i, part)
	r.w.out = append(append(append(append(r.w.out, prefix...), value...), suffix...), eventEnd...)
}

// outputItemEvent writes output_item.added (added) or output_item.done for item i.
func (r *responsesEvents) outputItemEvent(i int, status string, added bool) {
	typ := responsesEventItemDone
	if added {
		typ = responsesEventItemAdded
	}
	r.open(typ)
	r.w.write(`,"output_index":`)
	r.w.writeInt(int64(i))
	r.w.write(`,"item":`)
	r.w.writeOutputItem(&r.items[i], r.resp.hash, status, added)
	r.w.write(eventEnd)
}

// hold accounts for n more bytes kept for the end of the stream, and reports whether they fit the bound;
// past it, the stream has failed.
func (r *responsesEvents) hold(n int) bool {
	if r.held+n > maxBridgedOutputBytes {
		r.failWith(bridgedOutputLimitMessage)
		return false
	}
	r.held += n
	return true
}

// addItem appends a new item of the kind, closing an open reasoning item first when the new one is not
// reasoning; the caller announces it. It is -1 when the stream has as many items as it may hold: it has
// then failed.
func (r *responsesEvents) addItem(kind bridgedItemKind) int {
	if len(r.items) == maxBridgedItems {
		r.failWith(bridgedItemsLimitMessage)
		return -1
	}
	if kind != reasoningItem && r.reasoning >= 0 {
		// Reasoning comes before what it led to: its item closes before the next opens, repeating its text
		// three times.
		r.reserve(3*len(r.items[r.reasoning].text)+endItemBytes, len(r.items[r.reasoning].text)+endItemBytes)
		r.closeItem(r.reasoning, responseStatusCompleted)
	}
	i := len(r.items)
	if i < cap(r.items) {
		r.items = r.items[:i+1]
	} else {
		r.items = append(r.items, bridgedItem{})
	}
	it := &r.items[i]
	*it = bridgedItem{kind: kind, ordinal: r.kindCount[kind], textPart: -1, refusalPart: -1, open: true,
		text: it.text[:0], refusal: it.refusal[:0], callID: it.callID[:0], name: it.name[:0],
		arguments: it.arguments[:0]}
	r.kindCount[kind]++
	return i
}

// reasoningDelta converts a reasoning_content delta (a JSON string literal) into a reasoning item's summary
// text delta, opening the item first.
func (r *responsesEvents) reasoningDelta(literal []byte) {
	text, _ := jsonStringContents(literal)
	if !r.hold(len(text)) {
		return
	}
	i := r.reasoning
	if i < 0 {
		if i = r.addItem(reasoningItem); i < 0 {
			return
		}
		r.reasoning = i
		r.outputItemEvent(i, responseStatusInProgress, true)
		r.itemEvent(responsesEventSummaryPartAdded, i, -1, `,"summary_index":0,"part":`+summaryPartPrefix, nil, partEnd)
	}
	it := &r.items[i]
	it.text = append(it.text, text...)
	r.itemEvent(responsesEventSummaryTextDelta, i, -1, `,"summary_index":0,"delta":`, literal, "")
}

// messageDelta converts a content (or, with refusal, a refusal) delta into an output_text (refusal) delta,
// opening the message and its part first.
func (r *responsesEvents) messageDelta(literal []byte, refusal bool) {
	text, _ := jsonStringContents(literal)
	if !r.hold(len(text)) {
		return
	}
	i := r.message
	if i < 0 {
		if i = r.addItem(messageItem); i < 0 {
			return
		}
		r.message = i
		r.outputItemEvent(i, responseStatusInProgress, true)
	}
	it := &r.items[i]
	part, partPrefix := &it.textPart, `,"part":`+textPartPrefix
	if refusal {
		part, partPrefix = &it.refusalPart, `,"part":`+refusalPartPrefix
	}
	if *part < 0 {
		*part = it.parts()
		r.itemEvent(responsesEventPartAdded, i, *part, partPrefix, nil, partEnd)
	}
	if refusal {
		it.refusal = append(it.refusal, text...)
		r.itemEvent(responsesEventRefusalDelta, i, *part, `,"delta":`, literal, "")
	} else {
		it.text = append(it.text, text...)
		r.itemEvent(responsesEventTextDelta, i, *part, `,"delta":`, literal, `,"logprobs":[]`)
	}
}

// toolCallDelta converts one tool_calls fragment: a new index opens an item with its first fragment that
// carries an id, a name or arguments (its id and name come with it, or the name later), and arguments become
// arguments deltas. The item is a function_call, or what the tool the call names became in the request
// (bridgedTools): a namespaced function_call, a custom_tool_call (input deltas: a chat custom call's as they
// come, a function's input once its arguments are whole), a tool_search_call (whole at the end).
func (r *responsesEvents) toolCallDelta(call []byte) {
	var f [4][]byte
	var fn [2][]byte
	r.call, _ = lookupMembers(call, r.call, chatCallKeys, f[:])
	native := len(f[3]) > 0 && f[3][0] == '{'
	switch {
	case native:
		r.call, _ = lookupMembers(f[3], r.call, chatCustomKeys, fn[:])
	case len(f[1]) > 0 && f[1][0] == '{':
		r.call, _ = lookupMembers(f[1], r.call, chatFuncKeys, fn[:])
	}
	id, _ := jsonStringContents(f[0])
	name, _ := jsonStringContents(fn[0])
	arguments, _ := jsonStringContents(fn[1])
	index, hasIndex := toolCallIndex(f[2])
	i := -1
	switch {
	case hasIndex && index < 0:
		r.failWith(bridgedToolIndexMessage)
		return
	case hasIndex:
		if index < len(r.toolItems) {
			i = int(r.toolItems[index]) - 1
		}
	case r.lastCall >= 0 && (len(id) == 0 || bytes.Equal(id, r.items[r.lastCall].callID)):
		// Without an index (some providers), a fragment without a new id continues the latest call.
		i = r.lastCall
	}
	if i < 0 {
		if len(id) == 0 && len(name) == 0 && len(arguments) == 0 {
			// Nothing a client can use: the item opens with the first fragment that has something. An
			// upstream's 1,024 bare {"index":N} would otherwise become 1,024 output_item.added events of
			// 250 bytes each from 12 bytes each, and fill the item cap with empty calls.
			return
		}
		if i = r.openCall(id, name, native, hasIndex, index); i < 0 {
			return
		}
	} else if it := &r.items[i]; len(it.name) == 0 && len(name) > 0 {
		// The name came late: output_item.done and the terminal event carry it. The item was announced with
		// its type, and its id says it: a namespace member's name and namespace apply only when the tool's
		// calls are items of that type and shape (a custom call announced natively must not turn into a
		// function_call named by a later fragment).
		if !r.hold(len(name)) {
			return
		}
		it.name = append(it.name, name...)
		if tool := r.tools().lookup(name); tool != nil {
			native := it.shape == customCallShape
			var probe bridgedItem
			probe.resolveCall(tool, r.tools(), native, false)
			if probe.kind == it.kind && probe.shape == it.shape {
				it.resolveCall(tool, r.tools(), native, true)
			}
		}
	}
	if len(arguments) == 0 || !r.hold(len(arguments)) {
		return
	}
	it := &r.items[i]
	it.arguments = append(it.arguments, arguments...)
	switch it.shape {
	case functionCallShape:
		r.itemEvent(responsesEventArgumentsDelta, i, -1, `,"delta":`, fn[1], "")
	case customCallShape:
		r.itemEvent(responsesEventCustomInputDelta, i, -1, `,"delta":`, fn[1], "")
	}
}

// tools are the chat tools of the request, nil without one.
func (r *responsesEvents) tools() *bridgedTools {
	if r.echo == nil {
		return nil
	}
	return &r.echo.toolCalls
}

// openCall opens the item of a new tool call, with its first fragment's id and name, and announces it; -1
// when the stream cannot hold it (it has then failed).
func (r *responsesEvents) openCall(id, name []byte, native, hasIndex bool, index int) int {
	if !r.hold(len(id) + len(name)) {
		return -1
	}
	var probe bridgedItem
	tool := r.tools().lookup(name)
	probe.resolveCall(tool, r.tools(), native, false)
	i := r.addItem(probe.kind)
	if i < 0 {
		return -1
	}
	it := &r.items[i]
	it.callNumber = r.kindCount[functionCallItem] + r.kindCount[customToolCallItem] + r.kindCount[toolSearchCallItem] - 1
	if len(id) > 0 {
		// A repeated or missing id gets a generated one: clients tell calls apart by call_id. The set
		// keeps a view of the item's copy, which stays unchanged until the next stream.
		it.callID = append(it.callID, id...)
		if !takesCallID(it.callID, r.resp.hash, &r.callIDs) {
			it.callID = it.callID[:0]
		}
	}
	it.name = append(it.name, name...)
	it.resolveCall(tool, r.tools(), native, true)
	if hasIndex {
		for len(r.toolItems) <= index {
			r.toolItems = append(r.toolItems, 0)
		}
		r.toolItems[index] = int32(i + 1)
	}
	r.lastCall = i
	r.outputItemEvent(i, responseStatusInProgress, true)
	return i
}

// toolCallIndex reads a tool call's index: a plain non-negative integer below maxBridgedItems. An index
// that is present but is not one (negative, fractional, too large, not a number) is reported as -1, which
// fails the stream: the fragments cannot be put together without it, nor the table indexed by it bounded.
func toolCallIndex(v []byte) (index int, present bool) {
	if len(v) == 0 || string(v) == "null" {
		return -1, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1, true
		}
		if n = n*10 + int(c-'0'); n >= maxBridgedItems {
			return -1, true
		}
	}
	return n, true
}

// closeItem writes the .done events of open item i: its text, part (or arguments) and the full item.
func (r *responsesEvents) closeItem(i int, status string) {
	it := &r.items[i]
	it.open = false
	if i == r.reasoning {
		r.reasoning = -1
	}
	switch it.kind {
	case reasoningItem:
		r.itemEvent(responsesEventSummaryTextDone, i, -1, `,"summary_index":0,"text":"`, it.text, `"`)
		r.itemEvent(responsesEventSummaryPartDone, i, -1, `,"summary_index":0,"part":`+summaryPartPrefix, it.text, partEnd)
	case messageItem:
		for part := range it.parts() {
			if part == it.textPart {
				r.itemEvent(responsesEventTextDone, i, part, `,"text":"`, it.text, `","logprobs":[]`)
			} else {
				r.itemEvent(responsesEventRefusalDone, i, part, `,"refusal":"`, it.refusal, `"`)
			}
			r.openItemEvent(responsesEventPartDone, i, part)
			r.w.write(`,"part":`)
			r.w.writeMessagePart(it, part)
			r.w.write(eventEnd)
		}
	case customToolCallItem:
		custom := it.shape == customAsFunctionShape
		r.scratch = it.convertArguments(r.scratch, true)
		if custom && len(it.arguments) > 0 {
			// The input is known only now that the arguments are whole: its one delta.
			r.itemEvent(responsesEventCustomInputDelta, i, -1, `,"delta":"`, it.arguments, `"`)
		}
		r.itemEvent(responsesEventCustomInputDone, i, -1, `,"input":"`, it.arguments, `"`)
	case toolSearchCallItem:
		r.scratch = it.convertArguments(r.scratch, true)
	default:
		r.openItemEvent(responsesEventArgumentsDone, i, -1)
		r.w.writeFramed(`,"name":"`, it.name, `","arguments":"`)
		r.w.writeFramed("", finalArguments(it.arguments), `"`+eventEnd)
	}
	r.outputItemEvent(i, status, false)
}

// finalize ends a stream that finished ([DONE], or the end of a stream that gave a finish_reason): every
// open item is closed in output order, then one response.completed or response.incomplete holds them all.
func (r *responsesEvents) finalize() {
	if r.ended {
		return
	}
	r.start(nil, nil, nil, nil)
	// Every open item's .done events repeat its contents three times (text.done, part.done, item.done, or
	// arguments.done and item.done), and the terminal event once more.
	// In pieces, the largest of them is the terminal event, which repeats everything once.
	terminalBytes := r.held + (len(r.items)+1)*endItemBytes + r.echoBytes() + 4096
	r.reserve(4*r.held+terminalBytes, terminalBytes)
	r.resp.status, r.resp.incompleteReason = finishStatus(r.finish)
	if len(r.items) == 0 {
		// An answer with nothing in it still gets its (empty) message, as a JSON answer does.
		i := r.addItem(messageItem)
		if i < 0 {
			return
		}
		r.message = i
		r.outputItemEvent(i, responseStatusInProgress, true)
		r.items[i].textPart = 0
		r.itemEvent(responsesEventPartAdded, i, 0, `,"part":`+textPartPrefix, nil, partEnd)
	}
	for i := range r.items {
		if r.items[i].open {
			r.closeItem(i, r.itemStatus(i))
		}
	}
	typ := responsesEventCompleted
	if r.resp.status == responseStatusIncomplete {
		typ = responsesEventIncomplete
	}
	r.terminal(typ)
}

// endItemBytes bounds what closing an item (its .done events) and repeating it in the terminal event write
// besides its contents: ids, statuses, indexes, the events' own members.
const endItemBytes = 1024

// reserve makes room for the bytes about to be written in one allocation: whole, n more; in pieces (emit
// set), what was written is handed on first, and the room is for the largest event to come, oneEvent, and
// the small events batched before it. The end of a stream repeats up to four times the 4 MiB held over the
// stream: grown by append (in steps of a quarter past a few hundred KiB), the output would leave several
// times its size in garbage before the collector runs, in a linear memory that never shrinks.
func (r *responsesEvents) reserve(n, oneEvent int) {
	if r.emit != nil {
		if len(r.w.out) > 0 {
			r.flush()
		}
		n = oneEvent + pieceBytes
	}
	if cap(r.w.out)-len(r.w.out) >= n {
		return
	}
	out := make([]byte, len(r.w.out), len(r.w.out)+n)
	copy(out, r.w.out)
	r.w.out = out
}

// echoBytes is the bytes of request values the Response repeats (at most maxEchoBytes).
func (r *responsesEvents) echoBytes() int {
	if r.echo == nil {
		return 0
	}
	return len(r.echo.buf)
}

// itemStatus is the status of item i as its Response ends: a message is as complete as the Response; a
// call's fragments all came.
func (r *responsesEvents) itemStatus(i int) string {
	if r.items[i].kind == messageItem && r.resp.status != responseStatusCompleted {
		return responseStatusIncomplete
	}
	return responseStatusCompleted
}

// failWith ends the stream with response.failed, its error carrying message.
func (r *responsesEvents) failWith(message string) {
	if !r.ended {
		r.failWithLiteral(jsonscan.AppendString(r.failure[:0], message))
	}
}

// failWithLiteral ends the stream with response.failed: its error carries message (a JSON string literal)
// and its output the items so far, the unfinished ones incomplete. No .done events precede it: the items did
// not finish.
func (r *responsesEvents) failWithLiteral(message []byte) {
	if r.ended {
		return
	}
	r.failure = message
	r.start(nil, nil, nil, nil)
	// An error event first, as a native stream cut short ends: the SDKs raise it with its message (openai-go,
	// openai-node, the Python SDK and the Agents SDKs report response.failed without one, or not at all).
	r.open("error")
	r.w.out = appendErrorEventFields(r.w.out, []byte(`"server_error"`), message)
	r.w.write(eventEnd)
	r.resp.status, r.resp.incompleteReason, r.resp.failure = responseStatusFailed, "", r.failure
	r.terminal(responsesEventFailed)
}

// terminal writes the event that ends the stream, whose response holds every item in full and the usage
// (zeros when the upstream gave none).
func (r *responsesEvents) terminal(typ string) {
	r.ended = true
	n := r.held + len(r.items)*endItemBytes + r.echoBytes() + 4096
	r.reserve(n, n)
	r.resp.usage = &r.usage
	r.responseEvent(typ)
}

package translate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
	"github.com/aidialect/aidialect/internal/sse"
	"github.com/tidwall/gjson"
)

var (
	doneData    = []byte("[DONE]")
	doneEvent   = []byte("data: [DONE]\n\n")
	chunkObject = []byte(`"chat.completion.chunk"`)
)

// Stream rewrites an SSE answer chunk by chunk for the client's dialect. Events are framed across
// chunks with a bounded carry-over; when no event needs a change the input chunk is returned as is.
type Stream struct {
	x       Exchange
	framer  sse.Framer
	inspect bool // events may need edits for this dialect pair

	out []byte // reused output buffer
	// pending: events of the current chunk forwarded unchanged so far, not yet in out (they are returned as
	// a slice of the chunk unless an event needs an edit: editChunk writes them to out first).
	pending   []byte
	last      []byte // copy of the last JSON data event seen (for the end-of-stream check and usage)
	members   []jsonscan.Member
	kinds     []chunkKey     // what each of members is to translation
	parts     eventParts     // the event being edited (views of it: cleared by Release)
	toolIndex map[string]int // tool-call id -> synthesised index, per stream
	done      bool           // [DONE] went to the client
	// fast: no event can need an edit (same dialect), so chunks are forwarded as they are, cut at the
	// last event boundary, without framing each event; carry holds the incomplete event after that
	// boundary. The first chunk with a CR or a [DONE] hands the stream to the framer for good.
	fast      bool
	carry     []byte
	truncated bool // the upstream stopped before finishing; the client got an error event
	// namedEvents: the surface's events start with an event: line (a native Responses stream), set by its
	// startStream.
	namedEvents bool
	// bindIDs: the stream's ids are bound to the consumer (binding.go): the events that
	// carry the response object (lifecycle, listed while a chunk is cut into events on the fast path: each
	// an event's start and end in that chunk, the first start negative when the event began in the carry)
	// are rewritten into bound.
	bindIDs   bool
	lifecycle []int
	bound     []byte
	tags      tagCache
	// surface is the attempt's answer side: it writes the stream's output, its end and its failure.
	surface answerSurface
	// converted is the output of a surface that converts the stream into another shape, kept for reuse.
	converted []byte
}

// NewStream prepares a translator for one stream; maxEventBytes bounds one event's carry-over
// (<= 0: sse.DefaultMaxEventBytes).
func NewStream(x Exchange, maxEventBytes int) *Stream {
	s := &Stream{}
	s.Reset(x, maxEventBytes)
	return s
}

// Reset reuses the translator for a new stream, keeping its buffers.
func (s *Stream) Reset(x Exchange, maxEventBytes int) {
	s.x = x
	s.surface = s.x.answerSurface()
	s.namedEvents, s.bindIDs = false, false
	s.lifecycle, s.bound = s.lifecycle[:0], s.bound[:0]
	s.tags.valid = false // the consumer or the provider may be another
	s.framer.Reset()
	if maxEventBytes <= 0 {
		maxEventBytes = sse.DefaultMaxEventBytes
	}
	s.framer.SetLimit(maxEventBytes)
	s.out, s.last, s.members, s.pending = s.out[:0], s.last[:0], s.members[:0], nil
	clear(s.toolIndex)
	s.done, s.truncated = false, false
	s.surface.startStream(s, maxEventBytes) // sets s.inspect (from s.x, not x: a hook given &x would move every Reset's argument to the heap)
	s.fast, s.carry = !s.inspect, s.carry[:0]
}

func streamMayNeedEdits(x *Exchange) bool {
	return x.StripUsageChunk || x.providerEdits()
}

// eventAction is what happens to one event.
type eventAction uint8

const (
	forwardEvent eventAction = iota // its bytes go out unchanged
	dropEvent
	editedEvent // its replacement is written to s.out
)

// Write takes the next chunk of the upstream stream and returns the bytes to send to the client now. The
// result aliases chunk or the translator's buffer and is valid until the next call.
func (s *Stream) Write(chunk []byte) ([]byte, error) {
	return s.surface.write(s, chunk, nil)
}

// writeChat is Write for the upstream's stream as the client's dialect has it.
func (s *Stream) writeChat(chunk []byte) ([]byte, error) {
	if s.fast {
		if out, ok, err := s.writeFast(chunk); ok || err != nil {
			return out, err
		}
	}
	if err := s.framer.Feed(chunk); err != nil {
		return nil, err
	}
	s.pending = nil                // a call that did not return (a panic) must not hand its views to this one
	direct := s.framer.FromChunk() // events are views into chunk: forwarding them needs no copy
	passthrough := true            // every event so far went out unchanged
	forwarded := 0                 // with direct: bytes of chunk those events cover
	var lastData []byte
	s.out = s.out[:0]
	for {
		ev, ok := s.framer.Next()
		if !ok {
			break
		}
		if passthrough && direct {
			s.pending = chunk[:forwarded]
		}
		action := s.event(ev, &lastData)
		if passthrough {
			if action == forwardEvent {
				if direct {
					forwarded += len(ev.Raw)
				} else {
					s.out = append(s.out, ev.Raw...)
				}
				continue
			}
			passthrough = false
			if action == dropEvent {
				s.out = append(s.out, s.pending...)
			}
			s.pending = nil
		}
		if action == forwardEvent {
			s.out = append(s.out, ev.Raw...)
		}
	}
	s.pending = nil
	if lastData != nil {
		s.last = append(s.last[:0], lastData...)
	}
	if passthrough && direct {
		return chunk[:forwarded], nil
	}
	return s.out, nil
}

// Close ends the stream: a final event without its blank line is translated, and the client gets exactly
// one [DONE]. A stream that stopped before any finish (cut mid-answer) ends with an error event first, so
// SDKs report the truncation instead of a silently short answer.
func (s *Stream) Close() []byte {
	return s.surface.close(s, nil)
}

// closeChat is Close for a chat stream: the last event, then [DONE], after an error event when the stream
// stopped before its finish.
func (s *Stream) closeChat() []byte {
	s.flushLast()
	if !s.done {
		if !s.finished() {
			s.truncated = true
			s.out = append(s.out, ErrorEvent(s.x.Client, NewError(ErrUpstreamStream, "",
				"the upstream stream ended before the answer was complete; retry the request"))...)
		}
		s.out = append(s.out, doneEvent...)
		s.done = true
	}
	return s.out
}

// flushLast writes the stream's last event to s.out (emptied first) when the stream ended inside it without
// its blank line, and remembers its data.
func (s *Stream) flushLast() {
	s.out = s.out[:0]
	var lastData []byte
	if s.fast && len(s.carry) > 0 {
		// The stream ended inside an event: the framer judges it as it judges any stream's last bytes (the
		// carry holds no complete event and is within the bound, so Feed cannot fail).
		s.fast = false
		if err := s.framer.Feed(s.carry); err == nil {
			s.carry = s.carry[:0]
		}
	}
	if ev, ok := s.framer.Flush(); ok && !cutMidEvent(ev) {
		switch s.event(ev, &lastData) {
		case forwardEvent:
			s.out = append(s.out, ev.Raw...)
			s.out = append(s.out, blankLineEnding(ev.Raw)...)
		case editedEvent:
			s.out = append(s.out, blankLineEnding(s.out)...) // a bound event keeps the line ends it came with
		}
	}
	if lastData != nil {
		s.last = append(s.last[:0], lastData...)
	}
}

// cutMidEvent reports whether the unterminated event a stream ended in is a fragment: data that is neither
// [DONE] nor complete JSON. It is dropped rather than sent: SDKs parse every data event as JSON and would
// fail on the fragment instead of reporting the error event that follows, and a fragment must not decide
// whether the answer finished.
func cutMidEvent(ev sse.Event) bool {
	return ev.HasData && !bytes.Equal(bytes.TrimSpace(ev.Data), doneData) && !jsonscan.Valid(ev.Data)
}

// blankLineEnding is what must follow an event's bytes so that the next event starts on its own: a stream
// cut mid-event would otherwise merge its tail into the [DONE] the translator adds.
func blankLineEnding(b []byte) string {
	switch {
	case len(b) == 0, bytes.HasSuffix(b, []byte("\n\n")), bytes.HasSuffix(b, []byte("\r\r")),
		bytes.HasSuffix(b, []byte("\r\n\r\n")):
		return ""
	case b[len(b)-1] == '\n':
		return "\n"
	}
	return "\n\n"
}

var (
	eventBoundary = []byte("\n\n")
	dataField     = []byte("data:")
)

// writeFast forwards a chunk of a stream that needs no edits, cut at its last event boundary, without
// framing each event: it only finds the boundaries (the floor's own work) and checks how each completed
// event starts. ok is false when the chunk must go through the framer instead, and from then on every chunk
// does: an event that is not a plain "data: {...}" (the [DONE], comments, other fields, stray blank lines)
// or a CR line end needs event-by-event handling (exactly one [DONE], CR/CRLF framing).
func (s *Stream) writeFast(chunk []byte) (out []byte, ok bool, err error) {
	cut, prev, i := 0, 0, 0
	opcount.Add(opcount.StepsTaken, len(chunk)) // the search for a CR
	plain := bytes.IndexByte(chunk, '\r') < 0 && s.plainEvent(s.eventStart(chunk))
	s.lifecycle = s.lifecycle[:0]
	start := -len(s.carry) // where the event being cut starts in chunk (negative: in the carry)
	if plain && len(s.carry) > 0 && s.carry[len(s.carry)-1] == '\n' && len(chunk) > 0 && chunk[0] == '\n' {
		cut, i = 1, 1  // the boundary straddles the carry and this chunk
		if s.bindIDs { // tested here: noteLifecycle is not inlined, and most streams bind nothing
			s.noteLifecycle(chunk, start, cut)
		}
		start = cut
		plain = s.plainEvent(chunk[1:])
	}
	for plain {
		j := bytes.Index(chunk[i:], eventBoundary)
		if j < 0 {
			opcount.Add(opcount.StepsTaken, len(chunk)-i)
			break
		}
		opcount.Add(opcount.StepsTaken, j+len(eventBoundary)) // bytes searched
		prev, cut = cut, i+j+len(eventBoundary)
		if s.bindIDs { // tested here: noteLifecycle is not inlined, and most streams bind nothing
			s.noteLifecycle(chunk, start, cut)
		}
		start, i = cut, cut
		if i < len(chunk) {
			plain = s.plainEvent(chunk[i:])
		}
	}
	if !plain {
		return s.leaveFastPath()
	}
	pending := len(chunk) - cut // bytes of an incomplete event left after this chunk
	if cut == 0 {
		pending += len(s.carry)
	}
	if pending > s.framer.Limit() {
		return nil, false, fmt.Errorf("%w: an event is still incomplete after %d bytes, over the %d-byte bound",
			sse.ErrEventTooLarge, pending, s.framer.Limit())
	}
	if cut == 0 {
		opcount.Add(opcount.BytesCopied, len(chunk))
		s.carry = append(s.carry, chunk...)
		return chunk[:0], true, nil
	}
	if len(s.carry) == 0 {
		out = chunk[:cut]
	} else {
		opcount.Add(opcount.BytesCopied, len(s.carry)+cut)
		s.out = append(append(s.out[:0], s.carry...), chunk[:cut]...)
		out = s.out
	}
	if prev > 0 && s.copyEventData(chunk[prev:cut]) {
		// The chunk's last event is whole in it: the common case, found without another scan.
	} else {
		s.rememberLastData(out)
	}
	if len(s.lifecycle) > 0 {
		out = s.bindLifecycle(out, len(s.carry)) // out is the carry, then chunk[:cut]
	}
	opcount.Add(opcount.BytesCopied, len(chunk)-cut)
	s.carry = append(s.carry[:0], chunk[cut:]...)
	return out, true, nil
}

// noteLifecycle lists the event chunk[start:end] (start negative: it began in the carry) when its ids are
// bound and it carries the response object; its first line is enough to tell.
func (s *Stream) noteLifecycle(chunk []byte, start, end int) {
	if !s.bindIDs {
		return
	}
	first := chunk[max(start, 0):end]
	if start < 0 {
		var head [maxLifecycleLine]byte
		n := copy(head[:], s.carry)
		n += copy(head[n:], chunk[:end])
		first = head[:n]
	}
	if isLifecycleLine(first[:min(len(first), maxLifecycleLine)], false) {
		s.lifecycle = append(s.lifecycle, start, end)
	}
}

// bindLifecycle is out, the complete events of a fast-path chunk (carried bytes of the carry first), with
// the events noteLifecycle listed bound; written into s.bound.
func (s *Stream) bindLifecycle(out []byte, carried int) []byte {
	w := s.bound[:0]
	copied := 0
	for k := 0; k+1 < len(s.lifecycle); k += 2 {
		start, end := s.lifecycle[k]+carried, s.lifecycle[k+1]+carried
		w = append(w, out[copied:start]...)
		var changed bool
		if w, s.members, changed = s.x.Binding.appendBoundEvent(w, out[start:end], s.members, &s.tags); !changed {
			w = append(w, out[start:end]...)
		}
		copied = end
	}
	s.bound = append(w, out[copied:]...)
	return s.bound
}

// bindEvent is event's decision for an event of a stream whose ids are bound, on the framer's path: a
// lifecycle event is written to s.out, after s.pending, with its ids bound; the others go out as they came.
func (s *Stream) bindEvent(raw []byte) eventAction {
	if !isLifecycleEvent(raw) {
		return forwardEvent
	}
	// Bound apart first (in s.bound, free off the fast path): the events forwarded before it are copied
	// only when it changes, or each unchanged one would copy them all again.
	bound, members, changed := s.x.Binding.appendBoundEvent(s.bound[:0], raw, s.members, &s.tags)
	s.members, s.bound = members, bound[:0]
	if !changed {
		return forwardEvent
	}
	opcount.Add(opcount.BytesCopied, len(s.pending)+len(bound))
	s.out = append(append(s.out, s.pending...), bound...)
	s.pending = nil
	return editedEvent
}

// eventStart is the first bytes of the event this chunk begins or continues (the carry's, when there is one).
func (s *Stream) eventStart(chunk []byte) []byte {
	const need = len("data: {")
	if len(s.carry) >= need || len(s.carry) == 0 {
		if len(s.carry) > 0 {
			return s.carry
		}
		return chunk
	}
	var start [need]byte
	n := copy(start[:], s.carry)
	n += copy(start[n:], chunk)
	return start[:n]
}

// plainEvent is plainDataEvent, or for a surface whose events are named also an event that starts with its
// event: line (they all do); its data is then found by copyEventData.
func (s *Stream) plainEvent(event []byte) bool {
	if s.namedEvents {
		const named = "event:"
		if n := min(len(event), len(named)); string(event[:n]) == named[:n] {
			return true
		}
	}
	return plainDataEvent(event)
}

// plainDataEvent reports whether an event (or its first bytes) starts as a JSON data line; a prefix too
// short to tell counts as plain, and is checked again once the event is complete.
func plainDataEvent(event []byte) bool {
	const spaced, tight = "data: {", "data:{"
	n := min(len(event), len(spaced))
	if string(event[:n]) == spaced[:n] {
		return true
	}
	n = min(len(event), len(tight))
	return string(event[:n]) == tight[:n]
}

// leaveFastPath hands the stream to the framer, carried-over bytes first; nothing of the current chunk has
// been sent yet.
func (s *Stream) leaveFastPath() ([]byte, bool, error) {
	s.fast = false
	if len(s.carry) > 0 {
		if err := s.framer.Feed(s.carry); err != nil {
			return nil, false, err
		}
		for _, more := s.framer.Next(); more; _, more = s.framer.Next() {
		}
		s.carry = s.carry[:0]
	}
	return nil, false, nil
}

// lastBoundary is the index of the last "\n\n" in b, or -1 (bytes.LastIndex would hash the whole input).
func lastBoundary(b []byte) int {
	for end := len(b); end > 1; {
		j := bytes.LastIndexByte(b[:end], '\n')
		if opcount.Enabled { // (costs the inliner nothing without the tag: lastBoundary stays inlined)
			opcount.Add(opcount.StepsTaken, end-max(j, 0)) // bytes searched
		}
		if j < 1 {
			return -1
		}
		if b[j-1] == '\n' {
			return j - 1
		}
		end = j - 1
	}
	return -1
}

// rememberLastData keeps the data of the last event with data in complete (whole events, LF line ends), for
// the end-of-stream check and usage; one copy per chunk, not per event.
func (s *Stream) rememberLastData(complete []byte) {
	events := bytes.TrimRight(complete, "\n")
	for len(events) > 0 {
		start := lastBoundary(events) + 1
		if start > 0 {
			start++ // skip the boundary itself
		}
		if s.copyEventData(events[start:]) || start == 0 {
			return
		}
		events = bytes.TrimRight(events[:start], "\n")
	}
}

// copyEventData copies an event's data (data lines joined with "\n") into s.last; false, and s.last
// untouched, when the event has no data line.
func (s *Stream) copyEventData(event []byte) bool {
	opcount.Add(opcount.StepsTaken, len(event)) // searched for its data lines, and their values copied
	if !bytes.HasPrefix(event, dataField) && !bytes.Contains(event, []byte("\ndata:")) {
		return false
	}
	if body := bytes.TrimRight(event, "\n"); bytes.HasPrefix(body, dataField) && bytes.IndexByte(body, '\n') < 0 {
		// One data line, the common shape: no splitting.
		value := body[len(dataField):]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		s.last = append(s.last[:0], value...)
		return true
	}
	s.last = s.last[:0]
	first := true
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		if value, ok := bytes.CutPrefix(line, dataField); ok {
			if !first {
				s.last = append(s.last, '\n')
			}
			first = false
			s.last = append(s.last, bytes.TrimPrefix(value, []byte(" "))...)
		}
	}
	return true
}

// finished reports whether the last JSON event ended the answer: a finish_reason or a usage summary.
func (s *Stream) finished() bool {
	if len(s.last) == 0 {
		return false
	}
	if u := gjson.GetBytes(s.last, "usage"); u.IsObject() {
		return true
	}
	// ForEach, not Array: an upstream decides how many choices there are, and Array allocates a Result each.
	done := false
	gjson.GetBytes(s.last, "choices").ForEach(func(_, c gjson.Result) bool {
		if f := c.Get("finish_reason"); f.Type == gjson.String && f.Str != "" {
			done = true
		}
		return !done
	})
	return done
}

// Usage reads token usage from the last JSON event of the stream (where every dialect reports it).
func (s *Stream) Usage() Usage { return s.surface.usage(s) }

// Truncated reports whether the upstream stream ended before the answer was complete.
func (s *Stream) Truncated() bool { return s.truncated }

// StreamFailure is what a client gets when its stream cannot go on: an error event in its envelope, then
// [DONE].
func StreamFailure(client Dialect, e *Error) []byte {
	return append(ErrorEvent(client, e), doneEvent...)
}

// Failure is what the client gets when this stream cannot go on: StreamFailure for a chat stream, and for
// another surface the event its SDK reports as an error.
func (s *Stream) Failure(e *Error) []byte { return s.surface.failure(s, e) }

// Done reports whether the client has been sent its [DONE].
func (s *Stream) Done() bool { return s.done }

// event decides one event's fate; an edited replacement is written to s.out, after s.pending.
func (s *Stream) event(ev sse.Event, lastData *[]byte) eventAction {
	if !ev.HasData {
		return forwardEvent
	}
	if (len(ev.Data) == 0 || ev.Data[0] != '{') && bytes.Equal(bytes.TrimSpace(ev.Data), doneData) {
		if s.done {
			return dropEvent
		}
		s.done = true
		return forwardEvent
	}
	if s.done {
		// Nothing may follow [DONE]: SDKs stop reading there.
		return dropEvent
	}
	*lastData = ev.Data
	if s.bindIDs {
		return s.bindEvent(ev.Raw)
	}
	if !s.inspect {
		return forwardEvent
	}
	return s.editChunk(ev.Data, ev.Joined)
}

// eventParts is one JSON stream event as the dialect hooks see it: the top-level members translation reads,
// and their replacements.
type eventParts struct {
	// object, choices and usage are the values of those members (nil when absent).
	object, choices, usage []byte
	// Replacements set by the hooks (nil: unchanged).
	newObject, newChoices, newUsage []byte
	// usageChunk: OpenAI's separate usage chunk (choices: [], usage) follows the event.
	usageChunk bool
}

func (ev *eventParts) hasUsage() bool { return ev.usage != nil && ev.usage[0] == '{' }

// editChunk applies the dialect pair's rules to one JSON chunk in one pass over its top-level members.
func (s *Stream) editChunk(data []byte, joined bool) eventAction {
	members, err := jsonscan.Skim(data, s.members[:0], maxTopLevelMembers)
	s.members = members
	if err != nil {
		// Not JSON (a provider's plain-text notice, say): forward it untouched rather than guess.
		return forwardEvent
	}
	x := &s.x
	provider := x.Provider.spec()
	foreign := x.Client != x.Provider && provider != nil // the provider's own members and events go
	// The parts live in the translator: handed to the hooks, a local would move to the heap for every event.
	ev := &s.parts
	dropped := s.classifyMembers(provider, foreign, data, members)
	if x.StripUsageChunk && ev.hasUsage() && isEmptyArray(ev.choices) {
		// The usage chunk the gateway asked for itself; Usage() has read it from s.last.
		return dropEvent
	}
	if foreign {
		if provider.dropsEvent(x, ev) {
			return dropEvent
		}
		provider.editEvent(s, ev)
	}
	if x.Op == OpChatCompletions && ev.object != nil && !bytes.Equal(ev.object, chunkObject) {
		ev.newObject = chunkObject
	}
	if !dropped && ev.newObject == nil && ev.newChoices == nil && ev.newUsage == nil && !ev.usageChunk {
		return forwardEvent // nothing to write: the event goes out as it came, without a copy
	}
	return s.writeEdited(data, members, joined)
}

// classifyMembers sorts the event's top-level members into s.kinds and resets s.parts to their values;
// dropped reports a member that is the provider's own. (editChunk's parts are small functions: in the
// compiled module a large function's loops all go through one dispatch at its top.)
func (s *Stream) classifyMembers(provider *dialectSpec, foreign bool, data []byte, members []jsonscan.Member) (dropped bool) {
	// Field by field: assigning the whole struct is a typed copy with write barriers in the module.
	ev := &s.parts
	ev.object, ev.choices, ev.usage = nil, nil, nil
	ev.newObject, ev.newChoices, ev.newUsage = nil, nil, nil
	ev.usageChunk = false
	ownKeys := foreign && len(provider.answerKeys) > 0
	kinds := s.kinds[:0]
	for _, m := range members {
		opcount.Add(opcount.MembersVisited, 1)
		k := classifyChunkKey(m.Key(data))
		if m.KeyEscaped || k == keyOther && ownKeys {
			k = s.classify(provider, foreign, m, data)
		}
		kinds = append(kinds, k)
		switch k {
		case keyDropped:
			dropped = true
		case keyObject:
			ev.object = m.Value(data)
		case keyChoices:
			ev.choices = m.Value(data)
		case keyUsage:
			ev.usage = m.Value(data)
		}
	}
	s.kinds = kinds
	return dropped
}

// writeEdited writes the event to s.out, after s.pending, as it came with the changes in s.parts spliced
// in: the members between two changes go out in one copy, whitespace and all.
func (s *Stream) writeEdited(data []byte, members []jsonscan.Member, joined bool) eventAction {
	ev := &s.parts
	kinds := s.kinds[:len(members)]
	mark := len(s.out)
	w := append(s.out, s.pending...)
	w = append(w, "data: "...)
	start := len(w)  // where this event's data begins in w
	copied := 0      // data[:copied] is written or left out
	cut := -1        // once a member is kept: where a member left out next is cut from (the comma before it)
	changed := false // a member was left out or replaced
	for i, m := range members {
		var value []byte
		switch kinds[i] {
		case keyDropped:
			// The member goes with the comma before it, or, when no member before it stays, the one after.
			if cut >= 0 {
				w = append(w, data[copied:cut]...)
				cut = m.ValEnd
				copied = m.ValEnd
			} else {
				w = append(w, data[copied:m.KeyStart]...)
				copied = m.ValEnd
				if i+1 < len(members) {
					copied = members[i+1].KeyStart
				}
			}
			changed = true
			continue
		case keyObject:
			value = ev.newObject
		case keyUsage:
			value = ev.newUsage
		case keyChoices:
			value = ev.newChoices
		}
		if value != nil {
			w = append(w, data[copied:m.ValStart]...)
			w = append(w, value...)
			copied, changed = m.ValEnd, true
		}
		cut = m.ValEnd
	}
	w = append(w, data[copied:]...)
	if joined {
		// Data of several data lines holds the newlines that joined them: each must start a data line again.
		w = splitDataLines(w, start)
	}
	w = append(w, "\n\n"...)
	if ev.usageChunk {
		w = append(w, "data: "...)
		start = len(w)
		w = appendUsageChunk(w, data, members, ev.usage)
		if joined {
			w = splitDataLines(w, start)
		}
		w = append(w, "\n\n"...)
		changed = true
	}
	if !changed {
		s.out = w[:mark]
		return forwardEvent
	}
	s.out, s.pending = w, nil
	return editedEvent
}

// splitDataLines turns each "\n" in w[from:] into "\n" and a new "data: " field, in place.
func splitDataLines(w []byte, from int) []byte {
	opcount.Add(opcount.StepsTaken, 2*(len(w)-from)) // counted, then moved
	n := bytes.Count(w[from:], []byte("\n"))
	if n == 0 {
		return w
	}
	const field = "data: "
	end := len(w)
	w = append(w, make([]byte, n*len(field))...)
	// From the end backwards, so that each byte moves once.
	dst := len(w)
	for src := end - 1; src >= from; src-- {
		if w[src] == '\n' {
			dst -= len(field)
			copy(w[dst:], field)
		}
		dst--
		w[dst] = w[src]
	}
	return w
}

// chunkKey classifies the top-level keys of a stream chunk that translation may touch.
type chunkKey uint8

const (
	keyOther chunkKey = iota
	keyObject
	keyChoices
	keyUsage
	keyDropped // a provider's own member, not for this client
)

// classifyChunkKey is the common case of classify: a plain key of the hub's shape.
func classifyChunkKey(raw []byte) chunkKey {
	opcount.Equal(len(raw), len("object"))
	opcount.Equal(len(raw), len("choices"))
	opcount.Equal(len(raw), len("usage"))
	switch string(raw) {
	case "object":
		return keyObject
	case "choices":
		return keyChoices
	case "usage":
		return keyUsage
	}
	return keyOther
}

// classify is classifyChunkKey for escaped keys, and for keys that may be the provider's own members.
func (s *Stream) classify(provider *dialectSpec, foreign bool, m jsonscan.Member, data []byte) chunkKey {
	raw := m.Key(data)
	if m.KeyEscaped {
		// Clients decode "onchain\u005fdata" and "usage" alike: so does the filter (rare, so it may allocate).
		raw = []byte(decodeJSONString(data[m.KeyStart:m.KeyEnd]))
	}
	if k := classifyChunkKey(raw); k != keyOther {
		return k
	}
	if foreign {
		if fate, _ := fateOf(provider, &s.x, raw); fate != keepKey {
			return keyDropped // members exposed as headers in JSON answers cannot be headers mid-stream
		}
	}
	return keyOther
}

// appendUsageChunk writes the data of OpenAI's separate usage chunk (choices: [], usage) that include_usage promises;
// Azure AI instead puts usage on its last content chunk.
func appendUsageChunk(w, data []byte, members []jsonscan.Member, usage []byte) []byte {
	w = append(w, '{')
	for _, key := range []string{"id", "created", "model"} {
		for _, m := range members {
			if opcount.Enabled { // (costs the inliner nothing without the tag)
				opcount.Add(opcount.MembersVisited, 1)
				opcount.Equal(m.KeyEnd-m.KeyStart-2, len(key))
			}
			if string(m.Key(data)) == key {
				w = append(w, data[m.KeyStart:m.ValEnd]...)
				w = append(w, ',')
			}
		}
	}
	w = append(w, `"object":"chat.completion.chunk","choices":[],"usage":`...)
	w = append(w, usage...)
	return append(w, '}')
}

// maxStreamToolCalls bounds the tool-call ids one stream remembers; an answer calls a handful of tools.
const maxStreamToolCalls = 1024

// indexToolCalls gives streamed tool-call deltas without an index (Azure AI's) the "index" OpenAI clients need to assemble
// calls: the order in which each call id first appeared; a delta without an id continues the latest call.
// The index is inserted right after each call object's opening brace, in one copy of the choices.
func (s *Stream) indexToolCalls(choices []byte) []byte {
	if s.toolIndex == nil {
		s.toolIndex = map[string]int{}
	}
	type insertion struct{ at, index int }
	var inserts []insertion
	// ForEach reports each value's offset in choices, so every call is located in the one pass over the
	// choices (looking each up again by path would rescan them per call: quadratic in an upstream's calls).
	opcount.Add(opcount.StepsTaken, len(choices)) // gjson's pass over the choices
	gjson.Parse(unsafe.String(unsafe.SliceData(choices), len(choices))).ForEach(func(_, choice gjson.Result) bool {
		opcount.Add(opcount.StepsTaken, len(choice.Raw)) // the search for its delta.tool_calls
		calls := choice.Get("delta.tool_calls")
		if !calls.IsArray() {
			return true
		}
		calls.ForEach(func(_, call gjson.Result) bool {
			opcount.Add(opcount.MembersVisited, 1)
			opcount.Add(opcount.StepsTaken, 2*len(call.Raw)) // the searches for its index and id
			if !call.IsObject() || call.Get("index").Exists() {
				return true
			}
			index := len(s.toolIndex) - 1
			if id := stringOf(call.Get("id")); id != "" {
				opcount.Lookup(len(id))
				i, seen := s.toolIndex[id]
				if !seen && len(s.toolIndex) < maxStreamToolCalls {
					i = len(s.toolIndex)
					// A copy: an id that is not a string is a view of this event, which must not live as long as
					// the stream.
					s.toolIndex[strings.Clone(id)] = i
				} else if !seen {
					i = index // past the bound, a new id continues the latest call
				}
				index = i
			}
			if at := call.Index; at > 0 && at < len(choices) && choices[at] == '{' {
				inserts = append(inserts, insertion{at + 1, max(index, 0)})
			}
			return true
		})
		return true
	})
	if len(inserts) == 0 {
		return nil
	}
	out := make([]byte, 0, len(choices)+16*len(inserts))
	last := 0
	opcount.Add(opcount.BytesCopied, len(choices))
	for _, in := range inserts {
		opcount.Add(opcount.StepsTaken, 1)
		out = append(out, choices[last:in.at]...)
		out = append(out, `"index":`...)
		out = strconv.AppendInt(out, int64(in.index), 10)
		if rest := bytes.TrimLeft(choices[in.at:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		last = in.at
	}
	return append(out, choices[last:]...)
}

func isEmptyArray(v []byte) bool {
	v = bytes.TrimSpace(v)
	return len(v) >= 2 && v[0] == '[' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}

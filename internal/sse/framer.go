// Package sse frames a server-sent event stream (the WHATWG event-stream format) into events whatever the
// chunking of the network reads, with a bounded carry-over of the one incomplete event, and without copying
// events that lie within a chunk.
package sse

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/aidialect/aidialect/internal/opcount"
)

// DefaultMaxEventBytes bounds the carry-over of one incomplete event. Streamed LLM events are a few hundred
// bytes to a few kilobytes; a megabyte leaves room for large tool-call arguments while keeping an upstream
// that never ends its event (or is not SSE at all) from growing the filter's memory without limit.
const DefaultMaxEventBytes = 1 << 20

// ErrEventTooLarge is returned (wrapped with the sizes involved) when an incomplete event grows past the
// bound. Callers test it with errors.Is to tell a misbehaving upstream from their own errors; the stream
// cannot be framed any further, as the chunk that crossed the bound was not taken.
var ErrEventTooLarge = errors.New("sse: event too large")

var errFramerFeedAfterFlush = errors.New("sse: Feed after Flush: call Reset before feeding a new stream")

// Event is one complete event.
type Event struct {
	// Raw is the exact input bytes of the event, including the blank line that ended it (or, from Flush, up
	// to the end of the stream), so that writing every Raw in order reproduces the stream byte for byte.
	Raw []byte
	// Data is the value of the data field(s): data lines joined with "\n", one leading space after "data:"
	// removed, as the WHATWG event-stream interpretation dispatches it. Nil when the event has no data line.
	Data []byte
	// HasData tells "data:" (an empty value) apart from an event without any data line.
	HasData bool
	// Joined: Data comes from more than one data line, so it holds the "\n"s that joined them; a writer
	// putting Data back on one data line must split it again.
	Joined bool
}

// Framer cuts an SSE byte stream into events whatever the chunking of the network reads: an event may span
// many chunks, a chunk may hold many events, and a CRLF may be split between two chunks. Events that lie
// within a chunk are returned as subslices of it; only an incomplete tail is copied (and the next chunk
// appended to it), into buffers the framer reuses, so that framing allocates nothing once they have grown.
//
// The zero value is ready to use, with DefaultMaxEventBytes.
type Framer struct {
	max int // bound on the incomplete tail; <= 0 means DefaultMaxEventBytes

	// src is what Next frames: the chunk of the last Feed when nothing was carried over, else buf (the
	// carried-over tail followed by that chunk). base is src as it was right after Feed: the events returned
	// since that Feed are laid out one after the other from base[0].
	src   []byte
	base  []byte
	inBuf bool // src is buf
	buf   []byte

	pos  int // start of the first event not yet returned
	scan int // start of the first line of that event not yet parsed
	look int // src[scan:look] holds no line terminator: where the search for the line's end resumes
	// lf and cr cache the index of the next '\n' and '\r' at or after where they were searched for (len(src)
	// when there is none), so that a stream using only one kind never rescans for the other; a value below
	// look is stale. The zero value reads as "none" while src is empty, and every change of src sets -1.
	lf, cr int

	nData   int // data lines in the event at pos
	d0, d1  int // its first data value, relative to pos so that it survives moving the tail to buf
	js      int // where the event's joined data starts in scratch, from its second data line on
	scratch []byte

	started   bool // the stream's first line has been parsed: only it may start with a BOM
	eof       bool
	fromChunk bool
	err       error
}

// NewFramer returns a framer that refuses to carry over an incomplete event larger than maxEventBytes
// (<= 0: DefaultMaxEventBytes).
func NewFramer(maxEventBytes int) *Framer {
	return &Framer{max: maxEventBytes}
}

// SetLimit sets the bound on one incomplete event (<= 0: DefaultMaxEventBytes); Reset keeps it.
func (f *Framer) SetLimit(maxEventBytes int) { f.max = maxEventBytes }

// Limit is the bound on one incomplete event.
func (f *Framer) Limit() int {
	if f.max <= 0 {
		return DefaultMaxEventBytes
	}
	return f.max
}

// Footprint is the bytes of the buffers the framer keeps for reuse across streams.
func (f *Framer) Footprint() int { return cap(f.buf) + cap(f.scratch) }

// Reset prepares the framer for a new stream, keeping its buffers for reuse: a filter serves many streams
// and their steady state should not allocate.
func (f *Framer) Reset() {
	*f = Framer{max: f.max, buf: f.buf[:0], scratch: f.scratch[:0], lf: -1, cr: -1}
}

// Feed hands the framer the next chunk. Events are then pulled with Next.
//
// Feed does not copy chunk: Next reads it and returns slices of it. Once Next has reported ok=false the
// framer holds its own copy of the incomplete tail, so the caller may reuse chunk's memory from then on.
// (A caller that feeds again without draining Next must leave chunk intact until that next Feed, which
// copies whatever is left.)
//
// Feed fails with an error wrapping ErrEventTooLarge when the stream's incomplete tail (the event still
// waiting for its blank line) would exceed the bound. The chunk is then not taken and every later Feed
// fails the same way until Reset.
func (f *Framer) Feed(chunk []byte) error {
	if f.err != nil {
		return f.err
	}
	if f.eof {
		return errFramerFeedAfterFlush
	}
	// The Data handed out since the last Feed is dead; only the event at pos may have a partial join.
	if f.nData > 1 {
		opcount.Add(opcount.BytesCopied, len(f.scratch)-f.js)
		f.scratch = f.scratch[:copy(f.scratch, f.scratch[f.js:])]
		f.js = 0
	} else {
		f.scratch = f.scratch[:0]
	}
	tail := len(f.src) - f.pos
	if tail == 0 {
		f.setSrc(chunk, false, f.pos)
		f.base, f.fromChunk = chunk, true
		if len(chunk) > f.Limit() {
			return f.checkBound(0)
		}
		return nil
	}
	if !f.inBuf {
		f.stash() // the caller fed again without draining Next
	} else if f.pos > 0 {
		opcount.Add(opcount.BytesCopied, len(f.src)-f.pos)
		f.buf = f.buf[:copy(f.buf, f.src[f.pos:])]
		f.setSrc(f.buf, true, f.pos)
	}
	opcount.Add(opcount.BytesCopied, len(chunk))
	f.buf = append(f.buf, chunk...)
	f.setSrc(f.buf, true, 0)
	f.base, f.fromChunk = f.buf, false
	if len(f.buf) > f.Limit() {
		return f.checkBound(tail)
	}
	return nil
}

// checkBound measures the incomplete tail exactly, which takes a scan of the new bytes: Feed calls it only
// when the tail plus the chunk exceed the bound. It leaves the framer as it was before Feed (minus the
// chunk) if the bound is crossed.
func (f *Framer) checkBound(keep int) error {
	g := *f
	for {
		ls, end, ok := g.nextLine()
		if !ok {
			break
		}
		if ls == end {
			g.pos = g.scan
		}
	}
	tail := len(g.src) - g.pos
	if tail <= f.Limit() {
		return nil
	}
	f.buf = f.buf[:keep]
	f.setSrc(f.buf, true, 0)
	f.base = f.buf[:0]
	f.err = fmt.Errorf("%w: an event is still incomplete after %d bytes, over the %d-byte bound: "+
		"raise the bound (maxEventBytes) if the upstream really sends events this large, "+
		"otherwise the upstream is not ending its events with a blank line", ErrEventTooLarge, tail, f.Limit())
	return f.err
}

// Next returns the next complete event of the fed bytes; ok=false when only an incomplete tail (or nothing)
// remains. The returned slices stay valid until the next Feed or Reset call; they must not be written to.
func (f *Framer) Next() (ev Event, ok bool) {
	for {
		opcount.Add(opcount.StepsTaken, 1) // a line
		// nextLine, by hand: this loop is the hot path.
		var end, next int
		if i := f.look; i < len(f.src) && f.src[i] == '\n' { // the blank line that ends most events
			end, next = i, i+1
		} else if end, next, ok = f.lineEnd(); !ok {
			break
		}
		ls := f.scan
		if !f.started {
			ls = f.firstLine(ls, end)
		}
		f.scan, f.look = next, next
		if ls < end {
			f.field(ls, end)
			continue
		}
		// A blank line: it ends the event, or stands alone as a Raw-only event when no line preceded it, so
		// that every input byte is returned exactly once.
		joined := f.nData > 1
		raw, data, hasData := f.cut(next)
		return Event{Raw: raw, Data: data, HasData: hasData, Joined: joined}, true
	}
	if f.eof {
		return f.flushTail()
	}
	if !f.inBuf {
		f.stash()
	}
	return Event{}, false
}

// Flush ends the stream: the incomplete tail (a final event without its blank line, or without a final
// newline at all, or a lone CR that could have begun a CRLF) is returned as the last event; ok=false when
// nothing remains. Flush is meant to follow a Next that returned ok=false; if events are still undrained it
// returns the first of them and Next the rest. After Flush, Feed fails until Reset. After a failed Feed,
// Flush returns nothing: the stream has lost a chunk and its tail cannot be trusted.
func (f *Framer) Flush() (ev Event, ok bool) {
	if f.err != nil {
		return Event{}, false
	}
	f.eof = true
	return f.Next()
}

// FromChunk reports whether every event returned since the last Feed is a subslice of that Feed's chunk
// (no bytes carried over from an earlier chunk were involved). The events then lie one after the other
// from chunk[0], so a caller passing them through untouched can return chunk[:n], n being the sum of their
// Raw lengths, instead of copying them.
func (f *Framer) FromChunk() bool { return f.fromChunk }

// consumedPrefix returns the first n bytes of the events returned since the last Feed, which are contiguous
// wherever they live (the chunk, or the carry-over buffer that starts with the tail and continues with the
// chunk): a caller forwarding a run of untouched events copies them in one go.
func (f *Framer) consumedPrefix(n int) []byte { return f.base[:n:n] }

// Pending returns the number of fed bytes not yet returned in an event: once Next has reported ok=false,
// the size of the carried-over incomplete tail.
func (f *Framer) Pending() int { return len(f.src) - f.pos }

// setSrc switches to a new src whose byte 0 was at index shift of the old one.
func (f *Framer) setSrc(src []byte, inBuf bool, shift int) {
	f.src, f.inBuf = src, inBuf
	f.pos -= shift
	f.scan -= shift
	f.look -= shift
	f.lf, f.cr = -1, -1
}

// stash copies the incomplete tail out of the caller's chunk, whose memory the caller may reuse.
func (f *Framer) stash() {
	opcount.Add(opcount.BytesCopied, len(f.src)-f.pos)
	f.buf = append(f.buf[:0], f.src[f.pos:]...)
	f.setSrc(f.buf, true, f.pos)
}

// nextLine parses the next complete line: src[ls:end] is its content, past a leading BOM on the stream's
// first line, and scan moves past its terminator.
func (f *Framer) nextLine() (ls, end int, ok bool) {
	end, next, ok := f.lineEnd()
	if !ok {
		return 0, 0, false
	}
	ls = f.scan
	if !f.started {
		ls = f.firstLine(ls, end)
	}
	f.scan, f.look = next, next
	return ls, end, true
}

// firstLine steps over a UTF-8 byte order mark at the start of the stream's first line: WHATWG ignores it,
// and it must not turn "data:" into another field name. It stays in Raw.
func (f *Framer) firstLine(ls, end int) int {
	f.started = true
	if end-ls >= 3 && string(f.src[ls:ls+3]) == "\xEF\xBB\xBF" {
		return ls + 3
	}
	return ls
}

// lineEnd finds the end of the line at scan with SIMD searches: end is its terminator, next the byte after
// the terminator. A CR that is the last fed byte may be the first half of a CRLF split across chunks: it
// only ends its line at end of stream, so that the events do not depend on the chunking.
func (f *Framer) lineEnd() (end, next int, ok bool) {
	src, i := f.src, f.look
	if f.lf < i {
		f.lf = indexByteFrom(src, i, '\n')
	}
	if f.cr < i {
		f.cr = indexByteFrom(src, i, '\r')
	}
	end = min(f.lf, f.cr)
	switch {
	case end == len(src):
		f.look = end
		return 0, 0, false
	case src[end] == '\n':
		return end, end + 1, true
	case end+1 < len(src):
		if src[end+1] == '\n' {
			return end, end + 2, true
		}
		return end, end + 1, true
	case f.eof:
		return end, end + 1, true
	}
	f.look = end
	return 0, 0, false
}

func indexByteFrom(s []byte, from int, c byte) int {
	if i := bytes.IndexByte(s[from:], c); i >= 0 {
		opcount.Add(opcount.StepsTaken, i+1) // bytes searched
		return from + i
	}
	opcount.Add(opcount.StepsTaken, len(s)-from+1)
	return len(s)
}

// field records the value of a data line; the other fields (event, id, retry) and comments only travel in
// Raw. A single data value stays a subslice of src; from the second one on the values are joined in scratch.
func (f *Framer) field(ls, end int) {
	line := f.src[ls:end]
	if len(line) < 4 || string(line[:4]) != "data" {
		return
	}
	vs := end // a bare "data" line has an empty value
	if len(line) > 4 {
		if line[4] != ':' {
			return // another field whose name starts with "data"
		}
		vs = ls + 5
		if vs < end && f.src[vs] == ' ' {
			vs++
		}
	}
	switch f.nData {
	case 0:
		f.d0, f.d1 = vs-f.pos, end-f.pos
	case 1:
		f.js = len(f.scratch)
		opcount.Add(opcount.BytesCopied, f.d1-f.d0)
		f.scratch = append(f.scratch, f.src[f.pos+f.d0:f.pos+f.d1]...)
		fallthrough
	default:
		opcount.Add(opcount.BytesCopied, end-vs+1)
		f.scratch = append(f.scratch, '\n')
		f.scratch = append(f.scratch, f.src[vs:end]...)
	}
	f.nData++
}

// flushTail returns what remains at end of stream: an event without its blank line, whose last line may
// lack a terminator. That line is parsed like the others: providers that omit the final blank line still
// mean their last data.
func (f *Framer) flushTail() (Event, bool) {
	n := len(f.src)
	if f.pos == n {
		return Event{}, false
	}
	if ls := f.scan; ls < n {
		if !f.started {
			ls = f.firstLine(ls, n)
		}
		if ls < n {
			f.field(ls, n)
		}
		f.scan, f.look = n, n
	}
	joined := f.nData > 1
	raw, data, hasData := f.cut(n)
	return Event{Raw: raw, Data: data, HasData: hasData, Joined: joined}, true
}

// cut returns the event at pos, ending at end, and starts the next one there. It returns the fields rather
// than an Event, which is too large to live in registers: building it once, in Next's return statement,
// saves copies through memory on the hot path.
func (f *Framer) cut(end int) (raw, data []byte, hasData bool) {
	raw = f.src[f.pos:end:end]
	switch {
	case f.nData == 1:
		s, e := f.pos+f.d0, f.pos+f.d1
		data = f.src[s:e:e]
	case f.nData > 1:
		n := len(f.scratch)
		data = f.scratch[f.js:n:n]
	}
	if f.inBuf {
		f.fromChunk = false // Flush's tail was carried over even when the last Feed's events were not
	}
	hasData = f.nData > 0
	f.pos, f.nData = end, 0
	return raw, data, hasData
}

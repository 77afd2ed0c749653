package sse

import (
	"errors"
	"strings"
	"testing"
)

// framerFuzzChunks cuts stream as cuts says, cycling through it: the low 6 bits of a byte are a chunk
// length (0: an empty Feed, then one byte), bit 6 multiplies it by 37 for chunks spanning many events, and
// bit 7 skips draining Next before the following Feed. No cuts: byte by byte.
func framerFuzzChunks(stream, cuts []byte) (chunks [][]byte, drain []bool) {
	for i, k := 0, 0; i < len(stream); k++ {
		c := byte(1)
		if len(cuts) > 0 {
			c = cuts[k%len(cuts)]
		}
		n := int(c & 0x3f)
		if c&0x40 != 0 {
			n *= 37
		}
		if n == 0 {
			chunks, drain = append(chunks, stream[i:i]), append(drain, true)
			n = 1
		}
		n = min(n, len(stream)-i)
		chunks, drain = append(chunks, stream[i:i+n]), append(drain, c&0x80 == 0)
		i += n
	}
	return chunks, drain
}

// FuzzFramerChunking checks that the events do not depend on how the stream is cut into chunks: any
// chunking gives the events of the whole stream fed at once, which are the reference parser's, and whose
// Raws rebuild the stream. With a small bound, Feed fails exactly when the reference says that some chunk
// boundary leaves an incomplete tail over it.
func FuzzFramerChunking(f *testing.F) {
	for _, tc := range framerCases {
		for _, cuts := range []string{"", "\x01", "\x02\x03", "\x05\x00\x07", "\x81\x02", "\x43\x01"} {
			f.Add([]byte(tc.in), []byte(cuts), uint16(4))
		}
	}
	var all strings.Builder
	for _, tc := range framerCases {
		all.WriteString(tc.in)
	}
	f.Add([]byte(all.String()), []byte("\x07\x0b\x8d\x00\x11"), uint16(16))
	f.Add([]byte(all.String()), []byte("\x7f\x41"), uint16(40))
	f.Add(framerAllocStream(8), []byte("\x7f\x3f\x01"), uint16(200))
	f.Add([]byte("data: a\r\r\n\r\n\n\rdata: b\r\n\r"), []byte("\x01\x02\x03"), uint16(3))

	f.Fuzz(func(t *testing.T, stream, cuts []byte, bound uint16) {
		ref, ends, final := framerReference(stream)

		whole, err := framerRun(NewFramer(0), [][]byte{stream})
		if err != nil {
			t.Fatal(err)
		}
		if !framerEqual(whole, ref) {
			t.Fatalf("whole stream\n got %v\nref %v", whole, ref)
		}
		var raw strings.Builder
		for _, ev := range whole {
			raw.WriteString(ev.Raw)
			if ev.NilData == ev.HasData {
				t.Fatalf("event %v: Data nil=%v with HasData=%v", ev, ev.NilData, ev.HasData)
			}
		}
		if raw.String() != string(stream) {
			t.Fatalf("concatenated Raw %q != stream %q", raw.String(), stream)
		}

		chunks, drain := framerFuzzChunks(stream, cuts)
		fr := NewFramer(0)
		var got []framerEvent
		p := 0
		for k, c := range chunks {
			carried := fr.Pending() > 0
			if err := fr.Feed(c); err != nil {
				t.Fatal(err)
			}
			p += len(c)
			if !drain[k] {
				continue
			}
			off := 0
			for ev, ok := fr.Next(); ok; ev, ok = fr.Next() {
				if fr.FromChunk() && &ev.Raw[0] != &c[off] {
					t.Fatalf("chunk %d: FromChunk, but event %q is not at chunk[%d:]", k, ev.Raw, off)
				}
				off += len(ev.Raw)
				got = append(got, framerCopyEvent(ev))
			}
			if fr.FromChunk() == carried {
				t.Fatalf("chunk %d: FromChunk %v after a Feed with carry-over %v", k, fr.FromChunk(), carried)
			}
			if want := framerTailAt(stream, ends, final, p); fr.Pending() != want {
				t.Fatalf("after %d bytes: Pending %d, want %d", p, fr.Pending(), want)
			}
		}
		for ev, ok := fr.Flush(); ok; ev, ok = fr.Next() {
			got = append(got, framerCopyEvent(ev))
		}
		if !framerEqual(got, whole) {
			t.Fatalf("chunked %q\n got %v\nwant %v", chunks, got, whole)
		}

		// The bound: drain after every chunk, as the filter does.
		limit := int(bound)%256 + 1
		fr = NewFramer(limit)
		got, p = got[:0], 0
		var feedErr error
		for _, c := range chunks {
			if feedErr = fr.Feed(c); feedErr != nil {
				break
			}
			p += len(c)
			for ev, ok := fr.Next(); ok; ev, ok = fr.Next() {
				got = append(got, framerCopyEvent(ev))
			}
		}
		wantErr := false
		q := 0
		for _, c := range chunks {
			if framerTailAt(stream, ends, final, q+len(c)) > limit {
				wantErr = true
				break
			}
			q += len(c)
		}
		if wantErr != errors.Is(feedErr, ErrEventTooLarge) || (feedErr != nil && !wantErr) {
			t.Fatalf("bound %d: Feed error %v, want error %v", limit, feedErr, wantErr)
		}
		if wantErr {
			// The events before the refused chunk are those known complete at its start.
			knownEnd, known := p-framerTailAt(stream, ends, final, p), 0
			for known < len(ends) && ends[known] <= knownEnd && !(final && known == len(ends)-1) {
				known++
			}
			if !framerEqual(got, ref[:known]) {
				t.Fatalf("bound %d: events before the error\n got %v\nwant %v", limit, got, ref[:known])
			}
			if fr.Pending() != framerTailAt(stream, ends, final, p) {
				t.Fatalf("bound %d: Pending %d after the error, want %d", limit, fr.Pending(), framerTailAt(stream, ends, final, p))
			}
		}
	})
}

package sse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/opcount"
)

// TestFramerCountsLinear: framing costs at most 4 operations (line-search steps, bytes carried over or
// joined) per byte, and flat per byte at 4x the bytes, whatever the events and the chunking. Counts, not
// timings (internal/opcount). Checked to fail on mutations (made, run, reverted):
//
//	row                     mutation                                               ops per byte
//	cr-line-ends            the LF search not cached: repeated to the chunk's end    1,096 (quadratic in
//	                        for every line of a stream that has no LF                the chunk)
//	one-event-tiny-chunks   a line's end searched from its start, not from where     4,098, and 4x per
//	                        the last search stopped                                  byte at 4x the bytes
//	long-tail-moves         the same                                                 9.7
func TestFramerCountsLinear(t *testing.T) {
	if !opcount.Enabled {
		t.Skip("counts operations: run with -tags aidialect_opcount (make test does)")
	}
	rows := []struct {
		name  string
		body  func(size int) []byte
		chunk int
	}{
		{"tiny-events", func(n int) []byte { return repeatTo("data:{}\n\n", n) }, 16 << 10},
		{"cr-line-ends", func(n int) []byte { return repeatTo("data: {\"a\":1}\r\r", n) }, 16 << 10},
		{"crlf-line-ends", func(n int) []byte { return repeatTo("data: {\"a\":1}\r\n\r\n", n) }, 16 << 10},
		{"multi-line-data", func(n int) []byte { return repeatTo("data: {\ndata: \"a\":1\ndata: }\n\n", n) }, 16 << 10},
		{"one-event-tiny-chunks", func(n int) []byte { return append(bytes.Repeat([]byte("x"), n-8), "\n\n"...) }, 64},
		// Each chunk completes an event and starts a long one: the carried-over tail moves to the buffer's
		// start once per event.
		{"long-tail-moves", func(n int) []byte {
			return repeatTo("data: "+strings.Repeat("y", 20<<10)+"\n\n", n)
		}, 3000},
	}
	const size, factor = 256 << 10, 4
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			small := countFraming(t, r.body(size), r.chunk)
			large := countFraming(t, r.body(factor*size), r.chunk)
			perByte := float64(small.Total()) / size
			growth := float64(large.Total()) / (factor * size) / perByte
			t.Logf("%d KiB in %d-byte chunks: %.2f ops per byte (%v); %dx the bytes: %.3fx per byte",
				size>>10, r.chunk, perByte, small, factor, growth)
			if perByte > 4 {
				t.Errorf("%.1f operations per byte (bound 4): %v", perByte, small)
			}
			if growth > 1.1 {
				t.Errorf("%dx the bytes cost %.2fx the operations per byte (bound 1.1): not linear", factor, growth)
			}
		})
	}
}

// countFraming frames stream fed in chunks of chunk bytes and counts the operations; every byte must come
// back in an event.
func countFraming(t *testing.T, stream []byte, chunk int) opcount.Counts {
	t.Helper()
	f := NewFramer(2 << 20)
	opcount.Reset()
	n := 0
	for rest := stream; len(rest) > 0; {
		k := min(chunk, len(rest))
		if err := f.Feed(rest[:k]); err != nil {
			t.Fatal(err)
		}
		rest = rest[k:]
		for ev, ok := f.Next(); ok; ev, ok = f.Next() {
			n += len(ev.Raw)
		}
	}
	for ev, ok := f.Flush(); ok; ev, ok = f.Next() {
		n += len(ev.Raw)
	}
	c := opcount.Snapshot()
	if n != len(stream) {
		t.Fatalf("events of %d bytes out of %d", n, len(stream))
	}
	return c
}

func repeatTo(s string, n int) []byte { return []byte(strings.Repeat(s, n/len(s)+1)[:n]) }

package main

import (
	"slices"
	"testing"
)

// TestHeaderMapEncoding: the module's own serialisation of header maps (hostcalls_wasip1.go) reads back what
// it wrote, in the layout proxy-wasm hosts take (count, each name and value size, then each name and value
// with a NUL after it), and decodes into a given buffer only when it is large enough.
func TestHeaderMapEncoding(t *testing.T) {
	lists := [][][2]string{
		nil,
		{{":method", "POST"}},
		{{":path", "/v1/chat/completions"}, {"", ""}, {"x-empty", ""}, {"authorization", "Bearer k"}, {"a", "1"}, {"a", "2"}},
	}
	for _, pairs := range lists {
		b := appendHeaderMap([]byte("left over"), pairs)
		size := 4
		for _, kv := range pairs {
			size += 8 + len(kv[0]) + 1 + len(kv[1]) + 1
		}
		if len(b) != size {
			t.Errorf("%q: %d bytes, want %d", pairs, len(b), size)
		}
		if len(pairs) > 0 {
			want := append(append([]byte(pairs[0][0]), 0), pairs[0][1]...)
			if off := 4 + 8*len(pairs); string(b[off:off+len(want)]) != string(want) {
				t.Errorf("%q: first pair written as %q", pairs, b[off:off+len(want)])
			}
		}
		for _, buf := range [][][2]string{nil, make([][2]string, 1, 2), make([][2]string, 0, 16)} {
			got := decodeHeaderMap(b, buf)
			if !slices.Equal(got, pairs) || len(got) != len(pairs) {
				t.Errorf("decoded %q, want %q", got, pairs)
			}
			if len(pairs) == 0 || cap(buf) == 0 {
				continue
			}
			if want, inBuf := cap(buf) >= len(pairs), &got[0] == &buf[:1][0]; inBuf != want {
				t.Errorf("%q into a buffer of %d: decoded in the buffer %v, want %v", pairs, cap(buf), inBuf, want)
			}
		}
	}
}

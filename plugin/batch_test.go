package main

import (
	"math/rand/v2"
	"slices"
	"strconv"
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

// TestHeaderListApplyRandom: on random lists and batches (names that collide in nameBit, repeats, sets
// undone by later dels and sets, batches of more than 64 edits), apply and applyIn into another buffer make the list set and del make one
// by one, and dirty it alike.
func TestHeaderListApplyRandom(t *testing.T) {
	names := []string{":path", ":authority", "a", "b", "api-key", "authorization", "content-length", "x-a", "X-A", "",
		"content-type", "accept-encoding", "x-aidialect-provider", "openai-project"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		var start [][2]string
		for range rng.IntN(12) {
			start = append(start, [2]string{names[rng.IntN(len(names))], strconv.Itoa(rng.IntN(3))})
		}
		var edits []headerEdit
		n := rng.IntN(20)
		if rng.IntN(50) == 0 {
			n = 60 + rng.IntN(10) // past 64, applyIn makes them one by one
		}
		for range n {
			edits = append(edits, headerEdit{name: names[rng.IntN(len(names))], value: strconv.Itoa(rng.IntN(3)), del: rng.IntN(3) == 0})
		}
		want := headerList{pairs: slices.Clone(start)}
		for _, e := range edits {
			if e.del {
				want.del(e.name)
			} else {
				want.set(e.name, e.value)
			}
		}
		inPlace := headerList{pairs: slices.Clone(start)}
		inPlace.apply(edits)
		orig := slices.Clone(start)
		elsewhere := headerList{pairs: orig}
		elsewhere.applyIn(edits, make([][2]string, 3, 8))
		for _, got := range []headerList{inPlace, elsewhere} {
			if !slices.Equal(got.pairs, want.pairs) || got.dirty != want.dirty {
				t.Fatalf("%q with %v:\napply %q dirty %v\none by one %q dirty %v", start, edits, got.pairs, got.dirty, want.pairs, want.dirty)
			}
		}
		if !slices.Equal(orig, start) {
			t.Fatalf("applyIn into another buffer changed the list it read: %q, was %q", orig, start)
		}
	}
}

// TestHeaderEdits: a batch keeps every edit in order, past its array too.
func TestHeaderEdits(t *testing.T) {
	for _, n := range []int{0, 1, 23, 24, 25, 60} {
		var e headerEdits
		var want []headerEdit
		for i := range n {
			name := "h" + strconv.Itoa(i)
			if i%3 == 0 {
				e.del(name)
				want = append(want, headerEdit{name: name, del: true})
			} else {
				e.set(name, strconv.Itoa(i))
				want = append(want, headerEdit{name: name, value: strconv.Itoa(i)})
			}
		}
		if got := e.list(); !slices.Equal(got, want) {
			t.Errorf("%d edits: %v, want %v", n, got, want)
		}
	}
}

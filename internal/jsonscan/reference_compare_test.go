package jsonscan

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// sameAsReference fails t where the package's answers for data differ from the reference implementation's
// (reference_test.go): Valid and Check (verdict, offset, message), Members and Skim with several limits and a
// non-empty dst (members, error, ErrTooManyMembers as that very value), AppendString.
func sameAsReference(t *testing.T, data []byte) {
	if got, want := Valid(data), refValid(data); got != want {
		t.Helper()
		t.Fatalf("Valid = %v, reference %v: %q", got, want, data)
	}
	sameCheck(t, data)
	prefix := []Member{{1, 2, 3, 4, true}}
	for _, limit := range []int{0, 1, 2, 3, 7} {
		for _, f := range []struct {
			name string
			got  func([]byte, []Member, int) ([]Member, error)
			want func([]byte, []Member, int) ([]Member, error)
		}{{"Members", Members, refMembers}, {"Skim", Skim, refSkim}} {
			got, err := f.got(data, append([]Member(nil), prefix...), limit)
			want, refErr := f.want(data, append([]Member(nil), prefix...), limit)
			if !sameErr(err, refErr) || (err == ErrTooManyMembers) != (refErr == refErrTooManyMembers) {
				t.Helper()
				t.Fatalf("%s(limit %d) error %v, reference %v: %q", f.name, limit, err, refErr, data)
			}
			if !sameMembers(got, want) {
				t.Helper()
				t.Fatalf("%s(limit %d) = %+v, reference %+v: %q", f.name, limit, got, want, data)
			}
		}
	}
	if got, want := AppendString([]byte("x"), string(data)), refAppendString([]byte("x"), string(data)); !bytes.Equal(got, want) {
		t.Helper()
		t.Fatalf("AppendString = %q, reference %q: %q", got, want, data)
	}
}

// sameCheck is sameAsReference for Check alone.
func sameCheck(t *testing.T, data []byte) {
	off, err := Check(data)
	refOff, refErr := refCheck(data)
	if off != refOff || !sameErr(err, refErr) {
		t.Helper()
		t.Fatalf("Check = %d, %v; reference %d, %v: %q", off, err, refOff, refErr, data)
	}
}

// sameErr reports whether err and refErr say the same (Error() would give the same text), comparing the
// fields of syntax errors rather than formatting them: most inputs of these tests are invalid, and the
// formatting was most of their time (t.Helper is called only on failure for the same reason).
func sameErr(err, refErr error) bool {
	se, ok := err.(*syntaxError)
	refSE, refOK := refErr.(*refsyntaxError)
	if ok && refOK {
		return se.offset == refSE.offset && se.msg == refSE.msg
	}
	return errText(err) == errText(refErr)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func sameMembers(a, b []Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzMatchesReference: every exported answer of the package is the reference implementation's, on any input.
func FuzzMatchesReference(f *testing.F) {
	for _, s := range []string{`{}`, `[1,{"a":"b\u00e9"},null,true,-1.5e3]`, ` "x" `, `{"a":1,}`, `[`, "\"\xff\"",
		`{"a":[[[]]]}`, string(nested("[", "", "]", MaxDepth)), string(nested("[", "", "]", MaxDepth+1)),
		string(nested(`[{"a":`, "1", "}]", MaxDepth/2)), string(nested(`[{"a":`, "[]", "}]", MaxDepth/2)),
		"\f{}", `1 2`, `"\ud83d"`, `{"a"}`, `01`, `1e`, `-`, `-0.0e+1`, `tru`, `nulll`, `{"a":1 "b":2}`, `[1 2]`,
		`{"a":{"b":[1,2},"c":3}`, `{"a":[1,2}]}`, "{\"k\\\"ey\":\"v\\\\\"}", `{"a":"\u12G4"}`, `{"a":"\x"}`,
		"{\"a\":\"ünïcödé \xe2\x82\xac \xf0\x9f\x98\x80 \xed\xa0\x80\"}", "\"\xc3\"", "\"\xe2\x82\"",
		"\"\xf0\x9f\x98\"", "\"\xef\xbf\xbd\"", "\"\xc0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\x7f\"", "\"\u2028\"",
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}`, `{"id":"x","choices":[{"delta":{"content":"}]\"{"}}]}`,
		`{"a":tru}`, `{"a":}`, `{"a"   :   [ 1 , { } , [ ] ]   }  `, `{"a":1}}`, `{"a\\":"b\\\\\"c"}`} {
		f.Add([]byte(s))
	}
	f.Add(chatRequestForTest())
	f.Fuzz(func(t *testing.T, data []byte) { sameAsReference(t, data) })
}

// FuzzMatchesReferenceWrapped is FuzzMatchesReference with the input placed where the scanners' other paths
// read it: an object member's value, an array element, a string's content, an object key, each after 0 to 7
// spaces (shape&7) so that every alignment of the 8-byte loops is reached.
func FuzzMatchesReferenceWrapped(f *testing.F) {
	for _, s := range []string{`1`, `"a"`, `[{"a":[]}]`, `ünïcödé \" \u00e9 text`, "\xe2\x82\xac\xed\xa0\x80",
		`{"k":"v"},"x":{`, `"\\"`, `a\"b":1,"c`} {
		for shape := range 32 {
			f.Add(byte(shape), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, shape byte, data []byte) {
		pad := strings.Repeat(" ", int(shape&7))
		var in string
		switch shape >> 3 & 3 {
		case 0:
			in = `{"k":` + pad + string(data) + `}`
		case 1:
			in = `[` + pad + string(data) + `]`
		case 2:
			in = `{"k":"` + pad + string(data) + `"}`
		case 3:
			in = `{` + pad + `"` + string(data) + `":1}`
		}
		sameAsReference(t, []byte(in))
	})
}

// chatRequestForTest is a chat request like the benchmarks' (a few messages, quotes, non-ASCII text).
func chatRequestForTest() []byte {
	var msgs []string
	for i := range 5 {
		msgs = append(msgs, `{"role":"user","content":"Message `+strings.Repeat("x", i)+`: the quick brown fox jumps over the lazy dog, \"quoted\" and ünïcödé text."}`)
	}
	return []byte(`{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") +
		`],"temperature":0.2,"max_tokens":256,"stream":false,"user":"user-42","logit_bias":{"50256":-100}}`)
}

// TestMatchesReferenceStringBytes puts every byte at every position of an 8-byte word in a string (a lone
// string, an object's value), then every two-byte prefix of a multi-byte sequence with a range of third and
// fourth bytes at the start and the end of a word, each followed by the string's end, an escape or the end
// of the input, and by the end of the input or enough whitespace for whole words: the word-at-a-time loops,
// the byte loops for the input's last bytes, and the UTF-8 checks against the reference's byte loop and
// utf8.DecodeRune. Multi-byte sequences are compared on Check and AppendString, the answers that decode
// UTF-8.
func TestMatchesReferenceStringBytes(t *testing.T) {
	const room = "                "
	n := 0
	try := func(all bool, pads []int, tails []string, seq ...byte) {
		for _, pad := range pads {
			for _, tail := range tails {
				body := strings.Repeat("p", pad) + string(seq) + tail
				for _, in := range [][]byte{[]byte(`"` + body), []byte(`{"k":"` + body)} {
					if all {
						sameAsReference(t, in)
					} else {
						sameCheck(t, in)
						if got, want := AppendString(nil, string(in)), refAppendString(nil, string(in)); !bytes.Equal(got, want) {
							t.Fatalf("AppendString = %q, reference %q", got, want)
						}
					}
					n++
				}
			}
		}
	}
	var tails []string
	for _, tail := range []string{"", "\"", "\"}", "abcdefgh\"}", "\\", "\\\"", "\\u00e9\"}"} {
		tails = append(tails, tail, tail+room)
	}
	for c := range 256 {
		try(true, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, tails, byte(c))
	}
	ends := []string{"", "\"}" + room, "\\n\"}" + room, "\"}"}
	for c := 0xC0; c < 0x100; c++ {
		for c2 := range 256 {
			try(false, []int{0, 7}, ends, byte(c), byte(c2))
			if c < 0xE0 {
				continue
			}
			for _, c3 := range []byte{0x7F, 0x80, 0xBF, 0xC0} {
				try(false, []int{0, 6}, ends[1:2], byte(c), byte(c2), c3)
				if c < 0xF0 {
					continue
				}
				for _, c4 := range []byte{0x7F, 0x80, 0xBF, 0xC0} {
					try(false, []int{5}, ends[1:2], byte(c), byte(c2), c3, c4)
				}
			}
		}
	}
	// Inputs that end inside a string, at every offset from its quote: what stops the last word may be
	// the input's last byte.
	for k := range 40 {
		for _, end := range []string{"", "\\", "\\\\", "\\u12", "\xc3", "\xe2\x82", "\xf0\x9f\x98"} {
			try(true, []int{k}, []string{end})
		}
	}
	t.Logf("%d inputs", n)
}

// TestMatchesReferenceNesting opens random mixes of arrays and objects 1 to MaxDepth+2 levels deep (across the
// depth stack's 64-bit words), then closes them right, or with one closer wrong, missing, doubled or followed
// by more: which closer the scanner expects at each level, and the depth limit, against the reference's
// recursion.
func TestMatchesReferenceNesting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for depth := 1; depth <= MaxDepth+2; depth++ {
		for trial := range 6 {
			opens := make([]byte, depth)
			for k := range opens {
				opens[k] = "[{"[r.IntN(2)]
			}
			var b []byte
			for _, o := range opens {
				if o == '{' {
					b = append(b, `{"k":`...)
				} else {
					b = append(b, '[')
				}
			}
			b = append(b, "1"...)
			closers := make([]byte, 0, depth)
			for k := depth - 1; k >= 0; k-- {
				closers = append(closers, opens[k]+2) // '[' + 2 == ']', '{' + 2 == '}'
			}
			k := r.IntN(depth)
			switch trial {
			case 1:
				closers[k] ^= ']' ^ '}' // the wrong kind
			case 2:
				closers = append(closers[:k], closers[k+1:]...) // one missing
			case 3:
				closers = append(closers[:k+1], closers[k:]...) // one doubled
			case 4:
				closers = append(closers[:k], append([]byte(`,"x"`), closers[k:]...)...) // another element or a keyless member
			case 5:
				closers = append(closers[:k], append([]byte(` , {} , [] `), closers[k:]...)...)
			}
			in := append(b, closers...)
			sameAsReference(t, in)
			sameAsReference(t, append([]byte(`{"top":`), append(in, '}')...))
		}
	}
}

package redact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

var (
	sinkBytes []byte
	sinkBool  bool
)

// spec is what Redact must return, the slow way: every occurrence of every key, by start, occurrences that
// overlap (not those that only touch) merged into one Placeholder. nested reports whether each merged group
// is one occurrence holding all the others (where the per-key implementation agrees).
func spec(keys []string, b []byte) (out []byte, found, nested bool) {
	nested = true
	done, from, to := 0, -1, -1 // the group being merged: b[from:to]
	whole := false              // one occurrence is the whole group
	for p := range b {
		for _, k := range keys {
			if len(k) < MinKeyBytes || !bytes.HasPrefix(b[p:], []byte(k)) {
				continue
			}
			if from >= 0 && p < to {
				if p+len(k) > to {
					whole = false
				}
				to = max(to, p+len(k))
				whole = whole || (p == from && p+len(k) == to)
				continue
			}
			if from >= 0 {
				out = append(append(out, b[done:from]...), Placeholder...)
				done, nested = to, nested && whole
			}
			from, to, whole = p, p+len(k), true
		}
	}
	if from < 0 {
		return b, false, true
	}
	out = append(append(out, b[done:from]...), Placeholder...)
	return append(out, b[to:]...), true, nested && whole
}

// perKey is the implementation Set replaced, kept as the reference where both must agree and the
// benchmarks' baseline: one search per key, longest key first, each over what the longer ones left
// (bytes.ReplaceAll's answer: left to right, without overlaps, replacements never searched again for that
// key, but searched for the shorter keys).
type perKey struct{ keys []string }

func newPerKey(keys ...string) perKey {
	var r perKey
	for _, s := range keys {
		if len(s) < MinKeyBytes || hasString(r.keys, s) {
			continue
		}
		i := len(r.keys) // insertion keeps the longest first
		for i > 0 && len(r.keys[i-1]) < len(s) {
			i--
		}
		r.keys = append(r.keys, "")
		copy(r.keys[i+1:], r.keys[i:])
		r.keys[i] = s
	}
	return r
}

func hasString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (r *perKey) found(b []byte) bool {
	for _, s := range r.keys {
		if index(b, s) >= 0 {
			return true
		}
	}
	return false
}

// index is bytes.Index(b, []byte(s)) without the conversion, which allocates for a key over 32 bytes.
func index(b []byte, s string) int {
	return strings.Index(unsafe.String(unsafe.SliceData(b), len(b)), s)
}

func (r *perKey) redact(b []byte) []byte {
	out := b
	for _, s := range r.keys {
		i := index(out, s)
		if i < 0 {
			continue
		}
		w := make([]byte, 0, len(out)+len(Placeholder)-len(s))
		from := 0
		for i >= 0 {
			w = append(append(w, out[from:from+i]...), Placeholder...)
			from += i + len(s)
			i = index(out[from:], s)
		}
		out = append(w, out[from:]...)
	}
	return out
}

// touchesPlaceholder reports whether k and Placeholder agree on at least one byte in some alignment where
// they overlap: such a key can match across a replacement (in the per-key implementation), or be completed
// by one (in both).
func touchesPlaceholder(k string) bool {
	for shift := 1 - len(Placeholder); shift < len(k); shift++ { // Placeholder starts at k[shift]
		lo, hi := max(0, shift), min(len(k), shift+len(Placeholder))
		if k[lo:hi] == Placeholder[lo-shift:hi-shift] {
			return true
		}
	}
	return false
}

// check runs every comparison on one input: Redact against spec, Found and FoundString against it, the
// per-key implementation where it must agree, and the properties (the input untouched, aliased when clean,
// no key left in the output).
func check(t *testing.T, keys []string, b []byte) {
	t.Helper()
	s := New(keys...)
	in := bytes.Clone(b)
	got := s.Redact(b)
	if !bytes.Equal(b, in) {
		t.Fatal("the input was written to")
	}
	want, found, nested := spec(keys, in)
	if !bytes.Equal(got, want) {
		t.Fatalf("keys %q, input %q:\ngot  %q\nwant %q", keys, in, got, want)
	}
	if s.Found(b) != found || s.FoundString(string(b)) != found {
		t.Fatalf("keys %q, input %q: Found %v, FoundString %v, want %v", keys, in, s.Found(b), s.FoundString(string(b)), found)
	}
	if !found && len(b) > 0 && &got[0] != &b[0] {
		t.Fatal("a clean input was copied")
	}
	touching := false
	for _, k := range keys {
		touching = touching || (len(k) >= MinKeyBytes && touchesPlaceholder(k))
	}
	if touching {
		return
	}
	for _, k := range keys {
		if len(k) >= MinKeyBytes && bytes.Contains(got, []byte(k)) {
			t.Fatalf("keys %q, input %q: %q left in the output %q", keys, in, k, got)
		}
	}
	if nested {
		old := newPerKey(keys...)
		if o := old.redact(in); !bytes.Equal(got, o) || old.found(in) != found {
			t.Fatalf("keys %q, input %q: the per-key implementation gives %q, Redact %q", keys, in, o, got)
		}
	}
}

func TestRedact(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Zz9", 30) // over 32 bytes: no conversion may copy it
	P := Placeholder
	tests := []struct {
		name string
		keys []string
		in   string
		want string
	}{
		{"nothing to find", []string{key}, "an ordinary answer", "an ordinary answer"},
		{"empty input", []string{key}, "", ""},
		{"shorter than any key", []string{key}, "sk-proj", "sk-proj"},
		{"the key alone", []string{key}, key, P},
		{"adjacent keys stay apart", []string{key}, key + key + key, P + P + P},
		{"a key overlapping itself", []string{"abcabcab"}, "abcabcabcabcab", P},
		{"a key inside a longer one", []string{"key-12345678", "key-12345678-long"}, "key-12345678-long key-12345678", P + " " + P},
		{"a key inside a longer one, not at its start", []string{"12345678", "key-12345678-long"}, "key-12345678-long", P},
		{"two keys overlapping", []string{"aaaa-bbbb", "bbbb-cccc"}, "aaaa-bbbb-cccc", P},
		{"a shorter key first, overlapping a longer one", []string{"aaaa-bbbb", "bbbb-cccc-dddd"}, "x aaaa-bbbb-cccc-dddd y", "x " + P + " y"},
		{"a long key holding shorter ones found first", []string{"bbbbbbbb", "x-bbbbbbbb-bbbbbbbb-x"},
			"bbbbbbbb x-bbbbbbbb-bbbbbbbb-x bbbbbbbb", P + " " + P + " " + P},
		{"a chain of overlaps", []string{"aaaaaaaa"}, "b" + strings.Repeat("a", 100) + "b", "b" + P + "b"},
		{"a key that the replacement completes", []string{"redacted]x"}, "[redacted]x", "[" + P},
		{"keys spelled like the placeholder", []string{"redacted", "[redacted]"}, "a redacted b", "a " + P + " b"},
		{"a cut key", []string{key}, key[:len(key)-1] + " " + key[1:], key[:len(key)-1] + " " + key[1:]},
		{"short and empty keys ignored", []string{"", "short", "1234567"}, "short 1234567", "short 1234567"},
		{"repeated keys", []string{"sk-long-provider-key", "sk-long-provider-key-2", "sk-long-provider-key"},
			"x sk-long-provider-key-2 y sk-long-provider-key z", "x " + P + " y " + P + " z"},
		{"many occurrences", []string{key}, strings.Repeat("x"+key+"\n", 10_000), strings.Repeat("x"+P+"\n", 10_000)},
		{"many occurrences of a short key", []string{"12345678"}, strings.Repeat("12345678,", 10_000), strings.Repeat(P+",", 10_000)},
		{"keys sharing a long prefix", []string{key + "1", key + "2", key + "22"}, key + "22 " + key + "2 " + key + "3", P + " " + P + " " + key + "3"},
	}
	for _, tt := range tests {
		s := New(tt.keys...)
		in := []byte(tt.in)
		if got := s.Redact(in); string(got) != tt.want {
			t.Errorf("%s: got %.200q, want %.200q", tt.name, got, tt.want)
		}
		t.Run(tt.name, func(t *testing.T) { check(t, tt.keys, in) })
	}
}

// Every position of a key relative to the filter's blocks and the input's ends.
func TestRedactEveryOffset(t *testing.T) {
	for _, k := range []string{"12345678", "sk-ant-api03-0123456789abcdef", "aaaaaaaa"} {
		for pre := 0; pre < 2*stride+1; pre++ {
			for post := 0; post < 2*stride+1; post++ {
				in := strings.Repeat(".", pre) + k + strings.Repeat(",", post)
				check(t, []string{k}, []byte(in))
				check(t, []string{k}, []byte(in[:len(in)-post-1])) // cut short by one byte: no key
			}
		}
	}
}

func TestNew(t *testing.T) {
	empty := New("", "k", "1234567")
	if !empty.Empty() || empty.Found([]byte("k 1234567")) || empty.FoundString("k") {
		t.Errorf("keys under %d bytes must not be looked for", MinKeyBytes)
	}
	var zero Set
	if !zero.Empty() || zero.Found([]byte("anything at all")) || string(zero.Redact([]byte("anything"))) != "anything" {
		t.Error("the zero Set must hold no key")
	}
	s := New("sk-long-provider-key")
	if s.Empty() || !s.FoundString("a sk-long-provider-key") || s.FoundString("sk-long-provider") || s.Found(nil) {
		t.Error("Found")
	}
}

// Redact allocates its output once, whatever the number of occurrences, and nothing when there is nothing to
// find, even for keys too long for a stack copy.
func TestRedactAllocations(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Zz9", 50)
	s := New(key, "second-provider-key")
	clean := bytes.Repeat([]byte("sk-proj- is how keys start; second-provider is not a key. "), 100)
	if got := s.Redact(clean); &got[0] != &clean[0] {
		t.Errorf("a clean input was copied")
	}
	if allocs := testing.AllocsPerRun(50, func() { sinkBytes = s.Redact(clean); sinkBool = s.Found(clean) }); allocs != 0 {
		t.Errorf("Redact and Found of a clean input allocate %.1f times, want 0", allocs)
	}
	dirty := bytes.Repeat([]byte(key+" second-provider-key "), 1000)
	if allocs := testing.AllocsPerRun(10, func() { sinkBytes = s.Redact(dirty) }); allocs > 1 {
		t.Errorf("Redact of 2,000 occurrences of 2 keys allocates %.1f times, want one output", allocs)
	}
}

// FuzzRedact: Redact matches spec (and the per-key implementation where they agree), never writes to its
// input, returns the input itself when nothing is found, and leaves no key in its output. Besides k1 and k2,
// cuts picks keys out of the input itself (offset and length byte pairs), so the fuzzer meets occurrences
// that overlap, nest and repeat without having to guess them.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("x sk-long-provider-key-2 y sk-long-provider-key"), "sk-long-provider-key", "sk-long-provider-key-2", []byte{})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa"), "aaaaaaaa", "aaaaaaaaa", []byte{0, 3})
	f.Add([]byte("[redacted] redacted]]"), "redacted]", "[redacted]", []byte{})
	f.Add([]byte("aaaa-bbbb-cccc-dddd abcabcabcabcab"), "aaaa-bbbb", "bbbb-cccc-dddd", []byte{20, 0, 23, 0})
	f.Add([]byte("bbbbbbbb x-bbbbbbbb-bbbbbbbb-x bbbbbbbb"), "bbbbbbbb", "", []byte{9, 13, 0, 0, 3, 7})
	f.Fuzz(func(t *testing.T, b []byte, k1, k2 string, cuts []byte) {
		keys := []string{k1, k2}
		for i := 0; i+1 < len(cuts) && len(b) >= MinKeyBytes && len(keys) < 18; i += 2 {
			o := int(cuts[i]) % (len(b) - MinKeyBytes + 1)
			n := MinKeyBytes + int(cuts[i+1])%(len(b)-o-MinKeyBytes+1)
			keys = append(keys, string(b[o:o+n]))
		}
		check(t, keys, b)
	})
}

// TestRedactRandom: inputs over tiny alphabets, with keys cut out of them, so that occurrences overlap, nest
// and repeat in every way; each checked as FuzzRedact checks its inputs.
func TestRedactRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alphabet := range []string{"ab", "abc", "a-b[", "x"} {
		for range 3000 {
			b := make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			var keys []string
			for range rng.IntN(6) {
				if len(b) < MinKeyBytes {
					break
				}
				o := rng.IntN(len(b) - MinKeyBytes + 1)
				keys = append(keys, string(b[o:o+MinKeyBytes+rng.IntN(min(12, len(b)-o-MinKeyBytes+1))]))
			}
			check(t, keys, b)
		}
	}
}

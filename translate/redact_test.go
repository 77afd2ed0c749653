package translate

import (
	"bytes"
	"strings"
	"testing"
)

// redactReference is what Redact must return: each secret, longest first, replaced everywhere in what the
// longer ones left (bytes.ReplaceAll: left to right, without overlaps).
func redactReference(r *Redactor, b []byte) []byte {
	out := bytes.Clone(b)
	for _, s := range r.secrets {
		out = bytes.ReplaceAll(out, []byte(s), []byte(Redacted))
	}
	return out
}

func TestRedactOccurrences(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Zz9", 30) // over 32 bytes: no conversion may copy it
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"nothing to find", []string{key}, "an ordinary answer", "an ordinary answer"},
		{"the key alone", []string{key}, key, Redacted},
		{"adjacent keys", []string{key}, key + key + key, Redacted + Redacted + Redacted},
		{"overlapping occurrences", []string{"abcabcab"}, "abcabcabcabcab", Redacted + "cabcab"},
		{"a key inside a longer one", []string{"key-12345678", "key-12345678-long"}, "key-12345678-long key-12345678",
			Redacted + " " + Redacted},
		{"two keys overlapping", []string{"aaaa-bbbb", "bbbb-cccc"}, "aaaa-bbbb-cccc", Redacted + "-cccc"},
		{"a key that the replacement completes", []string{"redacted]x"}, "[redacted]x", "[" + Redacted},
		{"a cut key", []string{key}, key[:len(key)-1] + " " + key[1:], key[:len(key)-1] + " " + key[1:]},
		{"many occurrences", []string{key}, strings.Repeat("x"+key+"\n", 10_000), strings.Repeat("x"+Redacted+"\n", 10_000)},
		{"many occurrences of a short key", []string{"12345678"}, strings.Repeat("12345678,", 10_000),
			strings.Repeat(Redacted+",", 10_000)},
	}
	for _, tt := range tests {
		r := NewRedactor(tt.secrets...)
		in := []byte(tt.in)
		got := r.Redact(in)
		if string(got) != tt.want {
			t.Errorf("%s: got %.200q, want %.200q", tt.name, got, tt.want)
		}
		if want := redactReference(&r, in); !bytes.Equal(got, want) {
			t.Errorf("%s: differs from the reference %.200q", tt.name, want)
		}
		if string(in) != tt.in {
			t.Errorf("%s: the input was written to", tt.name)
		}
		if r.Found(in) != (tt.want != tt.in) {
			t.Errorf("%s: Found = %v", tt.name, r.Found(in))
		}
	}
}

// Redact costs one output per secret found, whatever the number of occurrences, and nothing when there is
// nothing to find, even for keys too long for a stack copy.
func TestRedactAllocations(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Zz9", 50)
	r := NewRedactor(key, "second-provider-key")
	clean := bytes.Repeat([]byte("sk-proj- is how keys start; second-provider is not a key. "), 100)
	if got := r.Redact(clean); &got[0] != &clean[0] {
		t.Errorf("a clean input was copied")
	}
	if allocs := testing.AllocsPerRun(50, func() { sinkBytes = r.Redact(clean); sinkBool = r.Found(clean) }); allocs != 0 {
		t.Errorf("Redact and Found of a clean input allocate %.1f times, want 0", allocs)
	}
	dirty := bytes.Repeat([]byte(key+" second-provider-key "), 1000)
	if allocs := testing.AllocsPerRun(10, func() { sinkBytes = r.Redact(dirty) }); allocs > 2 {
		t.Errorf("Redact of 2,000 occurrences of 2 keys allocates %.1f times, want at most one output per key", allocs)
	}
}

// FuzzRedact: Redact matches the reference, never writes to its input, and returns the input itself when
// nothing is found.
func FuzzRedact(f *testing.F) {
	f.Add([]byte("x sk-long-provider-key-2 y sk-long-provider-key"), "sk-long-provider-key", "sk-long-provider-key-2")
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa"), "aaaaaaaa", "aaaaaaaaa")
	f.Add([]byte("[redacted] redacted]]"), "redacted]", "[redacted]")
	f.Fuzz(func(t *testing.T, b []byte, s1, s2 string) {
		r := NewRedactor(s1, s2)
		in := bytes.Clone(b)
		got := r.Redact(b)
		if !bytes.Equal(b, in) {
			t.Fatal("the input was written to")
		}
		if want := redactReference(&r, in); !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if !r.Found(b) && len(b) > 0 && &got[0] != &b[0] {
			t.Fatal("a clean input was copied")
		}
	})
}

package redact

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/opcount"
)

var sinkInt int

// testKeys returns n provider-like keys, always the same: OpenAI project keys, Azure keys (32 hex digits),
// Anthropic keys and Gemini keys in turn.
func testKeys(n int) []string {
	x := uint64(0x9e3779b97f4a7c15)
	random := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[i] = alphabet[x%uint64(len(alphabet))]
		}
		return string(b)
	}
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	keys := make([]string, n)
	for i := range keys {
		switch i % 4 {
		case 0:
			keys[i] = "sk-proj-" + random(b64, 156)
		case 1:
			keys[i] = random("0123456789abcdef", 32)
		case 2:
			keys[i] = "sk-ant-api03-" + random(b64, 93) + "AA"
		case 3:
			keys[i] = "AIza" + random(b64, 35)
		}
	}
	return keys
}

// answerBody is an OpenAI chat answer of exactly size bytes, of ordinary text, holding no key.
func answerBody(size int) []byte {
	head := `{"id":"chatcmpl-1","object":"chat.completion","created":1732000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18,"completion_tokens":300,"total_tokens":318}}`
	text := repeatTo("The quick brown fox jumps over the lazy dog; she sells sea shells by the sea shore. Projects ask for keys. ", size-len(head)-len(tail))
	return append(append([]byte(head), text...), tail...)
}

// chunkBody is a run of OpenAI stream events of exactly size bytes (the last one cut short, as a chunk is).
func chunkBody(size int) []byte {
	var b []byte
	for i := 0; len(b) < size; i++ {
		b = fmt.Appendf(b, "data: {\"id\":\"chatcmpl-S1\",\"object\":\"chat.completion.chunk\",\"created\":1732000000,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" token %d of the answer\"},\"finish_reason\":null}]}\n\n", i)
	}
	return b[:size]
}

// withKey is body, same size, with key written over its middle: an upstream echoing the key.
func withKey(body []byte, key string) []byte {
	b := bytes.Clone(body)
	copy(b[len(b)/2-len(key)/2:], key)
	return b
}

// repeatTo repeats s up to exactly size bytes (the last copy cut short).
func repeatTo(s string, size int) []byte {
	return []byte(strings.Repeat(s, size/len(s)+1)[:size])
}

// BenchmarkRedact: a 4 KiB answer and a 1 KiB stream chunk, with 1, 10 and 100 keys, holding none of them
// (clean) or one (match), beside the floors (a scan for an absent byte; a copy into a new buffer) and the
// per-key implementation Set replaced (BenchmarkRedactPerKey, same names, same inputs). make bench prints
// the ratios (tools/benchtable).
func BenchmarkRedact(b *testing.B) {
	for _, in := range []struct {
		name string
		body []byte
	}{{"4KiB", answerBody(4 << 10)}, {"1KiB", chunkBody(1 << 10)}} {
		b.Run(in.name+"/floor/indexbyte", func(b *testing.B) {
			b.SetBytes(int64(len(in.body)))
			for b.Loop() {
				sinkInt = bytes.IndexByte(in.body, 0)
			}
		})
		b.Run(in.name+"/floor/copy", func(b *testing.B) { // into a new buffer, as an output must be
			b.SetBytes(int64(len(in.body)))
			b.ReportAllocs()
			for b.Loop() {
				sinkBytes = append(make([]byte, 0, len(in.body)+len(Placeholder)), in.body...)
			}
		})
		for _, n := range []int{1, 10, 100} {
			keys := testKeys(n)
			s := New(keys...)
			for _, c := range []struct {
				name string
				body []byte
			}{{"clean", in.body}, {"match", withKey(in.body, keys[n-1])}} {
				b.Run(fmt.Sprintf("%s/keys=%d/%s", in.name, n, c.name), func(b *testing.B) {
					b.SetBytes(int64(len(c.body)))
					b.ReportAllocs()
					for b.Loop() {
						sinkBytes = s.Redact(c.body)
					}
				})
			}
		}
	}
}

func BenchmarkRedactPerKey(b *testing.B) {
	for _, in := range []struct {
		name string
		body []byte
	}{{"4KiB", answerBody(4 << 10)}, {"1KiB", chunkBody(1 << 10)}} {
		for _, n := range []int{1, 10, 100} {
			keys := testKeys(n)
			r := newPerKey(keys...)
			for _, c := range []struct {
				name string
				body []byte
			}{{"clean", in.body}, {"match", withKey(in.body, keys[n-1])}} {
				b.Run(fmt.Sprintf("%s/keys=%d/%s", in.name, n, c.name), func(b *testing.B) {
					b.SetBytes(int64(len(c.body)))
					b.ReportAllocs()
					for b.Loop() {
						sinkBytes = r.redact(c.body)
					}
				})
			}
		}
	}
}

// BenchmarkNew: compiling the keys (once per configuration).
func BenchmarkNew(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		keys := testKeys(n)
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s := New(keys...)
				sinkBool = s.Empty()
			}
		})
	}
}

// hostileShape is an input built to hit one of Redact's worst cases, with the keys that make it one.
type hostileShape struct {
	name string
	keys []string
	body func(size int) []byte
}

func hostileShapes() []hostileShape {
	keys := testKeys(100)
	var prefixes []string // what a filter block matches, cut before the automaton can go far
	for _, k := range keys {
		prefixes = append(prefixes, k[:MinKeyBytes-1]+" ")
	}
	shared := "sk-" + strings.Repeat("Q", 147) // 100 keys alike but for their last 8 bytes
	var alike []string
	for _, k := range keys {
		alike = append(alike, shared+k[len(k)-8:])
	}
	pending := strings.Repeat("bbbbbbbb-", 20) + "X" // always under way, never ending, over short matches
	nested := "x-bbbbbbbb-bbbbbbbb-bbbbbbbb-x"       // each occurrence swallows three found first
	return []hostileShape{
		{"key-prefixes", keys, func(n int) []byte { return repeatTo("sk-proj-", n) }},
		{"filter-hits", keys, func(n int) []byte { return repeatTo(strings.Join(prefixes, ""), n) }},
		{"whole-keys", keys, func(n int) []byte { return repeatTo(keys[0]+" "+keys[1]+" ", n) }},
		{"near-misses-of-keys-alike", alike, func(n int) []byte { return repeatTo(shared+"!", n) }},
		{"periodic-key", []string{strings.Repeat("a", 199) + "b", "aaaaaaab"}, func(n int) []byte { return repeatTo("a", n) }},
		{"one-long-overlap", []string{"aaaaaaaa"}, func(n int) []byte { return repeatTo("a", n) }},
		{"pending-runs", []string{"bbbbbbbb", pending}, func(n int) []byte { return repeatTo("bbbbbbbb-", n) }},
		{"nested-keys", []string{"bbbbbbbb", nested}, func(n int) []byte { return repeatTo(nested+" ", n) }},
	}
}

// BenchmarkRedactHostile: each hostile shape (1 MiB) beside a normal answer of the same size and keys.
func BenchmarkRedactHostile(b *testing.B) {
	for _, h := range hostileShapes() {
		s := New(h.keys...)
		for _, side := range []struct {
			name string
			body []byte
		}{{"hostile", h.body(1 << 20)}, {"normal", answerBody(1 << 20)}} {
			b.Run(h.name+"/"+side.name, func(b *testing.B) {
				b.SetBytes(int64(len(side.body)))
				b.ReportAllocs()
				for b.Loop() {
					sinkBytes = s.Redact(side.body)
				}
			})
		}
	}
}

// Counts, not timings: the tests below count the operations Redact pays (internal/opcount: filter probes,
// automaton steps, runs undone, bytes copied), exact and the same on every machine, so a pass that became
// quadratic, or a search per key, fails them whatever the machine's load. BenchmarkRedactHostile and
// BenchmarkRedact keep the timings.

// maxOpsPerByte bounds Redact's operations per byte of input: a hostile shape that the automaton reads byte
// by byte (and some build an output) pays 2 to 5.
const maxOpsPerByte = 8

// countOps is the operations one s.Redact(body) pays.
func countOps(s Set, body []byte) opcount.Counts {
	opcount.Reset()
	sinkBytes = s.Redact(body)
	return opcount.Snapshot()
}

func skipWithoutCounts(t *testing.T) {
	t.Helper()
	if !opcount.Enabled {
		t.Skip("counts operations: run with -tags aidialect_opcount (make test does)")
	}
}

// TestRedactCountsLinear: each hostile shape pays at most maxOpsPerByte operations per byte, and 16 times
// the bytes at most 1.1x as many per byte. Checked to fail on a mutation (made, run, reverted): a naive
// matcher that restarts one byte after where a partial match began instead of following the failure link
// pays 399 operations per byte on periodic-key (and finds other runs: one-long-overlap's check fails).
func TestRedactCountsLinear(t *testing.T) {
	skipWithoutCounts(t)
	const size, factor = 64 << 10, 16
	for _, h := range hostileShapes() {
		t.Run(h.name, func(t *testing.T) {
			s := New(h.keys...)
			small, large := h.body(size), h.body(factor*size)
			check(t, h.keys, small[:4<<10])
			cs, cl := countOps(s, small), countOps(s, large)
			perByte := float64(cs.Total()) / size
			growth := float64(cl.Total()) / (factor * size) / perByte
			t.Logf("%d KiB: %.2f ops per byte (%v); %dx the bytes: %.3fx per byte", size>>10, perByte, cs, factor, growth)
			if perByte > maxOpsPerByte {
				t.Errorf("%.1f operations per byte (bound %d): %v", perByte, maxOpsPerByte, cs)
			}
			if growth > 1.1 {
				t.Errorf("%dx the bytes cost %.2fx the operations per byte (bound 1.1): not linear", factor, growth)
			}
		})
	}
}

// TestRedactCountsDoNotGrowWithKeys: a clean answer, and a stream chunk, cost about the same with 1, 10 or
// 100 keys (a search per key cost 100x), and the filter lets the automaton read few of their bytes. Checked
// to fail on mutations (made, run, reverted): a search per key (a Set per key, each run over the input: 10
// keys pay 10x 1 key's operations, 100 keys 100x); a filter too small for the keys (filterLog 6: 100 keys
// saturate it, 4.2 to 4.8 operations per byte); no filter (the automaton reads every byte: 1.0 to 1.5).
func TestRedactCountsDoNotGrowWithKeys(t *testing.T) {
	skipWithoutCounts(t)
	for _, in := range []struct {
		name string
		body []byte
	}{{"answer", answerBody(64 << 10)}, {"chunks", chunkBody(64 << 10)}} {
		t.Run(in.name, func(t *testing.T) {
			one := countOps(New(testKeys(1)...), in.body)
			for _, n := range []int{10, 100} {
				c := countOps(New(testKeys(n)...), in.body)
				ratio := float64(c.Total()) / float64(one.Total())
				perByte := float64(c.Total()) / float64(len(in.body))
				t.Logf("%d keys: %.2fx 1 key's operations, %.3f per byte (%v)", n, ratio, perByte, c)
				if ratio > 1.5 {
					t.Errorf("%d keys cost %.1fx 1 key's operations (bound 1.5x): %v against %v", n, ratio, c, one)
				}
				if perByte > 0.5 {
					t.Errorf("%d keys: %.2f operations per byte of text holding no key (bound 0.5): the filter lets too much through", n, perByte)
				}
			}
		})
	}
}

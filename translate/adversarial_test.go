package translate

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
)

// Worst-case cost: every pass over client or upstream bytes must stay linear in them. Each adversarial shape
// (built to hit one pass's worst case) sits beside a normal twin of the same size and the same operation.
// The tests count the operations a pass pays in the compiled module (internal/opcount: bytes compared and
// hashed, probes, members visited, scanner steps, bytes copied), which are exact and the same on every
// machine: a quadratic pass shows as a count per byte far over the bound, and as 4x the count for 2x the
// bytes. BenchmarkAdversarial times the same shapes (natively; internal/v8host in the compiled module).

// maxOpsPerByte bounds the operations of one pass per byte of its input. A linear pass over the shapes
// below pays 1 to 7.2 (many-tool-calls pays the most); the mutations each row catches pay 15 to over 2,000.
const maxOpsPerByte = 12

// maxDoubling bounds how the operations per byte grow from a shape to the same shape at twice the bytes:
// 1 for a linear pass (a little more where the shape's parts do not all double), 2 for a quadratic one.
const maxDoubling = 1.25

// adversarialShape is one hostile input and its normal twin, each at scale 1 or 2 (twice the bytes, in the
// same regime of the mechanism the shape aims at), and the operation both go through.
type adversarialShape struct {
	name            string
	hostile, normal func(scale int) []byte
	// op makes one operation with its own reusable state (a RequestBody, a Stream, ...).
	op func() func(body []byte) error
}

var adversarialShapes = sync.OnceValue(func() []adversarialShape {
	parse := func() func([]byte) error {
		var b RequestBody
		return func(body []byte) error {
			if err := b.Parse(body); err != nil {
				return err
			}
			return nil
		}
	}
	stream := func(x Exchange) func() func([]byte) error {
		return func() func([]byte) error {
			s := NewStream(x, 0)
			return func(body []byte) error {
				s.Reset(x, 0)
				for rest := body; len(rest) > 0; {
					n := min(16<<10, len(rest)) // network-sized chunks
					out, err := s.Write(rest[:n])
					if err != nil {
						return err
					}
					sinkBytes = out
					rest = rest[n:]
				}
				sinkBytes = s.Close()
				if s.Truncated() {
					return fmt.Errorf("stream reported as truncated")
				}
				return nil
			}
		}
	}
	editPair := Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}
	samePair := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}
	toolPair := Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions, Tools: true}
	// twin is the normal twin of a hostile shape: the same size.
	twin := func(hostile func(int) []byte, normal func(size int) []byte) func(int) []byte {
		return func(scale int) []byte { return normal(len(hostile(scale))) }
	}
	chat := func(size int) []byte { return benchdata.PaddedChatRequest("gpt-4o", size) }
	azureEvents := func(size int) []byte { return benchdata.EventsTo(size, benchdata.AzureAIEvent) }
	openAIEvents := func(size int) []byte { return benchdata.EventsTo(size, benchdata.OpenAIEvent(0)) }
	const mib = 1 << 20

	manyKeys := func(scale int) []byte { return benchdata.ManyKeysRequest("gpt-4o", scale*maxTopLevelMembers/2) }
	sharedPrefix := func(scale int) []byte { return benchdata.SharedPrefixKeysRequest("gpt-4o", 2<<10, scale*512, false) }
	// As many such keys as a body may have: the shape the review timed at 30 s in wasm.
	sharedPrefixAtCap := func(scale int) []byte {
		return benchdata.SharedPrefixKeysRequest("gpt-4o", scale<<10, maxTopLevelMembers, false)
	}
	deep := func(scale int) []byte { return benchdata.DeepRequest("gpt-4o", jsonscan.MaxDepth-2, scale*mib) }
	tiny := func(scale int) []byte { return benchdata.TinyEvents(scale * mib) }
	multiLine := func(scale int) []byte { return benchdata.MultiLineEvents(scale * mib) }
	toolCalls := func(scale int) []byte { return benchdata.ManyToolCalls(scale * mib) }
	boundPair := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}
	unchangedLifecycle := func(scale int) []byte { return benchdata.UnchangedLifecycleEvents(scale * mib) }
	responsesDeltas := func(size int) []byte { return benchdata.ResponsesEventsTo(size, benchdata.ResponsesDeltaEvent) }
	return []adversarialShape{
		{name: "many-keys", hostile: manyKeys, normal: twin(manyKeys, chat), op: parse},
		{name: "shared-prefix-keys", hostile: sharedPrefix, normal: twin(sharedPrefix, chat), op: parse},
		{name: "shared-prefix-keys-at-cap", hostile: sharedPrefixAtCap, normal: twin(sharedPrefixAtCap, chat), op: parse},
		{name: "deep-nesting", hostile: deep, normal: twin(deep, chat), op: parse},
		{name: "tiny-sse-events", hostile: tiny, normal: twin(tiny, azureEvents), op: stream(editPair)},
		{name: "tiny-sse-events-zero-edit", hostile: tiny, normal: twin(tiny, openAIEvents), op: stream(samePair)},
		// Data on several lines is split again after the edit, over each event alone (it was split over the
		// whole output so far: quadratic in a chunk's events).
		{name: "multi-line-events", hostile: multiLine, normal: twin(multiLine, azureEvents), op: stream(editPair)},
		// Azure AI tool-call deltas get an index each: one event of thousands of calls is located in one pass
		// (each call was looked up again by path from the start: quadratic in the upstream's calls).
		{name: "many-tool-calls", hostile: toolCalls, normal: twin(toolCalls, azureEvents), op: stream(toolPair)},
		// With consumers, each lifecycle event of a native Responses stream is read to bind its ids; one left
		// unchanged must not copy the events forwarded before it in its chunk (it did, and rolled back:
		// quadratic in a chunk's events).
		{name: "unchanged-lifecycle-events", hostile: unchangedLifecycle, normal: twin(unchangedLifecycle, responsesDeltas),
			op: stream(boundPair)},
	}
})

// BenchmarkAdversarial times each adversarial shape beside its normal twin: compare
// BenchmarkAdversarial/<shape>/hostile with .../normal (tools/benchtable prints the ratios). Timings only:
// the tests assert on counts.
func BenchmarkAdversarial(b *testing.B) {
	for _, s := range adversarialShapes() {
		for _, side := range []struct {
			name string
			body []byte
		}{{"hostile", s.hostile(1)}, {"normal", s.normal(1)}} {
			b.Run(s.name+"/"+side.name, func(b *testing.B) {
				op := s.op()
				b.SetBytes(int64(len(side.body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := op(side.body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// countOps is the operations one op(body) pays, after a first call that warms its reused buffers.
func countOps(t *testing.T, op func([]byte) error, body []byte) opcount.Counts {
	t.Helper()
	if err := op(body); err != nil {
		t.Fatal(err)
	}
	opcount.Reset()
	err := op(body)
	counts := opcount.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// skipWithoutCounts skips a count test in a build without the tag that compiles the counting in.
func skipWithoutCounts(t *testing.T) {
	t.Helper()
	if !opcount.Enabled {
		t.Skip("counts operations: run with -tags aidialect_opcount (make test does)")
	}
}

// checkLinear fails when small (an input of n bytes) pays more than maxOpsPerByte per byte, or large (the
// same shape, of about twice the bytes: m) more than maxDoubling times small's operations per byte.
func checkLinear(t *testing.T, n, m int, small, large opcount.Counts) {
	t.Helper()
	perByte := float64(small.Total()) / float64(n)
	growth := float64(large.Total()) / float64(m) / perByte
	t.Logf("%d bytes: %d ops, %.2f per byte (%v); %.2fx the bytes: %.2fx the ops, %.2fx per byte",
		n, small.Total(), perByte, small, float64(m)/float64(n), float64(large.Total())/float64(small.Total()), growth)
	if perByte > maxOpsPerByte {
		t.Errorf("%.1f operations per byte (bound %d): %v", perByte, maxOpsPerByte, small)
	}
	if growth > maxDoubling {
		t.Errorf("%.2fx the bytes cost %.2fx the operations per byte (bound %g): not linear",
			float64(m)/float64(n), growth, float64(maxDoubling))
	}
}

// TestAdversarialShapesLinear: each hostile shape pays at most maxOpsPerByte operations per byte, and at
// twice its bytes at most maxDoubling times as many per byte. Checked to fail on a mutation (made, run,
// reverted): with the keys hashed by a hash a client can collide (every key hashed to 0), many-keys pays
// 665 operations per byte, shared-prefix-keys 256 (2.0x per byte at twice the bytes), shared-prefix-keys-at-cap
// 2,040; with the data lines of an edited event split over the whole output so far (splitDataLines from 0),
// multi-line-events pays 787.
func TestAdversarialShapesLinear(t *testing.T) {
	skipWithoutCounts(t)
	for _, s := range adversarialShapes() {
		t.Run(s.name, func(t *testing.T) {
			hostile := s.hostile(1)
			normal := s.normal(1)
			if len(hostile) != len(normal) {
				t.Fatalf("the twins differ in size: %d and %d bytes", len(hostile), len(normal))
			}
			op := s.op()
			double := s.hostile(2)
			checkLinear(t, len(hostile), len(double), countOps(t, op, hostile), countOps(t, op, double))
			small := countOps(t, op, hostile)
			twin := countOps(t, op, normal)
			t.Logf("normal twin: %d ops; the hostile shape pays %.1fx", twin.Total(), float64(small.Total())/float64(twin.Total()))
		})
	}
}

// TestDuplicateKeyCountsLinear covers the duplicate-key check (body_keys.go: one seeded hash per key, a table
// sized to the body) from a few keys to the member cap, plain and escaped keys (decoded once, then hashed).
// Every key shares all but its last bytes with the others, the worst case of a comparison. Each row was
// checked to fail on a mutation (made, run, reverted): with the hash replaced by one a client can collide
// (every key hashed to 0), the keys are compared pairwise: "some" pays 64 operations per byte, "many" 255,
// "at-cap" 2,032, each 2.0x per byte at twice the bytes.
func TestDuplicateKeyCountsLinear(t *testing.T) {
	skipWithoutCounts(t)
	keys := func(n, keyLen int, escaped bool) []byte {
		return benchdata.SharedPrefixKeysRequest("gpt-4o", keyLen, n, escaped)
	}
	rows := []struct {
		name string
		body func(scale int) []byte // scale 2: twice the bytes, in the same regime
	}{
		{"few", func(s int) []byte { return keys(16, s*4<<10, false) }},
		{"few-escaped", func(s int) []byte { return keys(16, s*4<<10, true) }},
		{"some", func(s int) []byte { return keys(s*128, 2<<10, false) }},
		{"some-escaped", func(s int) []byte { return keys(s*128, 2<<10, true) }},
		{"many", func(s int) []byte { return keys(s*512, 1<<10, false) }},
		{"many-escaped", func(s int) []byte { return keys(s*512, 1<<10, true) }},
		{"at-cap", func(s int) []byte { return keys(maxTopLevelMembers, s*512, false) }},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var b RequestBody
			op := func(body []byte) error {
				if err := b.Parse(body); err != nil {
					return err
				}
				return nil
			}
			small, large := r.body(1), r.body(2)
			checkLinear(t, len(small), len(large), countOps(t, op, small), countOps(t, op, large))
		})
	}
	t.Run("duplicate-found", func(t *testing.T) {
		// The last key repeats the first: found in each regime.
		for _, n := range []int{16, 256, maxTopLevelMembers} {
			body := keys(n-1, 64, false)                     // and the repeat: n members
			firstKey := strings.Repeat("k", 64-6) + "000001" // SharedPrefixKeysRequest's first key
			dup := append(body[:len(body)-1:len(body)-1], `,"`+firstKey+`":1}`...)
			var b RequestBody
			if err := b.Parse(dup); err == nil || !strings.Contains(err.Message, "more than once") {
				t.Errorf("%d members, the last repeating the first: %v", n, err)
			}
		}
	})
	t.Run("over-cap", func(t *testing.T) {
		// Past the cap the scan stops: more members cost nothing more, and the table never grows past it.
		members := func(scale int) []byte {
			return append(append([]byte(`{"model":"gpt-4o"`), strings.Repeat(`,"a":0`, scale*16*maxTopLevelMembers)...), '}')
		}
		var b RequestBody
		op := func(body []byte) error {
			if err := b.Parse(body); err == nil || err.Message != tooManyMembers {
				return fmt.Errorf("a body of too many members parsed as %v", err)
			}
			return nil
		}
		small, large := countOps(t, op, members(1)), countOps(t, op, members(2))
		t.Logf("%d and %d bytes: %d and %d ops", len(members(1)), len(members(2)), small.Total(), large.Total())
		if large != small {
			t.Errorf("twice the members past the cap cost %v, not %v: the scan went on past the cap", large, small)
		}
		if got := small[opcount.MembersVisited]; got > maxTopLevelMembers {
			t.Errorf("%d members visited, over the cap of %d", got, maxTopLevelMembers)
		}
	})
}

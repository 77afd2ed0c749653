package translate

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// Worst-case cost: every pass over client or upstream bytes must stay linear in them. Each adversarial shape
// (built to hit one pass's worst case) sits beside a normal twin of the same size and the same operation, so
// a quadratic pass shows as a ratio that grows with the size instead of a constant factor.

// adversarialSize is the size of most shapes: large enough that a quadratic pass costs 100x its twin.
const adversarialSize = 1 << 20

// adversarialShape is one hostile body and its normal twin, and the operation both go through.
type adversarialShape struct {
	name            string
	hostile, normal []byte
	// op makes one operation with its own reusable state (a RequestBody, a Stream, ...).
	op func() func(body []byte) error
	// bound overrides maxAdversarialRatio for a shape whose linear cost is already close to it.
	bound float64
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

	manyKeys := manyKeysBody(maxTopLevelMembers)
	sharedPrefix := sharedPrefixBody(2<<10, adversarialSize/(2<<10))
	sharedPrefixAtCap := sharedPrefixBody(2<<10, maxTopLevelMembers)
	deep := deepBody(adversarialSize)
	return []adversarialShape{
		{name: "many-keys", hostile: manyKeys, normal: chatTwin(len(manyKeys)), op: parse},
		{name: "shared-prefix-keys", hostile: sharedPrefix, normal: chatTwin(len(sharedPrefix)), op: parse},
		// As many such keys as a body may have (8 MiB): the shape the review timed at 30 s in wasm.
		{name: "shared-prefix-keys-at-cap", hostile: sharedPrefixAtCap, normal: chatTwin(len(sharedPrefixAtCap)), op: parse},
		{name: "deep-nesting", hostile: deep, normal: chatTwin(len(deep)), op: parse},
		{name: "tiny-sse-events", hostile: tinyEvents(adversarialSize), normal: eventsTo(adversarialSize, azureAIChunk), op: stream(editPair)},
		// The zero-edit path forwards its twin's ~200-byte events at about copy speed, so the fixed work per
		// event (finding its boundary, checking its start) shows as ~16x on 9-byte events; linear all the
		// same (4x the bytes cost 4x), and a quadratic pass would cost far more than the bound.
		{name: "tiny-sse-events-zero-edit", hostile: tinyEvents(adversarialSize), normal: eventsTo(adversarialSize, openAIChunk(0)), op: stream(samePair), bound: 2 * maxAdversarialRatio},
		// Azure AI tool-call deltas get an index each: one event of thousands of calls is located in one pass
		// (each call was looked up again by path from the start: quadratic in the upstream's calls).
		{name: "many-tool-calls", hostile: manyToolCalls(adversarialSize), normal: eventsTo(adversarialSize, azureAIChunk), op: stream(toolPair)},
	}
})

// chatTwin is the benchmarks' chat request padded to exactly size bytes.
func chatTwin(size int) []byte {
	body := chatBody(size - 64)
	pad := size - len(body) - len(`,"metadata":{"note":""}`)
	if pad < 0 {
		panic("chatTwin: the chat body overshoots")
	}
	return append(body[:len(body)-1], `,"metadata":{"note":"`+strings.Repeat("x", pad)+`"}}`...)
}

// manyKeysBody is a request with n top-level keys (the cap), short and all different.
func manyKeysBody(n int) []byte {
	b := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]`)
	for i := 2; i < n; i++ {
		b = fmt.Appendf(b, `,"param_%05d":%d`, i, i)
	}
	return append(b, '}')
}

// sharedPrefixBody is a request of n top-level keys, all but one keyLen bytes long and differing only in
// their last bytes: each comparison of two of them costs their whole length.
func sharedPrefixBody(keyLen, n int) []byte {
	prefix := strings.Repeat("k", keyLen-6)
	b := []byte(`{"model":"gpt-4o"`)
	for i := 1; i < n; i++ {
		b = fmt.Appendf(b, `,"%s%06d":0`, prefix, i)
	}
	return append(b, '}')
}

// deepBody is a request whose extra field holds arrays nested exactly jsonscan.MaxDepth levels deep (the object
// itself is level 1, the field's array level 2), repeated to about size bytes.
func deepBody(size int) []byte {
	levels := jsonscan.MaxDepth - 2
	nest := strings.Repeat("[", levels) + strings.Repeat("]", levels)
	b := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"x":[` + nest)
	for len(b) < size-len(nest)-3 {
		b = append(append(b, ','), nest...)
	}
	return append(b, "]}"...)
}

// tinyEvents is a stream of the smallest JSON data events, size bytes, ended by a finish event and [DONE].
func tinyEvents(size int) []byte { return eventsTo(size, []byte("data:{}\n\n")) }

// eventsTo repeats event to a stream of exactly size bytes, ended by a finish event and [DONE]; the space
// left over is padding inside the finish event's id.
func eventsTo(size int, event []byte) []byte {
	end := func(pad int) string {
		return `data: {"id":"x` + strings.Repeat("x", pad) + `","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	}
	n := (size - len(end(0)) - len(doneEvent)) / len(event)
	b := bytes.Repeat(event, n)
	b = append(b, end(size-len(b)-len(end(0))-len(doneEvent))...)
	return append(b, doneEvent...)
}

func openAIChunk(i int) []byte {
	return fmt.Appendf(nil, "data: {\"id\":\"chatcmpl-S1\",\"object\":\"chat.completion.chunk\",\"created\":1732000000,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
}

// BenchmarkAdversarial measures each adversarial shape beside its normal twin: compare
// BenchmarkAdversarial/<shape>/hostile with .../normal.
func BenchmarkAdversarial(b *testing.B) {
	for _, s := range adversarialShapes() {
		for _, side := range []struct {
			name string
			body []byte
		}{{"hostile", s.hostile}, {"normal", s.normal}} {
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

// maxAdversarialRatio is how much more a hostile shape may cost than its twin: generous, so noise never
// fails the test; a quadratic pass costs its twin's 100x or more at these sizes.
const maxAdversarialRatio = 20

// TestAdversarialShapesStayLinear fails when a hostile shape costs more than maxAdversarialRatio times its
// normal twin: a pass that became quadratic again.
func TestAdversarialShapesStayLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test: skipped with -short")
	}
	if raceEnabled {
		t.Skip("timing test: the race detector distorts costs")
	}
	for _, s := range adversarialShapes() {
		t.Run(s.name, func(t *testing.T) {
			if len(s.hostile) != len(s.normal) {
				t.Fatalf("the twins differ in size: %d and %d bytes", len(s.hostile), len(s.normal))
			}
			bound := s.bound
			if bound == 0 {
				bound = maxAdversarialRatio
			}
			normal := costPerOp(t, s.op(), s.normal, 0)
			hostile := costPerOp(t, s.op(), s.hostile, 10*time.Duration(bound)*normal)
			ratio := float64(hostile) / float64(normal)
			if ratio > bound {
				// Measured again before failing: a machine busy for one whole measurement must not fail the
				// test; a quadratic pass fails both.
				normal = costPerOp(t, s.op(), s.normal, 0)
				hostile = costPerOp(t, s.op(), s.hostile, 10*time.Duration(bound)*normal)
				ratio = min(ratio, float64(hostile)/float64(normal))
			}
			t.Logf("hostile %v, normal %v per op: %.2fx", hostile, normal, ratio)
			if ratio > bound {
				t.Errorf("the hostile shape costs %.1fx its normal twin (bound %gx): %v against %v per op",
					ratio, bound, hostile, normal)
			}
		})
	}
}

// costPerOp is the least time one op(body) took over a few rounds of repeated calls (the minimum discards
// GC pauses and scheduling noise). It stops early once one call took longer than giveUp (> 0).
func costPerOp(t *testing.T, op func([]byte) error, body []byte, giveUp time.Duration) time.Duration {
	t.Helper()
	runtime.GC()
	start := time.Now()
	if err := op(body); err != nil { // warms the reused buffers
		t.Fatal(err)
	}
	best := time.Since(start)
	if giveUp > 0 && best > giveUp {
		return best
	}
	for round := 0; round < 7; round++ {
		n := 0
		start := time.Now()
		for n == 0 || time.Since(start) < 4*time.Millisecond {
			if err := op(body); err != nil {
				t.Fatal(err)
			}
			n++
		}
		best = min(best, time.Since(start)/time.Duration(n))
	}
	return best
}

// manyToolCalls is an Azure AI stream of events of about 256 KiB, each carrying thousands of index-less
// tool-call deltas, to about size bytes.
func manyToolCalls(size int) []byte {
	calls := strings.Repeat(`{"id":"c","type":"function","function":{"arguments":""}},`, (256<<10)/56)
	event := []byte(`data: {"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[` +
		calls[:len(calls)-1] + `]},"finish_reason":null}]}` + "\n\n")
	return eventsTo(size, event)
}

//go:build !aidialect_no_bridge

package translate

import (
	"fmt"
	"strings"
	"testing"
)

// bridgeFragments is one chat event whose delta carries n tool-call fragments made by fragment.
func bridgeFragments(n int, fragment func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fragment(i)
	}
	return bridgeChatEvents(bridgeChatToolDelta("[" + strings.Join(parts, ",") + "]"))
}

// TestBridgeStreamOutputPerChunk: what one chunk of a chat stream becomes is bounded by a small multiple of
// the chunk plus a constant, for the shapes that make the most output of the least input: bare tool-call
// indexes, calls opened by one byte each, repeated ids (which get generated ones), one-byte text deltas.
// Counted in bytes, not timed. (The chunk that ends the stream, and one that opens an item after a reasoning
// item, also repeat what earlier chunks held: TestBridgeStreamEndOutput bounds that.)
func TestBridgeStreamOutputPerChunk(t *testing.T) {
	const calls = maxBridgedItems
	var oneByteDeltas strings.Builder
	for range 4096 {
		oneByteDeltas.WriteString("data:" + `{"choices":[{"delta":{"content":"x"}}]}` + "\n\n")
	}
	for _, tc := range []struct {
		name  string
		chunk string
		// empty: the fragments carry nothing a client can use (no id, no name, no arguments): they open no
		// item, and the chunk writes nothing.
		empty bool
	}{
		{"1,024 bare tool-call indexes", bridgeFragments(calls, func(i int) string { return fmt.Sprintf(`{"index":%d}`, i) }), true},
		{"1,024 bare indexes with empty members", bridgeFragments(calls, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"","type":"function","function":{"name":"","arguments":""}}`, i)
		}), true},
		{"1,024 calls with one-byte ids", bridgeFragments(calls, func(i int) string { return fmt.Sprintf(`{"index":%d,"id":"a%d"}`, i, i) }), false},
		// Two-byte ids, the shortest that can be 1,024 different ones: the most items for the least input.
		{"1,024 calls without an index, each a new id", bridgeFragments(calls, func(i int) string {
			const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
			return fmt.Sprintf(`{"id":"%c%c"}`, alphabet[i/32], alphabet[i%32])
		}), false},
		{"1,024 calls with one repeated id", bridgeFragments(calls, func(i int) string { return fmt.Sprintf(`{"index":%d,"id":"a"}`, i) }), false},
		{"1,024 calls with one-byte names", bridgeFragments(calls, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"function":{"name":"f"}}`, i)
		}), false},
		{"1,024 calls opened by one byte of arguments", bridgeFragments(calls, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"function":{"arguments":"x"}}`, i)
		}), false},
		{"4,096 one-byte text deltas", oneByteDeltas.String(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r responsesEvents
			r.reset(nil, 0)
			// The stream has begun: response.created and .in_progress are the first chunk's, a constant.
			stream, err := r.write(nil, []byte(bridgeChatEvents(bridgeChatRole)))
			if err != nil {
				t.Fatal(err)
			}
			before := len(stream)
			if stream, err = r.write(stream, []byte(tc.chunk)); err != nil {
				t.Fatal(err)
			}
			in, out := len(tc.chunk), len(stream)-before
			t.Logf("%d bytes in, %d out (%.1fx)", in, out, float64(out)/float64(in))
			if limit := maxChunkAmplification*in + 4096; out > limit {
				t.Errorf("a chunk of %d bytes became %d bytes of events, over %d x its size + 4 KiB", in, out, maxChunkAmplification)
			}
			if tc.empty && (out > 0 || len(r.items) > 0) {
				t.Errorf("fragments with nothing a client can use opened %d items (%d bytes of events)", len(r.items), out)
			}
			stream, _ = r.write(stream, []byte(bridgeChatEvents(bridgeChatFinish("tool_calls"), "[DONE]")))
			replayResponsesStream(t, r.close(stream))
		})
	}
}

// maxChunkAmplification is the most bytes of events one byte of a chat stream chunk becomes (the chunk's own
// events, not the repeats of items it closes): an output_item.added of about 245 bytes for a two-byte id in
// 12 bytes of tool-call fragment is the worst.
const maxChunkAmplification = 24

// TestBridgeStreamEndOutput: the chunk that ends a bridged stream writes every open item's .done events and
// the terminal event, which repeats every item in full: at most 4 x the bytes held (text, refusal,
// reasoning, arguments, ids and names: at most 4 MiB) + endItemBytes per item (at most 1,024) + the
// echo (at most maxEchoBytes) + 4 KiB, however the stream got there.
func TestBridgeStreamEndOutput(t *testing.T) {
	big := strings.Repeat("t", maxBridgedOutputBytes/2-64)
	echo := responsesEcho{instructions: []byte(`"` + strings.Repeat("i", maxEchoBytes-64) + `"`)}
	for _, tc := range []struct {
		name   string
		stream string
	}{
		{"1,024 calls with one-byte ids, names and arguments", bridgeFragments(maxBridgedItems, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"%d","function":{"name":"f","arguments":"x"}}`, i, i)
		})},
		{"1,024 calls with generated ids", bridgeFragments(maxBridgedItems, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"function":{"arguments":"x"}}`, i)
		})},
		{"2 MiB of reasoning, then 2 MiB of text", bridgeChatEvents(bridgeChatDelta(`{"reasoning_content":"`+big+`"}`),
			bridgeChatDelta(`{"content":"`+big+`"}`))},
		{"4 MiB of text and refusal", bridgeChatEvents(bridgeChatDelta(`{"content":"`+big+`"}`), bridgeChatDelta(`{"refusal":"`+big+`"}`))},
		{"1,023 calls with 4 KiB of arguments each", bridgeFragments(maxBridgedItems-1, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"%d","function":{"name":"f","arguments":"%s"}}`, i, i, strings.Repeat("a", 4000))
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r responsesEvents
			r.reset(&echo, 16<<20)
			stream, err := r.write(nil, []byte(bridgeChatEvents(bridgeChatRole)+tc.stream+bridgeChatEvents(bridgeChatFinish("stop"))))
			if err != nil {
				t.Fatal(err)
			}
			held, items := r.held, len(r.items)
			before := len(stream)
			if stream, err = r.write(stream, []byte(bridgeChatEvents("[DONE]"))); err != nil {
				t.Fatal(err)
			}
			out := len(stream) - before
			limit := 4*held + endItemBytes*items + len(echo.instructions) + 4096
			t.Logf("%d items, %d bytes held: %d bytes at the end (bound %d)", items, held, out, limit)
			if out > limit {
				t.Errorf("the end of the stream wrote %d bytes, over 4 x %d held + %d x %d items + the echo + 4 KiB", out, held,
					endItemBytes, items)
			}
			if !r.finished() {
				t.Fatal("the stream did not end")
			}
			replayResponsesStream(t, stream)
		})
	}
}

//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestBridgeStreamPieces: the end of a bridged stream handed to a sink comes in pieces of whole events whose
// concatenation is byte for byte what one buffer gets, and the buffer the pieces pass through never holds
// more than the largest event (the terminal one: everything held once, plus the items' own members and the
// echo) and the small events batched before it; in one buffer the end is four times what was held.
func TestBridgeStreamPieces(t *testing.T) {
	half := strings.Repeat("t", maxBridgedOutputBytes/2-64)
	full := strings.Repeat("t", maxBridgedOutputBytes-64)
	echo := responsesEcho{buf: []byte(`"` + strings.Repeat("i", maxEchoBytes-64) + `"`)}
	echo.instructions = echo.buf // as the request bridge keeps it: a view of its buffer
	for _, tc := range []struct {
		name   string
		stream string
	}{
		{"4 MiB of text", bridgeChatEvents(bridgeChatDelta(`{"content":"` + full + `"}`))},
		{"4 MiB of tool-call arguments", bridgeFragments(1, func(int) string {
			return `{"index":0,"id":"call_1","function":{"name":"f","arguments":"` + full + `"}}`
		})},
		{"2 MiB of reasoning, then 2 MiB of text", bridgeChatEvents(bridgeChatDelta(`{"reasoning_content":"`+half+`"}`),
			bridgeChatDelta(`{"content":"`+half+`"}`))},
		{"4 MiB of text and refusal", bridgeChatEvents(bridgeChatDelta(`{"content":"`+half+`"}`), bridgeChatDelta(`{"refusal":"`+half+`"}`))},
		{"1,024 calls with one-byte ids, names and arguments", bridgeFragments(maxBridgedItems, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"%d","function":{"name":"f","arguments":"x"}}`, i, i)
		})},
		{"1,023 calls with 4 KiB of arguments each", bridgeFragments(maxBridgedItems-1, func(i int) string {
			return fmt.Sprintf(`{"index":%d,"id":"%d","function":{"name":"f","arguments":"%s"}}`, i, i, strings.Repeat("a", 4000))
		})},
		{"a short answer", bridgeChatEvents(bridgeChatDelta(`{"content":"hi"}`))},
		{"cut before its finish", bridgeChatEvents(bridgeChatDelta(`{"content":"` + full + `"}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := bridgeChatEvents(bridgeChatRole) + tc.stream
			if tc.name != "cut before its finish" {
				input += bridgeChatEvents(bridgeChatFinish("stop"), bridgeChatUsage, "[DONE]")
			}
			// The [DONE] in a chunk, then the close, and the same stream ended by the close alone.
			for _, ending := range []string{"[DONE] in the last chunk", "ended by the close"} {
				in := input
				if ending == "ended by the close" {
					in = strings.TrimSuffix(in, bridgeChatEvents("[DONE]"))
				}
				var whole responsesEvents
				whole.reset(&echo, 16<<20)
				want, err := whole.write(nil, []byte(in))
				if err != nil {
					t.Fatal(err)
				}
				held, items := whole.held, len(whole.items)
				want = whole.close(want)

				var pieces responsesEvents
				pieces.reset(&echo, 16<<20)
				var got []byte
				count, largest, buffer := 0, 0, 0
				pieces.emit = func(p []byte) {
					count++
					largest, buffer = max(largest, len(p)), max(buffer, cap(p))
					if !bytes.HasPrefix(p, []byte("event: ")) || !bytes.HasSuffix(p, []byte("\n\n")) {
						t.Errorf("piece %d is not whole events: %.40q ... %.40q", count, p, p[max(0, len(p)-40):])
					}
					got = append(got, p...)
				}
				// The chunks before the end write their own events (a 4 MiB delta is a 4 MiB event, grown by
				// append); the end is what is measured, from a buffer of its own.
				body, end := in, ""
				if ending == "[DONE] in the last chunk" && strings.HasSuffix(in, bridgeChatEvents("[DONE]")) {
					body, end = strings.TrimSuffix(in, bridgeChatEvents("[DONE]")), bridgeChatEvents("[DONE]")
				}
				if rest, err := pieces.write(nil, []byte(body)); err != nil || len(rest) > 0 {
					t.Fatalf("write in pieces left %d bytes unemitted (%v)", len(rest), err)
				}
				count, largest, buffer = 0, 0, 0
				if rest, err := pieces.write(nil, []byte(end)); err != nil || len(rest) > 0 {
					t.Fatalf("write in pieces left %d bytes unemitted (%v)", len(rest), err)
				}
				if rest := pieces.close(nil); len(rest) > 0 {
					t.Fatalf("close in pieces left %d bytes unemitted", len(rest))
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: the pieces differ from one buffer (%d bytes, want %d)", ending, len(got), len(want))
				}
				bound := held + (items+1)*endItemBytes + len(echo.instructions) + 4096 + pieceBytes
				t.Logf("%s: %d bytes in one buffer; %d pieces, the largest %d bytes, buffer %d bytes (bound %d)",
					ending, len(want), count, largest, buffer, bound)
				if len(want) > 1<<20 && count < 2 {
					t.Errorf("%s: the end came in %d piece", ending, count)
				}
				if buffer > bound {
					t.Errorf("%s: the pieces went through a buffer of %d bytes, over %d", ending, buffer, bound)
				}
				replayResponsesStream(t, got)
			}
		})
	}
}

// TestStreamPiecesMatchWrite: through Stream, WriteTo and CloseTo give what Write and Close give, bridged or
// not.
func TestStreamPiecesMatchWrite(t *testing.T) {
	chat := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"`+strings.Repeat("w", 200<<10)+`"}`),
		bridgeChatFinish("stop"), "[DONE]")
	for _, x := range []Exchange{
		{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions},
		{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions},
		{Client: OpenAI, Provider: AzureAI, Op: OpResponses, surface: &Bridge{chat: &RequestBody{}}},
	} {
		name := fmt.Sprintf("%v to %v, bridged %v", x.Client, x.Provider, x.surface != nil)
		for _, cut := range []int{1 << 10, 64 << 10, len(chat)} {
			var want, got []byte
			s := NewStream(x, 0)
			for in := []byte(chat); len(in) > 0; in = in[min(cut, len(in)):] {
				out, err := s.Write(bytes.Clone(in[:min(cut, len(in))]))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, out...)
			}
			want = append(want, s.Close()...)
			x2 := x
			if x.surface != nil {
				x2.surface = &Bridge{chat: &RequestBody{}}
			}
			s = NewStream(x2, 0)
			collect := func(p []byte) { got = append(got, p...) }
			for in := []byte(chat); len(in) > 0; in = in[min(cut, len(in)):] {
				if err := s.WriteTo(bytes.Clone(in[:min(cut, len(in))]), collect); err != nil {
					t.Fatal(err)
				}
			}
			s.CloseTo(collect)
			if !bytes.Equal(got, want) {
				t.Errorf("%s, chunks of %d: pieces give %d bytes, Write and Close %d", name, cut, len(got), len(want))
			}
		}
	}
}

//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/opcount"
	"github.com/tidwall/gjson"
)

// callIDShape is how the ids of a chat answer's or stream's tool calls differ.
type callIDShape int

const (
	// idsDifferFirst: the twin, ids that differ in their first bytes (a comparison stops at once).
	idsDifferFirst callIDShape = iota
	// idsDifferLast: hostile, ids of one length alike but for their last bytes (comparing each with every
	// earlier one costs n²/2 times their length).
	idsDifferLast
	// idsRepeated: every call has the same id; all but the first get generated ones.
	idsRepeated
)

var callIDShapeNames = [...]string{"twin", "hostile", "repeated"}

// bridgeCallID is the id of call i, of about idBytes bytes.
func bridgeCallID(i, idBytes int, shape callIDShape) string {
	pad := strings.Repeat("x", idBytes)
	switch shape {
	case idsDifferLast:
		return fmt.Sprintf("up_%s%04d", pad, i)
	case idsRepeated:
		return fmt.Sprintf("up_%s%04d", pad, 0)
	}
	return fmt.Sprintf("up_%04d%s", i, pad)
}

// bridgeIDAnswer is a chat answer with n tool calls (bridgeCallID's ids).
func bridgeIDAnswer(n, idBytes int, shape callIDShape) []byte {
	var calls []string
	for i := range n {
		calls = append(calls, fmt.Sprintf(`{"id":"%s","type":"function","function":{"name":"f","arguments":"{}"}}`,
			bridgeCallID(i, idBytes, shape)))
	}
	return []byte(bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[`+
		strings.Join(calls, ",")+`]},"finish_reason":"tool_calls"`, ""))
}

// bridgeIDStream is a chat stream with n tool calls (bridgeCallID's ids), one event each.
func bridgeIDStream(n, idBytes int, shape callIDShape) []byte {
	var b bytes.Buffer
	b.WriteString("data: " + bridgeChatRole + "\n\n")
	for i := range n {
		b.WriteString("data: " + bridgeChatToolDelta(fmt.Sprintf(
			`[{"index":%d,"id":"%s","type":"function","function":{"name":"f","arguments":"{}"}}]`,
			i, bridgeCallID(i, idBytes, shape))) + "\n\n")
	}
	b.WriteString("data: " + bridgeChatFinish("tool_calls") + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// TestBridgeCallIDsStayLinear: telling the tool-call ids of a bridged Response apart costs about their
// bytes, in a JSON answer and in a stream, whatever ids the upstream sends: for 1,024 calls with long ids of
// one length that differ only at the end, or all the same, the bytes hashed and compared stay within a small
// multiple of the body, as for the twin whose ids differ at the start. Counted (build tag aidialect_opcount),
// not timed: in the compiled module a comparison costs its length, natively it hides in vector instructions.
func TestBridgeCallIDsStayLinear(t *testing.T) {
	if !opcount.Enabled {
		t.Skip("counts operations: run with -tags aidialect_opcount (make test does)")
	}
	const calls, idBytes = maxBridgedItems, 1024
	var echo responsesEcho
	var ids callIDSet
	for _, format := range []struct {
		name string
		// copies is how many times the output names each call_id (a stream: output_item.added and .done,
		// and the terminal event).
		copies int
		body   func(n, idBytes int, shape callIDShape) []byte
		run    func(t *testing.T, body []byte) []byte
	}{
		{"JSON answer", 1, bridgeIDAnswer, func(t *testing.T, body []byte) []byte {
			out, err := bridgeAnswer(nil, body, &echo, &ids)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"stream", 3, bridgeIDStream, func(t *testing.T, body []byte) []byte {
			return runBridgeStream(t, &echo, string(body), 0)
		}},
	} {
		for shape, shapeName := range callIDShapeNames {
			t.Run(format.name+", "+shapeName, func(t *testing.T) {
				body := format.body(calls, idBytes, callIDShape(shape))
				opcount.Reset()
				out := format.run(t, body)
				c := opcount.Snapshot()
				t.Logf("%d body bytes: %d bytes compared, %d hashed, %d probes", len(body), c[opcount.BytesCompared],
					c[opcount.BytesHashed], c[opcount.Probes])
				if work := c[opcount.BytesCompared] + c[opcount.BytesHashed] + c[opcount.Probes]; work > 2*int64(len(body)) {
					t.Errorf("telling %d call ids apart cost %d operations (bytes compared, hashed, probes) for %d body "+
						"bytes, want at most twice the body", calls, work, len(body))
				}
				kept := calls
				if callIDShape(shape) == idsRepeated {
					kept = 1
				}
				if n := bytes.Count(out, []byte(`"call_id":"up_`)); n != format.copies*kept {
					t.Errorf("the upstream's call ids appear %d times, want %d", n, format.copies*kept)
				}
				if n := bytes.Count(out, []byte(`"call_id":"call_`)); n != format.copies*(calls-kept) {
					t.Errorf("%d generated call ids, want %d", n, format.copies*(calls-kept))
				}
			})
		}
	}
}

// TestCallIDSet: the set tells ids apart as a client decodes them (a repeat is refused, an id of another length or
// content is not), holds at most maxBridgedItems, forgets everything on reset, and adds without allocating
// once its tables have grown.
func TestCallIDSet(t *testing.T) {
	var s callIDSet
	for _, tc := range []struct {
		id   string
		want bool
	}{{"a", true}, {"b", true}, {"a", false}, {"ab", true}, {"", true}, {"", false}, {"b", false},
		// Ids are the contents of JSON strings, compared as a client decodes them.
		{`call_1`, true}, {`call_\u0031`, false}, {`call_\u0032`, true}, {`call_2`, false}, {`c\"`, true}, {`c"`, false}} {
		if got := s.add([]byte(tc.id)); got != tc.want {
			t.Errorf("add(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
	s.reset()
	if !s.add([]byte("a")) {
		t.Error("reset kept an id")
	}
	s.reset()
	ids := make([][]byte, maxBridgedItems+1)
	for i := range ids {
		ids[i] = fmt.Appendf(nil, "call_%d", i)
	}
	fill := func() {
		s.reset()
		for i, id := range ids {
			if got, want := s.add(id), i < maxBridgedItems; got != want {
				t.Fatalf("add of id %d = %v, want %v", i, got, want)
			}
		}
	}
	fill()
	if allocs := testing.AllocsPerRun(10, fill); allocs != 0 {
		t.Errorf("%v allocations per %d ids once the tables grew, want 0", allocs, maxBridgedItems)
	}
}

// BenchmarkBridgeCallIDs is the hostile call-id shape against its twin of the same size (1,024 calls with
// 8 KiB ids in a JSON answer, 4,000-byte ones in a stream): the ratio of each pair should be about 1, in the compiled module
// too.
func BenchmarkBridgeCallIDs(b *testing.B) {
	const calls = maxBridgedItems
	for _, format := range []string{"answer", "stream"} {
		// A stream holds at most 4 MiB of ids, names and arguments: its ids are shorter.
		idBytes := map[string]int{"answer": 8 << 10, "stream": 4000}[format]
		for _, shape := range []callIDShape{idsDifferFirst, idsDifferLast} {
			b.Run(format+"/"+callIDShapeNames[shape], func(b *testing.B) {
				var echo responsesEcho
				var ids callIDSet
				var r responsesEvents
				var out, body []byte
				if format == "answer" {
					body = bridgeIDAnswer(calls, idBytes, shape)
				} else {
					body = bridgeIDStream(calls, idBytes, shape)
				}
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if format == "answer" {
						out, _ = bridgeAnswer(out[:0], body, &echo, &ids)
					} else {
						r.reset(&echo, 0)
						out, _ = r.write(out[:0], body)
						out = r.close(out)
					}
				}
			})
		}
	}
}

// TestBridgedCallIDsDecoded: two tool calls whose ids differ only in how they are escaped are one id to the
// client: the second gets a generated call_id, in a JSON answer and in a stream.
func TestBridgedCallIDsDecoded(t *testing.T) {
	for _, format := range []string{"answer", "stream"} {
		t.Run(format, func(t *testing.T) {
			var out []byte
			if format == "answer" {
				chat := bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[`+
					`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},`+
					`{"id":"call_\u0031","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"`, "")
				var echo responsesEcho
				var err error
				if out, err = bridgeAnswer(nil, []byte(chat), &echo, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				var r responsesEvents
				r.reset(nil, 0)
				stream := "data: " + bridgeChatRole + "\n\n" +
					"data: " + bridgeChatToolDelta(`[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]`) + "\n\n" +
					"data: " + bridgeChatToolDelta(`[{"index":1,"id":"call_\u0031","type":"function","function":{"name":"g","arguments":"{}"}}]`) + "\n\n" +
					"data: " + bridgeChatFinish("tool_calls") + "\n\ndata: [DONE]\n\n"
				out, _ = r.write(nil, []byte(stream))
				out = r.close(out)
				// The terminal event's response lists the calls.
				i := bytes.LastIndex(out, []byte("data: "))
				out = []byte(gjson.GetBytes(out[i+len("data: "):], "response").Raw)
			}
			var ids []string
			gjson.GetBytes(out, "output").ForEach(func(_, item gjson.Result) bool {
				ids = append(ids, item.Get("call_id").String())
				return true
			})
			if len(ids) != 2 || ids[0] != "call_1" || ids[1] == ids[0] || ids[1] == "" {
				t.Errorf("call_ids %q: want call_1 and a generated one", ids)
			}
		})
	}
}

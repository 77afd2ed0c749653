package main

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestBridgedStreamEndInPieces: a Responses stream bridged from chat, holding its full 4 MiB of text or of
// tool-call arguments, ends with four events that repeat it (about 17 MB), written to the client in pieces of
// whole events, each redacted on its own: the client gets every event whole, in order, and the terminal
// Response holds exactly what the deltas added up to, however the stream ended. The one exception is a
// stream that ends with trailers before its [DONE]: Envoy lets nothing follow its last chunk
// (docs/envoy-host.md section 4), so its end never comes, and the client has the deltas, whole, and no more.
func TestBridgedStreamEndInPieces(t *testing.T) {
	const head = `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	// Four deltas of just under 1 MiB; in the text, the last holds the provider's key, which every repeat
	// must hide (a redacted piece is a copy: the arguments, without the key, go out of the reused buffer).
	part := strings.Repeat("z", 1<<20-4<<10)
	keyed := part[:len(part)-64] + "ai-provider-key"
	text := []string{events(head + `{"role":"assistant"},"finish_reason":null}]}`)}
	args := []string{events(head + `{"role":"assistant"},"finish_reason":null}]}`)}
	for i := range 4 {
		p := part
		if i == 3 {
			p = keyed
		}
		text = append(text, events(head+`{"content":"`+p+`"},"finish_reason":null}]}`))
		call := `{"index":0,"function":{"arguments":"` + part + `"}}`
		if i == 0 {
			call = `{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"` + part + `"}}`
		}
		args = append(args, events(head+`{"tool_calls":[`+call+`]},"finish_reason":null}]}`))
	}
	wantText := strings.Repeat(part, 3) + strings.ReplaceAll(keyed, "ai-provider-key", "[redacted]")
	wantArgs := strings.Repeat(part, 4)
	finish := events(head + `{},"finish_reason":"stop"}]}`)
	bigEvents := withSetting(testConfig, `"max_event_bytes": 4194304`)
	for _, kind := range []struct {
		name, deltaType, doneField, outputPath string
		stream                                 []string
		want                                   string
	}{
		{"4 MiB of text", "response.output_text.delta", "text", "output.0.content.0.text", text, wantText},
		{"4 MiB of tool-call arguments", "response.function_call_arguments.delta", "arguments", "output.0.arguments", args, wantArgs},
	} {
		for _, ending := range []struct {
			name     string
			tail     string
			trailers bool
			endLost  bool // the bridged end is due when the trailers come, too late for Envoy
		}{
			{"[DONE] with end_of_stream", finish + events("[DONE]"), false, false},
			{"end_of_stream without [DONE]", finish, false, false},
			{"[DONE], then trailers", finish + events("[DONE]"), true, false},
			{"trailers without [DONE]", finish, true, true},
		} {
			// The end comes in a chunk of its own: its first piece is then written in the buffer the next
			// pieces reuse.
			chunks := append(split([]byte(strings.Join(kind.stream, "")), 64<<10), ending.tail)
			for _, md := range modes {
				t.Run(kind.name+"/"+ending.name+"/"+md.name, func(t *testing.T) {
					ex := bridgedExchange(bigEvents, "", true, chunks...)
					ex.trailers = ending.trailers
					o := run(t, md, ex)
					o.assertRules(t)
					if o.status != 200 {
						t.Fatalf("status %d: %.300s", o.status, o.clientBody)
					}
					if strings.Contains(string(o.clientBody), "ai-provider-key") {
						t.Error("the provider's key reached the client")
					}
					var deltas strings.Builder
					var done string
					data := strictResponsesEvents(t, string(o.clientBody))
					for _, d := range data {
						switch d.Get("type").String() {
						case kind.deltaType:
							deltas.WriteString(d.Get("delta").String())
						case "response.output_text.done", "response.function_call_arguments.done":
							done = d.Get(kind.doneField).String()
						}
					}
					last := data[len(data)-1]
					if ending.endLost {
						if typ := last.Get("type").String(); typ != kind.deltaType || deltas.String() != kind.want || done != "" {
							t.Errorf("the stream ends with %s after deltas of %d bytes (want %s after %d), .done %d bytes (want none)",
								typ, deltas.Len(), kind.deltaType, len(kind.want), len(done))
						}
						return
					}
					if typ := last.Get("type").String(); typ != "response.completed" {
						t.Fatalf("the stream ends with %s: %.300s", typ, last.Raw)
					}
					output := last.Get("response." + kind.outputPath).String()
					if deltas.String() != kind.want || done != kind.want || output != kind.want {
						t.Errorf("deltas %d bytes, .done %d, terminal output %d; want %d each, equal", deltas.Len(), len(done),
							len(output), len(kind.want))
					}
				})
			}
		}
	}
}

// strictResponsesEvents parses a Responses stream event by event, failing the test unless every event is an
// event line naming the data's type and one data line of JSON, the sequence numbers counting up from 0.
func strictResponsesEvents(t *testing.T, body string) []gjson.Result {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("the stream does not end with a whole event: %.100q", body[max(0, len(body)-100):])
	}
	var data []gjson.Result
	for i, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, d, ok := strings.Cut(ev, "\ndata: ")
		name, named := strings.CutPrefix(name, "event: ")
		if !ok || !named || strings.Contains(d, "\n") || !gjson.Valid(d) {
			t.Fatalf("event %d is not whole: %.200q", i, ev)
		}
		v := gjson.Parse(d)
		if v.Get("type").String() != name || v.Get("sequence_number").Int() != int64(i) {
			t.Fatalf("event %d: event %s, type %s, sequence_number %s", i, name, v.Get("type"), v.Get("sequence_number"))
		}
		data = append(data, v)
	}
	return data
}

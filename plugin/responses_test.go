package main

import (
	"strings"
	"testing"
)

// TestStreamFailureEndsTheStreamOnce: an event over max_event_bytes ends the client's stream with one
// failure, in both modes, whatever follows upstream: here the upstream's trailers, whose callback once ended
// the stream a second time (a second error event after [DONE], or after a Responses stream's failure).
func TestStreamFailureEndsTheStreamOnce(t *testing.T) {
	config := withSetting(testConfig, `"max_event_bytes": 1024`)
	huge := strings.Repeat("x", 2000)
	chatEvents := events(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+huge+`"}}]}`)
	nativeEvents := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"" + huge + "\"}\n\n"
	for _, tt := range []struct {
		name, path, body, upstream, ending string
	}{
		{"chat", "/v1/chat/completions", `{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}],"stream":true}`,
			chatEvents, "data: [DONE]"},
		{"native Responses", "/v1/responses", `{"model":"gpt-4.1","input":"hi","stream":true}`, nativeEvents, "event: error"},
		{"bridged Responses", "/v1/responses", `{"model":"llama-3-70b","input":"hi","stream":true}`, chatEvents, "event: response.failed"},
	} {
		for _, md := range modes {
			t.Run(tt.name+"/"+md.name, func(t *testing.T) {
				ex := exchange{config: config, method: "POST", path: tt.path,
					headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer k"}},
					body:    []string{tt.body}}
				ex = withTrailers(answer(ex, 200, eventHeaders, split([]byte(tt.upstream), 300)...))
				o := run(t, md, ex)
				o.assertRules(t)
				body := string(o.clientBody)
				if n := strings.Count(body, tt.ending); n != 1 {
					t.Fatalf("%q %d times, want once:\n%s", tt.ending, n, body)
				}
				if end := strings.LastIndex(body, tt.ending); strings.Contains(body[end:], "\n\nevent:") ||
					strings.Contains(body[end:], "\n\ndata:") {
					t.Errorf("events after the failure:\n%s", body[end:])
				}
			})
		}
	}
}

package e2e_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestRequestTrailers sends chat requests as chunked HTTP/1.1 bodies that end with trailers: no body callback
// then sees end_of_stream, and the filter must finish (read the body, route, render, edit the held headers) in
// its trailers callback. The providers must get the request the filter rendered and the client a normal
// answer in its own dialect.
func TestRequestTrailers(t *testing.T) {
	env := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			mock := env.Mocks[p.name] // nil against a remote Envoy
			before := 0
			if mock != nil {
				before = len(mock.Received())
			}
			body := `{"model":"` + p.chatModel + `","messages":[{"role":"user","content":"Say hello with trailers"}]}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.GatewayURL+"/v1/chat/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer any-client-key")
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = -1 // chunked, so the trailers can follow the last chunk
			req.Trailer = http.Header{"X-Request-Checksum": {"e2e"}}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, answer)
			}
			if text := gjson.GetBytes(answer, "choices.0.message.content").String(); !strings.Contains(text, "hello") {
				t.Errorf("answer %s does not echo the request", answer)
			}
			if got := gjson.GetBytes(answer, "object").String(); got != "chat.completion" {
				t.Errorf("answer object %q, want an OpenAI chat.completion", got)
			}
			if mock == nil {
				return
			}
			recs := mock.Received()[before:]
			if len(recs) != 1 {
				t.Fatalf("%s received %d requests, want 1", p.name, len(recs))
			}
			rec := recs[0]
			if strings.Contains(rec.Header.Get("Authorization")+rec.Header.Get("Api-Key"), "client-key") {
				t.Errorf("the client's key reached %s", p.name)
			}
			if p.name == "azure" && !strings.Contains(rec.Path, "gpt-4o-mini-prod") {
				t.Errorf("azure request path %q does not name the deployment", rec.Path)
			}
			if p.name == "eternal" && gjson.GetBytes(rec.Body, "model").String() != "PrimeIntellect/INTELLECT-1-Instruct" {
				t.Errorf("eternalai body names model %q, want the provider's model", gjson.GetBytes(rec.Body, "model").String())
			}
		})
	}
}

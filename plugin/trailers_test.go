package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/translate"
)

// Request trailers (issue 10 item 1): an HTTP/2 request, or a chunked HTTP/1.1 one, may end with a trailers
// frame; then no body callback sees end_of_stream and Envoy calls OnHttpRequestTrailers instead. Every check
// the filter makes at the end of a body must run there too, or the body reaches the provider unchecked.

var clientTrailers = [][2]string{{"x-client-trailer", "1"}}

// trailersConfig has one consumer who may use gpt-4o-mini only.
var trailersConfig = `{
  "providers": [
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-provider-openai",
     "models": [{"name": "gpt-4o-mini"}, {"name": "o1-pro"}]}
  ],
  "max_request_bytes": 4096,
  "consumers": [{"name": "mini", "key_sha256": "` + hexSum("mini-key") + `", "models": ["gpt-4o-mini"]}]
}`

func trailerRequest(path, body string, headers ...[2]string) exchange {
	ex := exchange{config: trailersConfig, method: "POST", path: path, requestTrailers: clientTrailers,
		headers: append([][2]string{{"content-type", "application/json"}, {"authorization", "Bearer mini-key"}}, headers...)}
	if body != "" {
		ex.body = []string{body[:len(body)/2], body[len(body)/2:]}
	}
	return ex
}

func TestRequestTrailers(t *testing.T) {
	azurePath := "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21"
	rows := []struct {
		name   string
		ex     exchange
		client translate.Dialect
		status int    // a refusal; 0: the request goes upstream
		code   string // the refusal's code
		check  func(t *testing.T, o *outcome)
	}{
		{name: "deployment path allowed, body names another model: the body is rendered, not forwarded as sent",
			ex: trailerRequest(azurePath, `{"model":"o1-pro",`+userMessages+`}`), client: translate.AzureOpenAI,
			check: func(t *testing.T, o *outcome) {
				if m := gjson.GetBytes(o.upstreamBody, "model").String(); m != "gpt-4o-mini" {
					t.Errorf("upstream body model %q, want gpt-4o-mini: %s", m, o.upstreamBody)
				}
			}},
		{name: "body-routed model the consumer may not use", ex: trailerRequest("/v1/chat/completions", `{"model":"o1-pro",`+userMessages+`}`),
			client: translate.OpenAI, status: 403, code: "model_not_allowed"},
		{name: "body-routed model the consumer may use", ex: trailerRequest("/v1/chat/completions", `{"model":"gpt-4o-mini",`+userMessages+`}`),
			client: translate.OpenAI, check: func(t *testing.T, o *outcome) {
				if o.upstreamHead["x-aidialect-provider"] != "openai" || o.upstreamHead["authorization"] != "Bearer sk-provider-openai" {
					t.Errorf("upstream head %q", o.upstreamHead)
				}
			}},
		{name: "invalid JSON", ex: trailerRequest("/v1/chat/completions", `{"model":"gpt-4o-mini",`+userMessages),
			client: translate.OpenAI, status: 400, code: "invalid_json"},
		{name: "duplicate model", ex: trailerRequest("/v1/chat/completions", `{"model":"gpt-4o-mini","model":"o1-pro",`+userMessages+`}`),
			client: translate.OpenAI, status: 400, code: "invalid_json"},
		{name: "over max_request_bytes", ex: trailerRequest("/v1/chat/completions", `{"model":"gpt-4o-mini",`+userMessages+`,"user":"`+strings.Repeat("x", 5000)+`"}`),
			client: translate.OpenAI, status: 413, code: "body_too_large"},
		{name: "headers, then trailers, no body", ex: trailerRequest("/v1/chat/completions", ""),
			client: translate.OpenAI, status: 400, code: "invalid_json"},
		{name: "deployment path, no body", ex: trailerRequest(azurePath, ""),
			client: translate.AzureOpenAI, status: 400, code: "invalid_json"},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, r := range rows {
				t.Run(r.name, func(t *testing.T) {
					o := run(t, md, r.ex)
					o.assertRules(t)
					if r.status != 0 {
						checkRefusal(t, o, r.client, r.status, r.code, "")
						return
					}
					if o.upstreamCalls != 1 {
						t.Fatalf("answered locally: %d %s", o.status, o.clientBody)
					}
					if r.check != nil {
						r.check(t, o)
					}
				})
			}
		})
	}
}

// TestRequestTrailersChangeNothing: for every client dialect, a request that ends with trailers reaches the
// provider exactly as the same request ending with end_of_stream does.
func TestRequestTrailersChangeNothing(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, s := range clientShapes {
				t.Run(s.name, func(t *testing.T) {
					plain := s.request(s.body(`,"temperature":0.5`))
					withTrailers := plain
					withTrailers.requestTrailers = clientTrailers
					a, b := run(t, md, plain), run(t, md, withTrailers)
					a.assertRules(t)
					b.assertRules(t)
					if a.upstreamCalls != 1 || b.upstreamCalls != 1 {
						t.Fatalf("upstream calls %d and %d: %s / %s", a.upstreamCalls, b.upstreamCalls, a.clientBody, b.clientBody)
					}
					if !bytes.Equal(a.upstreamBody, b.upstreamBody) {
						t.Errorf("upstream body\nwithout trailers %s\nwith trailers    %s", a.upstreamBody, b.upstreamBody)
					}
					if len(a.upstreamHead) != len(b.upstreamHead) {
						t.Errorf("upstream head\nwithout trailers %q\nwith trailers    %q", a.upstreamHead, b.upstreamHead)
					}
					for k, v := range a.upstreamHead {
						if b.upstreamHead[k] != v {
							t.Errorf("upstream %s: %q without trailers, %q with", k, v, b.upstreamHead[k])
						}
					}
				})
			}
		})
	}
}

// TestErrorWithTrailersAndNoBody: an upstream error of headers and trailers alone. Envoy runs no body
// callback and holds no body, so the trailers callback cannot write the envelope (a write there is refused):
// the filter writes nothing, counts it and logs it, and the host reports no broken rule.
func TestErrorWithTrailersAndNoBody(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			host, err := hostemu.New(md.vm(t), []byte(testConfig))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			x := host.Begin()
			defer x.Finish()
			if err := x.SendRequest([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gw"}},
				[][]byte{[]byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)}); err != nil || x.Upstream == nil {
				t.Fatalf("request: %v %+v", err, x.Local)
			}
			w := &recorder{}
			trailers := func() [][2]string { return [][2]string{{"x-upstream-done", "1"}} }
			if err := x.RelayResponse(500, [][2]string{{"content-type", "text/plain"}}, strings.NewReader(""), trailers, w); err != nil {
				t.Fatalf("the answer broke a host rule: %v", err)
			}
			if w.status != 500 {
				t.Errorf("status %d", w.status)
			}
		})
	}
}

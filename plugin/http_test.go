package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/sha256"
)

const testConfig = `{
  "providers": [
    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "az-provider-key",
     "models": [{"name": "gpt-4o", "deployment": "gpt4o-prod"}, {"name": "gpt-35-*"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama.eastus2.models.ai.azure.com", "api_key": "ai-provider-key",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct", "deployment": "llama3-blue"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "et-provider-key",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct", "chain_id": "8453"}]},
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-provider-openai",
     "models": [{"name": "gpt-4.1"}]}
  ],
  "default_provider": "openai",
  "max_request_bytes": 4096
}`

// withConsumers adds consumers to testConfig: team-a (key "team-a-key") may use gpt-*; ops ("ops-key") all.
func withConsumers(cfg string) string {
	return strings.TrimSuffix(strings.TrimSpace(cfg), "}") + `,
  "consumers": [
    {"name": "team-a", "key_sha256": "` + hexSum("team-a-key") + `", "models": ["gpt-*"]},
    {"name": "ops", "key_sha256": "` + hexSum("ops-key") + `"}
  ]}`
}

func withSetting(cfg, setting string) string {
	return strings.TrimSuffix(strings.TrimSpace(cfg), "}") + ", " + setting + "}"
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	const digits = "0123456789abcdef"
	out := make([]byte, 64)
	for i, b := range sum {
		out[2*i], out[2*i+1] = digits[b>>4], digits[b&15]
	}
	return string(out)
}

var (
	jsonHeaders  = [][2]string{{"content-type", "application/json"}}
	eventHeaders = [][2]string{{"content-type", "text/event-stream"}}
	chatOK       = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`
)

func openAIChat(model string, extra string) exchange {
	return exchange{
		config:  testConfig,
		method:  "POST",
		path:    "/v1/chat/completions",
		headers: [][2]string{{"authorization", "Bearer client-key"}, {"content-type", "application/json"}, {"accept-encoding", "gzip"}},
		body:    []string{`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + extra + `}`},
	}
}

func answered(ex exchange, status int, headers [][2]string, chunks ...string) exchange {
	ex.upstream = &upstreamAnswer{status: status, headers: headers, chunks: chunks}
	return ex
}

type behaviour struct {
	name  string
	ex    exchange
	check func(t *testing.T, o *outcome)
}

func wantLocal(status int, code string) func(*testing.T, *outcome) {
	return func(t *testing.T, o *outcome) {
		t.Helper()
		if o.local == nil {
			t.Fatalf("expected a local %d %s, the request went upstream", status, code)
		}
		if o.status != status || o.clientHead["x-aidialect-error"] != code {
			t.Fatalf("local reply %d %s (%s), want %d %s", o.status, o.clientHead["x-aidialect-error"], o.clientBody, status, code)
		}
	}
}

func behaviours() []behaviour {
	return []behaviour{
		{"body-routed request: headers held, then edited once, exact content-length",
			answered(openAIChat("gpt-4o", `,"user":"u"`), 200, jsonHeaders, chatOK), func(t *testing.T, o *outcome) {
				h := o.upstreamHead
				if h[":path"] != "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21" ||
					h[":authority"] != "res.openai.azure.com" || h["x-aidialect-provider"] != "azure-east" ||
					h["api-key"] != "az-provider-key" || h["authorization"] != "" || h["accept-encoding"] != "" {
					t.Errorf("upstream head %v", h)
				}
				if h["content-length"] == "" {
					t.Errorf("body-routed requests must carry an exact content-length")
				}
				if gjson.GetBytes(o.upstreamBody, "model").Exists() {
					t.Errorf("model sent on a classic deployment path: %s", o.upstreamBody)
				}
				if o.status != 200 || gjson.GetBytes(o.clientBody, "choices.0.message.content").String() != "hi" {
					t.Errorf("client got %d %s", o.status, o.clientBody)
				}
			}},
		{"deployment path routes in the headers phase, without content-length",
			answered(exchange{config: testConfig, method: "POST",
				path:    "/openai/deployments/llama-3-70b/chat/completions?api-version=2024-10-21",
				headers: [][2]string{{"api-key", "client-key"}},
				body:    []string{`{"messages":[{"role":"user","content":"hi"}],`, `"n":1}`}}, 200, jsonHeaders, chatOK),
			func(t *testing.T, o *outcome) {
				h := o.upstreamHead
				if h[":path"] != "/chat/completions?api-version=2024-05-01-preview" || h["azureml-model-deployment"] != "llama3-blue" ||
					h["extra-parameters"] != "drop" || h["api-key"] != "ai-provider-key" || h["authorization"] != "Bearer ai-provider-key" {
					t.Errorf("upstream head %v", h)
				}
				if _, has := h["content-length"]; has {
					t.Errorf("headers went on before the body changed: content-length must be removed")
				}
				if string(o.upstreamBody) != `{"messages":[{"role":"user","content":"hi"}],"model":"Meta-Llama-3-70B-Instruct"}` {
					t.Errorf("upstream body %s", o.upstreamBody)
				}
				if o.clientHead["x-aidialect-dropped-params"] != "n" {
					t.Errorf("dropped params header %q", o.clientHead["x-aidialect-dropped-params"])
				}
			}},
		// LangChain's AzureChatOpenAI without model= sends "model": null; Azure reads it as no model.
		{"model null on a deployment path: the path names the model",
			answered(exchange{config: testConfig, method: "POST",
				path:    "/openai/deployments/llama-3-70b/chat/completions?api-version=2024-10-21",
				headers: [][2]string{{"api-key", "client-key"}},
				body:    []string{`{"messages":[{"role":"user","content":"hi"}],"model":null}`}}, 200, jsonHeaders, chatOK),
			func(t *testing.T, o *outcome) {
				if string(o.upstreamBody) != `{"messages":[{"role":"user","content":"hi"}],"model":"Meta-Llama-3-70B-Instruct"}` {
					t.Errorf("upstream body %s (client got %d %s)", o.upstreamBody, o.status, o.clientBody)
				}
			}},
		{"model null on a body-routed path: refused as missing", func() exchange {
			ex := openAIChat("", "")
			ex.body = []string{`{"model":null,"messages":[{"role":"user","content":"hi"}]}`}
			return ex
		}(), func(t *testing.T, o *outcome) {
			wantLocal(400, "invalid_parameter")(t, o)
			if !strings.Contains(string(o.clientBody), "names no model") {
				t.Errorf("client got %s", o.clientBody)
			}
		}},
		{"model listing answered locally", exchange{config: testConfig, method: "GET", path: "/v1/models"},
			func(t *testing.T, o *outcome) {
				var ids []string
				for _, m := range gjson.GetBytes(o.clientBody, "data").Array() {
					ids = append(ids, m.Get("id").String())
				}
				if o.status != 200 || strings.Join(ids, ",") != "gpt-4o,llama-3-70b,intellect-1,gpt-4.1" {
					t.Errorf("%d %s", o.status, o.clientBody)
				}
			}},
		{"glob route", answered(openAIChat("gpt-35-turbo", ""), 200, jsonHeaders, chatOK), func(t *testing.T, o *outcome) {
			if o.upstreamHead[":path"] != "/openai/deployments/gpt-35-turbo/chat/completions?api-version=2024-10-21" {
				t.Errorf("path %s", o.upstreamHead[":path"])
			}
		}},
		{"default provider", answered(openAIChat("o3-mini", ""), 200, jsonHeaders, chatOK), func(t *testing.T, o *outcome) {
			if o.upstreamHead["x-aidialect-provider"] != "openai" || gjson.GetBytes(o.upstreamBody, "model").String() != "o3-mini" {
				t.Errorf("%v %s", o.upstreamHead, o.upstreamBody)
			}
		}},
		{"unknown model without a default provider", func() exchange {
			ex := openAIChat("o3-mini", "")
			ex.config = strings.Replace(testConfig, `"default_provider": "openai",`, "", 1)
			return ex
		}(), wantLocal(404, "model_not_found")},
		{"missing consumer key", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.config = withConsumers(testConfig)
			ex.headers = nil
			return ex
		}(), wantLocal(401, "unauthorized")},
		{"wrong consumer key", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.config = withConsumers(testConfig)
			return ex
		}(), wantLocal(401, "unauthorized")},
		{"consumer may not use the model", func() exchange {
			ex := openAIChat("llama-3-70b", "")
			ex.config = withConsumers(testConfig)
			ex.headers = [][2]string{{"authorization", "Bearer team-a-key"}}
			return ex
		}(), wantLocal(403, "model_not_allowed")},
		{"consumer allowed: its key never reaches the provider", func() exchange {
			ex := answered(openAIChat("gpt-4o", ""), 200, jsonHeaders, chatOK)
			ex.config = withConsumers(testConfig)
			ex.headers = [][2]string{{"authorization", "Bearer team-a-key"}}
			return ex
		}(), func(t *testing.T, o *outcome) {
			for k, v := range o.upstreamHead {
				if strings.Contains(v, "team-a-key") {
					t.Errorf("client key forwarded in %s", k)
				}
			}
			if o.upstreamHead["api-key"] != "az-provider-key" {
				t.Errorf("provider key missing: %v", o.upstreamHead)
			}
		}},
		{"consumer model listing is filtered", func() exchange {
			return exchange{config: withConsumers(testConfig), method: "GET", path: "/v1/models",
				headers: [][2]string{{"api-key", "team-a-key"}}}
		}(), func(t *testing.T, o *outcome) {
			if got := gjson.GetBytes(o.clientBody, "data.#.id").Raw; got != `["gpt-4o","gpt-4.1"]` {
				t.Errorf("listing %s", got)
			}
		}},
		{"passthrough auth moves the client key into the provider's header", func() exchange {
			ex := answered(openAIChat("gpt-4o", ""), 200, jsonHeaders, chatOK)
			ex.config = strings.Replace(testConfig, `"api_key": "az-provider-key"`, `"auth": "passthrough"`, 1)
			return ex
		}(), func(t *testing.T, o *outcome) {
			if o.upstreamHead["api-key"] != "client-key" || o.upstreamHead["authorization"] != "" {
				t.Errorf("%v", o.upstreamHead)
			}
		}},
		{"declared body over max_request_bytes", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.headers = append(ex.headers, [2]string{"content-length", "5000"})
			return ex
		}(), wantLocal(413, "body_too_large")},
		{"streamed body over max_request_bytes", func() exchange {
			ex := openAIChat("gpt-4o", "")
			big := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
			ex.body = split([]byte(big), 1000)
			ex.headers = append(ex.headers, [2]string{"content-length", "10"}) // lies: the chunks decide
			return ex
		}(), wantLocal(413, "body_too_large")},
		{"invalid JSON is refused in the client's dialect", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.path = "/chat/completions?api-version=2024-05-01-preview"
			ex.body = []string{`{"model":"gpt-4o",`}
			return ex
		}(), func(t *testing.T, o *outcome) {
			wantLocal(400, "invalid_json")(t, o)
			if gjson.GetBytes(o.clientBody, "error.status").Int() != 400 {
				t.Errorf("not the azure-ai envelope: %s", o.clientBody)
			}
		}},
		{"a POST without a body", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.body = nil
			return ex
		}(), wantLocal(400, "invalid_json")},
		{"gzip request bodies cannot be translated", func() exchange {
			ex := openAIChat("gpt-4o", "")
			ex.headers = append(ex.headers, [2]string{"content-encoding", "gzip"})
			return ex
		}(), wantLocal(415, "unsupported_content_encoding")},
		{"unknown paths pass through untouched, minus the routing header", answered(exchange{config: testConfig, method: "GET",
			path: "/healthz", headers: [][2]string{{"x-aidialect-provider", "openai"}, {"authorization", "Bearer x"}}},
			200, [][2]string{{"content-type", "text/plain"}}, "ok"), func(t *testing.T, o *outcome) {
			if _, has := o.upstreamHead["x-aidialect-provider"]; has || o.upstreamHead["authorization"] != "Bearer x" ||
				o.upstreamHead[":path"] != "/healthz" || string(o.clientBody) != "ok" {
				t.Errorf("%v %s", o.upstreamHead, o.clientBody)
			}
		}},
		{"unknown paths rejected when configured", exchange{config: withSetting(testConfig, `"unknown_paths": "reject"`),
			method: "GET", path: "/healthz"}, wantLocal(404, "unknown_path")},
		{"an answer we cannot decode passes through untouched", answered(openAIChat("gpt-4o", ""), 200,
			[][2]string{{"content-type", "application/json"}, {"content-encoding", "gzip"}}, "\x1f\x8b\x08binary"),
			func(t *testing.T, o *outcome) {
				if string(o.clientBody) != "\x1f\x8b\x08binary" || o.clientHead["content-encoding"] != "gzip" {
					t.Errorf("%q %v", o.clientBody, o.clientHead)
				}
			}},
		{"HTML 502 from a load balancer becomes the client's envelope", func() exchange {
			ex := openAIChat("llama-3-70b", "")
			ex.path = "/chat/completions?api-version=2024-05-01-preview"
			return answered(ex, 502, [][2]string{{"content-type", "text/html"}, {"content-length", "60"}},
				"<html><head><title>502 Bad Gateway</title></head></html>")
		}(), func(t *testing.T, o *outcome) {
			if o.status != 502 || gjson.GetBytes(o.clientBody, "error.status").Int() != 502 ||
				!strings.Contains(gjson.GetBytes(o.clientBody, "error.message").String(), "502 Bad Gateway") ||
				o.clientHead["content-type"] != "application/json" {
				t.Errorf("%d %v %s", o.status, o.clientHead, o.clientBody)
			}
		}},
		{"azure-ai 422 is a 400 for OpenAI clients", answered(openAIChat("llama-3-70b", ""), 422, jsonHeaders,
			`{"status":422,"code":"parameter_not_supported","detail":{"loc":["body","response_format"]},"message":"bad"}`),
			func(t *testing.T, o *outcome) {
				if o.status != 400 || gjson.GetBytes(o.clientBody, "error.param").String() != "response_format" {
					t.Errorf("%d %s", o.status, o.clientBody)
				}
			}},
		{"EternalAI onchain_data becomes headers for OpenAI clients", answered(openAIChat("intellect-1", ""), 200, jsonHeaders,
			`{"id":"e","object":"chat.completion","choices":[],"onchain_data":{"infer_id":42,"infer_tx":"0xabc","pbft_committee":["0x1"]}}`),
			func(t *testing.T, o *outcome) {
				if o.clientHead["x-onchain-infer-id"] != "42" || o.clientHead["x-onchain-infer-tx"] != "0xabc" ||
					gjson.GetBytes(o.clientBody, "onchain_data").Exists() {
					t.Errorf("%v %s", o.clientHead, o.clientBody)
				}
				if gjson.GetBytes(o.upstreamBody, "chain_id").String() != "8453" {
					t.Errorf("chain_id %s", o.upstreamBody)
				}
			}},
		{"stream ending in trailers after its [DONE] reaches the client whole, with one [DONE]", func() exchange {
			ex := answered(openAIChat("llama-3-70b", `,"stream":true`), 200, eventHeaders,
				"data: {\"id\":\"a\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"a\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
				"data: [DONE]\n\n")
			ex.trailers = true
			return ex
		}(), func(t *testing.T, o *outcome) {
			if bytes.Count(o.clientBody, []byte("[DONE]")) != 1 || !bytes.HasSuffix(o.clientBody, []byte("data: [DONE]\n\n")) ||
				bytes.Contains(o.clientBody, []byte(`"chat.completion"`)) {
				t.Errorf("%s", o.clientBody)
			}
		}},
		{"forced usage: counted, and hidden from a client that did not ask", func() exchange {
			ex := answered(openAIChat("gpt-4.1", `,"stream":true`), 200, eventHeaders,
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
				"data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":3,\"total_tokens\":14}}\n\ndata: [DONE]\n\n")
			ex.config = withSetting(testConfig, `"usage": "force"`)
			ex.onDone = func(o *outcome) {
				if got := o.counter("aidialect_prompt_tokens_total.provider.openai.model.gpt-4_1"); got != 11 {
					o.violate("metrics", "prompt tokens %d, want 11", got)
				}
				if got := o.counter("aidialect_completion_tokens_total.provider.openai.model.gpt-4_1"); got != 3 {
					o.violate("metrics", "completion tokens %d, want 3", got)
				}
			}
			return ex
		}(), func(t *testing.T, o *outcome) {
			if !gjson.GetBytes(o.upstreamBody, "stream_options.include_usage").Bool() {
				t.Errorf("include_usage not forced: %s", o.upstreamBody)
			}
			if bytes.Contains(o.clientBody, []byte("prompt_tokens")) || !bytes.HasSuffix(o.clientBody, []byte("data: [DONE]\n\n")) {
				t.Errorf("client stream %s", o.clientBody)
			}
		}},
		{"requests and errors are counted", func() exchange {
			ex := answered(openAIChat("gpt-4o", ""), 200, jsonHeaders, chatOK)
			ex.onDone = func(o *outcome) {
				if got := o.counter("aidialect_requests_total.client_dialect.openai.provider.azure-east.status_class.2xx"); got != 1 {
					o.violate("metrics", "requests %d", got)
				}
				if got := o.counter("aidialect_prompt_tokens_total.provider.azure-east.model.gpt-4o"); got != 7 {
					o.violate("metrics", "prompt tokens %d", got)
				}
			}
			return ex
		}(), func(t *testing.T, o *outcome) {}},
	}
}

func TestBehaviours(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, b := range behaviours() {
				t.Run(b.name, func(t *testing.T) {
					o := run(t, md, b.ex)
					o.assertRules(t)
					b.check(t, o)
				})
			}
		})
	}
}

// TestStreamChunkingInvariance feeds one stream whole and cut at awkward places (inside "data:", between
// CR and LF, mid-UTF-8): the client must receive the same bytes.
func TestStreamChunkingInvariance(t *testing.T) {
	stream := "data: {\"id\":\"a\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"héllo\"}}]}\r\n\r\n" +
		": keep-alive\r\n\r\n" +
		"data: {\"id\":\"a\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\r\n\r\n" +
		"data: [DONE]\r\n\r\n"
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			var reference []byte
			for _, size := range []int{len(stream), 1, 2, 3, 5, 8, 13, 64} {
				ex := answered(openAIChat("llama-3-70b", `,"stream":true`), 200, eventHeaders, split([]byte(stream), size)...)
				o := run(t, md, ex)
				o.assertRules(t)
				if reference == nil {
					reference = o.clientBody
					if !bytes.Contains(reference, []byte(`"chat.completion.chunk"`)) {
						t.Fatalf("stream not translated: %s", reference)
					}
					continue
				}
				if !bytes.Equal(o.clientBody, reference) {
					t.Errorf("%d-byte chunks give different client bytes:\n%q\nwhole:\n%q", size, o.clientBody, reference)
				}
			}
		})
	}
}

// TestDroppedParamsHeader: x-aidialect-dropped-params lists the names as sent when they are plain tokens,
// Go-quoted in ASCII otherwise, and is cut at maxDroppedParamsHeader bytes with a final "...".
func TestDroppedParamsHeader(t *testing.T) {
	long := strings.Repeat("p", maxDroppedParamsHeader)
	tests := []struct {
		name  string
		names []string
		more  int
		want  string
	}{
		{"one", []string{"n"}, 0, "n"},
		{"several tokens", []string{"logit_bias", "top-k", "a.b", "X9"}, 0, "logit_bias,top-k,a.b,X9"},
		{"more past the list", []string{"a", "b"}, 3, "a,b,..."},
		{"a comma is quoted", []string{"a,b"}, 0, `"a,b"`},
		{"CR/LF are quoted", []string{"x\r\nset-cookie: 1"}, 0, `"x\r\nset-cookie: 1"`},
		{"non-ASCII is escaped", []string{"héllo"}, 0, `"h\u00e9llo"`},
		{"an empty name is quoted", []string{""}, 0, `""`},
		{"a quote is escaped", []string{`a"b`}, 0, `"a\"b"`},
		{"exactly at the bound", []string{long}, 0, long},
		{"one byte past the bound: the name is cut, not split", []string{long + "p"}, 0, "..."},
		{"the name that crosses the bound is dropped", []string{"a", long}, 0, "a,..."},
		{"the bound counts the separators", []string{long[:maxDroppedParamsHeader-2], "b"}, 0, long[:maxDroppedParamsHeader-2] + ",b"},
		{"one more separator crosses it", []string{long[:maxDroppedParamsHeader-1], "b"}, 0, long[:maxDroppedParamsHeader-1] + ",..."},
		{"a quoted name counts as quoted", []string{strings.Repeat("é", 200)}, 0, "..."}, // 400 bytes raw, 1202 quoted
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := droppedParamsHeader(tt.names, tt.more)
			if got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			if len(got) > maxDroppedParamsHeader+len(",...") {
				t.Errorf("%d bytes, over the bound", len(got))
			}
		})
	}
}

// TestIsEventStream: the media type decides, in any letter case, with or without parameters.
func TestIsEventStream(t *testing.T) {
	for _, tt := range []struct {
		contentType string
		want        bool
	}{
		{"text/event-stream", true},
		{"Text/Event-Stream", true},
		{"text/event-stream; charset=utf-8", true},
		{"  text/event-stream  ;charset=utf-8", true},
		{"text/event-stream;", true},
		{"application/json", false},
		{"text/event-streams", false},
		{"text/event-stream-x; a=b", false},
		{"application/json; x=text/event-stream", false},
		{"", false},
	} {
		if got := isEventStream(tt.contentType); got != tt.want {
			t.Errorf("isEventStream(%q) = %v, want %v", tt.contentType, got, tt.want)
		}
	}
}

// TestQuoteBounded: names quoted into messages are cut at 64 bytes.
func TestQuoteBounded(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"gpt-4o", `"gpt-4o"`},
		{"", `""`},
		{"a\nb", `"a\nb"`},
		{strings.Repeat("m", 64), `"` + strings.Repeat("m", 64) + `"`},
		{strings.Repeat("m", 65), `"` + strings.Repeat("m", 64) + `..."`},
	} {
		if got := quoteBounded(tt.in); got != tt.want {
			t.Errorf("quoteBounded(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

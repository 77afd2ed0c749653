package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// failoverConfig serves gpt-4o from an OpenAI provider first, an Azure AI Model Inference endpoint second and
// EternalAI third; "keyed" has three keys.
const failoverTestConfig = `{
  "providers": [
    {"name": "oa", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-oa",
     "models": [{"name": "gpt-4o"}, {"name": "solo"}]},
    {"name": "az", "dialect": "azure-ai", "host": "models.inference.ai.azure.com", "api_key": "az-key", "cluster": "az-cluster",
     "models": [{"name": "gpt-4o", "model": "gpt-4o-az", "priority": 1}]},
    {"name": "et", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "et-key",
     "models": [{"name": "gpt-4o", "model": "gpt-4o-et", "priority": 2}]},
    {"name": "keyed", "dialect": "openai", "host": "keyed.example.com", "api_keys": ["k-one", "k-two", "k-three"],
     "models": [{"name": "keyed-model"}]}
  ],
  "failover": {"served_by_header": true, "circuit_threshold": 2, "circuit_open_seconds": 1 %s}
}`

func failoverConfigWith(extra string) string {
	return strings.Replace(failoverTestConfig, "%s", extra, 1)
}

const chatAnswer = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi from %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`

func chatOKFrom(who string) string { return strings.Replace(chatAnswer, "%s", who, 1) }

var jsonHead = [][2]string{{"content-type", "application/json"}}

func chatRequest(model string, stream bool) exchange {
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`
	if stream {
		body = `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	}
	return exchange{method: "POST", path: "/v1/chat/completions", headers: jsonHead, body: []string{body}}
}

func upstreamReply(status int, headers [][2]string, body string) *upstreamAnswer {
	return &upstreamAnswer{status: status, headers: append(slicesClone(jsonHead), headers...), chunks: []string{body}}
}

func slicesClone(h [][2]string) [][2]string { return append([][2]string(nil), h...) }

const rateLimited = `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
const overloaded = `{"error":{"message":"The server is overloaded","type":"server_error"}}`

// calloutAnswers answers each callout by its cluster.
func calloutAnswers(byCluster map[string]hostemu.CalloutAnswer) func(hostemu.Callout) hostemu.CalloutAnswer {
	return func(c hostemu.Callout) hostemu.CalloutAnswer {
		a, ok := byCluster[c.Cluster]
		if !ok {
			return hostemu.CalloutAnswer{Failed: true}
		}
		return a
	}
}

func httpAnswer(status int, body string, headers ...[2]string) hostemu.CalloutAnswer {
	h := append([][2]string{{":status", itoa(status)}, {"content-type", "application/json"}}, headers...)
	return hostemu.CalloutAnswer{Headers: h, Body: []byte(body)}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// failoverSession is several exchanges through one host: the health they record carries over.
type failoverSession struct {
	t    *testing.T
	host *hostemu.Host
}

func newFailoverSession(t *testing.T, md mode, config string) *failoverSession {
	t.Helper()
	host, err := hostemu.New(md.vm(t), []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	return &failoverSession{t: t, host: host}
}

func (s *failoverSession) do(ex exchange) *outcome {
	s.t.Helper()
	o := runOn(s.t, s.host, ex, &outcome{})
	o.assertRules(s.t)
	return o
}

func (o *outcome) clientError() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(o.clientBody, &e)
	return e.Error.Code
}

func TestFailover(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			t.Run("429 then success on a provider of another dialect", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := chatRequest("gpt-4o", false)
				ex.upstream = upstreamReply(429, [][2]string{{"retry-after", "30"}}, rateLimited)
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"az-cluster": httpAnswer(200, chatOKFrom("az"))})
				o := s.do(ex)
				if o.upstreamHead["x-aidialect-provider"] != "oa" {
					t.Fatalf("first attempt went to %q, want oa", o.upstreamHead["x-aidialect-provider"])
				}
				if len(o.callouts) != 1 {
					t.Fatalf("%d callouts, want 1", len(o.callouts))
				}
				c := o.callouts[0]
				if c.Header(":authority") != "models.inference.ai.azure.com" || c.Header("api-key") != "az-key" ||
					!strings.HasPrefix(c.Header(":path"), "/chat/completions?api-version=") {
					t.Errorf("the callout was not rendered for azure-ai: %q", c.Headers)
				}
				if !strings.Contains(string(c.Body), `"model":"gpt-4o-az"`) {
					t.Errorf("the callout's body names another model: %s", c.Body)
				}
				if o.status != 200 || !strings.Contains(string(o.clientBody), "hi from az") {
					t.Fatalf("client got %d %s, want az's answer", o.status, o.clientBody)
				}
				if o.clientHead["x-aidialect-served-by"] != "az" || o.clientHead["x-aidialect-attempts"] != "2" {
					t.Errorf("served-by %q attempts %q, want az and 2", o.clientHead["x-aidialect-served-by"], o.clientHead["x-aidialect-attempts"])
				}
				// The next request skips the benched provider: no attempt, no callout.
				next := chatRequest("gpt-4o", false)
				next.upstream = upstreamReply(200, nil, chatOKFrom("az"))
				o = s.do(next)
				if o.upstreamHead["x-aidialect-provider"] != "az" || len(o.callouts) != 0 {
					t.Fatalf("the next request went to %q with %d callouts, want az directly", o.upstreamHead["x-aidialect-provider"], len(o.callouts))
				}
				if got := o.clientHead["x-aidialect-skipped"]; got != "oa rate_limited" {
					t.Errorf("x-aidialect-skipped %q, want the benched provider and why", got)
				}
			})
			t.Run("every candidate failing answers the last error with Retry-After", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := chatRequest("gpt-4o", false)
				ex.upstream = upstreamReply(503, nil, overloaded)
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{
					"az-cluster": httpAnswer(503, `{"error":{"code":"ServiceUnavailable","message":"busy"}}`),
					"et":         httpAnswer(429, rateLimited, [2]string{"retry-after", "45"}),
				})
				o := s.do(ex)
				if len(o.callouts) != 2 || o.status != 429 || o.clientError() == "" {
					t.Fatalf("%d callouts, client %d %s; want 2 callouts and et's 429", len(o.callouts), o.status, o.clientBody)
				}
				if ra := o.clientHead["retry-after"]; ra == "" {
					t.Errorf("no Retry-After on the last error: %v", o.clientHead)
				}
			})
			t.Run("stream, failover off: the failure goes to the client, the next request skips", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := chatRequest("gpt-4o", true)
				ex.upstream = upstreamReply(429, [][2]string{{"retry-after-ms", "60000"}}, rateLimited)
				o := s.do(ex)
				if len(o.callouts) != 0 || o.status != 429 {
					t.Fatalf("%d callouts, client %d; want the 429 itself", len(o.callouts), o.status)
				}
				if o.clientHead["retry-after-ms"] != "" || o.clientHead["retry-after"] != "" {
					t.Errorf("the failed provider's wait reached the client though another candidate is live: %v", o.clientHead)
				}
				next := chatRequest("gpt-4o", true)
				next.upstream = &upstreamAnswer{status: 200, headers: [][2]string{{"content-type", "text/event-stream"}}, chunks: []string{"data: [DONE]\n\n"}}
				if o = s.do(next); o.upstreamHead["x-aidialect-provider"] != "az" {
					t.Fatalf("the next stream went to %q, want az", o.upstreamHead["x-aidialect-provider"])
				}
			})
			t.Run("stream, failover buffered: the fallback's stream arrives whole", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(`, "stream": "buffered"`))
				ex := chatRequest("gpt-4o", true)
				ex.upstream = upstreamReply(503, nil, overloaded)
				sse := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"streamed"},"finish_reason":null}]}` + "\n\ndata: [DONE]\n\n"
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"az-cluster": {
					Headers: [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}}, Body: []byte(sse)}})
				o := s.do(ex)
				if o.status != 200 || !strings.HasPrefix(o.clientHead["content-type"], "text/event-stream") ||
					!strings.Contains(string(o.clientBody), "streamed") || !strings.Contains(string(o.clientBody), "[DONE]") {
					t.Fatalf("client got %d %q %s", o.status, o.clientHead["content-type"], o.clientBody)
				}
			})
			t.Run("Retry-After honoured, and forgotten at expiry", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(`, "attempts": 1`))
				ex := chatRequest("solo", false)
				ex.upstream = upstreamReply(429, [][2]string{{"retry-after-ms", "300"}}, rateLimited)
				s.do(ex)
				o := s.do(chatRequest("solo", false))
				if o.local == nil || o.status != 429 || o.clientError() != "all_providers_rate_limited" || o.clientHead["retry-after"] != "1" {
					t.Fatalf("while benched: %d %v %s", o.status, o.clientHead, o.clientBody)
				}
				time.Sleep(350 * time.Millisecond)
				ok := chatRequest("solo", false)
				ok.upstream = upstreamReply(200, nil, chatOKFrom("oa"))
				if o = s.do(ok); o.status != 200 || o.upstreamCalls != 1 {
					t.Fatalf("after the bench: %d, %d upstream calls", o.status, o.upstreamCalls)
				}
			})
			t.Run("a huge or malformed Retry-After", func(t *testing.T) {
				for _, ra := range []string{strings.Repeat("9", 5000), "soon", "-1", "1e999"} {
					s := newFailoverSession(t, md, failoverConfigWith(`, "attempts": 1, "max_bench_seconds": 5`))
					ex := chatRequest("solo", false)
					ex.upstream = upstreamReply(429, [][2]string{{"retry-after", ra}}, rateLimited)
					s.do(ex)
					o := s.do(chatRequest("solo", false))
					s.host.Close() // proxytest has one emulator at a time
					if got := o.clientHead["retry-after"]; o.status != 429 || got == "" || len(got) > 1 || got > "5" {
						t.Errorf("Retry-After %.20q: benched answer %d with Retry-After %q, want at most 5 s", ra, o.status, got)
					}
				}
			})
			t.Run("a circuit opens, lets one probe through, and closes", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(`, "attempts": 1`))
				for range 2 {
					ex := chatRequest("solo", false)
					ex.upstream = upstreamReply(503, nil, overloaded)
					s.do(ex)
				}
				if o := s.do(chatRequest("solo", false)); o.status != 503 || o.clientError() != "all_providers_unavailable" {
					t.Fatalf("open circuit: %d %s", o.status, o.clientBody)
				}
				time.Sleep(1050 * time.Millisecond)
				// The probe's request is sent and its answer not yet come: another request is refused meanwhile.
				probe := s.host.Begin()
				req := chatRequest("solo", false)
				hs := [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gateway.local"}, {"content-type", "application/json"}}
				if err := probe.SendRequest(hs, [][]byte{[]byte(req.body[0])}); err != nil || probe.Upstream == nil {
					t.Fatalf("the probe was not sent: %v %+v", err, probe.Local)
				}
				if o := s.do(chatRequest("solo", false)); o.status != 503 {
					t.Fatalf("a second request during the probe got %d, want 503", o.status)
				}
				if err := probe.RelayResponse(200, jsonHead, strings.NewReader(chatOKFrom("oa")), nil, &recorder{}); err != nil {
					t.Fatal(err)
				}
				probe.Finish()
				ok := chatRequest("solo", false)
				ok.upstream = upstreamReply(200, nil, chatOKFrom("oa"))
				if o := s.do(ok); o.status != 200 || o.upstreamCalls != 1 {
					t.Fatalf("after the probe succeeded: %d", o.status)
				}
			})
			t.Run("key rotation on 429 and 401; every key benched", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := chatRequest("keyed-model", false)
				ex.upstream = upstreamReply(429, [][2]string{{"retry-after", "60"}}, rateLimited)
				ex.callouts = func(c hostemu.Callout) hostemu.CalloutAnswer {
					return httpAnswer(401, `{"error":{"message":"bad key","code":"invalid_api_key"}}`)
				}
				o := s.do(ex)
				first := o.upstreamHead["authorization"]
				if len(o.callouts) != 1 || o.callouts[0].Header("authorization") == first || o.callouts[0].Cluster != "keyed" {
					t.Fatalf("the 429 was not retried with another key of the provider: first %q, callouts %d", first, len(o.callouts))
				}
				if o.status != 401 {
					t.Fatalf("the retry's 401 should reach the client (not retried): got %d", o.status)
				}
				retried := o.callouts[0].Header("authorization")
				// Two keys are benched (429, 401): the third serves, every time.
				third := chatRequest("keyed-model", false)
				third.upstream = upstreamReply(200, nil, chatOKFrom("keyed"))
				o = s.do(third)
				used := o.upstreamHead["authorization"]
				if used == first || used == retried {
					t.Fatalf("a benched key was used: %q", used)
				}
				ex3 := chatRequest("keyed-model", false)
				ex3.upstream = upstreamReply(429, [][2]string{{"retry-after", "60"}}, rateLimited)
				s.do(ex3)
				o = s.do(chatRequest("keyed-model", false))
				// One key was rejected, two are rate limited: unavailable (503), not only throttled.
				if o.status != 503 || o.clientError() != "all_providers_unavailable" || o.clientHead["retry-after"] == "" {
					t.Fatalf("every key benched: %d %v %s", o.status, o.clientHead, o.clientBody)
				}
			})
			t.Run("a callout that times out, and a client gone before it ends", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(`, "attempts": 2`))
				ex := chatRequest("gpt-4o", false)
				ex.upstream = upstreamReply(503, nil, overloaded)
				ex.callouts = func(hostemu.Callout) hostemu.CalloutAnswer { return hostemu.CalloutAnswer{Failed: true} }
				o := s.do(ex)
				if o.status != 503 || o.clientError() != "upstream_unreachable" {
					t.Fatalf("timed-out callout: %d %s", o.status, o.clientBody)
				}
				ex = chatRequest("gpt-4o", false)
				ex.upstream = upstreamReply(503, nil, overloaded)
				ex.callouts = func(hostemu.Callout) hostemu.CalloutAnswer { return hostemu.CalloutAnswer{ClientGone: true} }
				o = s.do(ex)
				if !o.clientGone || o.status != 0 {
					t.Fatalf("client gone: %+v", o.status)
				}
				if dead := s.host.Dead(); dead != nil {
					t.Fatal(dead)
				}
			})
			t.Run("the callout's answer after the failed body", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := chatRequest("gpt-4o", false)
				ex.upstream = &upstreamAnswer{status: 429, headers: jsonHead, chunks: []string{rateLimited[:20], rateLimited[20:]}}
				ex.calloutsAfterBody = true
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"az-cluster": httpAnswer(200, chatOKFrom("az"))})
				if o := s.do(ex); o.status != 200 || !strings.Contains(string(o.clientBody), "hi from az") {
					t.Fatalf("client got %d %s", o.status, o.clientBody)
				}
			})
			t.Run("a request naming stored state never fails over", func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(""))
				ex := exchange{method: "POST", path: "/v1/responses", headers: jsonHead,
					body: []string{`{"model":"gpt-4o","input":"hi","previous_response_id":"resp_1"}`}}
				ex.upstream = upstreamReply(503, nil, overloaded)
				ex.callouts = calloutAnswers(nil)
				if o := s.do(ex); len(o.callouts) != 0 || o.status != 503 {
					t.Fatalf("%d callouts, status %d; want the 503 itself", len(o.callouts), o.status)
				}
			})
		})
	}
}

// A candidate whose dialect lacks the operation is passed over, first attempt included: embeddings for a
// model EternalAI serves first go to the OpenAI provider after it.
func TestFailoverSkipsACandidateWithoutTheOperation(t *testing.T) {
	config := `{"providers":[
	  {"name":"et","dialect":"eternalai","host":"api.eternalai.org","api_key":"et-key","models":[{"name":"m"}]},
	  {"name":"oa","dialect":"openai","host":"api.openai.com","api_key":"sk-oa","models":[{"name":"m","priority":1}]}]}`
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			o := run(t, md, exchange{config: config, method: "POST", path: "/v1/embeddings", headers: jsonHead,
				body:     []string{`{"model":"m","input":"hi"}`},
				upstream: upstreamReply(200, nil, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`)})
			o.assertRules(t)
			if o.upstreamHead["x-aidialect-provider"] != "oa" || o.status != 200 {
				t.Fatalf("went to %q, client %d %s", o.upstreamHead["x-aidialect-provider"], o.status, o.clientBody)
			}
			// Alone, EternalAI answers 404 unsupported_operation, as before.
			solo := `{"providers":[{"name":"et","dialect":"eternalai","host":"api.eternalai.org","api_key":"et-key","models":[{"name":"m"}]}]}`
			o = run(t, md, exchange{config: solo, method: "POST", path: "/v1/embeddings", headers: jsonHead, body: []string{`{"model":"m","input":"hi"}`}})
			if o.status != 404 || o.clientHead["x-aidialect-error"] != "unsupported_operation" {
				t.Fatalf("alone: %d %v", o.status, o.clientHead)
			}
		})
	}
}

// Thousands of keys: the plugin starts, a request is served with one read of its key's entry, and after
// every key was rate limited the next request is refused locally, without calling the provider.
func TestFailoverThousandsOfKeys(t *testing.T) {
	keys := make([]string, maxProviderKeys)
	for i := range keys {
		keys[i] = `"key-` + itoa(i) + `"`
	}
	config := `{"providers":[{"name":"many","dialect":"openai","host":"api.openai.com","api_keys":[` + strings.Join(keys, ",") +
		`],"models":[{"name":"m"}]}],"failover":{"attempts":1}}`
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			s := newFailoverSession(t, md, config)
			ok := chatRequest("m", false)
			ok.upstream = upstreamReply(200, nil, chatOKFrom("many"))
			if o := s.do(ok); o.status != 200 || !strings.HasPrefix(o.upstreamHead["authorization"], "Bearer key-") {
				t.Fatalf("client %d, key %q", o.status, o.upstreamHead["authorization"])
			}
			if md.name == "wasm" {
				return // benching 4096 keys one request at a time is the native row's (the same code)
			}
			for i := 0; i < maxProviderKeys; i++ {
				ex := chatRequest("m", false)
				ex.upstream = upstreamReply(429, [][2]string{{"retry-after", "60"}}, rateLimited)
				if o := s.do(ex); o.upstreamCalls != 1 {
					t.Fatalf("request %d was not sent: %d %s", i, o.status, o.clientBody)
				}
			}
			o := s.do(chatRequest("m", false))
			if o.upstreamCalls != 0 || o.status != 429 || o.clientError() != "all_providers_rate_limited" {
				t.Fatalf("every key benched: %d calls, %d %s", o.upstreamCalls, o.status, o.clientBody)
			}
		})
	}
}

// contextTestConfig serves "long" from a small-window OpenAI model first, a smaller-window one second (never
// a context-length fallback), a larger Azure AI one third and EternalAI's largest last.
const contextTestConfig = `{
  "providers": [
    {"name": "small", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-small",
     "models": [{"name": "long", "context_window": 8192}]},
    {"name": "smaller", "dialect": "openai", "host": "smaller.example.com", "api_key": "sk-smaller",
     "models": [{"name": "long", "priority": 1, "context_window": 4096}]},
    {"name": "big", "dialect": "azure-ai", "host": "models.inference.ai.azure.com", "api_key": "az-key",
     "models": [{"name": "long", "model": "long-az", "priority": 2, "context_window": 128000}]},
    {"name": "huge", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "et-key",
     "models": [{"name": "long", "model": "long-et", "priority": 3, "context_window": 1000000}]}
  ],
  "failover": {"served_by_header": true, "attempts": 4}
}`

const contextTooLong = `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`

// A context-length error is retried only toward candidates that declare a larger window; any other 400 is
// the client's to fix and reaches it, translated, with nothing retried.
func TestFailoverContextLength(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			t.Run("a context-length error goes to a larger window, skipping a smaller one", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := chatRequest("long", false)
				ex.headers = append(slicesClone(jsonHead), [2]string{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
					[2]string{"user-agent", "OpenAI/Python 2.8.0"}, [2]string{"x-request-id", "req-42"}, [2]string{"cookie", "session=secret"})
				ex.upstream = &upstreamAnswer{status: 400, headers: jsonHead, chunks: []string{contextTooLong[:40], contextTooLong[40:]}}
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"big": httpAnswer(200, chatOKFrom("big"))})
				o := s.do(ex)
				if len(o.callouts) != 1 || o.callouts[0].Cluster != "big" {
					t.Fatalf("callouts %+v, want one to big (smaller's window is smaller)", o.callouts)
				}
				if o.status != 200 || !strings.Contains(string(o.clientBody), "hi from big") || o.clientHead["x-aidialect-served-by"] != "big" {
					t.Fatalf("client got %d %v %s, want big's answer", o.status, o.clientHead, o.clientBody)
				}
				c := o.callouts[0]
				if c.Header("traceparent") == "" || c.Header("user-agent") != "OpenAI/Python 2.8.0" || c.Header("x-request-id") != "req-42" {
					t.Errorf("the failover attempt lost the trace context, request id or user agent: %q", c.Headers)
				}
				if c.Header("cookie") != "" {
					t.Errorf("the client's cookie went to the fallback provider: %q", c.Headers)
				}
				// A context-length error says nothing about the provider's health: the next request starts
				// at small again.
				next := chatRequest("long", false)
				next.upstream = upstreamReply(200, nil, chatOKFrom("small"))
				if o = s.do(next); o.upstreamHead["x-aidialect-provider"] != "small" {
					t.Fatalf("the next request went to %q, want small", o.upstreamHead["x-aidialect-provider"])
				}
			})
			t.Run("the larger window too small: the largest is tried", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := chatRequest("long", false)
				ex.upstream = upstreamReply(400, nil, contextTooLong)
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{
					"big":  httpAnswer(400, `{"error":{"code":"Invalid input","message":"This model's maximum context length is 128000 tokens"}}`),
					"huge": httpAnswer(200, chatOKFrom("huge")),
				})
				o := s.do(ex)
				if len(o.callouts) != 2 || o.callouts[1].Cluster != "huge" || o.status != 200 || !strings.Contains(string(o.clientBody), "hi from huge") {
					t.Fatalf("%d callouts, client %d %s; want big then huge", len(o.callouts), o.status, o.clientBody)
				}
			})
			t.Run("no larger window serves: the last error reaches the client in its envelope", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := chatRequest("long", false)
				ex.upstream = upstreamReply(400, nil, contextTooLong)
				tooLong := httpAnswer(400, `{"error":{"message":"maximum context length exceeded","code":"context_length_exceeded"}}`)
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"big": tooLong, "huge": tooLong})
				o := s.do(ex)
				if len(o.callouts) != 2 || o.status != 400 || o.clientError() != "context_length_exceeded" {
					t.Fatalf("%d callouts, client %d %s", len(o.callouts), o.status, o.clientBody)
				}
			})
			t.Run("another 400 is not retried, and is translated as usual", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := exchange{method: "POST", path: "/openai/deployments/long/chat/completions?api-version=2024-10-21",
					headers: [][2]string{{"content-type", "application/json"}}, body: []string{`{"messages":[{"role":"user","content":"hi"}],"temperature":9}`}}
				ex.upstream = &upstreamAnswer{status: 400, headers: jsonHead, chunks: []string{`{"error":{"message":"Invalid value for temperature",`, `"type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`}}
				ex.trailers = true
				ex.callouts = calloutAnswers(nil)
				o := s.do(ex)
				if len(o.callouts) != 0 || o.status != 400 || o.clientError() != "invalid_value" ||
					!strings.Contains(string(o.clientBody), "temperature") || o.clientHead["content-type"] != "application/json" {
					t.Fatalf("%d callouts, client %d %v %s", len(o.callouts), o.status, o.clientHead, o.clientBody)
				}
			})
			t.Run("a context-length error ended by trailers", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := chatRequest("long", false)
				ex.upstream = upstreamReply(400, nil, contextTooLong)
				ex.trailers = true
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"big": httpAnswer(200, chatOKFrom("big"))})
				if o := s.do(ex); len(o.callouts) != 1 || o.status != 200 || !strings.Contains(string(o.clientBody), "hi from big") {
					t.Fatalf("%d callouts, client %d %s", len(o.callouts), o.status, o.clientBody)
				}
			})
			t.Run("a stream with failover.stream off: the error reaches the client", func(t *testing.T) {
				s := newFailoverSession(t, md, contextTestConfig)
				ex := chatRequest("long", true)
				ex.upstream = upstreamReply(400, nil, contextTooLong)
				ex.callouts = calloutAnswers(nil)
				if o := s.do(ex); len(o.callouts) != 0 || o.status != 400 || o.clientError() != "context_length_exceeded" {
					t.Fatalf("%d callouts, client %d %s", len(o.callouts), o.status, o.clientBody)
				}
			})
		})
	}
}

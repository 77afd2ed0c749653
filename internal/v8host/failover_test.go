package v8host

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The failover rows of plugin/failover_test.go, in the compiled module under V8, where the module has the
// real clock (so the rows that wait for a bench to end run here too), and where two VMs of one process, two
// workers of one Envoy, share the health store.

const failoverV8Config = `{
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
  "failover": {"served_by_header": true, "circuit_threshold": 2, "circuit_open_seconds": 1, "stream": "buffered"}
}`

const (
	v8ChatOK      = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi from WHO"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	v8RateLimited = `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	v8Overloaded  = `{"error":{"message":"The server is overloaded","type":"server_error"}}`
)

func v8Chat(model string, stream bool, status int, headers Headers, body string) *Exchange {
	req := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`
	if stream {
		req = `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	}
	x := &Exchange{Request: Message{Headers: Headers{{":method", "POST"}, {":path", "/v1/chat/completions"},
		{":authority", "gateway.local"}, {"content-type", "application/json"}, {"content-length", strconv.Itoa(len(req))}},
		Chunks: [][]byte{[]byte(req)}}}
	if status != 0 {
		x.Response = &Message{Status: status, Headers: append(Headers{{"content-type", "application/json"}}, headers...),
			Chunks: [][]byte{[]byte(body)}, EndWithLast: true}
	}
	return x
}

func v8CalloutOK(who string) CalloutAnswer {
	return CalloutAnswer{Status: 200, Headers: Headers{{"content-type", "application/json"}}, Body: []byte(strings.Replace(v8ChatOK, "WHO", who, 1))}
}

// answerOf is what the client got: the relayed answer or the filter's own reply.
func answerOf(o *Outcome) *Response {
	if o.Local != nil {
		return o.Local
	}
	if o.Client != nil {
		return o.Client
	}
	return &Response{}
}

func errorCode(r *Response) string {
	var e struct{ Error struct{ Code string } }
	_ = json.Unmarshal(r.Body, &e)
	return e.Error.Code
}

func startFailoverPlugin(t *testing.T, h *Host, config string) (*VM, *Plugin) {
	t.Helper()
	vm, err := h.NewVM("aidialect", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close() })
	p, err := vm.Start(config)
	if err != nil {
		t.Fatal(err)
	}
	return vm, p
}

func play(t *testing.T, p *Plugin, x *Exchange) *Outcome {
	t.Helper()
	o, err := p.Exchange(x)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rule != nil || o.Dead != "" {
		t.Fatalf("host rule %v, dead %q", o.Rule, o.Dead)
	}
	return o
}

func TestFailoverUnderV8(t *testing.T) {
	wasm := filterWasm(t)
	h := sharedHost(t)
	load(t, h, "aidialect", wasm)
	fresh := func(t *testing.T) {
		if err := h.ClearSharedData(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("429 then success on another dialect, then the bench skips", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, failoverV8Config)
		x := v8Chat("gpt-4o", false, 429, Headers{{"retry-after", "30"}}, v8RateLimited)
		x.Callouts = []CalloutAnswer{v8CalloutOK("az")}
		o := play(t, p, x)
		if len(o.Callouts) != 1 || o.Callouts[0].Cluster != "az-cluster" || !strings.Contains(string(o.Callouts[0].Body), `"model":"gpt-4o-az"`) {
			t.Fatalf("callouts %+v", o.Callouts)
		}
		a := answerOf(o)
		if a.Status != 200 || !strings.Contains(string(a.Body), "hi from az") || a.Headers.Get("x-aidialect-served-by") != "az" {
			t.Fatalf("client got %d %v %s", a.Status, a.Headers, a.Body)
		}
		o = play(t, p, v8Chat("gpt-4o", false, 200, nil, strings.Replace(v8ChatOK, "WHO", "az", 1)))
		if o.Upstream == nil || o.Upstream.Headers.Get("x-aidialect-provider") != "az" || len(o.Callouts) != 0 {
			t.Fatalf("the next request did not go straight to az: %+v", o.Upstream)
		}
	})

	t.Run("two workers share the health store", func(t *testing.T) {
		fresh(t)
		_, worker1 := startFailoverPlugin(t, h, failoverV8Config)
		_, worker2 := startFailoverPlugin(t, h, failoverV8Config)
		x := v8Chat("solo", false, 429, Headers{{"retry-after", "60"}}, v8RateLimited)
		play(t, worker1, x)
		o := play(t, worker2, v8Chat("solo", false, 200, nil, v8ChatOK))
		if o.Upstream != nil || o.Local == nil || o.Local.Status != 429 || errorCode(o.Local) != "all_providers_rate_limited" {
			t.Fatalf("worker 2 did not see worker 1's bench: upstream %v, local %+v", o.Upstream != nil, o.Local)
		}
		if ra, _ := strconv.Atoi(o.Local.Headers.Get("retry-after")); ra < 59 || ra > 60 {
			t.Fatalf("Retry-After %q, want about 60", o.Local.Headers.Get("retry-after"))
		}
	})

	t.Run("key rotation on 429 and 401; every key benched", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, failoverV8Config)
		x := v8Chat("keyed-model", false, 429, Headers{{"retry-after", "60"}}, v8RateLimited)
		x.Callouts = []CalloutAnswer{{Status: 401, Headers: Headers{{"content-type", "application/json"}}, Body: []byte(`{"error":{"message":"bad key","code":"invalid_api_key"}}`)}}
		o := play(t, p, x)
		first := o.Upstream.Headers.Get("authorization")
		if len(o.Callouts) != 1 || o.Callouts[0].Headers.Get("authorization") == first || answerOf(o).Status != 401 {
			t.Fatalf("first %q, callouts %+v, client %d", first, o.Callouts, answerOf(o).Status)
		}
		retried := o.Callouts[0].Headers.Get("authorization")
		o = play(t, p, v8Chat("keyed-model", false, 200, nil, v8ChatOK))
		if used := o.Upstream.Headers.Get("authorization"); used == first || used == retried {
			t.Fatalf("a benched key was used: %q", used)
		}
		play(t, p, v8Chat("keyed-model", false, 429, Headers{{"retry-after", "60"}}, v8RateLimited))
		o = play(t, p, v8Chat("keyed-model", false, 200, nil, v8ChatOK))
		if o.Local == nil || o.Local.Status != 503 || errorCode(o.Local) != "all_providers_unavailable" || o.Local.Headers.Get("retry-after") == "" {
			t.Fatalf("every key benched: %+v", o.Local)
		}
	})

	t.Run("a stream with failover off: the failure reaches the client, the next stream goes elsewhere", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, strings.Replace(failoverV8Config, `"stream": "buffered"`, `"stream": "off"`, 1))
		o := play(t, p, v8Chat("gpt-4o", true, 429, Headers{{"retry-after", "60"}}, v8RateLimited))
		if len(o.Callouts) != 0 || answerOf(o).Status != 429 {
			t.Fatalf("%d callouts, client %d", len(o.Callouts), answerOf(o).Status)
		}
		x := v8Chat("gpt-4o", true, 0, nil, "")
		x.Response = &Message{Status: 200, Headers: Headers{{"content-type", "text/event-stream"}}, Chunks: [][]byte{[]byte("data: [DONE]\n\n")}, EndWithLast: true}
		if o = play(t, p, x); o.Upstream == nil || o.Upstream.Headers.Get("x-aidialect-provider") != "az" {
			t.Fatalf("the next stream did not go to az: %+v", o.Local)
		}
	})

	t.Run("Retry-After honoured, and forgotten at expiry", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, failoverV8Config)
		play(t, p, v8Chat("solo", false, 429, Headers{{"retry-after-ms", "300"}}, v8RateLimited))
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Local == nil || o.Local.Status != 429 {
			t.Fatalf("not benched: %+v", o.Local)
		}
		time.Sleep(350 * time.Millisecond)
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Upstream == nil || answerOf(o).Status != 200 {
			t.Fatalf("still benched after Retry-After: %+v", o.Local)
		}
	})

	t.Run("a circuit opens, half-opens for one probe, closes", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, strings.Replace(failoverV8Config, `"circuit_threshold"`, `"attempts": 1, "circuit_threshold"`, 1))
		for range 2 {
			play(t, p, v8Chat("solo", false, 503, nil, v8Overloaded))
		}
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Local == nil || errorCode(o.Local) != "all_providers_unavailable" {
			t.Fatalf("circuit not open: %+v", o.Local)
		}
		time.Sleep(1050 * time.Millisecond)
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Upstream == nil || answerOf(o).Status != 200 {
			t.Fatalf("the probe was not let through: %+v", o.Local)
		}
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Upstream == nil {
			t.Fatalf("the circuit did not close after the probe succeeded: %+v", o.Local)
		}
	})

	t.Run("every candidate failing; a buffered stream; a timed-out callout; a client gone", func(t *testing.T) {
		fresh(t)
		_, p := startFailoverPlugin(t, h, failoverV8Config)
		x := v8Chat("gpt-4o", false, 503, nil, v8Overloaded)
		x.Callouts = []CalloutAnswer{{Status: 503, Headers: Headers{{"content-type", "application/json"}}, Body: []byte(`{"error":{"code":"busy","message":"busy"}}`)},
			{Status: 429, Headers: Headers{{"content-type", "application/json"}, {"retry-after", "45"}}, Body: []byte(v8RateLimited)}}
		o := play(t, p, x)
		if a := answerOf(o); len(o.Callouts) != 2 || a.Status != 429 || a.Headers.Get("retry-after") == "" {
			t.Fatalf("%d callouts, client %d %v", len(o.Callouts), a.Status, a.Headers)
		}

		fresh(t)
		sse := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"streamed"},"finish_reason":null}]}` + "\n\ndata: [DONE]\n\n"
		x = v8Chat("gpt-4o", true, 503, nil, v8Overloaded)
		x.Callouts = []CalloutAnswer{{Status: 200, Headers: Headers{{"content-type", "text/event-stream"}}, Body: []byte(sse)}}
		a := answerOf(play(t, p, x))
		if a.Status != 200 || !strings.Contains(string(a.Body), "streamed") || !strings.Contains(string(a.Body), "[DONE]") {
			t.Fatalf("buffered stream: %d %s", a.Status, a.Body)
		}

		fresh(t)
		x = v8Chat("gpt-4o", false, 503, nil, v8Overloaded)
		x.Callouts = []CalloutAnswer{{Failed: true}, {Failed: true}}
		if a := answerOf(play(t, p, x)); a.Status != 503 || errorCode(a) != "upstream_unreachable" {
			t.Fatalf("timed-out callouts: %d %s", a.Status, a.Body)
		}

		fresh(t)
		x = v8Chat("gpt-4o", false, 503, nil, v8Overloaded)
		x.Callouts = []CalloutAnswer{{ClientGone: true, Status: 200, Headers: Headers{{"content-type", "application/json"}}, Body: []byte(v8ChatOK)}}
		if o := play(t, p, x); !o.ClientGone || o.Local != nil {
			t.Fatalf("client gone: %+v", o)
		}
		// The VM is alive and serves the next request.
		fresh(t)
		if o := play(t, p, v8Chat("solo", false, 200, nil, v8ChatOK)); o.Upstream == nil {
			t.Fatalf("after the client left: %+v", o.Local)
		}
	})

	t.Run("a context-length error goes to a larger window only", func(t *testing.T) {
		fresh(t)
		config := `{"providers": [
		  {"name": "small", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-small", "models": [{"name": "long", "context_window": 8192}]},
		  {"name": "smaller", "dialect": "openai", "host": "smaller.example.com", "api_key": "sk-smaller", "models": [{"name": "long", "priority": 1, "context_window": 4096}]},
		  {"name": "big", "dialect": "azure-ai", "host": "models.inference.ai.azure.com", "api_key": "az-key", "models": [{"name": "long", "priority": 2, "context_window": 128000}]}],
		  "failover": {"served_by_header": true}}`
		_, p := startFailoverPlugin(t, h, config)
		x := v8Chat("long", false, 400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		x.Request.Headers = append(x.Request.Headers, [2]string{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
		x.Callouts = []CalloutAnswer{v8CalloutOK("big")}
		o := play(t, p, x)
		if len(o.Callouts) != 1 || o.Callouts[0].Cluster != "big" || o.Callouts[0].Headers.Get("traceparent") == "" {
			t.Fatalf("callouts %+v", o.Callouts)
		}
		if a := answerOf(o); a.Status != 200 || a.Headers.Get("x-aidialect-served-by") != "big" {
			t.Fatalf("client got %d %v %s", a.Status, a.Headers, a.Body)
		}
		// Routed on its request line (an Azure OpenAI deployment path), the request's headers went on in the
		// headers callback, after which Envoy no longer lets the filter read them: the attempt still carries
		// the trace context.
		x = v8Chat("long", false, 400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		x.Request.Headers = Headers{{":method", "POST"}, {":path", "/openai/deployments/long/chat/completions?api-version=2024-10-21"},
			{":authority", "gateway.local"}, {"content-type", "application/json"}, {"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
			{"user-agent", "AzureOpenAI/Python 1.0"}, {"x-request-id", "req-7"}}
		x.Request.Chunks = [][]byte{[]byte(`{"messages":[{"role":"user","content":"hello"}]}`)}
		x.Callouts = []CalloutAnswer{v8CalloutOK("big")}
		o = play(t, p, x)
		if len(o.Callouts) != 1 || o.Callouts[0].Headers.Get("traceparent") == "" || o.Callouts[0].Headers.Get("user-agent") != "AzureOpenAI/Python 1.0" ||
			o.Callouts[0].Headers.Get("x-request-id") != "req-7" {
			t.Fatalf("a request-line-routed request's failover attempt lost the client's trace context, agent or request id: %+v", o.Callouts)
		}
		// Another 400 is the client's: translated and answered, nothing retried.
		o = play(t, p, v8Chat("long", false, 400, nil, `{"error":{"message":"Invalid value for temperature","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`))
		if a := answerOf(o); len(o.Callouts) != 0 || a.Status != 400 || errorCode(a) != "invalid_value" {
			t.Fatalf("%d callouts, client %d %s", len(o.Callouts), a.Status, a.Body)
		}
	})

	t.Run("a key pool's retry stops at a callout Envoy refuses", func(t *testing.T) {
		fresh(t)
		config := `{"providers":[
		  {"name":"pool","dialect":"openai","host":"pool.example.com","api_keys":["k1","k2","k3","k4"],"cluster":"pool-missing","models":[{"name":"m"}]},
		  {"name":"next","dialect":"openai","host":"next.example.com","api_key":"k-next","models":[{"name":"m","priority":1}]}],
		  "failover":{"served_by_header":true}}`
		_, p := startFailoverPlugin(t, h, config)
		x := v8Chat("m", false, 429, nil, v8RateLimited)
		x.Clusters = []string{"next"}
		x.Callouts = []CalloutAnswer{v8CalloutOK("next")}
		o := play(t, p, x)
		if a := answerOf(o); len(o.Callouts) != 1 || o.Callouts[0].Cluster != "next" || a.Status != 200 || a.Headers.Get("x-aidialect-attempts") != "2" {
			t.Fatalf("callouts %+v, client %d %v", o.Callouts, a.Status, a.Headers)
		}
	})
}

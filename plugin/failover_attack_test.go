package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aidialect/aidialect/internal/health"
	"github.com/aidialect/aidialect/internal/hostemu"
)

// Attacks on failover and provider health: what a client (or a hostile upstream) can make the shared health
// store do to every other client.

// attackConfig: "pt" forwards each client's own key (passthrough); "solo" is the gateway's own key.
const attackConfig = `{
  "providers": [
    {"name": "pt", "dialect": "openai", "host": "api.openai.com", "auth": "passthrough",
     "models": [{"name": "pt-model"}]},
    {"name": "solo", "dialect": "openai", "host": "solo.example.com", "api_key": "sk-solo",
     "models": [{"name": "solo"}]}
  ],
  "failover": {"attempts": 1, "circuit_threshold": 2, "circuit_open_seconds": 1}
}`

func withClientKey(ex exchange, key string) exchange {
	ex.headers = append(slicesClone(ex.headers), [2]string{"authorization", "Bearer " + key})
	return ex
}

// A passthrough provider serves each client with the client's own key: a 429 (OpenAI's insufficient_quota is
// a 429) says the client's key is throttled, not the provider. Benching the provider on it would let one
// client with an exhausted key refuse the provider to every other client for as long as the 429 asked.
func TestFailoverAttackPassthroughThrottleIsTheClients(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			s := newFailoverSession(t, md, attackConfig)
			ex := withClientKey(chatRequest("pt-model", false), "sk-attacker-no-quota")
			ex.upstream = upstreamReply(429, [][2]string{{"retry-after", "3600"}},
				`{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)
			s.do(ex)
			victim := withClientKey(chatRequest("pt-model", false), "sk-victim")
			victim.upstream = upstreamReply(200, nil, chatOKFrom("pt"))
			if o := s.do(victim); o.status != 200 || o.upstreamCalls != 1 {
				t.Fatalf("another client's request after one client's own key was throttled: %d %s (%d upstream calls); want it served",
					o.status, o.clientBody, o.upstreamCalls)
			}
		})
	}
}

// A half-open circuit lets one request probe it. A request that claims the probe but never reaches the
// provider whole (its body refused, its client gone) must give the probe back: otherwise any client can
// hold a provider's circuit open, refusing it to everyone for probe_timeout_seconds each time, by sending a
// broken request when the circuit's time is up.
func TestFailoverAttackProbeHeldByARefusedRequest(t *testing.T) {
	refusals := []struct {
		name string
		ex   exchange
	}{
		// Routed on its request line: admitted (the probe claimed) before the body, which is not JSON.
		{"a deployment path with a broken body", exchange{method: "POST",
			path: "/openai/deployments/solo/chat/completions?api-version=2024-10-21", headers: jsonHead,
			body: []string{`{"messages": not json`}}},
	}
	t.Run("client gone after the headers", func(t *testing.T) {
		for _, md := range modes {
			t.Run(md.name, func(t *testing.T) {
				s := openSoloCircuit(t, md)
				gone := s.host.Begin()
				hs := [][2]string{{":method", "POST"}, {":path", "/openai/deployments/solo/chat/completions?api-version=2024-10-21"},
					{":authority", "gateway.local"}, {"content-type", "application/json"}}
				if err := gone.BeginRequest(hs, false); err != nil {
					t.Fatal(err)
				}
				gone.Finish() // the client left before its body: nothing reached the provider whole
				expectProbeServed(t, s)
			})
		}
	})
	for _, md := range modes {
		for _, r := range refusals {
			t.Run(md.name+"/"+r.name, func(t *testing.T) {
				s := openSoloCircuit(t, md)
				if o := s.do(r.ex); o.status < 400 || o.status >= 500 {
					t.Fatalf("the broken request got %d %s, want a 4xx", o.status, o.clientBody)
				}
				expectProbeServed(t, s)
			})
		}
	}
}

// openSoloCircuit opens solo's circuit and waits until its time is up: the next request probes it.
func openSoloCircuit(t *testing.T, md mode) *failoverSession {
	t.Helper()
	s := newFailoverSession(t, md, attackConfig)
	for range 2 {
		ex := chatRequest("solo", false)
		ex.upstream = upstreamReply(503, nil, overloaded)
		s.do(ex)
	}
	time.Sleep(1050 * time.Millisecond)
	return s
}

func expectProbeServed(t *testing.T, s *failoverSession) {
	t.Helper()
	ok := chatRequest("solo", false)
	ok.upstream = upstreamReply(200, nil, chatOKFrom("solo"))
	if o := s.do(ok); o.status != 200 || o.upstreamCalls != 1 {
		t.Fatalf("a good request after the one that claimed the probe: %d %s; want it to probe the circuit and be served",
			o.status, strings.TrimSpace(string(o.clientBody)))
	}
}

// countingStore counts the reads of the health store (native mode: the plugin runs in the test's process).
type countingStore struct {
	health.Store
	reads int
}

func (c *countingStore) Get(key string) ([]byte, uint32, error) {
	c.reads++
	return c.Store.Get(key)
}

// A pool of many keys (api_keys allows 4096) whose keys a client's traffic got throttled: every request must
// not read the health of every key (a shared-data read is a host call under a process-wide lock), or each
// cheap request refused "all keys benched" costs thousands of them, in every worker.
func TestFailoverAttackBenchedKeyPoolCost(t *testing.T) {
	const keys = 4096
	names := make([]string, keys)
	for i := range names {
		names[i] = `"pool-key-` + strconv.Itoa(i) + `"`
	}
	config := `{"providers": [{"name": "pool", "dialect": "openai", "host": "pool.example.com",
	  "api_keys": [` + strings.Join(names, ",") + `], "models": [{"name": "pool-model"}]}],
	  "failover": {"attempts": 1}}`
	for _, row := range []struct {
		name       string
		live       int // keys left live (the last ones)
		wantStatus int
	}{
		{"every key benched", 0, 429},
		{"one key live", 1, 200},
	} {
		t.Run(row.name, func(t *testing.T) {
			store := &countingStore{Store: healthStore}
			healthStore = store
			t.Cleanup(func() { healthStore = store.Store })
			s := newFailoverSession(t, modes[0], config)
			tracker := &health.Tracker{Store: store, Policy: health.DefaultPolicy}
			now := nowMillis()
			for i := range keys - row.live {
				tracker.Record(healthKeyPrefix+"pool/key-"+keyFingerprint("pool-key-"+strconv.Itoa(i)), health.Throttled, 600_000, now)
			}
			const requests = 40
			store.reads = 0
			for i := range requests {
				ex := chatRequest("pool-model", false)
				ex.headers = append(slicesClone(ex.headers), [2]string{"authorization", "Bearer client-" + strconv.Itoa(i)})
				ex.upstream = upstreamReply(200, nil, chatOKFrom("pool"))
				if o := s.do(ex); o.status != row.wantStatus {
					t.Fatalf("got %d %s, want %d", o.status, o.clientBody, row.wantStatus)
				}
			}
			// Each benched key may be read once (a worker learns its bench), then a request costs a few reads.
			t.Logf("%d of %d keys benched: %d health reads in %d requests", keys-row.live, keys, store.reads, requests)
			if limit := keys + 4*requests; store.reads > limit {
				t.Fatalf("%d health reads in %d requests with %d of %d keys benched: want at most %d (each benched key once, then a few per request)",
					store.reads, requests, keys-row.live, keys, limit)
			}
		})
	}
}

// A Responses stream that fails over (stream "buffered") from a provider with the Responses API to one
// bridged to chat completions: the client gets Responses events, whole.
func TestFailoverAttackBridgedResponsesStream(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			s := newFailoverSession(t, md, failoverConfigWith(`, "stream": "buffered"`))
			ex := exchange{method: "POST", path: "/v1/responses", headers: jsonHead,
				body: []string{`{"model":"gpt-4o","input":"hi","stream":true}`}}
			ex.upstream = upstreamReply(503, nil, overloaded)
			sse := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"bridged"},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
			ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"az-cluster": {
				Headers: [][2]string{{":status", "200"}, {"content-type", "text/event-stream"}}, Body: []byte(sse)}})
			o := s.do(ex)
			body := string(o.clientBody)
			if len(o.callouts) != 1 || !strings.Contains(string(o.callouts[0].Body), `"stream":true`) {
				t.Fatalf("callouts %d: %v", len(o.callouts), o.callouts)
			}
			if o.status != 200 || !strings.Contains(body, "response.output_text.delta") || !strings.Contains(body, "bridged") ||
				!strings.Contains(body, "response.completed") {
				t.Fatalf("client got %d %q:\n%s", o.status, o.clientHead["content-type"], body)
			}
		})
	}
}

// A fallback's answer is a local reply the filter builds: every header it adds from the answer (EternalAI's
// onchain_data becomes x-onchain-* headers) must be redacted as the first attempt's are, and no provider key
// may reach the client in the body or a header.
func TestFailoverAttackFallbackEchoesKey(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			const etKey = "et-secret-0123456789abcdef0123456789"
			s := newFailoverSession(t, md, strings.Replace(failoverConfigWith(`, "attempts": 3`), `"et-key"`, `"`+etKey+`"`, 1))
			ex := chatRequest("gpt-4o", false)
			ex.upstream = upstreamReply(503, nil, overloaded)
			echo := `{"id":"e","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"key ` + etKey + `"},"finish_reason":"stop"}],` +
				`"onchain_data":{"infer_tx":"` + etKey + `","infer_id":1}}`
			ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{
				"az-cluster": httpAnswer(503, `{"error":{"code":"ServiceUnavailable","message":"busy"}}`),
				"et":         httpAnswer(200, echo),
			})
			o := s.do(ex)
			if o.status != 200 || len(o.callouts) != 2 {
				t.Fatalf("client got %d after %d callouts: %s", o.status, len(o.callouts), o.clientBody)
			}
			// JSON-escaped in the body (out of redaction's reach there, SECURITY.md), the key is decoded into
			// the header: the first attempt's headers are redacted after decoding, so must the fallback's be.
			escaped := `{"id":"e","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
				`"onchain_data":{"infer_tx":"\u0065` + etKey[1:] + `","infer_id":1}}`
			ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{
				"az-cluster": httpAnswer(503, `{"error":{"code":"ServiceUnavailable","message":"busy"}}`),
				"et":         httpAnswer(200, escaped),
			})
			if o2 := s.do(ex); o2.status != 200 || o2.clientHead["x-onchain-infer-tx"] == etKey {
				t.Errorf("escaped in the fallback's onchain_data: client got %d, x-onchain-infer-tx %q", o2.status, o2.clientHead["x-onchain-infer-tx"])
			}
			if strings.Contains(string(o.clientBody), etKey) {
				t.Errorf("the fallback's key reached the client's body: %s", o.clientBody)
			}
			for name, value := range o.clientHead {
				if strings.Contains(value, etKey) {
					t.Errorf("the fallback's key reached the client in header %s: %q", name, value)
				}
			}
		})
	}
}

// Hostile or malformed callout answers: the client gets a status in HTTP's range and, as on the first
// attempt, never a redirect.
func TestFailoverAttackMalformedCalloutAnswers(t *testing.T) {
	rows := []struct {
		name       string
		answer     hostemu.CalloutAnswer
		wantStatus int
		wantCode   string
	}{
		{"a redirect", hostemu.CalloutAnswer{Headers: [][2]string{{":status", "302"}, {"location", "https://elsewhere.example/"},
			{"content-type", "text/html"}}, Body: []byte("<html>moved</html>")}, 502, "upstream_redirect"},
		{"no :status", hostemu.CalloutAnswer{Headers: [][2]string{{"content-type", "application/json"}}, Body: []byte(chatOKFrom("x"))},
			503, "upstream_unreachable"},
		{"no headers, a body", hostemu.CalloutAnswer{Body: []byte(chatOKFrom("x"))}, 503, "upstream_unreachable"},
		{"a :status past any int", hostemu.CalloutAnswer{Headers: [][2]string{{":status", "99999999999999999999"}}, Body: []byte("x")},
			503, "upstream_unreachable"},
		{"a negative :status", hostemu.CalloutAnswer{Headers: [][2]string{{":status", "-1"}}, Body: []byte(chatOKFrom("x"))},
			503, "upstream_unreachable"},
	}
	for _, md := range modes {
		for _, r := range rows {
			t.Run(md.name+"/"+r.name, func(t *testing.T) {
				s := newFailoverSession(t, md, failoverConfigWith(`, "attempts": 2`))
				ex := chatRequest("gpt-4o", false)
				ex.upstream = upstreamReply(503, nil, overloaded)
				ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{"az-cluster": r.answer})
				o := s.do(ex)
				if o.status != r.wantStatus || o.clientError() != r.wantCode || o.clientHead["location"] != "" {
					t.Fatalf("client got %d %v %s; want %d %s", o.status, o.clientHead, o.clientBody, r.wantStatus, r.wantCode)
				}
			})
		}
	}
}

// A context-length error goes only to candidates declaring a larger window. When the failed candidate declares
// none, "larger" is any declared window: a candidate that declares none either (perhaps the same small model
// elsewhere) must not be tried. Were it, a client sending one over-long request would spend an attempt per
// such candidate (each answering the same 400), and with enough of them never reach the large window.
func TestFailoverAttackContextLengthSkipsUndeclaredWindows(t *testing.T) {
	const config = `{
  "providers": [
    {"name": "first", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-first", "models": [{"name": "long"}]},
    {"name": "same", "dialect": "openai", "host": "same.example.com", "api_key": "sk-same", "models": [{"name": "long", "priority": 1}]},
    {"name": "big", "dialect": "azure-ai", "host": "models.inference.ai.azure.com", "api_key": "az-key",
     "models": [{"name": "long", "model": "long-az", "priority": 2, "context_window": 128000}]}
  ],
  "failover": {"served_by_header": true}
}`
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			s := newFailoverSession(t, md, config)
			ex := chatRequest("long", false)
			ex.upstream = upstreamReply(400, nil, contextTooLong)
			ex.callouts = calloutAnswers(map[string]hostemu.CalloutAnswer{
				"same": httpAnswer(400, contextTooLong),
				"big":  httpAnswer(200, chatOKFrom("big")),
			})
			o := s.do(ex)
			var clusters []string
			for _, c := range o.callouts {
				clusters = append(clusters, c.Cluster)
			}
			if len(clusters) != 1 || clusters[0] != "big" || o.status != 200 || o.clientHead["x-aidialect-attempts"] != "2" {
				t.Fatalf("callouts to %v, client %d %v; want one callout, to big (same declares no window)", clusters, o.status, o.clientHead)
			}
		})
	}
}

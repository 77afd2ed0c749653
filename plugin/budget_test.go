package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/services"
)

// fakeRateLimit answers the rate-limit service's JSON API as envoyproxy/ratelimit does for one fixed window:
// each descriptor adds its hits_addend to its counter, and a descriptor over its limit makes the answer 429
// OVER_LIMIT (the counters keep what was added, as the service's Redis INCRBY does). The real service is
// exercised end to end in e2e/budgets_test.go.
type fakeRateLimit struct {
	t        *testing.T
	limits   map[string]int64 // descriptor ("consumer=a" or "consumer=a,model=m") -> tokens per window
	counts   map[string]int64
	requests []fakeRLRequest
	fail     bool   // answer nothing (a timeout, a reset)
	reset    string // durationUntilReset of a limited descriptor ("41s" by default)
}

type fakeRLRequest struct {
	Domain      string
	Descriptors []struct {
		Entries []struct{ Key, Value string }
		Hits    *int64 `json:"hits_addend"`
	}
}

func newFakeRateLimit(t *testing.T, limits map[string]int64) *fakeRateLimit {
	return &fakeRateLimit{t: t, limits: limits, counts: map[string]int64{}}
}

func descriptorName(entries []struct{ Key, Value string }) string {
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		parts = append(parts, e.Key+"="+e.Value)
	}
	return strings.Join(parts, ",")
}

func (f *fakeRateLimit) answer(c hostemu.Callout) hostemu.CalloutAnswer {
	if c.Header(":path") != "/json" || c.Header(":method") != "POST" {
		f.t.Errorf("the rate-limit callout went to %s %s, want POST /json", c.Header(":method"), c.Header(":path"))
	}
	var req fakeRLRequest
	if err := json.Unmarshal(c.Body, &req); err != nil {
		f.t.Fatalf("the rate-limit callout's body is not JSON: %v: %s", err, c.Body)
	}
	f.requests = append(f.requests, req)
	if f.fail {
		return hostemu.CalloutAnswer{Failed: true}
	}
	type status struct {
		Code               string `json:"code"`
		DurationUntilReset string `json:"durationUntilReset,omitempty"`
		CurrentLimit       *struct {
			RequestsPerUnit int64  `json:"requestsPerUnit"`
			Unit            string `json:"unit"`
		} `json:"currentLimit,omitempty"`
	}
	out := struct {
		OverallCode string   `json:"overallCode"`
		Statuses    []status `json:"statuses"`
	}{OverallCode: "OK"}
	for _, d := range req.Descriptors {
		name := descriptorName(d.Entries)
		hits := int64(1)
		if d.Hits != nil {
			hits = *d.Hits
		}
		f.counts[name] += hits
		st := status{Code: "OK"}
		if limit, ok := f.limits[name]; ok {
			st.DurationUntilReset = "41s"
			if f.reset != "" {
				st.DurationUntilReset = f.reset
			}
			st.CurrentLimit = &struct {
				RequestsPerUnit int64  `json:"requestsPerUnit"`
				Unit            string `json:"unit"`
			}{limit, "MINUTE"}
			if f.counts[name] > limit {
				st.Code, out.OverallCode = "OVER_LIMIT", "OVER_LIMIT"
			}
		}
		out.Statuses = append(out.Statuses, st)
	}
	body, _ := json.Marshal(out)
	code := 200
	if out.OverallCode == "OVER_LIMIT" {
		code = 429
	}
	return hostemu.CalloutAnswer{Headers: [][2]string{{":status", strconv.Itoa(code)}, {"content-type", "application/json"}}, Body: body}
}

// budgetTestConfig has two consumers and the budgets object given (its braces' content); "" gives one budget
// per consumer and one per consumer and model.
func budgetTestConfig(budgets string) string {
	if budgets == "" {
		budgets = `"per": ["consumer", "consumer_model"], "timeout_ms": 200`
	}
	return `{
  "providers": [
    {"name": "oa", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-oa", "models": [{"name": "gpt-4o"}]},
    {"name": "az", "dialect": "azure-openai", "host": "r.openai.azure.com", "api_key": "az-key",
     "models": [{"name": "gpt-4o-mini", "deployment": "mini"}]}
  ],
  "consumers": [
    {"name": "team-a", "key_sha256": "` + hexSum("key-a") + `"},
    {"name": "team-b", "key_sha256": "` + hexSum("key-b") + `"}
  ],
  "budgets": {` + budgets + `}
}`
}

func budgetChat(key, model string, stream bool) exchange {
	ex := chatRequest(model, stream)
	ex.headers = append(slicesClone(jsonHead), [2]string{"authorization", "Bearer " + key})
	return ex
}

const chatUsage70 = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`

func TestBudgets(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			t.Run("admitted, reserved, then charged the rest on the next tick", func(t *testing.T) {
				s := newFailoverSession(t, md, budgetTestConfig(""))
				rl := newFakeRateLimit(t, nil)
				s.host.RootCallouts = rl.answer
				ex := budgetChat("key-a", "gpt-4o", false)
				ex.headers = append(ex.headers, [2]string{"x-aidialect-consumer", "team-b"}) // never read
				ex.callouts = rl.answer
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				o := s.do(ex)
				if o.status != 200 || o.upstreamCalls != 1 {
					t.Fatalf("client %d, %d upstream calls: %s", o.status, o.upstreamCalls, o.clientBody)
				}
				if len(rl.requests) != 1 {
					t.Fatalf("%d rate-limit requests, want the admission", len(rl.requests))
				}
				adm := rl.requests[0]
				if adm.Domain != "aidialect" || len(adm.Descriptors) != 2 ||
					descriptorName(adm.Descriptors[0].Entries) != "consumer=team-a" ||
					descriptorName(adm.Descriptors[1].Entries) != "consumer=team-a,model=gpt-4o" {
					t.Fatalf("admission %+v", adm)
				}
				reserved := *adm.Descriptors[0].Hits
				if reserved < 1 || reserved > 20 {
					t.Errorf("reserved %d tokens for a 20-token prompt, want a low estimate", reserved)
				}
				if err := s.host.Tick(); err != nil {
					t.Fatal(err)
				}
				if len(rl.requests) != 2 {
					t.Fatalf("%d rate-limit requests after a tick, want the charge", len(rl.requests))
				}
				if got := rl.counts["consumer=team-a"]; got != 70 {
					t.Errorf("team-a counted %d tokens, want the 70 the provider reported", got)
				}
				if got, err := s.host.Counter("aidialect_budget_tokens_total.consumer.team-a"); err != nil || got != 70 {
					t.Errorf("team-a's spending metric %d (%v), want 70", got, err)
				}
				if got, _ := s.host.Counter("aidialect_budget_tokens_total.consumer.team-b"); got != 0 {
					t.Errorf("team-b's spending metric %d, want 0", got)
				}
				if got := rl.counts["consumer=team-a,model=gpt-4o"]; got != 70 {
					t.Errorf("team-a on gpt-4o counted %d tokens, want 70", got)
				}
				if rl.counts["consumer=team-b"] != 0 {
					t.Errorf("team-b was charged for team-a's request")
				}
				// Nothing more to send: the next tick makes no callout.
				_ = s.host.Tick()
				if len(rl.requests) != 2 {
					t.Errorf("an idle tick sent %d more requests", len(rl.requests)-2)
				}
			})
			t.Run("over the budget: 429 in the client's dialect, the provider not called", func(t *testing.T) {
				s := newFailoverSession(t, md, budgetTestConfig(""))
				rl := newFakeRateLimit(t, map[string]int64{"consumer=team-a": 100})
				rl.counts["consumer=team-a"] = 100
				for _, ex := range []exchange{budgetChat("key-a", "gpt-4o", false),
					{method: "POST", path: "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
						headers: [][2]string{{"content-type", "application/json"}, {"api-key", "key-a"}},
						body:    []string{`{"messages":[{"role":"user","content":"hello"}]}`}}} {
					ex.callouts = rl.answer
					ex.upstream = upstreamReply(200, nil, chatUsage70)
					o := s.do(ex)
					if o.upstreamCalls != 0 || o.status != 429 || o.clientHead["x-aidialect-error"] != "budget_exceeded" ||
						o.clientHead["retry-after"] != "41" || o.clientError() != "budget_exceeded" {
						t.Fatalf("%s: %d upstream calls, client %d %v %s", ex.path, o.upstreamCalls, o.status, o.clientHead, o.clientBody)
					}
					if !strings.Contains(string(o.clientBody), `team-a`) || !strings.Contains(string(o.clientBody), "per minute") {
						t.Errorf("the refusal does not name the budget: %s", o.clientBody)
					}
					if o.clientHead["x-should-retry"] != "" {
						t.Errorf("a 41 s wait is left to the SDKs' retries, got x-should-retry %q", o.clientHead["x-should-retry"])
					}
				}
				// team-b has its own budget.
				ex := budgetChat("key-b", "gpt-4o", false)
				ex.callouts = rl.answer
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				if o := s.do(ex); o.status != 200 {
					t.Fatalf("team-b refused by team-a's budget: %d %s", o.status, o.clientBody)
				}
			})
			t.Run("a window resetting in more than a minute: the SDKs are told not to retry", func(t *testing.T) {
				// The OpenAI SDKs retry a 429 after its Retry-After: the Node SDK waits out any length (a day's
				// budget would hold the call for hours), the Python SDK backs off for a second and is refused
				// again. x-should-retry: false, which both read, gives the caller the error at once.
				s := newFailoverSession(t, md, budgetTestConfig(""))
				rl := newFakeRateLimit(t, map[string]int64{"consumer=team-a": 100})
				rl.counts["consumer=team-a"] = 100
				rl.reset = "3599s"
				ex := budgetChat("key-a", "gpt-4o", false)
				ex.callouts = rl.answer
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				o := s.do(ex)
				if o.status != 429 || o.clientHead["retry-after"] != "3599" || o.clientHead["x-should-retry"] != "false" {
					t.Fatalf("client %d %v %s", o.status, o.clientHead, o.clientBody)
				}
			})
			t.Run("the service down: allow lets requests through, deny refuses them", func(t *testing.T) {
				for _, mode := range []string{"allow", "deny"} {
					s := newFailoverSession(t, md, budgetTestConfig(`"on_service_failure": "`+mode+`"`))
					rl := newFakeRateLimit(t, nil)
					rl.fail = true
					ex := budgetChat("key-a", "gpt-4o", false)
					ex.callouts = rl.answer
					ex.upstream = upstreamReply(200, nil, chatUsage70)
					ex.onDone = func(o *outcome) {
						if got := o.counter("aidialect_budget_checks_total.result.service_failed"); got != 1 {
							t.Errorf("%s: service_failed counted %d", mode, got)
						}
					}
					o := s.do(ex)
					s.host.Close()
					switch mode {
					case "allow":
						if o.status != 200 || o.upstreamCalls != 1 {
							t.Errorf("allow: client %d, %d upstream calls", o.status, o.upstreamCalls)
						}
					case "deny":
						if o.status != 503 || o.upstreamCalls != 0 || o.clientError() != "budget_unavailable" {
							t.Errorf("deny: client %d, %d upstream calls: %s", o.status, o.upstreamCalls, o.clientBody)
						}
					}
				}
			})
			t.Run("a charge the service does not take is sent again", func(t *testing.T) {
				s := newFailoverSession(t, md, budgetTestConfig(`"per": ["consumer"]`))
				rl := newFakeRateLimit(t, nil)
				s.host.RootCallouts = rl.answer
				ex := budgetChat("key-a", "gpt-4o", false)
				ex.callouts = rl.answer
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				s.do(ex)
				reserved := rl.counts["consumer=team-a"]
				rl.fail = true
				_ = s.host.Tick()
				rl.fail = false
				_ = s.host.Tick()
				if got := rl.counts["consumer=team-a"]; got != 70 || got == reserved {
					t.Fatalf("counted %d after a failed and a good flush, want 70", got)
				}
			})
			t.Run("absurd usage from a broken upstream neither wraps the charge nor blocks others", func(t *testing.T) {
				// The service reads hits_addend as an unsigned number and Redis adds it to a signed 64-bit
				// counter: a sum that wraps negative is refused (400) with every other consumer's charge in the
				// same callout, again at each flush, and a counter pushed near 2^63 makes every later INCRBY fail.
				s := newFailoverSession(t, md, budgetTestConfig(""))
				rl := newFakeRateLimit(t, nil)
				s.host.RootCallouts = rl.answer
				absurd := `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5000000000000000000,"completion_tokens":1}}`
				for _, c := range []struct{ key, body string }{{"key-a", absurd}, {"key-a", absurd}, {"key-b", chatUsage70}} {
					ex := budgetChat(c.key, "gpt-4o", false)
					ex.callouts = rl.answer
					ex.upstream = upstreamReply(200, nil, c.body)
					if o := s.do(ex); o.status != 200 {
						t.Fatalf("client %d: %s", o.status, o.clientBody)
					}
				}
				_ = s.host.Tick()
				charge := rl.requests[len(rl.requests)-1]
				for _, d := range charge.Descriptors {
					if d.Hits == nil || *d.Hits <= 0 || *d.Hits > 1<<40 {
						t.Errorf("%s: hits_addend %v, want a positive count the service and Redis can add", descriptorName(d.Entries), d.Hits)
					}
				}
				if got := rl.counts["consumer=team-b"]; got != 70 {
					t.Errorf("team-b counted %d, want its 70", got)
				}
				if got := rl.counts["consumer=team-a"]; got < 1<<30 {
					t.Errorf("team-a counted %d for answers reporting 10^19 tokens", got)
				}
			})
			t.Run("a stream is charged from its usage chunk", func(t *testing.T) {
				s := newFailoverSession(t, md, budgetTestConfig(`"per": ["consumer"]`))
				rl := newFakeRateLimit(t, nil)
				s.host.RootCallouts = rl.answer
				ex := budgetChat("key-a", "gpt-4o", true)
				ex.callouts = rl.answer
				sse := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\n" +
					`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":60,"total_tokens":100}}` + "\n\ndata: [DONE]\n\n"
				ex.upstream = &upstreamAnswer{status: 200, headers: [][2]string{{"content-type", "text/event-stream"}}, chunks: []string{sse}}
				if o := s.do(ex); o.status != 200 {
					t.Fatalf("client %d", o.status)
				}
				_ = s.host.Tick()
				if got := rl.counts["consumer=team-a"]; got != 100 {
					t.Fatalf("counted %d, want the stream's 100", got)
				}
			})
			t.Run("a stream whose client did not ask for usage is asked for it, and charged", func(t *testing.T) {
				// Most SDKs stream without stream_options.include_usage: with usage off (the configuration's
				// default without budgets), such a stream carried no usage, and was charged its prompt's
				// estimate only, its whole answer free.
				s := newFailoverSession(t, md, budgetTestConfig(`"per": ["consumer"]`))
				rl := newFakeRateLimit(t, nil)
				s.host.RootCallouts = rl.answer
				ex := budgetChat("key-a", "gpt-4o", true)
				ex.callouts = rl.answer
				sse := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\n" +
					`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":6000,"total_tokens":6040}}` + "\n\ndata: [DONE]\n\n"
				ex.upstream = &upstreamAnswer{status: 200, headers: [][2]string{{"content-type", "text/event-stream"}}, chunks: []string{sse}}
				o := s.do(ex)
				if o.status != 200 {
					t.Fatalf("client %d", o.status)
				}
				if !strings.Contains(string(o.upstreamBody), `"include_usage":true`) {
					t.Errorf("the provider was not asked for the stream's usage: %s", o.upstreamBody)
				}
				if strings.Contains(string(o.clientBody), "prompt_tokens") {
					t.Errorf("the client, which did not ask, got the usage chunk: %s", o.clientBody)
				}
				_ = s.host.Tick()
				if got := rl.counts["consumer=team-a"]; got != 6040 {
					t.Fatalf("counted %d, want the stream's 6040", got)
				}
			})
			t.Run("the client leaves during the admission", func(t *testing.T) {
				s := newFailoverSession(t, md, budgetTestConfig(""))
				ex := budgetChat("key-a", "gpt-4o", false)
				ex.callouts = func(hostemu.Callout) hostemu.CalloutAnswer { return hostemu.CalloutAnswer{ClientGone: true} }
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				if o := s.do(ex); o.upstreamCalls != 0 || !o.clientGone {
					t.Fatalf("%d upstream calls, gone %v", o.upstreamCalls, o.clientGone)
				}
				if dead := s.host.Dead(); dead != nil {
					t.Fatal(dead)
				}
			})
		})
	}
}

func TestBudgetConfig(t *testing.T) {
	for _, tt := range []struct{ name, budgets, wantErr string }{
		{"defaults", `{}`, ""},
		{"unknown key", `{"limit": 5}`, "budgets.limit"},
		{"bad per", `{"per": ["team"]}`, "budgets.per[0]"},
		{"empty per", `{"per": []}`, "names no budget"},
		{"timeout", `{"timeout_ms": 0}`, "budgets.timeout_ms"},
		{"flush", `{"flush_ms": 5}`, "budgets.flush_ms"},
		{"failure mode", `{"on_service_failure": "maybe"}`, "budgets.on_service_failure"},
		{"domain", `{"domain": "a b"}`, "budgets.domain"},
		{"cluster", `{"cluster": "a\nb"}`, "budgets.cluster"},
		{"usage off", `{}, "usage": "off"`, "usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig([]byte(`{"providers":[`+minimalProvider+`],"budgets":`+tt.budgets+`}`), func(string) string { return "" })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// realRateLimit answers callouts to the budget cluster by sending them to the rate-limit service at addr, as
// Envoy's cluster would.
// The rate-limit service keys a counter "<domain>_consumer_<name>_[model_<label>_]<window>": with budgets per
// consumer and model, a consumer name holding "_model_" or ending in "_model" spells another consumer's
// counter (checked against the real service: consumer "team_model_gpt-4o" spent 80 of team's 100 on gpt-4o).
func TestBudgetConsumerNamesCannotSpellAnotherCounter(t *testing.T) {
	for _, tt := range []struct{ per, name, wantErr string }{
		{`["consumer", "consumer_model"]`, "team_model_gpt-4o", "consumers[1].name"},
		{`["consumer_model"]`, "team_model", "consumers[1].name"},
		{`["consumer_model"]`, "team_model_x", "consumers[1].name"},
		{`["consumer"]`, "team_model_gpt-4o", ""}, // one counter per consumer: nothing to collide with
		{`["consumer", "consumer_model"]`, "data_modeling", ""},
		{`["consumer", "consumer_model"]`, "team_b", ""},
	} {
		t.Run(tt.per+" "+tt.name, func(t *testing.T) {
			cfg := `{"providers":[` + minimalProvider + `],"consumers":[{"name":"team","key_sha256":"` + strings.Repeat("ab", 32) +
				`"},{"name":"` + tt.name + `","key_sha256":"` + strings.Repeat("cd", 32) + `"}],"budgets":{"per":` + tt.per + `}}`
			_, err := parseConfig([]byte(cfg), func(string) string { return "" })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func realRateLimit(t *testing.T, addr string) func(hostemu.Callout) hostemu.CalloutAnswer {
	return func(c hostemu.Callout) hostemu.CalloutAnswer {
		req, err := http.NewRequest(c.Header(":method"), "http://"+addr+c.Header(":path"), bytes.NewReader(c.Body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("content-type", c.Header("content-type"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return hostemu.CalloutAnswer{Failed: true}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return hostemu.CalloutAnswer{Headers: [][2]string{{":status", strconv.Itoa(resp.StatusCode)},
			{"content-type", resp.Header.Get("content-type")}}, Body: body}
	}
}

// TestBudgetsAgainstTheRealService: the filter, natively and compiled, against envoyproxy/ratelimit and
// Redis: one instance spends team-a's budget, and another instance started after it (a second replica)
// refuses team-a from the shared counters while team-b still passes.
func TestBudgetsAgainstTheRealService(t *testing.T) {
	redis, err := services.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Stop()
	rl, err := services.StartRateLimit(redis.Addr, `domain: aidialect
descriptors:
  - key: consumer
    value: team-a
    rate_limit: {unit: hour, requests_per_unit: 150}
  - key: consumer
    value: team-b
    rate_limit: {unit: hour, requests_per_unit: 100000}
`)
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Stop()
	answer := realRateLimit(t, rl.Addr)
	for i, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			// The second mode finds team-a's budget spent by the first (one window, one Redis): its first
			// request is refused at once, which is the point of the shared counters.
			replica := func() *failoverSession {
				s := newFailoverSession(t, md, budgetTestConfig(`"per": ["consumer"], "timeout_ms": 2000`))
				s.host.RootCallouts = answer
				return s
			}
			first := replica()
			admitted := 0
			for range 10 {
				ex := budgetChat("key-a", "gpt-4o", false)
				ex.callouts = answer
				ex.upstream = upstreamReply(200, nil, chatUsage70)
				o := first.do(ex)
				if err := first.host.Tick(); err != nil { // the charge goes out
					t.Fatal(err)
				}
				if o.status == 429 {
					break
				}
				if o.status != 200 {
					t.Fatalf("client %d %s", o.status, o.clientBody)
				}
				admitted++
			}
			if i == 0 && admitted != 3 {
				// 70 tokens a request against 150 an hour: the third is admitted (140 spent), the fourth refused.
				t.Errorf("%d requests admitted before the refusal, want 3", admitted)
			}
			first.host.Close()
			second := replica()
			ex := budgetChat("key-a", "gpt-4o", false)
			ex.callouts = answer
			ex.upstream = upstreamReply(200, nil, chatUsage70)
			if o := second.do(ex); o.status != 429 || o.upstreamCalls != 0 || o.clientHead["retry-after"] == "" {
				t.Fatalf("the second replica admitted team-a: %d %v %s", o.status, o.clientHead, o.clientBody)
			}
			ex = budgetChat("key-b", "gpt-4o", false)
			ex.callouts = answer
			ex.upstream = upstreamReply(200, nil, chatUsage70)
			if o := second.do(ex); o.status != 200 {
				t.Fatalf("team-b refused: %d %s", o.status, o.clientBody)
			}
			second.host.Close()
		})
	}
}

// TestRateLimitConfigLoadsInTheService: the starting configuration ratelimit-config prints is one the real
// service loads, and its descriptors are the ones the filter sends (each status carries its limit).
func TestRateLimitConfigLoadsInTheService(t *testing.T) {
	cfg, err := parseConfig([]byte(budgetTestConfig("")), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	yaml := rateLimitConfig(cfg)
	redis, err := services.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Stop()
	rl, err := services.StartRateLimit(redis.Addr, yaml)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	defer rl.Stop()
	body := appendDescriptors([]byte(`{"domain":"aidialect","descriptors":[`), &cfg.budgets, "team-b", "gpt-4o-mini", 0)
	body = append(body, "]}"...)
	a := realRateLimit(t, rl.Addr)(hostemu.Callout{Headers: cfg.budgets.rateLimitRequest(), Body: body})
	var r struct {
		OverallCode string
		Statuses    []struct {
			CurrentLimit *struct{ RequestsPerUnit int }
		}
	}
	if err := json.Unmarshal(a.Body, &r); err != nil || r.OverallCode != "OK" || len(r.Statuses) != 2 {
		t.Fatalf("%s (%v)\n%s", a.Body, err, yaml)
	}
	for i, st := range r.Statuses {
		if st.CurrentLimit == nil || st.CurrentLimit.RequestsPerUnit != 1000000 {
			t.Errorf("descriptor %d matched no limit of the generated configuration: %s\n%s", i, a.Body, yaml)
		}
	}
}

// TestShippedBudgetsObject: the budgets object of envoy/ratelimit/envoy-cluster.yaml is one the filter takes,
// and the service's configuration shipped beside it loads in the real service.
func TestShippedBudgetsObject(t *testing.T) {
	raw, err := os.ReadFile("../envoy/ratelimit/envoy-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var budgets string
	for _, line := range strings.Split(string(raw), "\n") {
		if b, ok := strings.CutPrefix(line, "budgets: "); ok {
			budgets = b
		}
	}
	if budgets == "" {
		t.Fatal("no budgets line in envoy/ratelimit/envoy-cluster.yaml")
	}
	cfg, err := parseConfig([]byte(`{"providers":[`+minimalProvider+`],"budgets":`+budgets+`}`), func(string) string { return "" })
	if err != nil || !cfg.budgets.on {
		t.Fatalf("the shipped budgets object: %v", err)
	}
	yaml, err := os.ReadFile("../envoy/ratelimit/ratelimit-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	redis, err := services.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Stop()
	rl, err := services.StartRateLimit(redis.Addr, string(yaml))
	if err != nil {
		t.Fatalf("the shipped ratelimit-config.yaml: %v", err)
	}
	defer rl.Stop()
	body := appendDescriptors([]byte(`{"domain":"aidialect","descriptors":[`), &cfg.budgets, "team-a", "gpt-4o", 0)
	body = append(body, "]}"...)
	a := realRateLimit(t, rl.Addr)(hostemu.Callout{Headers: cfg.budgets.rateLimitRequest(), Body: body})
	// protojson varies its spacing from run to run: the answer is read as JSON.
	var r struct {
		Statuses []struct {
			CurrentLimit *struct{ RequestsPerUnit int }
		}
	}
	if err := json.Unmarshal(a.Body, &r); err != nil || len(r.Statuses) != 2 || r.Statuses[1].CurrentLimit == nil ||
		r.Statuses[1].CurrentLimit.RequestsPerUnit != 200000 {
		t.Errorf("team-a on gpt-4o matched no limit of the shipped configuration: %s (%v)", a.Body, err)
	}
}

// TestRateLimitConfigQuotesNames: consumer names that YAML would read otherwise (a control character, a
// quote, a number, a YAML word) come out of ratelimit-config as the same names.
func TestRateLimitConfigQuotesNames(t *testing.T) {
	for _, name := range []string{"team\nb", `we "quote"`, "1234", "yes", "naïve", "tab\there"} {
		got := yamlString(name)
		if got == name && name != "naïve" {
			t.Errorf("%q was not quoted", name)
		}
		if unq, err := strconv.Unquote(got); got != name && (err != nil || unq != name) {
			t.Errorf("%q came out as %s", name, got)
		}
		if strings.ContainsAny(got, "\n\t") {
			t.Errorf("%q kept a raw control character: %s", name, got)
		}
	}
}

// TestBudgetsForceUsage: with budgets, usage is forced unless set, and "off" is refused (a stream whose
// client does not ask for usage would get its answer uncharged).
func TestBudgetsForceUsage(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		wantForced  bool
		wantErr     string
	}{
		{"no budgets: usage stays off", `"usage": "off"`, false, ""},
		{"no budgets, usage unset: off", ``, false, ""},
		{"budgets, usage unset: forced", `"budgets": {}`, true, ""},
		{"budgets, usage force", `"budgets": {}, "usage": "force"`, true, ""},
		{"budgets, usage off: refused", `"budgets": {}, "usage": "off"`, false, "usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := ""
			if tt.extra != "" {
				extra = "," + tt.extra
			}
			cfg, err := parseConfig([]byte(`{"providers":[`+minimalProvider+`],"consumers":[{"name":"a","key_sha256":"`+hexSum("k")+`"}]`+extra+`}`), func(string) string { return "" })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.forceUsage != tt.wantForced {
				t.Errorf("forceUsage %v, want %v", cfg.forceUsage, tt.wantForced)
			}
		})
	}
}

package v8host

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// The budget rows of plugin/budget_test.go under V8: the admission's callout holds the request until its
// callback resumes it (proxy_continue_stream) or refuses it, and the charges go out from the root context's
// tick. The real rate-limit service is exercised in e2e/budgets_test.go.

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

var budgetV8Config = `{
  "providers": [{"name": "oa", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-oa", "models": [{"name": "gpt-4o"}]}],
  "consumers": [{"name": "team-a", "key_sha256": "` + hexSum("key-a") + `"}],
  "budgets": {"per": ["consumer"], "timeout_ms": 200}
}`

func rateLimitAnswer(over bool) CalloutAnswer {
	if over {
		return CalloutAnswer{Status: 429, Headers: Headers{{"content-type", "application/json"}},
			Body: []byte(`{"overallCode":"OVER_LIMIT","statuses":[{"code":"OVER_LIMIT","currentLimit":{"requestsPerUnit":100,"unit":"HOUR"},"durationUntilReset":"1234.5s"}]}`)}
	}
	return CalloutAnswer{Status: 200, Headers: Headers{{"content-type", "application/json"}},
		Body: []byte(`{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":100,"unit":"HOUR"},"limitRemaining":50,"durationUntilReset":"1234s"}]}`)}
}

func budgetChatV8(status int, body string) *Exchange {
	x := v8Chat("gpt-4o", false, status, nil, body)
	x.Request.Headers = append(x.Request.Headers, [2]string{"authorization", "Bearer key-a"})
	return x
}

type rlRequest struct {
	Domain      string `json:"domain"`
	Descriptors []struct {
		Entries []struct{ Key, Value string } `json:"entries"`
		Hits    int64                         `json:"hits_addend"`
	} `json:"descriptors"`
}

func TestBudgetsUnderV8(t *testing.T) {
	wasm := filterWasm(t)
	h := sharedHost(t)
	load(t, h, "aidialect", wasm)
	usage := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`

	t.Run("admitted, then the rest charged on the tick", func(t *testing.T) {
		_, p := startFailoverPlugin(t, h, budgetV8Config)
		x := budgetChatV8(200, usage)
		x.Callouts = []CalloutAnswer{rateLimitAnswer(false)}
		o := play(t, p, x)
		if o.Upstream == nil || answerOf(o).Status != 200 || len(o.Callouts) != 1 || o.Callouts[0].Cluster != "ratelimit" {
			t.Fatalf("upstream %v, client %d, callouts %+v", o.Upstream != nil, answerOf(o).Status, o.Callouts)
		}
		var adm rlRequest
		if err := json.Unmarshal(o.Callouts[0].Body, &adm); err != nil || adm.Domain != "aidialect" || len(adm.Descriptors) != 1 {
			t.Fatalf("admission %s (%v)", o.Callouts[0].Body, err)
		}
		_, made, err := p.TickWith([]CalloutAnswer{rateLimitAnswer(false)})
		if err != nil || len(made) != 1 {
			t.Fatalf("tick: %v, %d callouts", err, len(made))
		}
		var charge rlRequest
		if err := json.Unmarshal(made[0].Body, &charge); err != nil || len(charge.Descriptors) != 1 {
			t.Fatalf("charge %s (%v)", made[0].Body, err)
		}
		if got := adm.Descriptors[0].Hits + charge.Descriptors[0].Hits; got != 70 {
			t.Errorf("reserved %d + charged %d = %d, want the 70 reported", adm.Descriptors[0].Hits, charge.Descriptors[0].Hits, got)
		}
	})

	t.Run("over the budget: 429 with Retry-After, the provider not called", func(t *testing.T) {
		_, p := startFailoverPlugin(t, h, budgetV8Config)
		x := budgetChatV8(200, usage)
		x.Callouts = []CalloutAnswer{rateLimitAnswer(true)}
		o := play(t, p, x)
		a := answerOf(o)
		if o.Upstream != nil || a.Status != 429 || errorCode(a) != "budget_exceeded" || a.Headers.Get("retry-after") != "1235" {
			t.Fatalf("upstream %v, client %d %v %s", o.Upstream != nil, a.Status, a.Headers, a.Body)
		}
		if !strings.Contains(string(a.Body), "per hour") {
			t.Errorf("the refusal does not name the window: %s", a.Body)
		}
	})

	t.Run("the service down, and the client gone during the check", func(t *testing.T) {
		_, p := startFailoverPlugin(t, h, budgetV8Config)
		x := budgetChatV8(200, usage)
		x.Callouts = []CalloutAnswer{{Failed: true}}
		if o := play(t, p, x); o.Upstream == nil || answerOf(o).Status != 200 {
			t.Fatalf("fail-open: upstream %v, client %d", o.Upstream != nil, answerOf(o).Status)
		}
		x = budgetChatV8(200, usage)
		x.Callouts = []CalloutAnswer{{ClientGone: true}}
		if o := play(t, p, x); o.Upstream != nil || !o.ClientGone {
			t.Fatalf("client gone: upstream %v, gone %v", o.Upstream != nil, o.ClientGone)
		}
		// The VM is alive and serves the next request.
		x = budgetChatV8(200, usage)
		x.Callouts = []CalloutAnswer{rateLimitAnswer(false)}
		if o := play(t, p, x); o.Upstream == nil {
			t.Fatalf("after the client left: %+v", o.Local)
		}
	})
}

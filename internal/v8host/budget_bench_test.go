package v8host

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkV8BudgetCost is the filter's own CPU per chat request under V8 with budgets off and on, in one
// run: the same exchange, the admission's callout answered at once from the exchange (no network), the
// charges left queued (their flush, one callout per tick for every request of the period, is amortized
// away). CPU time is the node process's, per exchange, as in BenchmarkV8Lifecycle; on/off is the cost.
func BenchmarkV8BudgetCost(b *testing.B) {
	wasm := filterWasm(b)
	h := sharedHost(b)
	load(b, h, "aidialect", wasm)
	body := `{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` +
		strings.Repeat("Tell me about the weather in Paris in spring. ", 20) + `"}],"max_tokens":200}`
	usage := `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`
	off := strings.Replace(budgetV8Config, `"budgets": {"per": ["consumer"], "timeout_ms": 200}`, `"usage": "force"`, 1)
	noReserve := strings.Replace(budgetV8Config, `"timeout_ms": 200`, `"timeout_ms": 200, "reserve": false`, 1)
	for _, c := range []struct{ name, config string }{{"budgets-off", off}, {"budgets-on", budgetV8Config}, {"budgets-on-no-reserve", noReserve}} {
		b.Run(c.name, func(b *testing.B) {
			vm, err := h.NewVM("aidialect", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			p, err := vm.Start(c.config)
			if err != nil {
				b.Fatal(err)
			}
			x := budgetChatV8(200, usage)
			x.Request.Chunks = [][]byte{[]byte(body)}
			for i, kv := range x.Request.Headers {
				if kv[0] == "content-length" {
					x.Request.Headers[i][1] = strconv.Itoa(len(body))
				}
			}
			if c.name != "budgets-off" {
				x.Callouts = []CalloutAnswer{rateLimitAnswer(false)}
			}
			ref, err := h.Define(x)
			if err != nil {
				b.Fatal(err)
			}
			// Warm up: V8 compiles each function on first call.
			if _, err := p.Loop([]Ref{ref}, 3000, nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			res, err := p.Loop([]Ref{ref}, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			if res.LastStatus != 200 {
				b.Fatalf("client status %d", res.LastStatus)
			}
			b.ReportMetric(float64(res.NS)/float64(b.N), "ns/op")
			b.ReportMetric(float64(res.CPUNS)/float64(b.N), "cpu-ns/op")
		})
	}
}

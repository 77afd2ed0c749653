package main

import (
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// BenchmarkBudgetCost is the filter's own cost of a chat request with budgets off and on, natively and in
// the compiled module under wazero, in one run: the same exchange (request, JSON answer with usage), the
// admission's callout answered at once by a canned OK (no network: the service's round trip is measured in
// e2e's BenchmarkAdmissionLatency), and a tick every 64 requests sending the charges. The budgets' cost is
// the on/off ratio of each engine.
func BenchmarkBudgetCost(b *testing.B) {
	ok := hostemu.CalloutAnswer{Headers: [][2]string{{":status", "200"}, {"content-type", "application/json"}},
		Body: []byte(`{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":{"requestsPerUnit":1000000000,"unit":"DAY"},"limitRemaining":999999000,"durationUntilReset":"3600s"}]}`)}
	answer := func(hostemu.Callout) hostemu.CalloutAnswer { return ok }
	body := `{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"` +
		strings.Repeat("Tell me about the weather in Paris in spring. ", 20) + `"}],"max_tokens":200}`
	headers := [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gateway.local"},
		{"content-type", "application/json"}, {"authorization", "Bearer key-a"}}
	for _, engine := range []string{"native", "wasm"} {
		var vm types.VMContext = &vmContext{}
		if engine == "wasm" {
			w, err := proxytest.NewWasmVMContext(wasmModule)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			vm = w
		}
		for _, budgets := range []string{"off", "on"} {
			b.Run(engine+"/budgets-"+budgets, func(b *testing.B) {
				config := budgetTestConfig(`"per": ["consumer", "consumer_model"]`)
				if budgets == "off" {
					config = strings.Replace(config, `"budgets": {"per": ["consumer", "consumer_model"]}`, `"usage": "force"`, 1)
				}
				host, err := hostemu.New(vm, []byte(config))
				if err != nil {
					b.Fatal(err)
				}
				defer host.Close()
				host.RootCallouts = answer
				w := &recorder{}
				run := func() {
					x := host.Begin()
					x.Callouts = answer
					if err := x.SendRequest(headers, [][]byte{[]byte(body)}); err != nil || x.Upstream == nil {
						b.Fatalf("request: %v %+v", err, x.Local)
					}
					if err := x.RelayResponse(200, jsonHead, strings.NewReader(chatUsage70), nil, w); err != nil || w.status != 200 {
						b.Fatalf("answer: %v %d", err, w.status)
					}
					x.Finish()
				}
				for range 64 {
					run()
				}
				b.ResetTimer()
				for i := range b.N {
					run()
					if i%64 == 63 {
						if err := host.Tick(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

package v8host

import (
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/tidwall/gjson"
)

// TestBodyWatchUnderV8 is plugin's TestBodyWatchAnswersWithheldBodies in short, under V8: on a host that
// withholds request bodies after a paused headers callback (an Envoy whose Wasm configuration lost
// allow_on_headers_stop_iteration), a body-routed request is answered from the plugin's tick with 408
// body_never_arrived once body_wait_seconds passed, through proxy_set_effective_context and the checks of
// any local reply; a request whose body arrives is never touched by the watch.
func TestBodyWatchUnderV8(t *testing.T) {
	vm := filterVM(t)
	plugin, err := vm.Start(`{"providers":[{"name":"openai","dialect":"openai","host":"api.openai.com","api_key":"sk-provider",
	  "models":[{"name":"*"}]}],"body_wait_seconds":1}`)
	if err != nil {
		t.Fatal(err)
	}
	defer plugin.Stop()
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	x := v8Exchange(benchdata.NewExchange("", "POST", "/v1/chat/completions", benchdata.ClientHeaders(), body, 1))
	x.WithholdBodies = true
	o, err := plugin.Exchange(x)
	if err != nil {
		t.Fatal(err)
	}
	if o.Withheld == 0 || o.Local != nil || o.Upstream != nil || o.Verdict() != "" {
		t.Fatalf("the body-routed request was not held: %+v", o)
	}
	// The same host delivering bodies: that request goes upstream and the watch forgets it.
	x.WithholdBodies = false
	delivered, err := plugin.Exchange(x)
	if err != nil || delivered.Upstream == nil || delivered.Verdict() != "" {
		t.Fatalf("with its body delivered the request did not go upstream: %v %+v", err, delivered)
	}
	replies, err := plugin.Tick()
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != 0 {
		t.Fatalf("answered before body_wait_seconds: %+v", replies[0])
	}
	if replies, err = plugin.Tick(); err != nil { // the second tick: one full second certainly passed
		t.Fatal(err)
	}
	if len(replies) != 1 || replies[0].Withheld != o.Withheld {
		t.Fatalf("want the withheld request answered by the tick, got %d replies", len(replies))
	}
	r := replies[0]
	if r.Rule != nil {
		t.Fatalf("the tick's reply breaks a host rule: %s", r.Rule)
	}
	if r.Local == nil || r.Local.Status != 408 || gjson.GetBytes(r.Local.Body, "error.code").String() != "body_never_arrived" {
		t.Fatalf("tick reply %+v", r.Local)
	}
	if msg := gjson.GetBytes(r.Local.Body, "error.message").String(); !strings.Contains(msg, "allow_on_headers_stop_iteration") {
		t.Errorf("the message does not name the setting: %q", msg)
	}
	if n, err := vm.Counter("aidialect_filter_errors_total.code.body_never_arrived"); err != nil || n != 1 {
		t.Errorf("body_never_arrived counted %d times (%v), want 1", n, err)
	}
}

// TestBadConfigurationRefusedUnderV8: a configuration the filter refuses fails the plugin's start under V8,
// and the error carries the plugin's critical log line naming the field (what Envoy logs when it rejects it).
func TestBadConfigurationRefusedUnderV8(t *testing.T) {
	vm := filterVM(t)
	_, err := vm.Start(`{"providers":[{"name":"openai","dialect":"no-such-dialect","host":"h","api_key":"k","models":[{"name":"*"}]}]}`)
	if err == nil || !strings.Contains(err.Error(), "refused to start") || !strings.Contains(err.Error(), "dialect") {
		t.Fatalf("want a refused start naming the dialect, got %v", err)
	}
	// The VM lives on: a good configuration starts.
	p, err := vm.Start(`{"providers":[{"name":"openai","dialect":"openai","host":"h","api_key":"k","models":[{"name":"*"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
}

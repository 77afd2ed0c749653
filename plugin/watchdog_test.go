package main

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/translate"
)

// TestBodyWatchAnswersWithheldBodies: on a host that withholds request bodies after a paused header callback
// (an Envoy whose Wasm configuration lost allow_on_headers_stop_iteration), a body-routed request is answered
// with 408 body_never_arrived in its dialect once body_wait_seconds passed, instead of hanging; requests whose
// bodies arrive, and requests routed on their request line, are never touched by the watch.
func TestBodyWatchAnswersWithheldBodies(t *testing.T) {
	cfg := withSetting(hardeningConfig, `"body_wait_seconds": 1`)
	openai, azureDeployment, azureAI := clientShapes[0], clientShapes[1], clientShapes[3]
	request := func(s clientShape) ([][2]string, [][]byte) {
		ex := s.request(s.body(""))
		h := append([][2]string{{":method", "POST"}, {":path", ex.path}, {":authority", "gateway.local"}}, ex.headers...)
		return h, [][]byte{[]byte(ex.body[0])}
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			host, err := hostemu.New(md.vm(t), []byte(cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			host.WithholdBodies = true
			stuck := map[translate.Dialect]*hostemu.Exchange{}
			for _, s := range []clientShape{openai, azureAI} {
				x := host.Begin()
				h, b := request(s)
				if err := x.SendRequest(h, b); err != nil {
					t.Fatal(err)
				}
				if !x.Withheld() {
					t.Fatalf("%s: the body-routed request was not held (local %v, upstream %v)", s.name, x.Local, x.Upstream)
				}
				stuck[s.client] = x
			}
			// Routed on its request line: its headers continue, so the host delivers its body as usual.
			routed := host.Begin()
			h, b := request(azureDeployment)
			if err := routed.SendRequest(h, b); err != nil || routed.Upstream == nil {
				t.Fatalf("the deployment-path request did not go upstream: %v %v", err, routed.Local)
			}
			if err := host.Tick(); err != nil {
				t.Fatal(err)
			}
			for d, x := range stuck {
				if err := x.CheckTickReply(); err != nil || x.Local != nil {
					t.Fatalf("%s answered before body_wait_seconds: %v %v", d, err, x.Local)
				}
			}
			if err := host.Tick(); err != nil { // the second tick: one full second certainly passed
				t.Fatal(err)
			}
			for d, x := range stuck {
				if err := x.CheckTickReply(); err != nil {
					t.Fatal(err)
				}
				if x.Local == nil {
					t.Fatalf("%s: still hanging after body_wait_seconds", d)
				}
				checkErrorEnvelope(t, d, 408, x.Local.Body, string(translate.ErrBodyNeverArrived))
				if msg := gjson.GetBytes(x.Local.Body, "error.message").String(); !containsAll(msg, "allow_on_headers_stop_iteration", "client stopped sending") {
					t.Errorf("%s: the message does not name both causes: %q", d, msg)
				}
				x.Finish()
			}
			routed.Finish()
			if n, _ := host.Counter(metricFilterErrors + ".code." + string(translate.ErrBodyNeverArrived)); n != 2 {
				t.Errorf("%s counted %d times, want 2", translate.ErrBodyNeverArrived, n)
			}
			_, _, critical := host.Logs()
			if len(critical) != 1 || !containsAll(critical[0], "allow_on_headers_stop_iteration") {
				t.Errorf("want one critical log naming the setting, got %q", critical)
			}

			// The same host delivering bodies: a request answered normally is forgotten by the watch.
			host.WithholdBodies = false
			x := host.Begin()
			h, b = request(openai)
			if err := x.SendRequest(h, b); err != nil || x.Upstream == nil {
				t.Fatalf("with its body delivered the request did not go upstream: %v %v", err, x.Local)
			}
			for range 3 {
				if err := host.Tick(); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.CheckTickReply(); err != nil || x.Local != nil {
				t.Errorf("the watch answered a request whose body arrived: %v %v", err, x.Local)
			}
			x.Finish()
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestStartWarnsAboutVersionsWithoutAnOperation: the plugin logs, when it starts, what check-config warns
// about: a pinned api_version without an operation whose requests it will refuse.
func TestStartWarnsAboutVersionsWithoutAnOperation(t *testing.T) {
	cfg := `{"providers":[{"name":"llama","dialect":"azure-ai","host":"h","api_version":"2024-05-01-preview","api_key":"k","models":[{"name":"*"}]}]}`
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			stop := hostLogs()
			host, err := hostemu.New(md.vm(t), []byte(cfg))
			logs := stop()
			if err != nil {
				t.Fatal(err)
			}
			host.Close()
			if !containsLine(logs["warn"], `provider "llama": api_version "2024-05-01-preview" has no completions operation`) {
				t.Errorf("no start warning: %q", logs["warn"])
			}
		})
	}
}

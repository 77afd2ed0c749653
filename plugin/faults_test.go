//go:build aidialect_faults

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// Run with: go test -tags aidialect_faults -run Fault ./plugin (make test does).

// faultModes runs natively, and in a module built with the same tag (the default module ignores the header).
func faultModes(t *testing.T) []mode {
	dir := t.TempDir()
	path := filepath.Join(dir, "aidialect-faults.wasm")
	build := exec.Command("go", "build", "-tags", "aidialect_faults", "-buildmode=c-shared", "-trimpath", "-o", path, ".")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fault-injection module: %v\n%s", err, out)
	}
	module, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var vm proxytest.WasmVMContext
	t.Cleanup(func() {
		if vm != nil {
			vm.Close()
		}
	})
	return []mode{
		{"native", func(*testing.T) types.VMContext { return &vmContext{} }},
		{"wasm", func(t *testing.T) types.VMContext {
			if vm == nil {
				if vm, err = proxytest.NewWasmVMContext(module); err != nil {
					t.Fatal(err)
				}
			}
			return vm
		}},
	}
}

// TestFaultContainment makes each callback panic in turn: the exchange ends cleanly (a 500 in the client's
// dialect while a local reply is still possible), and the next request on the same VM succeeds.
func TestFaultContainment(t *testing.T) {
	callbacks := []struct {
		name      string
		wantLocal bool // the panic happens before any answer went to the client
	}{
		{"OnHttpRequestHeaders", true},
		{"OnHttpRequestBody", true},
		{"OnHttpResponseHeaders", true},
		{"OnHttpResponseBody", false},
		{"OnHttpStreamDone", false},
	}
	for _, md := range faultModes(t) {
		t.Run(md.name, func(t *testing.T) {
			host, err := hostemu.New(md.vm(t), []byte(testConfig))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			for _, cb := range callbacks {
				t.Run(cb.name, func(t *testing.T) {
					x := host.Begin()
					err := x.SendRequest([][2]string{{":method", "POST"}, {":path", "/chat/completions?api-version=2024-05-01-preview"},
						{":authority", "gw"}, {"api-key", "k"}, {"x-aidialect-test-panic", cb.name}},
						[][]byte{[]byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)})
					if err != nil {
						t.Fatal(err)
					}
					w := &recorder{}
					if x.Local == nil {
						err = x.RelayResponse(200, jsonHeaders, strings.NewReader(chatOK), nil, w)
						if err != nil {
							t.Fatal(err)
						}
					} else {
						w.status, w.body = x.Local.Status, x.Local.Body
					}
					x.Finish()
					if cb.wantLocal {
						if w.status != 500 || gjson.GetBytes(w.body, "error.code").String() != "internal_error" ||
							gjson.GetBytes(w.body, "error.status").Int() != 500 {
							t.Errorf("after a panic in %s the client got %d %s, want a 500 in the azure-ai envelope", cb.name, w.status, w.body)
						}
					}
					if cb.name == "OnHttpResponseBody" && (gjson.GetBytes(w.body, "error.code").String() != "internal_error" ||
						bytes.Contains(w.body, []byte(`"chat.completion"`))) {
						// The status went out with the headers; the upstream's bytes must not follow it untranslated.
						t.Errorf("after a panic translating the answer the client got %s, want the error in its envelope alone", w.body)
					}
					if n, _ := host.Counter("aidialect_filter_errors_total.code.panic"); n == 0 {
						t.Errorf("the panic in %s was not counted", cb.name)
					}
					// The VM lives on: the next request on the same host goes through.
					next := host.Begin()
					defer next.Finish()
					if err := next.SendRequest([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gw"}},
						[][]byte{[]byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)}); err != nil || next.Upstream == nil {
						t.Fatalf("the next request after a panic in %s failed: %v %+v", cb.name, err, next.Local)
					}
					out := &recorder{}
					if err := next.RelayResponse(200, jsonHeaders, strings.NewReader(chatOK), nil, out); err != nil || out.status != 200 ||
						!bytes.Contains(out.body, []byte(`"hi"`)) {
						t.Fatalf("the next answer after a panic in %s: %v %d %s", cb.name, err, out.status, out.body)
					}
				})
			}
		})
	}
}

// TestFaultInStreamEndsIt: a panic while translating a stream ends the client's stream with an error event in
// its dialect and its [DONE]; neither the chunk being translated nor any later one reaches the client as the
// upstream sent it (a provider key in it included).
func TestFaultInStreamEndsIt(t *testing.T) {
	const secret = "sk-upstream-secret-0123456789"
	for _, md := range faultModes(t) {
		t.Run(md.name, func(t *testing.T) {
			host, err := hostemu.New(md.vm(t), []byte(testConfig))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			x := host.Begin()
			defer x.Finish()
			err = x.SendRequest([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gw"},
				{"accept", "text/event-stream"}, {"x-aidialect-test-panic", "OnHttpResponseBody"}},
				[][]byte{[]byte(`{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"hi"}]}`)})
			if err != nil || x.Upstream == nil {
				t.Fatalf("%v %+v", err, x.Local)
			}
			event := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + secret + `"}}]}` + "\n\n"
			w := &recorder{}
			err = x.RelayResponse(200, [][2]string{{"content-type", "text/event-stream"}},
				&chunkReader{chunks: []string{event, event, "data: [DONE]\n\n"}}, nil, w)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(w.body, []byte(secret)) || bytes.Contains(w.body, []byte("chat.completion.chunk")) {
				t.Errorf("the upstream's events reached the client after the failure: %q", w.body)
			}
			if !bytes.Contains(w.body, []byte(`"code":"internal_error"`)) || !bytes.HasSuffix(w.body, []byte("data: [DONE]\n\n")) ||
				bytes.Count(w.body, []byte("[DONE]")) != 1 {
				t.Errorf("the client's stream did not end with one error event and one [DONE]: %q", w.body)
			}
		})
	}
}

// TestFaultInResponseTrailers: a panic in the response trailers callback. Envoy holds no body there unless a
// body callback paused: a stream's client gets the events already sent and nothing more (no write the host
// would refuse), a held JSON body becomes the error in the client's envelope; the VM lives on.
func TestFaultInResponseTrailers(t *testing.T) {
	stream := "data: " + `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"
	for _, md := range faultModes(t) {
		for _, tc := range []struct {
			name, contentType, body string
			check                   func(t *testing.T, body []byte)
		}{
			{"stream", "text/event-stream", stream, func(t *testing.T, body []byte) {
				if string(body) != stream {
					t.Errorf("the client got %q, want the events sent before the trailers and nothing more", body)
				}
			}},
			{"json", "application/json", chatOK, func(t *testing.T, body []byte) {
				if gjson.GetBytes(body, "error.code").String() != "internal_error" {
					t.Errorf("the client got %s, want the error in its envelope", body)
				}
			}},
		} {
			t.Run(md.name+"/"+tc.name, func(t *testing.T) {
				host, err := hostemu.New(md.vm(t), []byte(testConfig))
				if err != nil {
					t.Fatal(err)
				}
				defer host.Close()
				x := host.Begin()
				err = x.SendRequest([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gw"},
					{"x-aidialect-test-panic", "OnHttpResponseTrailers"}},
					[][]byte{[]byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)})
				if err != nil || x.Local != nil {
					t.Fatalf("request: %v %+v", err, x.Local)
				}
				w := &recorder{}
				trailers := func() [][2]string { return [][2]string{{"x-upstream-done", "1"}} }
				if err := x.RelayResponse(200, [][2]string{{"content-type", tc.contentType}}, strings.NewReader(tc.body), trailers, w); err != nil {
					t.Fatalf("the answer broke a host rule: %v", err)
				}
				x.Finish()
				tc.check(t, w.body)
				if n, _ := host.Counter("aidialect_filter_errors_total.code.panic"); n == 0 {
					t.Error("the panic was not counted")
				}
				next := host.Begin()
				defer next.Finish()
				if err := next.SendRequest([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gw"}},
					[][]byte{[]byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)}); err != nil || next.Upstream == nil {
					t.Fatalf("the next request after the panic: %v %+v", err, next.Local)
				}
			})
		}
	}
}

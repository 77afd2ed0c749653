package v8host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/goldencase"
)

// The golden configuration and expectations are plugin/golden_test.go's (goldenConfig, runGoldenCase,
// checkUpstream, checkClient), restated here: that package is a main package and cannot be imported.
const (
	goldenHost           = "provider.test"
	goldenProviderName   = "upstream"
	defaultRoutingHeader = "x-aidialect-provider"
)

// goldenCut is one way of cutting a case's bytes into callbacks.
type goldenCut struct {
	name     string
	request  int  // request body chunk size; 0: two halves, as plugin/golden_test.go cuts it
	response int  // upstream answer chunk size
	streams  bool // only for event-stream answers
}

var goldenCuts = []goldenCut{
	{name: "whole", response: 1 << 20},
	{name: "61", request: 17, response: 61},
	{name: "7", response: 7, streams: true},
	{name: "1", request: 5, response: 1, streams: true},
}

// TestGoldenCasesUnderV8 replays every testdata/cases folder through dist/aidialect.wasm under V8 (host.mjs,
// with the host rules of internal/hostemu/rules.json), with the request and the answer cut into chunks
// (event streams at four cuts, down to one byte per callback), and compares with the same expected files
// plugin/golden_test.go holds the filter to under wazero and natively. One node process and one VM serve
// every case; each run starts a plugin with the case's configuration, as the plugin tests do.
func TestGoldenCasesUnderV8(t *testing.T) {
	wasm := filterWasm(t)
	h := sharedHost(t)
	load(t, h, "aidialect", wasm)
	cases, err := goldencase.Load(filepath.Join("..", goldencase.Dir))
	if err != nil {
		t.Fatal(err)
	}
	var vm *VM
	for _, c := range cases {
		if vm == nil {
			// A trap kills the VM, and only the case that trapped fails: the next one gets a new VM.
			if vm, err = h.NewVM("aidialect", nil); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(c.Name, func(t *testing.T) {
			if runGoldenCase(t, vm, c) {
				vm.Close()
				vm = nil
			}
		})
	}
	if vm != nil {
		vm.Close()
	}
}

func goldenConfig(t *testing.T, c goldencase.Case) string {
	t.Helper()
	provider := c.Provider.PluginProvider(goldenProviderName, goldenHost, "*")
	cfg := map[string]any{"providers": []any{provider}}
	if c.OnchainData != "" {
		cfg["onchain_data"] = c.OnchainData
	}
	if c.PathPrefix != "" {
		cfg["path_prefix"] = c.PathPrefix
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// split cuts b into pieces of at most n bytes.
func split(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, b[:k:k])
		b = b[k:]
	}
	return out
}

// runGoldenCase reports whether the VM trapped.
func runGoldenCase(t *testing.T, vm *VM, c goldencase.Case) (trapped bool) {
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	status, err := strconv.Atoi(resp.First)
	if err != nil {
		t.Fatalf("upstream status %q", resp.First)
	}
	wantUp, upstreamExpected, err := c.Expected("upstream_request.http")
	if err != nil {
		t.Fatal(err)
	}
	wantClient, _, err := c.Expected("client_response.http")
	if err != nil {
		t.Fatal(err)
	}
	headers := Headers{{":method", method}, {":path", path}, {":authority", "gateway.local"}}
	for _, h := range req.Headers {
		if h[0] != "content-length" {
			headers = append(headers, h)
		}
	}
	if len(req.Body) > 0 {
		headers = append(headers, [2]string{"content-length", strconv.Itoa(len(req.Body))})
	}
	stream := strings.Contains(resp.Header("content-type"), "event-stream")
	config := goldenConfig(t, c)
	for _, cut := range goldenCuts {
		if cut.streams && !stream {
			continue
		}
		reqCut := cut.request
		if reqCut == 0 {
			reqCut = max(len(req.Body)/2+1, 1)
		}
		x := &Exchange{
			Request:  Message{Headers: headers, Chunks: split(req.Body, reqCut)},
			Response: &Message{Status: status, Headers: resp.Headers, Chunks: split(resp.Body, cut.response)},
		}
		o, err := vm.Run(config, x)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("cut %s", cut.name)
		if o.StartError != "" {
			t.Fatalf("%s: the plugin did not start: %s %v", where, o.StartError, o.Critical)
		}
		if o.Dead != "" {
			t.Errorf("%s: the VM trapped: %s", where, o.Dead)
			return true
		}
		if o.Rule != nil {
			t.Errorf("%s: host rule broken: %s", where, o.Rule)
		}
		for _, l := range o.Critical {
			if strings.Contains(l, "panic") {
				t.Errorf("%s: the filter panicked: %s", where, l)
			}
		}
		if !upstreamExpected {
			if o.Local == nil {
				t.Fatalf("%s: expected a local reply, the request went upstream: %s", where, o.Upstream.Body)
			}
		} else {
			if o.Upstream == nil || o.Local != nil {
				t.Fatalf("%s: no upstream request (local reply %+v)", where, o.Local)
			}
			checkUpstream(t, where, o, wantUp)
		}
		checkClient(t, where, o, wantClient)
	}
	return false
}

func checkUpstream(t *testing.T, where string, o *Outcome, want goldencase.Message) {
	t.Helper()
	head := o.Upstream.Headers.Map()
	_, wantPath, _ := strings.Cut(want.First, " ")
	if got := head[":path"]; got != wantPath {
		t.Errorf("%s: :path %q, want %q", where, got, wantPath)
	}
	if got := head[":authority"]; got != goldenHost {
		t.Errorf("%s: :authority %q, want %q", where, got, goldenHost)
	}
	if got := head[defaultRoutingHeader]; got != goldenProviderName {
		t.Errorf("%s: routing header %q, want %q", where, got, goldenProviderName)
	}
	if o.RouteClears == 0 {
		t.Errorf("%s: clear_route_cache was not called after the header edits", where)
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if got := head[h[0]]; got != h[1] {
			t.Errorf("%s: upstream header %s = %q, want %q", where, h[0], got, h[1])
		}
	}
	for _, name := range []string{"authorization", "api-key", "accept-encoding", "openai-organization", "extra-parameters", "azureml-model-deployment"} {
		if _, has := head[name]; has && want.Header(name) == "" {
			t.Errorf("%s: upstream request carries %s: %q", where, name, head[name])
		}
	}
	if !bytes.Equal(o.Upstream.Body, want.Body) {
		t.Errorf("%s: upstream body\n got %s\nwant %s", where, o.Upstream.Body, want.Body)
	}
}

func checkClient(t *testing.T, where string, o *Outcome, want goldencase.Message) {
	t.Helper()
	got := o.Client
	if o.Local != nil && got == nil {
		got = o.Local
	}
	if got == nil {
		t.Fatalf("%s: the client got nothing", where)
	}
	head := got.Headers.Map()
	if s := strconv.Itoa(got.Status); s != want.First {
		t.Errorf("%s: client status %s, want %s (body %s)", where, s, want.First, got.Body)
	}
	for _, h := range want.Headers {
		if h[0] == "content-length" {
			continue
		}
		if v := head[h[0]]; v != h[1] {
			t.Errorf("%s: client header %s = %q, want %q", where, h[0], v, h[1])
		}
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("%s: client body\n got %s\nwant %s", where, got.Body, want.Body)
	}
}

package v8host

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/goldencase"
)

// The golden configuration and expectations are plugin/golden_test.go's: goldencase.Case.PluginConfig,
// goldencase.CheckUpstream and goldencase.CheckClient.

// goldenCut is one way of cutting a case's bytes into callbacks.
type goldenCut struct {
	name     string
	request  int  // request body chunk size; 0: two halves, as plugin/golden_test.go cuts it
	response int  // upstream answer chunk size
	streams  bool // only for event-stream answers
	// endWithLast: the last answer chunk carries end_of_stream (plugin/golden_test.go plays the same).
	endWithLast bool
}

var goldenCuts = []goldenCut{
	{name: "whole", response: 1 << 20},
	{name: "61", request: 17, response: 61},
	{name: "61, end_of_stream with the last chunk", request: 17, response: 61, endWithLast: true},
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

// runGoldenCase reports whether the VM trapped.
func runGoldenCase(t *testing.T, vm *VM, c goldencase.Case) (trapped bool) {
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	status, err := strconv.Atoi(resp.First)
	if err != nil {
		t.Fatalf("upstream status %q", resp.First)
	}
	want, err := c.Want()
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
	config, err := c.PluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range goldenCuts {
		if cut.streams && !stream {
			continue
		}
		reqCut := cut.request
		if reqCut == 0 {
			reqCut = max(len(req.Body)/2+1, 1)
		}
		x := &Exchange{
			Request:  Message{Headers: headers, Chunks: benchdata.Split(req.Body, reqCut)},
			Response: &Message{Status: status, Headers: resp.Headers, Chunks: benchdata.Split(resp.Body, cut.response), EndWithLast: cut.endWithLast},
		}
		// Each replay is its own deployment: what an earlier replay's 429 or 503 benched is not this one's.
		if err := vm.h.ClearSharedData(); err != nil {
			t.Fatal(err)
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
		if !want.Upstreamed {
			if o.Local == nil {
				t.Fatalf("%s: expected a local reply, the request went upstream: %s", where, o.Upstream.Body)
			}
		} else {
			if o.Upstream == nil || o.Local != nil {
				t.Fatalf("%s: no upstream request (local reply %+v)", where, o.Local)
			}
			goldencase.CheckUpstream(t, where, seen(o), want.Upstream)
		}
		checkClient(t, where, o, want.Client)
	}
	return false
}

// checkClient holds what the client got, a relayed answer or the filter's own reply, to want.
func checkClient(t *testing.T, where string, o *Outcome, want goldencase.Message) {
	t.Helper()
	if o.Client == nil && o.Local == nil {
		t.Fatalf("%s: the client got nothing", where)
	}
	goldencase.CheckClient(t, where, seen(o), want)
}

// seen is the outcome in the golden checks' terms.
func seen(o *Outcome) goldencase.Seen {
	s := goldencase.Seen{RouteClears: o.RouteClears}
	if o.Upstream != nil {
		s.UpstreamHead, s.UpstreamBody = o.Upstream.Headers.Map(), o.Upstream.Body
		s.Provider = s.UpstreamHead[goldencase.RoutingHeader]
	}
	client := o.Client
	if client == nil {
		client = o.Local
	}
	if client != nil {
		s.Status, s.ClientHead, s.ClientBody = client.Status, client.Headers.Map(), client.Body
	}
	return s
}

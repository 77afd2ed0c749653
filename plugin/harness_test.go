package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// The harness drives the filter the way Envoy does and checks the host rules of
// shared/reference/envoy-host.md sections 1-5 itself, because proxytest enforces none of them. Every case
// runs twice: natively, and in the compiled dist/aidialect.wasm under wazero.

var wasmModule []byte

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package; the assertions say what matters.
	log.SetOutput(io.Discard)
	path := os.Getenv("AIDIALECT_WASM")
	if path == "" {
		dir, err := os.MkdirTemp("", "aidialect-wasm")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "aidialect.wasm")
		build := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", path, ".")
		build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the wasm module for the wasm-mode tests failed: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	var err error
	if wasmModule, err = os.ReadFile(path); err != nil {
		fmt.Fprintf(os.Stderr, "reading %s: %v (run make build, or unset AIDIALECT_WASM)\n", path, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// mode is how the filter runs: as Go code, or as the compiled module.
type mode struct {
	name string
	vm   func(t *testing.T) types.VMContext
}

var sharedWasmVM proxytest.WasmVMContext

var modes = []mode{
	{"native", func(*testing.T) types.VMContext { return &vmContext{} }},
	{"wasm", func(t *testing.T) types.VMContext {
		if sharedWasmVM == nil {
			vm, err := proxytest.NewWasmVMContext(wasmModule)
			if err != nil {
				t.Fatalf("loading the wasm module: %v", err)
			}
			sharedWasmVM = vm
		}
		return sharedWasmVM
	}},
}

// exchange is one client request and, if the filter lets it through, the upstream's answer.
type exchange struct {
	config   string
	env      map[string]string // native mode only (proxytest's wasm mode sets no environment)
	method   string
	path     string
	headers  [][2]string
	body     []string // request body chunks; empty: a body-less request
	upstream *upstreamAnswer
	// trailers ends the upstream answer with trailers instead of end_of_stream on its last chunk.
	trailers bool
	// onDone runs after the exchange, while the host (and its metrics) still exist.
	onDone func(o *outcome)
}

type upstreamAnswer struct {
	status  int
	headers [][2]string
	chunks  []string
}

// outcome is what the harness observed.
type outcome struct {
	local         *proxytest.LocalHttpResponse // the filter answered itself
	upstreamHead  map[string]string            // request headers as sent upstream
	upstreamBody  []byte
	upstreamCalls int
	status        int
	clientHead    map[string]string // response headers as sent to the client
	clientBody    []byte
	routeClears   int
	violations    []string
	criticalLogs  []string
	warnLogs      []string
	// counter reads a metric; valid only inside the exchange's onDone hook (the host is reset afterwards).
	counter func(name string) uint64
}

func (o *outcome) violate(rule, format string, args ...any) {
	o.violations = append(o.violations, rule+": "+fmt.Sprintf(format, args...))
}

func headerMap(h [][2]string) map[string]string {
	m := make(map[string]string, len(h))
	for _, kv := range h {
		m[strings.ToLower(kv[0])] = strings.Clone(kv[1])
	}
	return m
}

func sameHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// run plays one exchange through a fresh host emulator.
func run(t *testing.T, md mode, ex exchange) *outcome {
	t.Helper()
	o := &outcome{}
	if md.name == "native" {
		env := ex.env
		getenv = func(k string) string { return env[k] }
		defer func() { getenv = os.Getenv }()
	}
	opt := proxytest.NewEmulatorOption().WithVMContext(md.vm(t)).WithPluginConfiguration([]byte(ex.config))
	host, reset := proxytest.NewHostEmulator(opt)
	defer reset()
	if ex.onDone != nil {
		defer func() { ex.onDone(o) }()
	}
	host.RegisterForeignFunction("clear_route_cache", func([]byte) []byte { o.routeClears++; return []byte{0} })
	if host.StartPlugin() != types.OnPluginStartStatusOK {
		o.criticalLogs = host.GetCriticalLogs()
		return o
	}
	id := host.InitializeHttpContext()
	reqHeaders := append([][2]string{{":method", ex.method}, {":path", ex.path}, {":authority", "gateway.local"}}, ex.headers...)
	if len(ex.body) > 0 {
		total := 0
		for _, c := range ex.body {
			total += len(c)
		}
		if !hasHeader(ex.headers, "content-length") {
			reqHeaders = append(reqHeaders, [2]string{"content-length", strconv.Itoa(total)})
		}
	}
	action := host.CallOnRequestHeaders(id, reqHeaders, len(ex.body) == 0)
	var frozen map[string]string // request headers once they went upstream
	checkFrozen := func(where string) {
		if frozen != nil && !sameHeaders(frozen, headerMap(host.GetCurrentRequestHeaders(id))) {
			o.violate("envoy-host 1 (headers edited after Continue)", "request headers changed in %s", where)
		}
	}
	if o.finishLocal(host, id, action, "OnHttpRequestHeaders") {
		return o.complete(host, id)
	}
	if action == types.ActionContinue {
		frozen = headerMap(host.GetCurrentRequestHeaders(id))
	}
	var sentBody []byte
	for i, chunk := range ex.body {
		last := i == len(ex.body)-1
		action = host.CallOnRequestBody(id, []byte(chunk), last)
		checkFrozen("OnHttpRequestBody")
		if o.finishLocal(host, id, action, "OnHttpRequestBody") {
			return o.complete(host, id)
		}
		if action == types.ActionContinue {
			sentBody = append(sentBody, host.GetCurrentRequestBody(id)...)
			if frozen == nil {
				frozen = headerMap(host.GetCurrentRequestHeaders(id))
			}
		} else if last {
			o.violate("envoy-host 3 (body)", "OnHttpRequestBody returned Pause at end_of_stream: the request would hang")
			return o.complete(host, id)
		}
	}
	if frozen == nil {
		o.violate("envoy-host 1 (pause)", "request headers were never released")
		return o.complete(host, id)
	}
	o.upstreamCalls = 1
	o.upstreamHead = frozen
	o.upstreamBody = sentBody
	if cl, ok := frozen["content-length"]; ok && cl != strconv.Itoa(len(sentBody)) {
		o.violate("envoy-host 3 (content-length)", "upstream content-length %s but body has %d bytes", cl, len(sentBody))
	}
	if ex.upstream == nil {
		return o.complete(host, id)
	}
	o.answer(host, id, ex)
	return o.complete(host, id)
}

func hasHeader(h [][2]string, name string) bool {
	return slices.ContainsFunc(h, func(kv [2]string) bool { return strings.EqualFold(kv[0], name) })
}

// finishLocal handles a local reply: the callback must have returned Pause, and the reply must pass back
// through the filter's response callbacks untouched (envoy-host.md section 5).
func (o *outcome) finishLocal(host proxytest.HostEmulator, id uint32, action types.Action, where string) bool {
	reply := host.GetSentLocalResponse(id)
	if reply == nil {
		return false
	}
	copied := &proxytest.LocalHttpResponse{StatusCode: reply.StatusCode, Data: bytes.Clone(reply.Data)}
	for _, h := range reply.Headers {
		copied.Headers = append(copied.Headers, [2]string{strings.Clone(h[0]), strings.Clone(h[1])})
	}
	o.local = copied
	if action != types.ActionPause {
		o.violate("envoy-host 5 (local reply)", "%s sent a local reply but returned %v, not Pause", where, action)
	}
	if ct := headerMap(copied.Headers)["content-type"]; ct == "" {
		o.violate("envoy-host 5 (local reply)", "local reply without content-type")
	}
	head := append([][2]string{{":status", strconv.Itoa(int(copied.StatusCode))}}, copied.Headers...)
	host.CallOnResponseHeaders(id, head, false)
	if got := headerMap(host.GetCurrentResponseHeaders(id)); !sameHeaders(got, headerMap(head)) {
		o.violate("envoy-host 5 (local reply)", "the filter edited its own local reply's headers: %v", got)
	}
	host.CallOnResponseBody(id, copied.Data, true)
	if got := host.GetCurrentResponseBody(id); !bytes.Equal(got, copied.Data) {
		o.violate("envoy-host 5 (local reply)", "the filter translated its own local reply again: %s", got)
	}
	o.status = int(copied.StatusCode)
	o.clientHead = headerMap(copied.Headers)
	o.clientBody = copied.Data
	return true
}

// answer plays the upstream response through the response callbacks.
func (o *outcome) answer(host proxytest.HostEmulator, id uint32, ex exchange) {
	up := ex.upstream
	head := append([][2]string{{":status", strconv.Itoa(up.status)}}, up.headers...)
	action := host.CallOnResponseHeaders(id, head, len(up.chunks) == 0)
	stream := strings.Contains(headerMap(up.headers)["content-type"], "event-stream")
	var frozen map[string]string
	if action == types.ActionContinue {
		frozen = headerMap(host.GetCurrentResponseHeaders(id))
	} else if stream {
		o.violate("envoy-host 4 (streams)", "response headers of a stream paused")
	}
	var body []byte
	for i, chunk := range up.chunks {
		last := i == len(up.chunks)-1 && !ex.trailers
		action = host.CallOnResponseBody(id, []byte(chunk), last)
		if frozen != nil && !sameHeaders(frozen, headerMap(host.GetCurrentResponseHeaders(id))) {
			o.violate("envoy-host 1 (headers edited after Continue)", "response headers changed in OnHttpResponseBody")
		}
		if stream && action != types.ActionContinue {
			o.violate("envoy-host 4 (streams)", "OnHttpResponseBody paused an SSE stream")
		}
		if action == types.ActionContinue {
			body = append(body, host.GetCurrentResponseBody(id)...)
			if frozen == nil {
				frozen = headerMap(host.GetCurrentResponseHeaders(id))
			}
		} else if last {
			o.violate("envoy-host 3 (body)", "OnHttpResponseBody returned Pause at end_of_stream")
		}
	}
	if ex.trailers {
		// Whatever the trailers callback adds to the body buffer goes out before the trailers.
		before := bytes.Clone(host.GetCurrentResponseBody(id))
		host.CallOnResponseTrailers(id, [][2]string{{"x-upstream-trailer", "1"}})
		// proxytest keeps views into the filter's buffers, which it may reuse: compare by length, the
		// emulator only appends here.
		if after := host.GetCurrentResponseBody(id); len(after) > len(before) {
			body = append(body, after[len(before):]...)
		}
		if frozen == nil {
			frozen = headerMap(host.GetCurrentResponseHeaders(id))
		}
	}
	if frozen == nil {
		o.violate("envoy-host 1 (pause)", "response headers were never released")
		frozen = headerMap(host.GetCurrentResponseHeaders(id))
	}
	o.status, _ = strconv.Atoi(frozen[":status"])
	o.clientHead = frozen
	o.clientBody = body
	if cl, ok := frozen["content-length"]; ok && cl != strconv.Itoa(len(body)) {
		o.violate("envoy-host 3 (content-length)", "client content-length %s but body has %d bytes", cl, len(body))
	}
}

func (o *outcome) complete(host proxytest.HostEmulator, id uint32) *outcome {
	host.CompleteHttpContext(id)
	o.criticalLogs = append(o.criticalLogs, host.GetCriticalLogs()...)
	o.warnLogs = append(o.warnLogs, host.GetWarnLogs()...)
	o.counter = func(name string) uint64 {
		v, err := host.GetCounterMetric(name)
		if err != nil {
			o.violations = append(o.violations, "metric "+name+" is not defined")
		}
		return v
	}
	return o
}

func (o *outcome) assertRules(t *testing.T) {
	t.Helper()
	for _, v := range o.violations {
		t.Error(v)
	}
	for _, l := range o.criticalLogs {
		if strings.Contains(l, "panic") {
			t.Errorf("the filter panicked: %s", l)
		}
	}
}

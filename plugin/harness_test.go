package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// The harness drives the filter the way Envoy does and checks the host rules of
// docs/envoy-host.md sections 1-5 itself, because proxytest enforces none of them. Every case
// runs twice: natively, and in the compiled dist/aidialect.wasm under wazero.

var wasmModule []byte

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package; the assertions say what matters.
	log.SetOutput(io.Discard)
	// The module under test: AIDIALECT_WASM (make test: dist/aidialect.wasm), else this package built for
	// wasip1 with its name section kept, so a trap names the guest's functions.
	var err error
	if wasmModule, err = wasmtest.FilterModule(wasmtest.NamedBuildFlags); err != nil {
		fmt.Fprintln(os.Stderr, err)
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
	config  string
	env     map[string]string // native mode only (proxytest's wasm mode sets no environment)
	method  string
	path    string
	headers [][2]string
	body    []string // request body chunks; empty: a body-less request
	// requestTrailers ends the request with a trailers frame instead of end_of_stream on its last chunk.
	requestTrailers [][2]string
	upstream        *upstreamAnswer
	// trailers ends the upstream answer with trailers instead of end_of_stream on its last chunk.
	trailers bool
	// upstreamTrailers are those trailers (default: x-upstream-trailer: 1).
	upstreamTrailers [][2]string
	// onDone runs after the exchange, while the host (and its metrics) still exist.
	onDone func(o *outcome)
	// callouts answers the filter's HTTP callouts (failover attempts); calloutsAfterBody delivers the answers
	// once the upstream's answer ended rather than right after the callback that made them.
	callouts          func(hostemu.Callout) hostemu.CalloutAnswer
	calloutsAfterBody bool
}

type upstreamAnswer struct {
	status  int
	headers [][2]string
	chunks  []string
	// endWithLast: the last chunk comes with end_of_stream, as Envoy often delivers it (an HTTP/2 DATA frame
	// with END_STREAM, a body whose length was announced), instead of in an empty callback of its own.
	endWithLast bool
}

// outcome is what the harness observed.
type outcome struct {
	local          *hostemu.Response // the filter answered itself
	upstreamHead   map[string]string // request headers as sent upstream
	upstreamBody   []byte
	upstreamCalls  int
	status         int
	clientHead     map[string]string // response headers as sent to the client
	clientBody     []byte
	clientTrailers map[string]string // response trailers as sent to the client (nil: none)
	routeClears    int
	violations     []string
	criticalLogs   []string
	// counter and histogram read a metric; valid only inside the exchange's onDone hook (the host is reset
	// afterwards).
	counter   func(name string) uint64
	histogram func(name string) (uint64, error)
	// callouts are the HTTP callouts the filter made, in order.
	callouts   []hostemu.Callout
	clientGone bool
}

func (o *outcome) violate(rule, format string, args ...any) {
	o.violations = append(o.violations, rule+": "+fmt.Sprintf(format, args...))
}

func headerMap(h [][2]string) map[string]string {
	m := make(map[string]string, len(h))
	for _, kv := range h {
		m[strings.ToLower(kv[0])] = kv[1]
	}
	return m
}

// recorder is the client side of an exchange.
type recorder struct {
	status   int
	headers  map[string]string
	body     []byte
	trailers map[string]string
}

func (r *recorder) WriteTrailers(trailers [][2]string) { r.trailers = headerMap(trailers) }

func (r *recorder) WriteHeaders(status int, headers [][2]string) {
	r.status, r.headers = status, headerMap(headers)
}

func (r *recorder) WriteBody(p []byte) error {
	r.body = append(r.body, p...)
	return nil
}

// chunkReader hands out one chunk per Read, like network reads; with endWithLast the last chunk comes with
// io.EOF, which hostemu delivers as data with end_of_stream.
type chunkReader struct {
	chunks      []string
	endWithLast bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if n == len(c.chunks[0]) {
		c.chunks = c.chunks[1:]
	} else {
		c.chunks[0] = c.chunks[0][n:]
	}
	if c.endWithLast && len(c.chunks) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// run plays one exchange through a fresh host.
func run(t *testing.T, md mode, ex exchange) *outcome {
	t.Helper()
	o := &outcome{}
	if md.name == "native" {
		env := ex.env
		getenv = func(k string) string { return env[k] }
		defer func() { getenv = os.Getenv }()
	}
	host, err := hostemu.New(md.vm(t), []byte(ex.config))
	if err != nil {
		o.criticalLogs = []string{err.Error()}
		return o
	}
	defer host.Close()
	return runOn(t, host, ex, o)
}

// runOn plays one exchange through a host that may have served others (whose health it remembers).
func runOn(t *testing.T, host *hostemu.Host, ex exchange, o *outcome) *outcome {
	t.Helper()
	record := func(err error) {
		var rule *hostemu.RuleError
		switch {
		case errors.As(err, &rule):
			o.violate(rule.Rule, "%s", rule.Detail)
		case err != nil:
			t.Fatal(err)
		}
	}
	x := host.Begin()
	if ex.callouts != nil {
		x.Callouts = func(c hostemu.Callout) hostemu.CalloutAnswer {
			o.callouts = append(o.callouts, c)
			return ex.callouts(c)
		}
	}
	x.CalloutsAfterBody = ex.calloutsAfterBody
	defer func() {
		x.Finish()
		_, _, critical := host.Logs()
		o.criticalLogs = append(o.criticalLogs, critical...)
		o.routeClears = host.RouteClears
		o.counter = func(name string) uint64 {
			v, err := host.Counter(name)
			if err != nil {
				o.violate("metrics", "%s is not defined", name)
			}
			return v
		}
		o.histogram = host.Histogram
		if ex.onDone != nil {
			ex.onDone(o)
		}
	}()
	headers := append([][2]string{{":method", ex.method}, {":path", ex.path}, {":authority", "gateway.local"}}, ex.headers...)
	var chunks [][]byte
	total := 0
	for _, c := range ex.body {
		chunks = append(chunks, []byte(c))
		total += len(c)
	}
	// A request ending in trailers is chunked (HTTP/1.1) or HTTP/2: it announces no length.
	if len(chunks) > 0 && ex.requestTrailers == nil && !hasHeader(ex.headers, "content-length") {
		headers = append(headers, [2]string{"content-length", strconv.Itoa(total)})
	}
	record(x.SendRequestTrailers(headers, chunks, ex.requestTrailers))
	if x.Local != nil {
		o.local = x.Local
		o.status = x.Local.Status
		o.clientHead = headerMap(x.Local.Headers)
		o.clientBody = x.Local.Body
		return o
	}
	if x.Upstream == nil {
		o.clientGone = x.ClientGone // (during a callout that held the request)
		return o
	}
	o.upstreamCalls = 1
	o.upstreamHead = headerMap(x.Upstream.Headers)
	o.upstreamBody = x.Upstream.Body
	if ex.upstream == nil {
		return o
	}
	var trailers func() [][2]string
	if ex.trailers {
		tr := ex.upstreamTrailers
		if tr == nil {
			tr = [][2]string{{"x-upstream-trailer", "1"}}
		}
		trailers = func() [][2]string { return tr }
	}
	var body io.Reader
	if len(ex.upstream.chunks) > 0 {
		body = &chunkReader{chunks: slices.Clone(ex.upstream.chunks), endWithLast: ex.upstream.endWithLast}
	}
	w := &recorder{}
	record(x.RelayResponse(ex.upstream.status, ex.upstream.headers, body, trailers, w))
	o.clientGone = x.ClientGone
	if x.Local == nil { // (a local reply from a response callback, a failover's answer, replaced the upstream's)
		record(x.CheckContentLength(len(w.body)))
	}
	o.status, o.clientHead, o.clientBody, o.clientTrailers = w.status, w.headers, w.body, w.trailers
	return o
}

func hasHeader(h [][2]string, name string) bool {
	return slices.ContainsFunc(h, func(kv [2]string) bool { return strings.EqualFold(kv[0], name) })
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

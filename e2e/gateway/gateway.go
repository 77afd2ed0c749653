// Package gateway is a local stand-in for Envoy, for development and tests only: it hosts the compiled
// dist/aidialect.wasm (wazero, through the SDK's proxytest emulator), listens on a real HTTP port, forwards
// each request to the provider the filter chose over real HTTP(S), and streams answers back as they arrive.
//
// It is strict where Envoy is unforgiving: when the filter breaks one of Envoy's host rules (README "Envoy
// contract", checked by internal/hostemu), the request fails with a 502 and a log line naming the rule.
//
// When the VM traps (a stack overflow, out of memory, unreachable: no Go panic the filter could recover), it
// behaves as Envoy with failure_policy FAIL_RELOAD, what this project ships: the failing request gets
// Envoy's answer for a failed Wasm stream (a 503 with an empty body, or a reset connection once the response
// has begun; other requests caught on the same VM fail the same way), a "VM TRAPPED" log line, and a fresh
// VM from the same module and configuration serves the requests after it. (Envoy makes the new VM for the
// first request that comes at least a backoff interval, about 1 s by default, after the last load, and
// answers 503 until then; the gateway reloads at once.)
// A request the filter leaves without a routing header (an unknown path under unknown_paths: passthrough)
// gets what the shipped Envoy configuration's catch-all route answers (CatchAll), through the filter's
// response callbacks as in Envoy.
//
// Production traffic belongs on Envoy (envoy/README.md).
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// Options configure a gateway.
type Options struct {
	// Wasm is the compiled filter.
	Wasm []byte
	// PluginConfig is the filter's configuration (JSON), as Envoy would pass it.
	PluginConfig []byte
	// Upstreams maps a provider name to the base URL requests for it go to (e.g. a mock on 127.0.0.1).
	// Providers not listed are reached at https://<the :authority the filter set>, as Envoy's cluster would.
	Upstreams map[string]string
	// Getenv resolves api_key_env (default os.Getenv); see ResolveKeyEnv.
	Getenv func(string) string
	// Logger receives one line per request and every rule violation (default: stderr).
	Logger *log.Logger
	// Transport sends upstream requests (default: a transport that never asks for compression itself).
	Transport http.RoundTripper
	// HeadersTimeout is how long an upstream may take to answer with its headers before the gateway answers
	// as Envoy does when a route's timeout (or idle_timeout) fires first: a 504 "upstream request timeout",
	// through the filter's response callbacks (0: no limit, as the shipped routes' timeout: 0s).
	HeadersTimeout time.Duration
}

// Gateway is an http.Handler running the filter.
type Gateway struct {
	wasm, config []byte // what a reload starts a new VM from

	mu     sync.RWMutex // guards host, vm and closed; held for writing while the VM is swapped
	host   *hostemu.Host
	vm     proxytest.WasmVMContext // nil after a failed reload
	closed bool

	routingHeader string
	upstreams     map[string]*url.URL
	client        *http.Client
	log           *log.Logger
	// headersTimeout: Options.HeadersTimeout.
	headersTimeout time.Duration
	// calloutTimeouts are the callouts' timeouts by cluster (defaultCalloutTimeout for the others): the
	// filter gives each callout its timeout, which Envoy enforces; proxytest does not record it, so the
	// gateway reads the configuration's (budgets.timeout_ms for the budget cluster, failover's for the rest).
	calloutTimeouts       map[string]time.Duration
	defaultCalloutTimeout time.Duration
	stopTicks             chan struct{}
	// logged counts the filter's log lines already printed (warn, error, critical), per VM.
	logMu  sync.Mutex
	logged map[*hostemu.Host][3]int
}

// maxBody bounds what the gateway reads from a client before the filter's own max_request_bytes applies.
const maxBody = 256 << 20

// CatchAll is the answer of envoy/envoy.yaml's last route, "no-provider", which every request the filter did
// not route ends at: a direct_response with this status and body, and these response_headers_to_add. The
// gateway answers the same bytes (TestCatchAllIsEnvoyYAMLs reads them from envoy.yaml, so they cannot drift).
var CatchAll = struct {
	Status  int
	Body    string
	Headers [][2]string
}{
	Status: http.StatusNotFound,
	Body: `{"error":{"message":"aidialect: no provider was selected for this request. The aidialect filter sets the ` +
		`x-aidialect-provider routing header for the requests it recognises; this request was not routed (unknown ` +
		`path, or the filter is not running).","type":"invalid_request_error","param":null,"code":"route_not_found"}}`,
	Headers: [][2]string{{"content-type", "application/json"}, {"x-aidialect-error", "route_not_found"}},
}

// New compiles the module and starts the plugin.
func New(opts Options) (*Gateway, error) {
	if opts.Logger == nil {
		opts.Logger = log.New(os.Stderr, "gateway: ", log.LstdFlags)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	cfg, err := ResolveKeyEnv(opts.PluginConfig, opts.Getenv)
	if err != nil {
		return nil, err
	}
	host, vm, err := startVM(opts.Wasm, cfg)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		wasm:                  opts.Wasm,
		config:                cfg,
		host:                  host,
		vm:                    vm,
		routingHeader:         orDefault(gjson.GetBytes(cfg, "routing_header").String(), "x-aidialect-provider"),
		upstreams:             map[string]*url.URL{},
		log:                   opts.Logger,
		headersTimeout:        opts.HeadersTimeout,
		calloutTimeouts:       map[string]time.Duration{},
		defaultCalloutTimeout: time.Duration(orDefaultInt(gjson.GetBytes(cfg, "failover.callout_timeout_seconds").Int(), 120)) * time.Second,
		stopTicks:             make(chan struct{}),
	}
	if b := gjson.GetBytes(cfg, "budgets"); b.Exists() {
		g.calloutTimeouts[orDefault(b.Get("cluster").String(), "ratelimit")] = time.Duration(orDefaultInt(b.Get("timeout_ms").Int(), 100)) * time.Millisecond
	}
	host.RootCallouts = g.rootCallout
	for name, raw := range opts.Upstreams {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			g.Close()
			return nil, fmt.Errorf("upstream %s: %q is not a base URL like http://127.0.0.1:18081", name, raw)
		}
		g.upstreams[name] = u
	}
	transport := opts.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// The filter removes accept-encoding so answers arrive readable; the Go client must not add its own
		// and decompress behind the filter's back.
		t.DisableCompression = true
		t.ResponseHeaderTimeout = 5 * time.Minute
		transport = t
	}
	g.client = &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	go g.tick()
	g.printFilterLogs(host) // its start-up warnings
	return g, nil
}

// printFilterLogs prints the filter's log lines at warn level and above that are new since the last call, as
// Envoy's log shows them (the README promises some: a circuit opening, a budget service failing).
func (g *Gateway) printFilterLogs(host *hostemu.Host) {
	warn, errs, critical := host.Logs()
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if g.logged == nil {
		g.logged = map[*hostemu.Host][3]int{}
	}
	seen := g.logged[host]
	for i, lines := range [3][]string{warn, errs, critical} {
		level := [3]string{"warning", "error", "critical"}[i]
		for _, l := range lines[min(seen[i], len(lines)):] {
			g.log.Printf("filter %s: %s", level, l)
		}
		seen[i] = len(lines)
	}
	g.logged[host] = seen
}

// tick runs the plugin's OnTick at the period it set, as Envoy's worker does (the body watch, the budget
// charges), on whichever VM serves at the time.
func (g *Gateway) tick() {
	for {
		period := g.current().TickPeriod()
		if period <= 0 {
			period = time.Second // not set (yet): look again later
		}
		select {
		case <-g.stopTicks:
			return
		case <-time.After(period):
		}
		host := g.current()
		if host.TickPeriod() <= 0 {
			continue
		}
		if err := host.Tick(); err != nil && host.Dead() == nil {
			g.log.Printf("tick: %v", err)
		}
	}
}

// rootCallout answers a callout the plugin made from its root context (a budget charge).
func (g *Gateway) rootCallout(c hostemu.Callout) hostemu.CalloutAnswer {
	return g.callout(context.Background(), c)
}

func orDefaultInt(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// loadVM compiles the module into a fresh VM. Tests replace it to run a native filter that can trap.
var loadVM = proxytest.NewWasmVMContext

// startVM makes a VM and starts the plugin in it.
func startVM(wasm, config []byte) (*hostemu.Host, proxytest.WasmVMContext, error) {
	vm, err := loadVM(wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the wasm module: %w", err)
	}
	host, err := hostemu.New(vm, config)
	if err != nil {
		vm.Close()
		return nil, nil, err
	}
	return host, vm, nil
}

// Close stops the plugin and frees the VM.
func (g *Gateway) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		close(g.stopTicks)
	}
	g.closed = true
	g.host.Close()
	if g.vm != nil {
		g.vm.Close()
		g.vm = nil
	}
}

// current is the host serving new requests.
func (g *Gateway) current() *hostemu.Host {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.host
}

// reload replaces a dead host with a fresh VM from the same module and configuration (FAIL_RELOAD). Of the
// requests that saw the same VM die, the first reloads and the others find the work done. Requests arriving
// meanwhile wait for the new VM. A failed reload leaves the dead host in place: requests get the 503 and the
// next one tries again.
func (g *Gateway) reload(dead *hostemu.Host) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.host != dead {
		return
	}
	// proxytest allows one emulator per process: the dead one goes first.
	dead.Close()
	if g.vm != nil {
		g.vm.Close()
		g.vm = nil
	}
	host, vm, err := startVM(g.wasm, g.config)
	if err != nil {
		g.log.Printf("VM RELOAD FAILED: %v (requests get a 503 until a reload succeeds)", err)
		return
	}
	host.RootCallouts = g.rootCallout
	g.host, g.vm = host, vm
	g.log.Printf("VM reloaded (failure_policy FAIL_RELOAD): a fresh VM serves the next requests")
}

// Counter reads one of the filter's metrics (those of the current VM: a reload starts from zero).
func (g *Gateway) Counter(name string) (uint64, error) { return g.current().Counter(name) }

// ResolveKeyEnv replaces each provider's api_key_env with api_key read from getenv. Envoy fills the VM's
// environment from vm_config.environment_variables; the emulator cannot, so the gateway does it up front.
func ResolveKeyEnv(config []byte, getenv func(string) string) ([]byte, error) {
	out := config
	for i, p := range gjson.GetBytes(config, "providers").Array() {
		name := p.Get("api_key_env")
		if !name.Exists() {
			continue
		}
		key := getenv(name.String())
		if key == "" {
			return nil, fmt.Errorf("provider %q: environment variable %s (api_key_env) is unset or empty", p.Get("name").String(), name.String())
		}
		var err error
		prefix := fmt.Sprintf("providers.%d.", i)
		if out, err = sjson.DeleteBytes(out, prefix+"api_key_env"); err != nil {
			return nil, err
		}
		if out, err = sjson.SetBytes(out, prefix+"api_key", key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := 0
	aborted := ""
	defer func() {
		g.log.Printf("%s %s -> %d%s (%s)", r.Method, r.URL.RequestURI(), status, aborted, time.Since(start).Round(time.Millisecond))
	}()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		status = http.StatusBadRequest
		http.Error(w, "reading the request body: "+err.Error(), status)
		return
	}
	host := g.current()
	defer func() {
		// After x.Finish (deferred below), also when the connection is being aborted.
		g.printFilterLogs(host)
		if host.Dead() != nil {
			g.reload(host)
		}
	}()
	x := host.Begin()
	defer x.Finish()
	x.Callouts = func(c hostemu.Callout) hostemu.CalloutAnswer { return g.callout(r.Context(), c) }
	// Trailers (chunked HTTP/1.1) are known once the body was read: then no body callback carries
	// end_of_stream and the filter's trailers callback runs, as in Envoy.
	if trailers := headerPairs(r.Trailer); len(trailers) > 0 {
		err = x.SendRequestTrailers(requestHeaders(r), chunk(body, 16<<10), trailers)
	} else {
		err = x.SendRequest(requestHeaders(r), chunk(body, 16<<10))
	}
	if err != nil {
		status = g.fail(w, err, false)
		return
	}
	if x.Local != nil {
		status = x.Local.Status
		writeHeaders(w, x.Local.Status, x.Local.Headers)
		w.Write(x.Local.Body)
		return
	}
	cw := &clientWriter{w: w}
	head := r.Method == http.MethodHead
	if x.Upstream.Header(g.routingHeader) == "" {
		// No route matches: Envoy's catch-all answers, a local reply that the filter's response callbacks see.
		headers := append(slices.Clone(CatchAll.Headers), [2]string{"content-length", strconv.Itoa(len(CatchAll.Body))})
		var body io.Reader = strings.NewReader(CatchAll.Body)
		if head {
			body = nil
		}
		err = x.RelayResponse(CatchAll.Status, headers, body, nil, cw)
	} else if resp, timedOut, ferr := g.forwardTimed(r.Context(), x.Upstream); timedOut {
		// What Envoy answers when the route's timeout fires before the upstream's headers: a plain-text 504.
		g.log.Printf("upstream: no answer within %v", g.headersTimeout)
		err = x.RelayResponse(http.StatusGatewayTimeout, [][2]string{{"content-type", "text/plain"}},
			strings.NewReader("upstream request timeout"), nil, cw)
	} else if ferr != nil {
		// What Envoy does when the upstream cannot be reached: a plain-text 503 that still passes through
		// the filter's response callbacks.
		g.log.Printf("upstream: %v", ferr)
		err = x.RelayResponse(http.StatusServiceUnavailable, [][2]string{{"content-type", "text/plain"}},
			strings.NewReader("upstream connect error or disconnect/reset before headers. reset reason: "+ferr.Error()), nil, cw)
	} else {
		defer resp.Body.Close()
		var trailers func() [][2]string
		if len(resp.Trailer) > 0 {
			trailers = func() [][2]string { return headerPairs(resp.Trailer) }
		}
		var upstreamBody io.Reader = resp.Body
		if head || resp.ContentLength == 0 {
			upstreamBody = nil
		}
		err = x.RelayResponse(resp.StatusCode, headerPairs(resp.Header), upstreamBody, trailers, cw)
	}
	if err == nil && !head { // a HEAD answer's content-length is that of the body it leaves out
		err = x.CheckContentLength(cw.written)
	}
	status = cw.status
	if err != nil && cw.status != 0 && errors.Is(err, context.Canceled) && r.Context().Err() != nil && host.Dead() == nil {
		// The client left mid-answer (Codex closes a stream it no longer needs): nothing of the gateway's failed.
		aborted = ", the client closed the connection"
		return
	}
	if err != nil {
		if cw.status != 0 {
			aborted = ", connection aborted"
		}
		status = g.fail(w, err, cw.status != 0)
	}
}

// fail reports an error: a 502 naming the broken rule when the client has no answer yet, else an aborted
// connection (as Envoy resets a stream it cannot finish). A dead VM gets Envoy's own answer instead.
func (g *Gateway) fail(w http.ResponseWriter, err error, answered bool) int {
	var rule *hostemu.RuleError
	dead := errors.Is(err, hostemu.ErrVMDead)
	switch {
	case dead:
		g.log.Printf("VM TRAPPED: %v", err)
	case errors.As(err, &rule):
		g.log.Printf("HOST RULE BROKEN (%s): %s", rule.Rule, rule.Detail)
	default:
		g.log.Printf("error: %v", err)
	}
	if answered {
		panic(http.ErrAbortHandler)
	}
	if dead {
		// Envoy fails the stream of a failed VM (proxy-wasm-cpp-host's CHECK_FAIL_HTTP calls failStream;
		// Envoy's Context::failStream sends a local reply 503 with an empty body, response code details
		// wasm_fail_stream); the filter's response callbacks do not see it. Flushed now: a reload follows.
		w.Header().Set("content-length", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return http.StatusServiceUnavailable
	}
	msg := err.Error()
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "local gateway: " + msg, "type": "server_error", "param": nil, "code": "host_rule_violation",
	}})
	writeHeaders(w, http.StatusBadGateway, [][2]string{{"content-type", "application/json"}})
	w.Write(body)
	return http.StatusBadGateway
}

// forward sends the filtered request to the provider the routing header names.
// forwardTimed is forward with Options.HeadersTimeout: timedOut when the upstream's headers did not come in
// time (the request is then abandoned). The body may take as long as it takes.
func (g *Gateway) forwardTimed(ctx context.Context, up *hostemu.Request) (resp *http.Response, timedOut bool, err error) {
	if g.headersTimeout <= 0 {
		resp, err = g.forward(ctx, up)
		return resp, false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var fired atomic.Bool
	timer := time.AfterFunc(g.headersTimeout, func() { fired.Store(true); cancel() })
	resp, err = g.forward(ctx, up)
	if !timer.Stop() && fired.Load() {
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, true, err
	}
	if err != nil {
		cancel()
		return nil, false, err
	}
	// The body outlives this call: cancel with it.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, false, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

func (g *Gateway) forward(ctx context.Context, up *hostemu.Request) (*http.Response, error) {
	provider := up.Header(g.routingHeader)
	authority := up.Header(":authority")
	base, ok := g.upstreams[provider]
	if !ok {
		base = &url.URL{Scheme: "https", Host: authority}
	}
	target := strings.TrimSuffix(base.String(), "/") + up.Header(":path")
	req, err := http.NewRequestWithContext(ctx, up.Header(":method"), target, bytes.NewReader(up.Body))
	if err != nil {
		return nil, err
	}
	req.Host = authority
	for _, kv := range up.Headers {
		switch name := kv[0]; {
		case strings.HasPrefix(name, ":"), name == "content-length", name == "host", name == "transfer-encoding", name == "connection":
		default:
			req.Header.Add(name, kv[1])
		}
	}
	req.ContentLength = int64(len(up.Body))
	if len(up.Trailers) > 0 && len(up.Body) > 0 {
		// HTTP/1.1 carries trailers only after a chunked body, so the length is not sent up front (Envoy over
		// HTTP/2 would send both). The trailers of a body-less request are dropped: sending them would take
		// chunked framing, a body the upstream does not expect on, say, a GET.
		req.ContentLength = -1
		req.Trailer = http.Header{}
		for _, kv := range up.Trailers {
			req.Trailer.Add(kv[0], kv[1])
		}
	}
	return g.client.Do(req)
}

// callout sends a failover attempt's callout as Envoy does: to the cluster's upstream (clusters are named
// like providers, as in envoy/envoy.yaml; -upstream maps them), its whole answer buffered up to Envoy's
// limit. A connection failure is answered as Envoy's async client answers it, a plain-text 503; a client
// that left cancels it.
func (g *Gateway) callout(clientCtx context.Context, c hostemu.Callout) hostemu.CalloutAnswer {
	timeout, ok := g.calloutTimeouts[c.Cluster]
	if !ok {
		timeout = g.defaultCalloutTimeout
	}
	ctx, cancel := context.WithTimeout(clientCtx, timeout)
	defer cancel()
	up := &hostemu.Request{Headers: append(slices.Clone(c.Headers), [2]string{g.routingHeader, c.Cluster}), Body: c.Body}
	resp, err := g.forward(ctx, up)
	if err != nil {
		if clientCtx.Err() != nil {
			return hostemu.CalloutAnswer{ClientGone: true}
		}
		if ctx.Err() != nil {
			return hostemu.CalloutAnswer{Failed: true} // Envoy's async client timed out: no headers, no body
		}
		return hostemu.CalloutAnswer{Headers: [][2]string{{":status", "503"}, {"content-type", "text/plain"}},
			Body: []byte("upstream connect error or disconnect/reset before headers. reset reason: " + err.Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, hostemu.DefaultCalloutBufferLimit+1))
	if err != nil || len(body) > hostemu.DefaultCalloutBufferLimit {
		return hostemu.CalloutAnswer{Failed: true}
	}
	headers := [][2]string{{":status", strconv.Itoa(resp.StatusCode)}}
	for _, kv := range headerPairs(resp.Header) {
		headers = append(headers, [2]string{strings.ToLower(kv[0]), kv[1]})
	}
	return hostemu.CalloutAnswer{Headers: headers, Body: body}
}

// clientWriter streams what the filter releases to the HTTP client, flushing each piece.
type clientWriter struct {
	w       http.ResponseWriter
	status  int
	written int
}

func (c *clientWriter) WriteHeaders(status int, headers [][2]string) {
	c.status = status
	writeHeaders(c.w, status, headers)
}

func (c *clientWriter) WriteBody(p []byte) error {
	n, err := c.w.Write(p)
	c.written += n
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
	return err
}

func writeHeaders(w http.ResponseWriter, status int, headers [][2]string) {
	for _, kv := range headers {
		if kv[0] == "transfer-encoding" || kv[0] == "connection" {
			continue
		}
		w.Header().Add(kv[0], kv[1])
	}
	w.WriteHeader(status)
}

// requestHeaders renders an incoming request as the header map Envoy gives the filter.
func requestHeaders(r *http.Request) [][2]string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	h := [][2]string{{":method", r.Method}, {":path", r.URL.RequestURI()}, {":authority", r.Host}, {":scheme", scheme}}
	h = append(h, headerPairs(r.Header)...)
	if r.ContentLength >= 0 && r.Header.Get("content-length") == "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
		h = append(h, [2]string{"content-length", fmt.Sprint(r.ContentLength)})
	}
	return h
}

func headerPairs(h http.Header) [][2]string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var out [][2]string
	for _, name := range names {
		for _, v := range h[name] {
			out = append(out, [2]string{strings.ToLower(name), v})
		}
	}
	return out
}

func chunk(body []byte, size int) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		n := min(size, len(body))
		out = append(out, body[:n])
		body = body[n:]
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

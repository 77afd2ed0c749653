package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// These tests run the gateway over a tiny native filter instead of the compiled module (loadVM is swapped):
// it routes on the body like the real filter, and a request header makes it panic without recovering, which
// reaches the host exactly as a trap of the wasm VM does (proxytest panics on the failed call).

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package; the gateway has its own logger.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// testVM is one VM generation of the native test filter.
type testVM struct {
	types.DefaultVMContext
	gen    int
	closed bool
}

func (v *testVM) Close() error {
	v.closed = true
	return nil
}

func (v *testVM) NewPluginContext(uint32) types.PluginContext { return &testPlugin{vm: v} }

type testPlugin struct {
	types.DefaultPluginContext
	vm *testVM
}

func (p *testPlugin) NewHttpContext(uint32) types.HttpContext { return &testFilter{vm: p.vm} }

// testFilter pauses the headers until it has the whole body (end_of_stream or trailers), then upper-cases the
// body, routes to the "mock" upstream and names its VM generation in x-vm-gen. x-trap: request|response
// makes it panic in OnHttpRequestHeaders or OnHttpResponseBody.
type testFilter struct {
	types.DefaultHttpContext
	vm      *testVM
	trap    string
	noRoute bool // x-no-route: the request goes on without a routing header, like an unknown path
	sent    bool
}

func (f *testFilter) OnHttpRequestHeaders(_ int, endOfStream bool) types.Action {
	_, err := proxywasm.GetHttpRequestHeader("x-no-route")
	f.noRoute = err == nil
	f.trap, _ = proxywasm.GetHttpRequestHeader("x-trap")
	if f.trap == "request" {
		panic("wasm error: unreachable")
	}
	if endOfStream {
		f.route(nil)
		return types.ActionContinue
	}
	return types.ActionPause
}

func (f *testFilter) OnHttpRequestBody(size int, endOfStream bool) types.Action {
	if !endOfStream {
		return types.ActionPause
	}
	return f.finish(size)
}

func (f *testFilter) OnHttpRequestTrailers(int) types.Action {
	if f.sent {
		return types.ActionContinue
	}
	proxywasm.AddHttpRequestTrailer("x-filter", "seen")
	return f.finish(1 << 20)
}

func (f *testFilter) finish(size int) types.Action {
	body, _ := proxywasm.GetHttpRequestBody(0, size)
	out := []byte(strings.ToUpper(string(body)))
	if len(out) > 0 {
		proxywasm.ReplaceHttpRequestBody(out)
	}
	f.route(out)
	return types.ActionContinue
}

func (f *testFilter) route(body []byte) {
	if !f.noRoute {
		proxywasm.ReplaceHttpRequestHeader("x-aidialect-provider", "mock")
	}
	proxywasm.ReplaceHttpRequestHeader("x-vm-gen", strconv.Itoa(f.vm.gen))
	if body != nil {
		proxywasm.ReplaceHttpRequestHeader("content-length", strconv.Itoa(len(body)))
	}
	f.sent = true
}

func (f *testFilter) OnHttpResponseHeaders(int, bool) types.Action {
	proxywasm.AddHttpResponseHeader("x-vm-gen", strconv.Itoa(f.vm.gen))
	return types.ActionContinue
}

func (f *testFilter) OnHttpResponseBody(int, bool) types.Action {
	if f.trap == "response" {
		panic("wasm error: stack overflow")
	}
	return types.ActionContinue
}

// received is one request as the mock upstream saw it.
type received struct {
	header   http.Header
	body     string
	trailer  http.Header
	chunked  bool
	vmHeader string
}

type fixture struct {
	url  string
	gw   *Gateway
	vms  func() []*testVM
	logs func() string
	got  func() []received
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs a gateway over the native test filter in front of a mock upstream that answers JSON in two
// flushed pieces.
func start(t *testing.T) *fixture {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with the upstream's answer written by answer (nil: the two flushed pieces) once the
// request was recorded.
func startWith(t *testing.T, answer http.HandlerFunc) *fixture {
	t.Helper()
	var mu sync.Mutex
	var vms []*testVM
	var got []received
	prev := loadVM
	loadVM = func([]byte) (proxytest.WasmVMContext, error) {
		mu.Lock()
		defer mu.Unlock()
		vm := &testVM{gen: len(vms) + 1}
		vms = append(vms, vm)
		return vm, nil
	}
	t.Cleanup(func() { loadVM = prev })

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{header: r.Header.Clone(), body: string(body), trailer: r.Trailer.Clone(),
			chunked: len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked", vmHeader: r.Header.Get("x-vm-gen")})
		mu.Unlock()
		if answer != nil {
			answer(w, r)
			return
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"ok":`)
		w.(http.Flusher).Flush()
		io.WriteString(w, `true}`)
	}))
	logs := &syncBuffer{}
	gw, err := New(Options{
		PluginConfig: []byte(`{}`),
		Upstreams:    map[string]string{"mock": upstream.URL},
		Logger:       log.New(logs, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	t.Cleanup(upstream.Close)
	return &fixture{
		url:  srv.URL,
		gw:   gw,
		logs: logs.String,
		vms: func() []*testVM {
			mu.Lock()
			defer mu.Unlock()
			return append([]*testVM(nil), vms...)
		},
		got: func() []received {
			mu.Lock()
			defer mu.Unlock()
			return append([]received(nil), got...)
		},
	}
}

var client = &http.Client{Timeout: 20 * time.Second}

// post sends a body, chunked with trailers when trailers is not nil.
func post(t *testing.T, url, body string, header, trailers http.Header) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	if trailers != nil {
		req.ContentLength = -1 // chunked: trailers follow the last chunk
		req.Trailer = trailers
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// A client that hangs up while its answer streams (Codex closes a response stream it no longer needs) is no
// error of the gateway's: the log says the client closed the connection, not "error: ... context canceled".
func TestClientHangUpIsNoError(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	fx := startWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		select { // the rest never comes: the client leaves first
		case <-r.Context().Done():
		case <-release:
		}
	})
	req, err := http.NewRequest(http.MethodPost, fx.url+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: {}\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("reading the first event: %v; gateway log:\n%s", err, fx.logs())
	}
	resp.Body.Close()
	// The gateway logs the request when its handler ends; wait for that line (no timing asserted).
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(fx.logs(), "POST /v1/chat/completions") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	logs := fx.logs()
	if !strings.Contains(logs, "POST /v1/chat/completions -> 200, the client closed the connection") || strings.Contains(logs, "error:") {
		t.Fatalf("gateway log after a client hung up:\n%s", logs)
	}
}

// A chunked HTTP/1.1 request with trailers: the filter finishes in its trailers callback, and the upstream
// gets the body the filter produced and the trailers it left.
func TestRequestTrailersReachUpstream(t *testing.T) {
	fx := start(t)
	resp, body, err := post(t, fx.url, `{"model":"m"}`, nil, http.Header{"X-Checksum": {"abc"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body != `{"ok":true}` {
		t.Fatalf("client got %d %q; gateway log:\n%s", resp.StatusCode, body, fx.logs())
	}
	got := fx.got()
	if len(got) != 1 {
		t.Fatalf("upstream saw %d requests", len(got))
	}
	up := got[0]
	if up.body != `{"MODEL":"M"}` {
		t.Errorf("upstream body %q, want the filter's", up.body)
	}
	if up.trailer.Get("X-Checksum") != "abc" || up.trailer.Get("X-Filter") != "seen" {
		t.Errorf("upstream trailers %v, want the client's and the filter's", up.trailer)
	}
	if !up.chunked {
		t.Error("trailers need a chunked upstream body")
	}
}

// Without trailers the request goes as before, with its content-length.
func TestRequestWithoutTrailers(t *testing.T) {
	fx := start(t)
	resp, _, err := post(t, fx.url, `{"model":"m"}`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d; log:\n%s", resp.StatusCode, fx.logs())
	}
	up := fx.got()[0]
	if up.body != `{"MODEL":"M"}` || up.chunked || len(up.trailer) > 0 {
		t.Errorf("upstream got %+v", up)
	}
}

// A trap answers the request as Envoy does (503, empty body), logs it loudly, and a fresh VM serves the next
// request.
func TestVMTrapAnswers503AndReloads(t *testing.T) {
	fx := start(t)
	resp, body, err := post(t, fx.url, `{}`, http.Header{"X-Trap": {"request"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body != "" || resp.Header.Get("content-type") != "" {
		t.Errorf("trapped request got %d %q content-type %q, want Envoy's empty 503", resp.StatusCode, body, resp.Header.Get("content-type"))
	}
	// The 503 is flushed before the reload starts: the reload's log line may follow the answer.
	logs := fx.logs()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs, "VM reloaded") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		logs = fx.logs()
	}
	if !strings.Contains(logs, "VM TRAPPED: ") || !strings.Contains(logs, "unreachable") || !strings.Contains(logs, "VM reloaded") {
		t.Errorf("log lacks the trap or the reload:\n%s", logs)
	}
	if len(fx.got()) != 0 {
		t.Error("the trapped request reached the upstream")
	}

	resp, body, err = post(t, fx.url, `{"model":"m"}`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body != `{"ok":true}` || resp.Header.Get("x-vm-gen") != "2" {
		t.Errorf("after the reload got %d %q from VM %q, want 200 from VM 2", resp.StatusCode, body, resp.Header.Get("x-vm-gen"))
	}
	vms := fx.vms()
	if len(vms) != 2 || !vms[0].closed || vms[1].closed {
		t.Errorf("want the dead VM closed and one fresh VM, got %d VMs", len(vms))
	}
	if _, err := fx.gw.Counter("none"); err == nil || strings.Contains(err.Error(), "trapped") {
		t.Errorf("Counter on the reloaded VM: %v", err)
	}
}

// A trap once the response began cannot become a 503: the connection is cut, and the next request works.
func TestVMTrapMidResponseAbortsConnection(t *testing.T) {
	fx := start(t)
	resp, body, err := post(t, fx.url, `{"model":"m"}`, http.Header{"X-Trap": {"response"}}, nil)
	if err == nil {
		t.Fatalf("want a cut connection, got %d %q", resp.StatusCode, body)
	}
	if !strings.Contains(fx.logs(), "VM TRAPPED: ") {
		t.Errorf("log lacks the trap:\n%s", fx.logs())
	}
	resp, _, err = post(t, fx.url, `{"model":"m"}`, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-vm-gen") != "2" {
		t.Errorf("after the reload got %d from VM %q", resp.StatusCode, resp.Header.Get("x-vm-gen"))
	}
}

// Concurrent requests while VMs die and reload: every request ends (200, or 503 when caught by a dying VM),
// nothing hangs, and the gateway serves afterwards.
func TestVMTrapUnderConcurrency(t *testing.T) {
	fx := start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 6 {
				header := http.Header{}
				if (i+j)%5 == 0 {
					header.Set("X-Trap", "request")
				}
				var trailers http.Header
				if j%2 == 1 {
					trailers = http.Header{"X-T": {"1"}}
				}
				resp, _, err := post(t, fx.url, fmt.Sprintf(`{"n":%d}`, j), header, trailers)
				switch {
				case err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
					// Its response had begun when another request killed the VM: the connection is cut.
				case err != nil:
					errs <- err
				case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable:
					errs <- fmt.Errorf("status %d", resp.StatusCode)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("requests hang; log:\n%s", fx.logs())
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.Log(fx.logs())
	}
	resp, _, err := post(t, fx.url, `{"model":"m"}`, nil, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the storm: %v %v", resp, err)
	}
	if n := len(fx.vms()); n < 2 {
		t.Errorf("%d VMs made, want reloads", n)
	}
}

// envoyCatchAll reads the catch-all route ("no-provider") of the shipped envoy/envoy.yaml: its
// direct_response status and inline body, and its response_headers_to_add.
func envoyCatchAll(t *testing.T) (status int, body string, headers [][2]string) {
	t.Helper()
	raw, err := os.ReadFile("../../envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "- name: no-provider" {
			start = i
		}
	}
	if start < 0 {
		t.Fatal("envoy/envoy.yaml has no route named no-provider")
	}
	indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
	statusRE := regexp.MustCompile(`^\s*status:\s*(\d+)\s*$`)
	bodyRE := regexp.MustCompile(`^\s*inline_string:\s*'(.*)'\s*$`)
	headerRE := regexp.MustCompile(`^\s*- header:\s*\{\s*key:\s*([^,\s]+),\s*value:\s*([^}\s]+)\s*\}\s*$`)
	for _, l := range lines[start+1:] {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if len(l)-len(strings.TrimLeft(l, " ")) <= indent {
			break // the route ends where its list item does
		}
		if m := statusRE.FindStringSubmatch(l); m != nil {
			status, _ = strconv.Atoi(m[1])
		}
		if m := bodyRE.FindStringSubmatch(l); m != nil {
			body = strings.ReplaceAll(m[1], "''", "'") // YAML single-quoted
		}
		if m := headerRE.FindStringSubmatch(l); m != nil {
			headers = append(headers, [2]string{m[1], m[2]})
		}
	}
	if status == 0 || body == "" || len(headers) == 0 {
		t.Fatalf("could not read the no-provider route of envoy/envoy.yaml (status %d, body %q, headers %v): "+
			"its layout changed, adapt envoyCatchAll", status, body, headers)
	}
	return status, body, headers
}

// The catch-all the gateway answers is envoy.yaml's, byte for byte.
func TestCatchAllIsEnvoyYAMLs(t *testing.T) {
	status, body, headers := envoyCatchAll(t)
	if status != CatchAll.Status || body != CatchAll.Body || fmt.Sprint(headers) != fmt.Sprint(CatchAll.Headers) {
		t.Errorf("envoy/envoy.yaml's catch-all route answers\n  %d %v %s\nthe local gateway's CatchAll is\n  %d %v %s\ncopy envoy.yaml's into CatchAll",
			status, headers, body, CatchAll.Status, CatchAll.Headers, CatchAll.Body)
	}
}

// A request the filter leaves unrouted gets the catch-all answer, and no upstream sees it.
func TestUnroutedRequestGetsTheCatchAll(t *testing.T) {
	fx := start(t)
	status, body, headers := envoyCatchAll(t)
	resp, got, err := post(t, fx.url, `{"model":"m"}`, http.Header{"X-No-Route": {"1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status || got != body {
		t.Errorf("got %d %q, want %d %q; log:\n%s", resp.StatusCode, got, status, body, fx.logs())
	}
	for _, h := range headers {
		if v := resp.Header.Values(h[0]); len(v) != 1 || v[0] != h[1] {
			t.Errorf("header %s = %q, want %q", h[0], v, h[1])
		}
	}
	if resp.Header.Get("content-length") != strconv.Itoa(len(body)) {
		t.Errorf("content-length %q, want %d", resp.Header.Get("content-length"), len(body))
	}
	if resp.Header.Get("x-vm-gen") == "" {
		t.Error("the answer did not pass through the filter's response callbacks")
	}
	if n := len(fx.got()); n != 0 {
		t.Errorf("the upstream saw %d requests", n)
	}
	// HEAD: the same status and headers, no body.
	req, _ := http.NewRequest(http.MethodHead, fx.url+"/nowhere", nil)
	req.Header.Set("x-no-route", "1")
	head, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != status || head.Header.Get("x-aidialect-error") != "route_not_found" {
		t.Errorf("HEAD: %d %v; log:\n%s", head.StatusCode, head.Header, fx.logs())
	}
}

// TestStatsTagsAreEnvoyYAMLs: the admin page extracts the tags envoy/envoy.yaml's stats_tags do.
func TestStatsTagsAreEnvoyYAMLs(t *testing.T) {
	raw, err := os.ReadFile("../../envoy/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nameRE := regexp.MustCompile(`^\s*- tag_name:\s*(\S+)\s*$`)
	regexRE := regexp.MustCompile(`^\s*regex:\s*'(.*)'\s*$`)
	var got []struct{ Name, Regex string }
	for _, l := range strings.Split(string(raw), "\n") {
		if m := nameRE.FindStringSubmatch(l); m != nil {
			got = append(got, struct{ Name, Regex string }{Name: m[1]})
		} else if m := regexRE.FindStringSubmatch(l); m != nil && len(got) > 0 && got[len(got)-1].Regex == "" {
			got[len(got)-1].Regex = m[1]
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(StatsTags) {
		t.Fatalf("envoy.yaml's stats_tags:\n%v\nthe gateway's:\n%v", got, StatsTags)
	}
}

// TestPrometheusText: names and tags as Envoy's /stats/prometheus shows them, histograms with Envoy's buckets.
func TestPrometheusText(t *testing.T) {
	buckets := make([]uint64, len(hostemu.HistogramBounds))
	for i, b := range hostemu.HistogramBounds {
		if b >= 100 {
			buckets[i] = 1
		}
	}
	text := string(PrometheusText([]hostemu.Metric{
		{Name: "aidialect_requests_total.client_dialect.openai.provider.oa.status_class.2xx", Kind: hostemu.Counter, Value: 3},
		{Name: "gen_ai_client_token_usage.gen_ai_operation_name.chat.gen_ai_request_model.gpt-4o.gen_ai_token_type.input.gen_ai_provider_name.azure.ai.openai",
			Kind: hostemu.Histogram, Count: 1, Sum: 70, Buckets: buckets},
	}))
	for _, want := range []string{
		"# TYPE aidialect_requests_total counter\n",
		`aidialect_requests_total{client_dialect="openai",provider="oa",status_class="2xx"} 3` + "\n",
		"# TYPE gen_ai_client_token_usage histogram\n",
		`gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="azure.ai.openai",gen_ai_request_model="gpt-4o",gen_ai_token_type="input",le="50"} 0` + "\n",
		`gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="azure.ai.openai",gen_ai_request_model="gpt-4o",gen_ai_token_type="input",le="100"} 1` + "\n",
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="azure.ai.openai",gen_ai_request_model="gpt-4o",gen_ai_token_type="input"} 70` + "\n",
		`gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_provider_name="azure.ai.openai",gen_ai_request_model="gpt-4o",gen_ai_token_type="input"} 1` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}

package hostemu_test

import (
	"bytes"
	"errors"
	"io"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
)

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// filter is a tiny native filter: each callback does what its field says (nil: Continue). It records the
// callbacks it saw.
type filter struct {
	types.DefaultHttpContext
	reqHeaders  func(endOfStream bool) types.Action
	reqBody     func(size int, endOfStream bool) types.Action
	reqTrailers func() types.Action
	respHeaders func() types.Action
	respBody    func(size int, endOfStream bool) types.Action
	respTrailer func() types.Action

	calls []string
}

func (f *filter) OnHttpRequestHeaders(_ int, eos bool) types.Action {
	f.calls = append(f.calls, "headers eos="+strconv.FormatBool(eos))
	if f.reqHeaders == nil {
		return types.ActionContinue
	}
	return f.reqHeaders(eos)
}

func (f *filter) OnHttpRequestBody(size int, eos bool) types.Action {
	f.calls = append(f.calls, "body eos="+strconv.FormatBool(eos))
	if f.reqBody == nil {
		return types.ActionContinue
	}
	return f.reqBody(size, eos)
}

func (f *filter) OnHttpRequestTrailers(int) types.Action {
	f.calls = append(f.calls, "trailers")
	if f.reqTrailers == nil {
		return types.ActionContinue
	}
	return f.reqTrailers()
}

func (f *filter) OnHttpResponseHeaders(int, bool) types.Action {
	f.calls = append(f.calls, "response headers")
	if f.respHeaders == nil {
		return types.ActionContinue
	}
	return f.respHeaders()
}

func (f *filter) OnHttpResponseBody(size int, eos bool) types.Action {
	f.calls = append(f.calls, "response body")
	if f.respBody == nil {
		return types.ActionContinue
	}
	return f.respBody(size, eos)
}

func (f *filter) OnHttpResponseTrailers(int) types.Action {
	f.calls = append(f.calls, "response trailers")
	if f.respTrailer == nil {
		return types.ActionContinue
	}
	return f.respTrailer()
}

func (f *filter) OnHttpStreamDone() { f.calls = append(f.calls, "done") }

// vm hands out the filter for every HTTP context; startPanic makes OnPluginStart panic.
type vm struct {
	types.DefaultVMContext
	f          *filter
	startPanic bool
}

func (v *vm) NewPluginContext(uint32) types.PluginContext { return &plugin{vm: v} }

type plugin struct {
	types.DefaultPluginContext
	vm *vm
}

func (p *plugin) OnPluginStart(int) types.OnPluginStartStatus {
	if p.vm.startPanic {
		panic("trap while starting")
	}
	return types.OnPluginStartStatusOK
}

func (p *plugin) NewHttpContext(uint32) types.HttpContext { return p.vm.f }

// host starts a host for f; it is closed when the test ends (proxytest allows one at a time).
func host(t *testing.T, f *filter) *hostemu.Host {
	t.Helper()
	h, err := hostemu.New(&vm{f: f}, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { within(t, 5*time.Second, "Close", h.Close) })
	return h
}

// within fails the test when f does not return in time (a deadlock).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

func ruleOf(t *testing.T, err error) string {
	t.Helper()
	var rule *hostemu.RuleError
	if !errors.As(err, &rule) {
		t.Fatalf("want a *RuleError, got %v", err)
	}
	return rule.Rule
}

var request = [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gateway.local"}}

func chunks(parts ...string) [][]byte {
	var out [][]byte
	for _, p := range parts {
		out = append(out, []byte(p))
	}
	return out
}

func pause(bool) types.Action { return types.ActionPause }

func pauseBody(int, bool) types.Action { return types.ActionPause }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A filter that pauses for the whole body finishes in the trailers callback: it reads the buffered body,
// replaces it and edits the still-held headers; all of it reaches the upstream, with the trailers.
func TestTrailersFinishPausedBody(t *testing.T) {
	var seen []byte
	f := &filter{reqHeaders: pause, reqBody: pauseBody}
	f.reqTrailers = func() types.Action {
		body, err := proxywasm.GetHttpRequestBody(0, 1<<20)
		must(t, err)
		seen = bytes.Clone(body)
		out := []byte(strings.ToUpper(string(body)))
		must(t, proxywasm.ReplaceHttpRequestBody(out))
		must(t, proxywasm.ReplaceHttpRequestHeader(":path", "/rendered"))
		must(t, proxywasm.ReplaceHttpRequestHeader("content-length", strconv.Itoa(len(out))))
		must(t, proxywasm.AddHttpRequestTrailer("x-filter", "1"))
		return types.ActionContinue
	}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequestTrailers(request, chunks(`{"model":`, `"m"}`), [][2]string{{"x-checksum", "abc"}}))
	if x.Upstream == nil || x.Local != nil {
		t.Fatalf("want an upstream request, got local %+v", x.Local)
	}
	if string(seen) != `{"model":"m"}` {
		t.Errorf("the trailers callback read %q, want the whole buffered body", seen)
	}
	if got := string(x.Upstream.Body); got != `{"MODEL":"M"}` {
		t.Errorf("upstream body %q, want the body the filter left", got)
	}
	if got := x.Upstream.Header(":path"); got != "/rendered" {
		t.Errorf("upstream :path %q, want the trailers callback's edit", got)
	}
	want := [][2]string{{"x-checksum", "abc"}, {"x-filter", "1"}}
	if !slices.Equal(x.Upstream.Trailers, want) {
		t.Errorf("upstream trailers %v, want %v", x.Upstream.Trailers, want)
	}
	wantCalls := []string{"headers eos=false", "body eos=false", "body eos=false", "trailers"}
	if !slices.Equal(f.calls, wantCalls) {
		t.Errorf("callbacks %v, want %v (no end_of_stream on any body chunk)", f.calls, wantCalls)
	}
}

// Chunks continued before the filter started buffering already went upstream; the trailers callback only
// rewrites what is still buffered.
func TestTrailersAfterContinuedChunk(t *testing.T) {
	n := 0
	f := &filter{}
	f.reqBody = func(int, bool) types.Action {
		n++
		if n == 1 {
			return types.ActionContinue
		}
		return types.ActionPause
	}
	f.reqTrailers = func() types.Action {
		body, err := proxywasm.GetHttpRequestBody(0, 1<<20)
		must(t, err)
		must(t, proxywasm.ReplaceHttpRequestBody([]byte("<"+string(body)+">")))
		return types.ActionContinue
	}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequestTrailers(request, chunks("one,", "two,", "three"), [][2]string{{"x-t", "1"}}))
	if got := string(x.Upstream.Body); got != "one,<two,three>" {
		t.Errorf("upstream body %q, want the continued chunk then the buffered rest as the filter left it", got)
	}
}

// HEADERS then a trailers frame, no DATA: no body callback, only the trailers callback, which may still edit
// the held headers.
func TestTrailersWithoutBody(t *testing.T) {
	f := &filter{reqHeaders: pause}
	f.reqTrailers = func() types.Action {
		must(t, proxywasm.AddHttpRequestHeader("x-routed", "yes"))
		return types.ActionContinue
	}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequestTrailers(request, nil, [][2]string{{"x-t", "1"}}))
	if x.Upstream == nil {
		t.Fatal("no upstream request")
	}
	if got := x.Upstream.Header("x-routed"); got != "yes" {
		t.Errorf("x-routed %q, want the trailers callback's edit", got)
	}
	if len(x.Upstream.Body) != 0 {
		t.Errorf("upstream body %q, want none", x.Upstream.Body)
	}
	if !slices.Equal(x.Upstream.Trailers, [][2]string{{"x-t", "1"}}) {
		t.Errorf("upstream trailers %v", x.Upstream.Trailers)
	}
	if want := []string{"headers eos=false", "trailers"}; !slices.Equal(f.calls, want) {
		t.Errorf("callbacks %v, want %v", f.calls, want)
	}
}

// Nothing resumes a request whose trailers callback paused.
func TestTrailersPauseHangs(t *testing.T) {
	f := &filter{reqHeaders: pause, reqBody: pauseBody, reqTrailers: func() types.Action { return types.ActionPause }}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	err := x.SendRequestTrailers(request, chunks("{}"), [][2]string{{"x-t", "1"}})
	if rule := ruleOf(t, err); rule != "envoy-host 4" {
		t.Errorf("rule %s, want envoy-host 4 (%v)", rule, err)
	}
	if x.Upstream != nil {
		t.Error("a hung request reached the upstream")
	}
}

// Headers released by the headers callback can no longer be edited in the trailers callback.
func TestTrailersHeaderEditAfterContinue(t *testing.T) {
	f := &filter{reqTrailers: func() types.Action {
		must(t, proxywasm.AddHttpRequestHeader("x-late", "1"))
		return types.ActionContinue
	}}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	err := x.SendRequestTrailers(request, chunks("{}"), [][2]string{{"x-t", "1"}})
	if rule := ruleOf(t, err); rule != "envoy-host 1" {
		t.Errorf("rule %s, want envoy-host 1 (%v)", rule, err)
	}
}

// Every chunk continued: Envoy holds no body, so the trailers callback cannot change it.
func TestTrailersBodyEditWithoutBuffer(t *testing.T) {
	f := &filter{reqTrailers: func() types.Action {
		must(t, proxywasm.ReplaceHttpRequestBody([]byte("changed")))
		return types.ActionContinue
	}}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	err := x.SendRequestTrailers(request, chunks("{}"), [][2]string{{"x-t", "1"}})
	if rule := ruleOf(t, err); rule != "envoy-host 4" {
		t.Errorf("rule %s, want envoy-host 4 (%v)", rule, err)
	}
}

// A local reply from the trailers callback stops the request like from any other callback.
func TestTrailersLocalReply(t *testing.T) {
	reply := func(action types.Action) func() types.Action {
		return func() types.Action {
			must(t, proxywasm.SendHttpResponse(400, [][2]string{{"content-type", "application/json"}}, []byte(`{"error":"no"}`), -1))
			return action
		}
	}
	t.Run("pause", func(t *testing.T) {
		f := &filter{reqHeaders: pause, reqBody: pauseBody, reqTrailers: reply(types.ActionPause)}
		h := host(t, f)
		x := h.Begin()
		defer x.Finish()
		must(t, x.SendRequestTrailers(request, chunks("{}"), [][2]string{{"x-t", "1"}}))
		if x.Local == nil || x.Local.Status != 400 || string(x.Local.Body) != `{"error":"no"}` {
			t.Fatalf("local reply %+v", x.Local)
		}
		if x.Upstream != nil {
			t.Error("the request reached the upstream after a local reply")
		}
	})
	t.Run("continue", func(t *testing.T) {
		f := &filter{reqHeaders: pause, reqBody: pauseBody, reqTrailers: reply(types.ActionContinue)}
		h := host(t, f)
		x := h.Begin()
		defer x.Finish()
		err := x.SendRequestTrailers(request, chunks("{}"), [][2]string{{"x-t", "1"}})
		if rule := ruleOf(t, err); rule != "envoy-host 5" {
			t.Errorf("rule %s, want envoy-host 5 (%v)", rule, err)
		}
	})
}

// SendRequest is unchanged: the last chunk carries end_of_stream, no trailers callback, no trailers.
func TestSendRequestWithoutTrailers(t *testing.T) {
	f := &filter{reqHeaders: pause}
	f.reqBody = func(_ int, eos bool) types.Action {
		if !eos {
			return types.ActionPause
		}
		must(t, proxywasm.ReplaceHttpRequestHeader("x-routed", "yes"))
		return types.ActionContinue
	}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequest(append(slices.Clone(request), [2]string{"content-length", "4"}), chunks("ab", "cd")))
	if string(x.Upstream.Body) != "abcd" || x.Upstream.Header("x-routed") != "yes" || x.Upstream.Trailers != nil {
		t.Errorf("upstream %+v", x.Upstream)
	}
	if want := []string{"headers eos=false", "body eos=false", "body eos=true"}; !slices.Equal(f.calls, want) {
		t.Errorf("callbacks %v, want %v", f.calls, want)
	}
}

type recorder struct {
	status  int
	headers [][2]string
	body    []byte
}

func (r *recorder) WriteHeaders(status int, headers [][2]string) {
	r.status, r.headers = status, headers
}
func (r *recorder) WriteBody(p []byte) error {
	r.body = append(r.body, p...)
	return nil
}

// Content types are case-insensitive: pausing a Text/Event-Stream answer is pausing a stream.
func TestEventStreamContentTypeCaseInsensitive(t *testing.T) {
	f := &filter{respBody: pauseBody}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequest(request, nil))
	err := x.RelayResponse(200, [][2]string{{"content-type", "Text/Event-Stream; charset=utf-8"}},
		strings.NewReader("data: {}\n\n"), nil, &recorder{})
	if rule := ruleOf(t, err); rule != "envoy-host 4" {
		t.Errorf("rule %s, want envoy-host 4 (%v)", rule, err)
	}
}

// The response trailers path still releases a held body as the filter left it.
func TestResponseTrailersReleaseHeldBody(t *testing.T) {
	f := &filter{respBody: pauseBody}
	f.respTrailer = func() types.Action {
		body, err := proxywasm.GetHttpResponseBody(0, 1<<20)
		must(t, err)
		must(t, proxywasm.ReplaceHttpResponseBody([]byte(strings.ToUpper(string(body)))))
		return types.ActionContinue
	}
	h := host(t, f)
	x := h.Begin()
	defer x.Finish()
	must(t, x.SendRequest(request, nil))
	w := &recorder{}
	must(t, x.RelayResponse(200, [][2]string{{"content-type", "application/json"}}, strings.NewReader(`{"a":1}`),
		func() [][2]string { return [][2]string{{"grpc-status", "0"}} }, w))
	if w.status != 200 || string(w.body) != `{"A":1}` {
		t.Errorf("client got %d %q", w.status, w.body)
	}
}

// A panic out of the emulator (how proxytest's wasm mode reports a trap) kills the host: the call returns
// ErrVMDead, every later call returns it without reaching the filter, and nothing deadlocks.
func TestVMDeadOnRequest(t *testing.T) {
	f := &filter{reqBody: func(int, bool) types.Action { panic("stack overflow") }}
	h := host(t, f)
	if h.Dead() != nil {
		t.Fatal("a fresh host is dead")
	}
	x := h.Begin()
	var err error
	within(t, 5*time.Second, "SendRequest", func() { err = x.SendRequest(request, chunks("{}")) })
	if !errors.Is(err, hostemu.ErrVMDead) || !strings.Contains(err.Error(), "stack overflow") {
		t.Fatalf("want ErrVMDead with the panic's message, got %v", err)
	}
	var rule *hostemu.RuleError
	if errors.As(err, &rule) {
		t.Errorf("a trap reported as a host rule: %v", err)
	}
	if !errors.Is(h.Dead(), hostemu.ErrVMDead) {
		t.Errorf("Dead() = %v, want ErrVMDead", h.Dead())
	}
	within(t, 5*time.Second, "Finish", x.Finish)

	before := len(f.calls)
	within(t, 5*time.Second, "later calls", func() {
		y := h.Begin()
		if err := y.SendRequest(request, nil); !errors.Is(err, hostemu.ErrVMDead) {
			t.Errorf("SendRequest on a dead host: %v", err)
		}
		if err := y.SendRequestTrailers(request, nil, [][2]string{{"x-t", "1"}}); !errors.Is(err, hostemu.ErrVMDead) {
			t.Errorf("SendRequestTrailers on a dead host: %v", err)
		}
		if err := y.RelayResponse(200, nil, strings.NewReader("x"), nil, &recorder{}); !errors.Is(err, hostemu.ErrVMDead) {
			t.Errorf("RelayResponse on a dead host: %v", err)
		}
		if _, err := h.Counter("anything"); !errors.Is(err, hostemu.ErrVMDead) {
			t.Errorf("Counter on a dead host: %v", err)
		}
		y.Finish()
		h.Logs()
	})
	if after := f.calls[before:]; len(after) > 0 {
		t.Errorf("the dead VM was called again: %v", after)
	}
}

// A trap in a response callback: nothing reaches the client, and the host is dead.
func TestVMDeadOnResponse(t *testing.T) {
	f := &filter{respHeaders: func() types.Action { panic(errors.New("wasm error: unreachable")) }}
	h := host(t, f)
	x := h.Begin()
	defer within(t, 5*time.Second, "Finish", x.Finish)
	must(t, x.SendRequest(request, nil))
	w := &recorder{}
	var err error
	within(t, 5*time.Second, "RelayResponse", func() {
		err = x.RelayResponse(200, [][2]string{{"content-type", "application/json"}}, strings.NewReader("{}"), nil, w)
	})
	if !errors.Is(err, hostemu.ErrVMDead) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("want ErrVMDead, got %v", err)
	}
	if w.status != 0 || len(w.body) > 0 {
		t.Errorf("the client got %d %q from a dead VM", w.status, w.body)
	}
}

// A trap while the plugin starts fails New, and the emulator is released for the next host.
func TestVMDeadOnStart(t *testing.T) {
	_, err := hostemu.New(&vm{f: &filter{}, startPanic: true}, []byte("{}"))
	if !errors.Is(err, hostemu.ErrVMDead) {
		t.Fatalf("want ErrVMDead, got %v", err)
	}
	within(t, 5*time.Second, "the next New", func() {
		h, err := hostemu.New(&vm{f: &filter{}}, []byte("{}"))
		if err != nil {
			t.Error(err)
			return
		}
		h.Close()
	})
}

// A trailers callback can change no body that already went to the client: the last body callback continued,
// so Envoy holds none and answers BadArgument (docs/envoy-host.md section 4). An append (a stream's last
// event) would never reach the client, and a replacement cannot take back bytes it has: both are reported.
// Only a body the last callback paused on may change there (TestTrailersFinishPausedAnswer).
func TestResponseTrailersOnASentBody(t *testing.T) {
	for _, tt := range []struct {
		name   string
		edit   func() error
		client string
		rule   bool
	}{
		{"append", func() error { return proxywasm.AppendHttpResponseBody([]byte("!")) }, "abc", true},
		{"replace with more", func() error { return proxywasm.ReplaceHttpResponseBody([]byte("abcd")) }, "abc", true},
		{"replace with less", func() error { return proxywasm.ReplaceHttpResponseBody([]byte("X")) }, "abc", true},
		{"no change", func() error { return nil }, "abc", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &filter{}
			f.respTrailer = func() types.Action {
				must(t, tt.edit())
				return types.ActionContinue
			}
			h := host(t, f)
			x := h.Begin()
			defer x.Finish()
			must(t, x.SendRequest(request, nil))
			w := &recorder{}
			err := x.RelayResponse(200, [][2]string{{"content-type", "text/event-stream"}}, strings.NewReader("abc"),
				func() [][2]string { return [][2]string{{"grpc-status", "0"}} }, w)
			var rule *hostemu.RuleError
			if got := errors.As(err, &rule); got != tt.rule {
				t.Fatalf("rule error %v, want %v", err, tt.rule)
			}
			if string(w.body) != tt.client {
				t.Errorf("client got %q, want %q", w.body, tt.client)
			}
		})
	}
}

// Package hostemu runs the filter the way Envoy hosts it, over the SDK's proxytest emulator, and enforces the
// host rules proxytest does not (shared/reference/envoy-host.md sections 1-5): a header edit after the
// headers went on, a pause that would hang, a wrong content-length, a paused stream, a local reply that does
// not stop the exchange or comes back translated. A broken rule is a *RuleError.
//
// The plugin tests and the local gateway (e2e/) both drive the filter through this package, so a mistake
// surfaces before it reaches an Envoy.
package hostemu

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// RuleError is a host rule the filter broke; in Envoy the request would hang, mis-route or be corrupted.
type RuleError struct {
	Rule   string // e.g. "envoy-host 1"
	Detail string
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Detail }

func ruleErr(rule, format string, args ...any) error {
	return &RuleError{Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// Host is one VM with the plugin started. Callbacks run one at a time, as on an Envoy worker thread.
type Host struct {
	mu    sync.Mutex
	emu   proxytest.HostEmulator
	reset func()
	// RouteClears counts calls of the clear_route_cache foreign function.
	RouteClears int
}

// New starts the plugin with the configuration. proxytest allows one emulator per process at a time: Close
// it before starting another.
func New(vm types.VMContext, pluginConfig []byte) (*Host, error) {
	h := &Host{}
	opt := proxytest.NewEmulatorOption().WithVMContext(vm).WithPluginConfiguration(pluginConfig)
	h.emu, h.reset = proxytest.NewHostEmulator(opt)
	h.emu.RegisterForeignFunction("clear_route_cache", func([]byte) []byte {
		h.RouteClears++
		return []byte{0}
	})
	if h.emu.StartPlugin() != types.OnPluginStartStatusOK {
		logs := strings.Join(h.emu.GetCriticalLogs(), "\n")
		h.Close()
		return nil, fmt.Errorf("the plugin refused to start: %s", logs)
	}
	return h, nil
}

// Close releases the emulator.
func (h *Host) Close() {
	if h.reset != nil {
		h.reset()
		h.reset = nil
	}
}

// Logs returns the plugin's log lines at warn level and above, oldest first.
func (h *Host) Logs() (warn, errs, critical []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.emu.GetWarnLogs(), h.emu.GetErrorLogs(), h.emu.GetCriticalLogs()
}

// Counter reads a counter metric (0 and an error when it is not defined).
func (h *Host) Counter(name string) (uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.emu.GetCounterMetric(name)
}

// Exchange is one request/response pair through the filter.
type Exchange struct {
	h  *Host
	id uint32

	// Local is the filter's own reply, when it answered without calling the upstream.
	Local *Response
	// Upstream is the request as the upstream receives it.
	Upstream *Request

	requestHeaders  map[string]string // request headers once released
	responseHeaders map[string]string // response headers once released
	stream          bool
	done            bool
	// bodyHeld: the last response body callback paused, so Envoy still holds the whole body buffered
	// (StopIterationAndBuffer) and releases all of it, as the filter left it, once the trailers continue.
	bodyHeld bool
}

// Request is a request as it leaves the filter.
type Request struct {
	Headers [][2]string // including :method, :path, :authority
	Body    []byte
}

// Header returns a header's value ("" when absent).
func (r *Request) Header(name string) string { return lookup(r.Headers, name) }

// Response is a response as the client receives it (for a local reply, whole).
type Response struct {
	Status  int
	Headers [][2]string
	Body    []byte
}

// Begin starts an exchange.
func (h *Host) Begin() *Exchange {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &Exchange{h: h, id: h.emu.InitializeHttpContext()}
}

// Finish ends the exchange (OnHttpStreamDone); call it once, whatever happened.
func (x *Exchange) Finish() {
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	if !x.done {
		x.done = true
		x.h.emu.CompleteHttpContext(x.id)
	}
}

// SendRequest runs the request callbacks: the headers, then each body chunk (the last with end_of_stream;
// no chunks: a body-less request). It returns with x.Local set when the filter answered itself, else with
// x.Upstream set.
func (x *Exchange) SendRequest(headers [][2]string, chunks [][]byte) error {
	x.h.mu.Lock()
	defer x.h.mu.Unlock()
	action := x.h.emu.CallOnRequestHeaders(x.id, headers, len(chunks) == 0)
	if local, err := x.localReply(action, "OnHttpRequestHeaders"); local || err != nil {
		return err
	}
	if action == types.ActionContinue {
		x.requestHeaders = headerMap(x.h.emu.GetCurrentRequestHeaders(x.id))
	}
	var sent []byte
	for i, chunk := range chunks {
		last := i == len(chunks)-1
		action = x.h.emu.CallOnRequestBody(x.id, chunk, last)
		if err := x.checkFrozenRequest("OnHttpRequestBody"); err != nil {
			return err
		}
		if local, err := x.localReply(action, "OnHttpRequestBody"); local || err != nil {
			return err
		}
		switch {
		case action == types.ActionContinue:
			sent = append(sent, x.h.emu.GetCurrentRequestBody(x.id)...)
			if x.requestHeaders == nil {
				x.requestHeaders = headerMap(x.h.emu.GetCurrentRequestHeaders(x.id))
			}
		case last:
			return ruleErr("envoy-host 3", "OnHttpRequestBody paused at end_of_stream: the request would hang")
		}
	}
	if x.requestHeaders == nil {
		return ruleErr("envoy-host 1", "the request headers were paused and never released")
	}
	if cl, ok := x.requestHeaders["content-length"]; ok && cl != strconv.Itoa(len(sent)) {
		return ruleErr("envoy-host 3", "content-length %s but the upstream body has %d bytes", cl, len(sent))
	}
	x.Upstream = &Request{Headers: cloneHeaders(x.h.emu.GetCurrentRequestHeaders(x.id)), Body: sent}
	return nil
}

// localReply records a local reply if the last callback sent one, checking it stopped the exchange and that
// it passes back through the response callbacks untouched (envoy-host.md section 5). Called with mu held.
func (x *Exchange) localReply(action types.Action, where string) (bool, error) {
	reply := x.h.emu.GetSentLocalResponse(x.id)
	if reply == nil {
		return false, nil
	}
	r := &Response{Status: int(reply.StatusCode), Headers: cloneHeaders(reply.Headers), Body: bytes.Clone(reply.Data)}
	x.Local = r
	if action != types.ActionPause {
		return true, ruleErr("envoy-host 5", "%s sent a local reply but returned %v instead of Pause", where, action)
	}
	if lookup(r.Headers, "content-type") == "" {
		return true, ruleErr("envoy-host 5", "local reply without a content-type")
	}
	head := append([][2]string{{":status", strconv.Itoa(r.Status)}}, r.Headers...)
	x.h.emu.CallOnResponseHeaders(x.id, head, len(r.Body) == 0)
	if got := headerMap(x.h.emu.GetCurrentResponseHeaders(x.id)); !sameHeaders(got, headerMap(head)) {
		return true, ruleErr("envoy-host 5", "the filter edited its own local reply's headers")
	}
	if len(r.Body) > 0 {
		x.h.emu.CallOnResponseBody(x.id, r.Body, true)
		if got := x.h.emu.GetCurrentResponseBody(x.id); !bytes.Equal(got, r.Body) {
			return true, ruleErr("envoy-host 5", "the filter translated its own local reply a second time")
		}
	}
	return true, nil
}

func (x *Exchange) checkFrozenRequest(where string) error {
	if x.requestHeaders != nil && !sameHeaders(x.requestHeaders, headerMap(x.h.emu.GetCurrentRequestHeaders(x.id))) {
		return ruleErr("envoy-host 1", "request headers edited in %s after they went upstream", where)
	}
	return nil
}

func (x *Exchange) checkFrozenResponse(where string) error {
	if x.responseHeaders != nil && !sameHeaders(x.responseHeaders, headerMap(x.h.emu.GetCurrentResponseHeaders(x.id))) {
		return ruleErr("envoy-host 1", "response headers edited in %s after they went to the client", where)
	}
	return nil
}

// ClientWriter receives the response as the client would: headers once, then body pieces as they are
// released.
type ClientWriter interface {
	WriteHeaders(status int, headers [][2]string)
	WriteBody(p []byte) error
}

// RelayResponse runs the response callbacks over the upstream's answer, read from body as it arrives, and
// passes what the filter releases to w. trailers, when not nil, is called after body ends and returns the
// upstream's trailers (none: the last body callback carries end_of_stream).
func (x *Exchange) RelayResponse(status int, headers [][2]string, body io.Reader, trailers func() [][2]string, w ClientWriter) error {
	head := append([][2]string{{":status", strconv.Itoa(status)}}, headers...)
	x.stream = strings.Contains(lookup(headers, "content-type"), "text/event-stream")
	x.h.mu.Lock()
	action := x.h.emu.CallOnResponseHeaders(x.id, head, body == nil)
	if replied, err := x.responseLocalReply(action, "OnHttpResponseHeaders", w); replied || err != nil {
		x.h.mu.Unlock()
		return err
	}
	if action == types.ActionContinue {
		x.releaseHeaders(w)
	} else if x.stream {
		x.h.mu.Unlock()
		return ruleErr("envoy-host 4", "response headers of an event stream paused")
	}
	x.h.mu.Unlock()
	if body == nil {
		if x.responseHeaders == nil {
			return ruleErr("envoy-host 1", "response headers paused on a body-less response")
		}
		return nil
	}
	buf := make([]byte, 32<<10)
	var pending []byte // body bytes read but not yet given to the filter
	for {
		n, rerr := body.Read(buf)
		pending = append(pending[:0], buf[:n]...)
		end := rerr == io.EOF
		if rerr != nil && !end {
			return fmt.Errorf("reading the upstream body: %w", rerr)
		}
		if n == 0 && !end {
			continue
		}
		last := end && trailers == nil
		if err := x.bodyCallback(pending, last, w); err != nil {
			if errors.Is(err, errLocalReplied) {
				return nil
			}
			return err
		}
		if end {
			break
		}
	}
	if trailers != nil {
		x.h.mu.Lock()
		before := len(x.h.emu.GetCurrentResponseBody(x.id))
		if x.bodyHeld {
			before = 0 // nothing of the buffered body went out yet
		}
		x.h.emu.CallOnResponseTrailers(x.id, trailers())
		after := x.h.emu.GetCurrentResponseBody(x.id)
		var tail []byte
		if len(after) > before {
			tail = bytes.Clone(after[before:])
		}
		if x.responseHeaders == nil {
			x.releaseHeaders(w)
		} else if err := x.checkFrozenResponse("OnHttpResponseTrailers"); err != nil {
			x.h.mu.Unlock()
			return err
		}
		x.h.mu.Unlock()
		if len(tail) > 0 {
			if err := w.WriteBody(tail); err != nil {
				return err
			}
		}
	}
	if x.responseHeaders == nil {
		return ruleErr("envoy-host 1", "the response headers were paused and never released")
	}
	return nil
}

func (x *Exchange) bodyCallback(chunk []byte, last bool, w ClientWriter) error {
	x.h.mu.Lock()
	action := x.h.emu.CallOnResponseBody(x.id, chunk, last)
	if replied, err := x.responseLocalReply(action, "OnHttpResponseBody", w); replied || err != nil {
		x.h.mu.Unlock()
		if err == nil {
			err = errLocalReplied
		}
		return err
	}
	if err := x.checkFrozenResponse("OnHttpResponseBody"); err != nil {
		x.h.mu.Unlock()
		return err
	}
	if x.stream && action != types.ActionContinue {
		x.h.mu.Unlock()
		return ruleErr("envoy-host 4", "OnHttpResponseBody paused an event stream")
	}
	x.bodyHeld = action != types.ActionContinue
	var out []byte
	if action == types.ActionContinue {
		if x.responseHeaders == nil {
			x.releaseHeaders(w)
		}
		out = bytes.Clone(x.h.emu.GetCurrentResponseBody(x.id))
	} else if last {
		x.h.mu.Unlock()
		return ruleErr("envoy-host 3", "OnHttpResponseBody paused at end_of_stream: the response would hang")
	}
	x.h.mu.Unlock()
	if len(out) > 0 {
		return w.WriteBody(out)
	}
	return nil
}

// errLocalReplied stops relaying the upstream's body once the filter answered locally instead.
var errLocalReplied = errors.New("the filter replaced the response with a local reply")

// responseLocalReply handles a local reply sent from a response callback: allowed only while the response
// headers are still held, and the callback must return Pause (envoy-host.md section 5). The client gets
// the reply instead of the upstream's answer. Called with mu held.
func (x *Exchange) responseLocalReply(action types.Action, where string, w ClientWriter) (bool, error) {
	reply := x.h.emu.GetSentLocalResponse(x.id)
	if reply == nil || x.Local != nil {
		return false, nil
	}
	x.Local = &Response{Status: int(reply.StatusCode), Headers: cloneHeaders(reply.Headers), Body: bytes.Clone(reply.Data)}
	if x.responseHeaders != nil {
		return true, ruleErr("envoy-host 5", "%s sent a local reply after the response headers went to the client", where)
	}
	if action != types.ActionPause {
		return true, ruleErr("envoy-host 5", "%s sent a local reply but returned %v instead of Pause", where, action)
	}
	x.responseHeaders = headerMap(x.Local.Headers)
	w.WriteHeaders(x.Local.Status, x.Local.Headers)
	if len(x.Local.Body) > 0 {
		if err := w.WriteBody(x.Local.Body); err != nil {
			return true, err
		}
	}
	return true, nil
}

// releaseHeaders sends the response headers to the client; called with mu held.
func (x *Exchange) releaseHeaders(w ClientWriter) {
	current := x.h.emu.GetCurrentResponseHeaders(x.id)
	x.responseHeaders = headerMap(current)
	status, _ := strconv.Atoi(x.responseHeaders[":status"])
	var out [][2]string
	for _, kv := range current {
		if kv[0] != ":status" {
			out = append(out, [2]string{strings.Clone(kv[0]), strings.Clone(kv[1])})
		}
	}
	w.WriteHeaders(status, out)
}

// CheckContentLength reports a response whose released content-length disagrees with the body sent.
func (x *Exchange) CheckContentLength(bodyBytes int) error {
	if cl, ok := x.responseHeaders["content-length"]; ok && cl != strconv.Itoa(bodyBytes) {
		return ruleErr("envoy-host 3", "response content-length %s but the client got %d bytes", cl, bodyBytes)
	}
	return nil
}

func lookup(headers [][2]string, name string) string {
	for _, kv := range headers {
		if strings.EqualFold(kv[0], name) {
			return kv[1]
		}
	}
	return ""
}

func headerMap(h [][2]string) map[string]string {
	m := make(map[string]string, len(h))
	for _, kv := range h {
		m[strings.ToLower(kv[0])] = strings.Clone(kv[1])
	}
	return m
}

func cloneHeaders(h [][2]string) [][2]string {
	out := make([][2]string, len(h))
	for i, kv := range h {
		out[i] = [2]string{strings.Clone(kv[0]), strings.Clone(kv[1])}
	}
	return out
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

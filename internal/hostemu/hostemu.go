// Package hostemu runs the filter the way Envoy hosts it, over the SDK's proxytest emulator, and enforces the
// host rules proxytest does not (docs/envoy-host.md sections 1-5): a header edit after the
// headers went on, a pause that would hang, a wrong content-length, a paused stream, a local reply that does
// not stop the exchange or comes back translated. A broken rule is a *RuleError.
//
// It also models a dead VM. A trap in the wasm VM (stack overflow, out of memory, unreachable) is no Go panic
// the filter could recover: proxytest's wasm mode turns the failed wazero call into a panic in the host. Any
// panic coming out of the emulator kills the Host: that call and every later one return an error wrapping
// ErrVMDead, without touching the VM again. What Envoy then answers is the caller's business (see the local
// gateway in e2e/gateway).
//
// The plugin tests and the local gateway (e2e/) both drive the filter through this package, so a mistake
// surfaces before it reaches an Envoy.
package hostemu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
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

// ErrVMDead: the VM trapped (a panic came out of the emulator). The errors a Host returns wrap it, with the
// panic's message; test with errors.Is.
var ErrVMDead = errors.New("the wasm VM trapped and is dead")

// WallClockFunction is the foreign function through which this host gives the filter the real time (unix
// milliseconds, 8 bytes little-endian): see New.
const WallClockFunction = "aidialect_wall_clock_ms"

// errClosed is returned by calls on a Host after Close.
var errClosed = errors.New("hostemu: the host is closed")

// lostEmulator is set when proxytest panicked while registering an emulator: its process-wide lock is then
// never released, and a later New would block forever, so New fails at once instead.
var lostEmulator struct {
	sync.Mutex
	err error
}

// Host is one VM with the plugin started. Callbacks run one at a time, as on an Envoy worker thread.
type Host struct {
	mu     sync.Mutex
	emu    proxytest.HostEmulator
	reset  func()
	dead   error // non-nil once the VM trapped; wraps ErrVMDead
	closed bool
	// RouteClears counts calls of the clear_route_cache foreign function.
	RouteClears int
	release     streamReleaser // forgets finished streams, as Envoy does
	// WithholdBodies models an Envoy whose Wasm filter configuration lacks allow_on_headers_stop_iteration
	// (or a control plane that dropped it): a Pause from OnHttpRequestHeaders becomes StopAllIteration, and
	// no body or trailers callback ever follows. The request hangs unless the filter answers it from a tick.
	WithholdBodies bool
	// Clusters are the Envoy clusters callouts may go to (nil: any); CalloutBufferLimit the most a callout's
	// answer may hold (0: DefaultCalloutBufferLimit).
	Clusters           map[string]bool
	CalloutBufferLimit int
	// RootCallouts answers the callouts the plugin makes from its root context (its tick); nil: such a
	// callout is a rule error. rootCalloutsSeen counts those answered.
	RootCallouts     func(Callout) CalloutAnswer
	rootCalloutsSeen int
	// order keeps callout numbers unique while several are under way (calloutorder.go); turn is signalled
	// when one is answered.
	order calloutOrder
	turn  *sync.Cond
	// The histograms' observations (metrics.go).
	histograms        map[uint32]*histogramState
	definedHistograms map[uint32]bool
	histogramIDs      []uint32
	metricsKnown      int
	tables            *metricTables
}

// OpenStreams is the number of streams the emulator still holds state for: those begun and not finished.
func (h *Host) OpenStreams() int {
	n := 0
	_ = h.do(func() error {
		n = h.release.open()
		return nil
	})
	return n
}

// Tick runs the plugin's OnTick, as Envoy does every tick period the plugin set, then answers the callouts
// it made (RootCallouts), as Envoy does later on the same worker.
func (h *Host) Tick() error {
	if err := h.do(func() error {
		h.emu.Tick()
		return nil
	}); err != nil {
		return err
	}
	return h.resolveRootCallouts()
}

// TickPeriod is the tick period the plugin set (0: none).
func (h *Host) TickPeriod() time.Duration {
	var p uint32
	_ = h.do(func() error {
		p = h.emu.GetTickPeriod()
		return nil
	})
	return time.Duration(p) * time.Millisecond
}

// New starts the plugin with the configuration. proxytest allows one emulator per process at a time: Close
// it before starting another.
func New(vm types.VMContext, pluginConfig []byte) (*Host, error) {
	lostEmulator.Lock()
	lost := lostEmulator.err
	lostEmulator.Unlock()
	if lost != nil {
		return nil, lost
	}
	h := &Host{}
	h.turn = sync.NewCond(&h.mu)
	opt := proxytest.NewEmulatorOption().WithVMContext(vm).WithPluginConfiguration(pluginConfig)
	if err := h.start(opt); err != nil {
		return nil, err
	}
	var err error
	if h.release, err = newStreamReleaser(h.emu, vm); err != nil {
		h.Close()
		return nil, err
	}
	// proxytest's wasm mode runs the module on wazero's default fake clock (a fixed date moving 1 ms per
	// read), where no bench of the filter's health store would ever end; Envoy gives the module the real
	// clock (WASI clock_time_get). This host offers the real clock through a foreign function Envoy does not
	// have, which the filter asks first (plugin/failover.go nowMillis) and, answered NotFound as in Envoy,
	// never again.
	h.emu.RegisterForeignFunction(WallClockFunction, func([]byte) []byte {
		return binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixMilli()))
	})
	h.emu.RegisterForeignFunction("clear_route_cache", func([]byte) []byte {
		h.RouteClears++
		return []byte{0}
	})
	var status types.OnPluginStartStatus
	err = h.do(func() error {
		status = h.emu.StartPlugin()
		return nil
	})
	if err == nil && status != types.OnPluginStartStatusOK {
		err = fmt.Errorf("the plugin refused to start: %s", strings.Join(h.emu.GetCriticalLogs(), "\n"))
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// start creates the emulator; creating it already calls into the VM (the plugin context is made there).
func (h *Host) start(opt *proxytest.EmulatorOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: creating the plugin context: %v", ErrVMDead, r)
			lostEmulator.Lock()
			lostEmulator.err = fmt.Errorf("hostemu: no new emulator in this process, an earlier one was lost (%w)", err)
			lostEmulator.Unlock()
		}
	}()
	h.emu, h.reset = proxytest.NewHostEmulator(opt)
	return nil
}

// do runs f with the host lock held, one callback sequence at a time. A panic out of the emulator is a trap:
// it kills the host; this call returns an error wrapping ErrVMDead with the panic's message, and every later
// one returns that error wrapped again, at once. The lock is released on every path.
func (h *Host) do(f func() error) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != nil {
		return fmt.Errorf("%w (an earlier call trapped; this one never reached the VM)", h.dead)
	}
	if h.closed {
		return errClosed
	}
	defer func() {
		if r := recover(); r != nil {
			h.dead = fmt.Errorf("%w: %v", ErrVMDead, r)
			err = h.dead
			if h.turn != nil {
				h.turn.Broadcast() // deliveries waiting for their turn give up
			}
		}
	}()
	defer h.observeHistograms()
	defer h.registerCallouts()
	return f()
}

// Dead returns nil while the VM is alive, else the error (wrapping ErrVMDead) that killed it.
func (h *Host) Dead() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead
}

// Close releases the emulator. Calls on the host afterwards fail without touching it.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.turn != nil {
		h.turn.Broadcast()
	}
	if h.reset != nil {
		h.reset()
		h.reset = nil
	}
}

// Logs returns the plugin's log lines at warn level and above, oldest first. The lines are the host's
// record, so they can still be read once the VM died (they often say why).
func (h *Host) Logs() (warn, errs, critical []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.emu.GetWarnLogs(), h.emu.GetErrorLogs(), h.emu.GetCriticalLogs()
}

// Counter reads a counter metric (0 and an error when it is not defined, or the VM died).
func (h *Host) Counter(name string) (v uint64, err error) {
	err = h.do(func() (err error) {
		v, err = h.emu.GetCounterMetric(name)
		return err
	})
	return v, err
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
	withheld        bool // headers paused under WithholdBodies: nothing more is delivered
	// bodyHeld: the last response body callback paused, so Envoy still holds the whole body buffered
	// (StopIterationAndBuffer) and releases all of it, as the filter left it, once the trailers continue.
	bodyHeld bool
	// sent is the request body that went upstream; requestHeld: the last request body callback paused, so
	// Envoy holds the body since the last Continue.
	sent        []byte
	requestHeld bool
	// responseBegun: the response callbacks started; responseEnded: the response ended (Envoy drops request
	// data from then on).
	responseBegun, responseEnded bool

	// Callouts answers the HTTP callouts the filter makes (callout.go); nil: a callout is a rule error.
	// CalloutsAfterBody delivers their answers once the upstream's answer ended, instead of right after the
	// callback that made them: Envoy may do either.
	Callouts          func(Callout) CalloutAnswer
	CalloutsAfterBody bool
	calloutsSeen      int
	calloutIDs        []uint32
	// ClientGone: the client left while a callout was under way (its answer said ClientGone).
	ClientGone bool
	// awaiting names the request callback that paused at the end of the request with a callout under way
	// ("": none); awaitingTrailers are the request's trailers when it was the trailers callback.
	awaiting         string
	awaitingTrailers [][2]string
}

// Request is a request as it leaves the filter.
type Request struct {
	Headers [][2]string // including :method, :path, :authority
	Body    []byte
	// Trailers are the request's trailers as the filter left them (nil: the request had none).
	Trailers [][2]string
}

// Header returns a header's value ("" when absent).
func (r *Request) Header(name string) string { return lookup(r.Headers, name) }

// Response is a response as the client receives it (for a local reply, whole).
type Response struct {
	Status  int
	Headers [][2]string
	Body    []byte
}

// Begin starts an exchange. On a dead host the exchange's calls return the host's error.
func (h *Host) Begin() *Exchange {
	x := &Exchange{h: h}
	if err := h.do(func() error {
		x.id = h.emu.InitializeHttpContext()
		h.contextOpened(x.id)
		return nil
	}); err != nil {
		x.done = true // no context to complete
	}
	return x
}

// Finish ends the exchange (OnHttpStreamDone); call it once, whatever happened. It returns at once when the
// VM is dead.
func (x *Exchange) Finish() {
	x.h.do(func() error {
		if !x.done {
			x.done = true
			x.h.emu.CompleteHttpContext(x.id)
			x.h.release.release(x.id)
			x.h.contextClosed(x.id)
		}
		return nil
	})
}

// SendRequest runs the request callbacks: the headers, then each body chunk (the last with end_of_stream;
// no chunks: a body-less request). It returns with x.Local set when the filter answered itself, else with
// x.Upstream set.
func (x *Exchange) SendRequest(headers [][2]string, chunks [][]byte) error {
	return x.SendRequestTrailers(headers, chunks, nil)
}

// SendRequestTrailers is SendRequest for a request that may end with trailers (HTTP/2, or chunked HTTP/1.1).
// With trailers != nil no callback sees end_of_stream: the headers (with no chunks) and every body chunk go
// without it, then OnHttpRequestTrailers runs. As in Envoy, a body the last body callback paused on stays
// buffered, and the trailers callback can still read and replace it, and edit the headers if they were never
// released; its Continue forwards headers, body and trailers as the filter left them. Its Pause would hang
// the request (a *RuleError), and a local reply from it stops the request like from any other callback.
func (x *Exchange) SendRequestTrailers(headers [][2]string, chunks [][]byte, trailers [][2]string) error {
	if err := x.h.do(func() error { return x.sendRequest(headers, chunks, trailers) }); err != nil {
		return err
	}
	return x.awaitRequestCallouts()
}

// BeginRequest runs OnHttpRequestHeaders alone, for a caller that then delivers the body with RequestChunk
// and may relay the response (RelayResponse) between chunks, as Envoy does when the upstream answers before the
// request ended (an upstream that refuses early, Envoy's own 503): request data keeps reaching the filter
// while the response is under way, and none does once the response ended (docs/envoy-host.md section 4b).
// It returns with x.Local set when the filter answered itself.
func (x *Exchange) BeginRequest(headers [][2]string, endOfStream bool) error {
	return x.h.do(func() error {
		_, err := x.requestHeadersCallback(headers, endOfStream)
		return err
	})
}

// RequestChunk delivers one request body chunk (last: with end_of_stream) after BeginRequest. Once the
// response ended, or the filter answered locally, Envoy drops the request's data: so does RequestChunk. After
// the last chunk x.Upstream is the request as it left the filter, unless the filter still holds it: a pause
// at end_of_stream hangs a request whose response has not begun (a *RuleError), and otherwise ends with the
// response.
func (x *Exchange) RequestChunk(chunk []byte, last bool) error {
	if err := x.h.do(func() error {
		if x.Local != nil || x.responseEnded || x.withheld {
			return nil
		}
		if done, err := x.requestChunk(chunk, last, false); done || err != nil {
			return err
		}
		if last {
			return x.requestEnded(nil)
		}
		return nil
	}); err != nil {
		return err
	}
	return x.awaitRequestCallouts()
}

// RequestTrailers ends the request with trailers after BeginRequest and RequestChunk (its chunks sent with
// last false). As with RequestChunk, nothing reaches the filter once the response ended or it answered
// locally. A filter that holds the request may return Pause here only once the response began: the request
// then ends with the response, as at end_of_stream; before that, a Pause hangs the request (envoy-host 4).
func (x *Exchange) RequestTrailers(trailers [][2]string) error {
	if err := x.h.do(func() error {
		if x.Local != nil || x.responseEnded || x.withheld {
			return nil
		}
		upTrailers, done, err := x.requestTrailersCallback(trailers)
		if done || err != nil {
			return err
		}
		return x.requestEnded(upTrailers)
	}); err != nil {
		return err
	}
	return x.awaitRequestCallouts()
}

// requestHeadersCallback runs OnHttpRequestHeaders; done: nothing more is delivered (a local reply, or
// headers withheld).
func (x *Exchange) requestHeadersCallback(headers [][2]string, endOfStream bool) (done bool, err error) {
	emu := x.h.emu
	action := emu.CallOnRequestHeaders(x.id, headers, endOfStream)
	if local, err := x.localReply(action, "OnHttpRequestHeaders"); local || err != nil {
		return true, err
	}
	if action == types.ActionContinue {
		x.requestHeaders = headerMap(emu.GetCurrentRequestHeaders(x.id))
	} else if x.h.WithholdBodies {
		x.withheld = true
		return true, nil
	}
	return false, nil
}

// requestChunk runs OnHttpRequestBody on one chunk. proxytest hands each body callback the bytes buffered
// since the last Continue plus the new chunk, as Envoy does after StopIterationAndBuffer; a Continue sends them
// all (x.sent is what already went upstream). done: the filter answered locally.
func (x *Exchange) requestChunk(chunk []byte, last, hasTrailers bool) (done bool, err error) {
	emu := x.h.emu
	end := last && !hasTrailers
	action := emu.CallOnRequestBody(x.id, chunk, end)
	if err := x.checkFrozenRequest("OnHttpRequestBody"); err != nil {
		return true, err
	}
	if local, err := x.localReply(action, "OnHttpRequestBody"); local || err != nil {
		return true, err
	}
	x.requestHeld = action != types.ActionContinue
	if x.requestHeld && end && !x.responseBegun {
		// Paused at the end: only a callout under way (a budget check) can resume or answer the request.
		if len(emu.GetCalloutAttributesFromContext(x.id)) == x.calloutsSeen {
			return true, ruleErr("envoy-host 3", "OnHttpRequestBody paused at end_of_stream: the request would hang")
		}
		x.awaiting = "OnHttpRequestBody"
		return true, nil
	}
	if !x.requestHeld {
		x.sent = append(x.sent, emu.GetCurrentRequestBody(x.id)...)
		if x.requestHeaders == nil {
			x.requestHeaders = headerMap(emu.GetCurrentRequestHeaders(x.id))
		}
	}
	return false, nil
}

// requestEnded checks and records the request as it left the filter, once its last callback ran.
func (x *Exchange) requestEnded(upTrailers [][2]string) error {
	if x.requestHeld && x.responseBegun {
		return nil // held: the request ends with the response, and nothing more of it goes upstream
	}
	if x.requestHeaders == nil {
		return ruleErr("envoy-host 1", "the request headers were paused and never released")
	}
	if cl, ok := x.requestHeaders["content-length"]; ok && cl != strconv.Itoa(len(x.sent)) {
		return ruleErr("envoy-host 3", "content-length %s but the upstream body has %d bytes", cl, len(x.sent))
	}
	x.Upstream = &Request{Headers: cloneHeaders(x.h.emu.GetCurrentRequestHeaders(x.id)), Body: x.sent, Trailers: upTrailers}
	return nil
}

// sendRequest runs with the host lock held.
func (x *Exchange) sendRequest(headers [][2]string, chunks [][]byte, trailers [][2]string) error {
	hasTrailers := trailers != nil
	if done, err := x.requestHeadersCallback(headers, len(chunks) == 0 && !hasTrailers); done || err != nil {
		return err
	}
	for i, chunk := range chunks {
		if done, err := x.requestChunk(chunk, i == len(chunks)-1, hasTrailers); done || err != nil {
			return err
		}
	}
	if x.awaiting != "" {
		return nil
	}
	var upTrailers [][2]string
	if hasTrailers {
		var done bool
		var err error
		if upTrailers, done, err = x.requestTrailersCallback(trailers); done || err != nil {
			return err
		}
	}
	return x.requestEnded(upTrailers)
}

// requestTrailersCallback runs OnHttpRequestTrailers and returns the trailers as they go upstream; done: the
// filter answered locally, or (once the response began) holds the request, which then ends with the response
// as at end_of_stream. Before the response began, a Pause here hangs the request.
func (x *Exchange) requestTrailersCallback(trailers [][2]string) (upTrailers [][2]string, done bool, err error) {
	emu := x.h.emu
	before := bytes.Clone(emu.GetCurrentRequestBody(x.id))
	action := emu.CallOnRequestTrailers(x.id, trailers)
	if err := x.checkFrozenRequest("OnHttpRequestTrailers"); err != nil {
		return nil, true, err
	}
	if local, err := x.localReply(action, "OnHttpRequestTrailers"); local || err != nil {
		return nil, true, err
	}
	if action != types.ActionContinue {
		if x.responseBegun {
			x.requestHeld = true
			return nil, true, x.requestEnded(nil)
		}
		if len(emu.GetCalloutAttributesFromContext(x.id)) == x.calloutsSeen {
			return nil, true, ruleErr("envoy-host 4", "OnHttpRequestTrailers returned %v: nothing resumes the request, it would hang", action)
		}
		x.awaiting, x.awaitingTrailers = "OnHttpRequestTrailers", trailers
		return nil, true, nil
	}
	body := emu.GetCurrentRequestBody(x.id)
	if x.requestHeld {
		x.sent = append(x.sent, body...)
	} else if !bytes.Equal(before, body) {
		return nil, true, ruleErr("envoy-host 4", "OnHttpRequestTrailers changed the request body, but Envoy holds none: "+
			"every chunk already went upstream (pause the body callbacks to keep it)")
	}
	x.requestHeld = false
	if x.requestHeaders == nil {
		x.requestHeaders = headerMap(emu.GetCurrentRequestHeaders(x.id))
	}
	return currentTrailers(proxywasm.GetHttpRequestTrailers, trailers), false, nil
}

// currentTrailers reads trailers as the trailers callback left them, through get (the SDK's getter for
// request or response trailers): the emulator has no getter for them, and the exchange's context is still the
// active one (the callback just ran, under the host lock). sent stands in when the host cannot answer.
func currentTrailers(get func() ([][2]string, error), sent [][2]string) [][2]string {
	got, err := get()
	switch {
	case errors.Is(err, types.ErrorStatusNotFound):
		return [][2]string{} // the filter removed them all
	case err != nil:
		return cloneHeaders(sent)
	}
	return cloneHeaders(got)
}

// Withheld reports whether the request is stuck: its headers paused and the host (WithholdBodies) delivers
// nothing more, so only a local reply from a tick can end it.
func (x *Exchange) Withheld() bool { return x.withheld && x.Local == nil }

// CheckTickReply records a local reply the plugin sent for this exchange from another context (its tick), with
// the checks of any local reply.
func (x *Exchange) CheckTickReply() error {
	return x.h.do(func() error {
		_, err := x.localReply(types.ActionPause, "OnTick")
		return err
	})
}

// localReply records a local reply if the last callback sent one, checking it stopped the exchange and that
// it passes back through the response callbacks untouched (docs/envoy-host.md section 5). Called with mu held.
func (x *Exchange) localReply(action types.Action, where string) (bool, error) {
	reply := x.h.emu.GetSentLocalResponse(x.id)
	if reply == nil {
		return false, nil
	}
	r := &Response{Status: int(reply.StatusCode), Headers: cloneHeaders(reply.Headers), Body: bytes.Clone(reply.Data)}
	x.Local = r
	if x.responseBegun {
		// Envoy cannot send a local reply once the upstream's response began: it resets the stream, and the
		// client gets a cut answer (FilterManager::sendLocalReply; docs/envoy-host.md section 4b).
		return true, ruleErr("envoy-host 5", "%s sent a local reply after the response began", where)
	}
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

// released is what one callback let through to the client; it is written after the host lock is dropped, so
// the client writer never runs under the lock and its panics are never taken for a trap.
type released struct {
	headers  bool
	status   int
	head     [][2]string
	body     []byte
	trailers [][2]string // the response trailers as the filter left them (nil: none)
}

// TrailerWriter is a ClientWriter that also receives the response trailers (Envoy forwards them to HTTP/2
// clients), as the filter left them.
type TrailerWriter interface {
	WriteTrailers(trailers [][2]string)
}

func (o *released) writeTo(w ClientWriter) error {
	if o.headers {
		w.WriteHeaders(o.status, o.head)
	}
	if len(o.body) > 0 {
		if err := w.WriteBody(o.body); err != nil {
			return err
		}
	}
	if tw, ok := w.(TrailerWriter); ok && o.trailers != nil {
		tw.WriteTrailers(o.trailers)
	}
	return nil
}

// step runs one response callback under the host lock, then writes what it released to w.
func (x *Exchange) step(w ClientWriter, f func(o *released) error) error {
	var o released
	err := x.h.do(func() error { return f(&o) })
	if err != nil && err != errLocalReplied {
		return err
	}
	if werr := o.writeTo(w); werr != nil {
		return werr
	}
	return err
}

// RelayResponse runs the response callbacks over the upstream's answer, read from body as it arrives, and
// passes what the filter releases to w. trailers, when not nil, is called after body ends and returns the
// upstream's trailers (none: the last body callback carries end_of_stream).
func (x *Exchange) RelayResponse(status int, headers [][2]string, body io.Reader, trailers func() [][2]string, w ClientWriter) error {
	head := append([][2]string{{":status", strconv.Itoa(status)}}, headers...)
	x.stream = isEventStream(lookup(headers, "content-type"))
	x.responseBegun = true
	defer func() { x.responseEnded = true }()
	err := x.step(w, func(o *released) error {
		action := x.h.emu.CallOnResponseHeaders(x.id, head, body == nil)
		if replied, err := x.responseLocalReply(action, "OnHttpResponseHeaders", o); replied || err != nil {
			if err == nil {
				err = errLocalReplied
			}
			return err
		}
		if action == types.ActionContinue {
			x.releaseHeaders(o)
		} else if x.stream {
			return ruleErr("envoy-host 4", "response headers of an event stream paused")
		}
		return nil
	})
	if err == errLocalReplied {
		return nil
	}
	if err != nil {
		return err
	}
	if !x.CalloutsAfterBody || body == nil {
		if replied, gone, err := x.resolveCallouts(w); replied || gone || err != nil {
			x.ClientGone = gone
			return err
		}
	}
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
		last := end && trailers == nil
		if n == 0 && !last {
			// Envoy delivers no empty data frame except one that ends the stream.
			if end {
				break
			}
			continue
		}
		if err := x.bodyCallback(pending, last, w); err != nil {
			if err == errLocalReplied {
				return nil
			}
			return err
		}
		if !x.CalloutsAfterBody || last {
			if replied, gone, err := x.resolveCallouts(w); replied || gone || err != nil {
				x.ClientGone = gone
				return err
			}
		}
		if end {
			break
		}
	}
	if trailers != nil {
		tr := trailers()
		err := x.step(w, func(o *released) error {
			// Held, the whole body goes out now, as the callback left it. Else Envoy holds none of it: the
			// last body callback continued, so Context::getBuffer wraps no buffer and every change answers
			// BadArgument (docs/envoy-host.md section 4). proxytest applies the change all the same, and
			// offers no hook to refuse it, so a change is reported instead: the client would never get it.
			// Compared by length: in native mode the emulator keeps the filter's own slice of a replaced
			// chunk, which the filter may reuse, so its bytes cannot be compared (a replacement of as many
			// bytes goes unseen; the V8 host refuses it, as Envoy does).
			sent := len(x.h.emu.GetCurrentResponseBody(x.id))
			action := x.h.emu.CallOnResponseTrailers(x.id, tr)
			if action != types.ActionContinue && len(x.h.emu.GetCalloutAttributesFromContext(x.id)) > x.calloutsSeen {
				return nil // held for a callout's answer, which replaces the response
			}
			after := x.h.emu.GetCurrentResponseBody(x.id)
			if x.responseHeaders == nil {
				x.releaseHeaders(o)
			} else if err := x.checkFrozenResponse("OnHttpResponseTrailers"); err != nil {
				return err
			}
			switch {
			case x.bodyHeld:
				if len(after) > 0 {
					o.body = bytes.Clone(after)
				}
			case len(after) < sent:
				return ruleErr("envoy-host 4", "OnHttpResponseTrailers shortened response bytes that already went to the client")
			case len(after) > sent:
				return ruleErr("envoy-host 4", "OnHttpResponseTrailers changed the response body, but Envoy holds none "+
					"(the last body callback continued): Envoy answers BadArgument, and the client never gets the %d bytes", len(after)-sent)
			}
			o.trailers = currentTrailers(proxywasm.GetHttpResponseTrailers, tr)
			return nil
		})
		if err != nil {
			return err
		}
		if replied, gone, err := x.resolveCallouts(w); replied || gone || err != nil {
			x.ClientGone = gone
			return err
		}
	}
	if x.responseHeaders == nil {
		return ruleErr("envoy-host 1", "the response headers were paused and never released")
	}
	return nil
}

func (x *Exchange) bodyCallback(chunk []byte, last bool, w ClientWriter) error {
	return x.step(w, func(o *released) error {
		action := x.h.emu.CallOnResponseBody(x.id, chunk, last)
		if replied, err := x.responseLocalReply(action, "OnHttpResponseBody", o); replied || err != nil {
			if err == nil {
				err = errLocalReplied
			}
			return err
		}
		if err := x.checkFrozenResponse("OnHttpResponseBody"); err != nil {
			return err
		}
		if x.stream && action != types.ActionContinue {
			return ruleErr("envoy-host 4", "OnHttpResponseBody paused an event stream")
		}
		x.bodyHeld = action != types.ActionContinue
		if action == types.ActionContinue {
			if x.responseHeaders == nil {
				x.releaseHeaders(o)
			}
			o.body = bytes.Clone(x.h.emu.GetCurrentResponseBody(x.id))
		} else if last && len(x.h.emu.GetCalloutAttributesFromContext(x.id)) == x.calloutsSeen {
			// (With a callout under way the pause waits for its answer, which replaces the response.)
			return ruleErr("envoy-host 3", "OnHttpResponseBody paused at end_of_stream: the response would hang")
		}
		return nil
	})
}

// errLocalReplied stops relaying the upstream's body once the filter answered locally instead.
var errLocalReplied = errors.New("the filter replaced the response with a local reply")

// responseLocalReply handles a local reply sent from a response callback: allowed only while the response
// headers are still held, and the callback must return Pause (docs/envoy-host.md section 5). The client gets
// the reply instead of the upstream's answer. Called with mu held.
func (x *Exchange) responseLocalReply(action types.Action, where string, o *released) (bool, error) {
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
	o.headers, o.status, o.head, o.body = true, x.Local.Status, x.Local.Headers, x.Local.Body
	return true, nil
}

// releaseHeaders lets the response headers go to the client; called with mu held.
func (x *Exchange) releaseHeaders(o *released) {
	current := x.h.emu.GetCurrentResponseHeaders(x.id)
	x.responseHeaders = headerMap(current)
	status, _ := strconv.Atoi(x.responseHeaders[":status"])
	var out [][2]string
	for _, kv := range current {
		if kv[0] != ":status" {
			out = append(out, [2]string{strings.Clone(kv[0]), strings.Clone(kv[1])})
		}
	}
	o.headers, o.status, o.head = true, status, out
}

// CheckContentLength reports a response whose released content-length disagrees with the body sent.
func (x *Exchange) CheckContentLength(bodyBytes int) error {
	if cl, ok := x.responseHeaders["content-length"]; ok && cl != strconv.Itoa(bodyBytes) {
		return ruleErr("envoy-host 3", "response content-length %s but the client got %d bytes", cl, bodyBytes)
	}
	return nil
}

// isEventStream: media types are case-insensitive (Text/Event-Stream is a stream too).
func isEventStream(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream")
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

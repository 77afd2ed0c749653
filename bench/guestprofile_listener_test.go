//go:build aidialect_profile && linux

package bench

import (
	"context"
	"strings"
	_ "unsafe" // go:linkname

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// nanotime is the Go runtime's monotonic clock: CLOCK_MONOTONIC in nanoseconds, the clock perf stamps its
// samples with (perf record -k CLOCK_MONOTONIC), read without time.Now's wall-clock half.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// phase is the proxy-wasm export a host call entered the guest through: every guest instruction runs under
// one of them.
type phase int8

const (
	phaseContextCreate phase = iota
	phaseRequestHeaders
	phaseRequestBody
	phaseResponseHeaders
	phaseResponseBody
	phaseLog
	phaseDelete
	phaseOther // plugin start, ticks, the profiler's own counter reads
	numPhases
)

var phaseExports = [numPhases]string{
	"proxy_on_context_create", "proxy_on_request_headers", "proxy_on_request_body", "proxy_on_response_headers",
	"proxy_on_response_body", "proxy_on_log", "proxy_on_delete", "(other)",
}

// phaseGroup is the part of the exchange a phase belongs to.
func (p phase) group() string {
	switch p {
	case phaseContextCreate, phaseRequestHeaders, phaseRequestBody:
		return "request"
	case phaseResponseHeaders, phaseResponseBody:
		return "response"
	case phaseLog, phaseDelete:
		return "done"
	}
	return "other"
}

func phaseOfExport(name string) phase {
	for p, e := range phaseExports {
		if e == name {
			return phase(p)
		}
	}
	return phaseOther
}

// callStats is one function's account in one phase.
type callStats struct {
	calls      int64
	self, incl int64 // ns; incl counts only a function's outermost activation (recursion is not counted twice)
	childCalls int64 // calls this function made to listened functions
}

type callFrame struct {
	fn           int32
	start, child int64
}

// phaseWindow is one top-level entry into the guest, in nanotime: the perf samples inside it are the guest's.
type phaseWindow struct {
	start, end int64
	phase      phase
}

// callProfiler is a wazero function listener. Listening to every function (full) gives self and inclusive
// time and call counts per function and phase; listening only to the exports and the wrappers of imported
// host functions (light) gives each phase's time and its host calls at a cost of a few hundred nanoseconds per
// listened call, and the windows the perf samples are sorted into.
type callProfiler struct {
	full    bool
	names   *goNames
	fns     []fnInfo // by module function index
	phaseOf []phase  // by module function index: the phase an export opens, else -1
	listen  []bool
	stats   [numPhases][]callStats
	active  []int32 // by function: activations on the stack
	stack   []callFrame
	current phase
	windows []phaseWindow
	record  bool // keep windows
	// trace: every call and return of a listened function as one word (time since t0 << 14 | function << 1 |
	// return), for the full listener's replay against perf samples (attributeTrace). Up to maxEvents.
	trace     []uint64
	tracing   bool
	truncated bool
	t0        int64
}

// maxEvents bounds the call trace (8 bytes each).
const maxEvents = 24 << 20

func newCallProfiler(names *goNames, full bool) *callProfiler {
	return &callProfiler{full: full, names: names}
}

func (p *callProfiler) grow(idx uint32) {
	for uint32(len(p.fns)) <= idx {
		p.fns = append(p.fns, fnInfo{})
		p.phaseOf = append(p.phaseOf, -1)
		p.listen = append(p.listen, false)
		p.active = append(p.active, 0)
		for i := range p.stats {
			p.stats[i] = append(p.stats[i], callStats{})
		}
	}
}

// NewFunctionListener implements experimental.FunctionListenerFactory; wazero calls it for each local
// function while compiling.
func (p *callProfiler) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	idx := def.Index()
	if idx >= 1<<13 {
		panic("the call trace has 13 bits for a function index")
	}
	p.grow(idx)
	name := def.Name()
	info := p.names.info(name)
	p.fns[idx] = info
	export := len(def.ExportNames()) > 0 && strings.HasPrefix(def.ExportNames()[0], "proxy_on_")
	if export {
		p.phaseOf[idx] = phaseOfExport(def.ExportNames()[0])
	}
	if !p.full && !export && info.host == "" {
		return nil
	}
	p.listen[idx] = true
	return &fnListener{p: p, fn: int32(idx)}
}

type fnListener struct {
	p  *callProfiler
	fn int32
}

func (l *fnListener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
	p := l.p
	now := nanotime()
	if n := len(p.stack); n == 0 {
		p.current = phaseOther
		if ph := p.phaseOf[l.fn]; ph >= 0 {
			p.current = ph
		}
	} else {
		p.stats[p.current][p.stack[n-1].fn].childCalls++
	}
	p.active[l.fn]++
	p.stack = append(p.stack, callFrame{fn: l.fn, start: now})
	if p.tracing {
		p.event(now, l.fn, 0)
	}
}

func (p *callProfiler) event(now int64, fn int32, ret uint64) {
	if len(p.trace) == maxEvents {
		p.tracing, p.truncated = false, true
		return
	}
	p.trace = append(p.trace, uint64(now-p.t0)<<14|uint64(fn)<<1|ret)
}

func (l *fnListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {
	l.p.leave(nanotime())
}

func (l *fnListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {
	l.p.leave(nanotime())
}

func (p *callProfiler) leave(now int64) {
	n := len(p.stack) - 1
	f := p.stack[n]
	if p.tracing {
		p.event(now, f.fn, 1)
	}
	p.stack = p.stack[:n]
	d := now - f.start
	st := &p.stats[p.current][f.fn]
	st.calls++
	st.self += d - f.child
	if p.active[f.fn]--; p.active[f.fn] == 0 {
		st.incl += d
	}
	if n > 0 {
		p.stack[n-1].child += d
	} else if p.record {
		p.windows = append(p.windows, phaseWindow{start: f.start, end: now, phase: p.current})
	}
}

// reset forgets everything measured so far (the warm-up).
func (p *callProfiler) reset() {
	for i := range p.stats {
		clear(p.stats[i])
	}
	// Both buffers are allocated once and every page touched before measuring: growing them while the guest
	// runs would put the host's page faults on whatever guest function was running.
	if p.windows == nil {
		p.windows = prefault(make([]phaseWindow, 1<<20))[:0]
	}
	if p.full && p.trace == nil {
		p.trace = prefault(make([]uint64, maxEvents))[:0]
	}
	p.windows = p.windows[:0]
	p.trace = p.trace[:0]
	p.truncated = false
	p.t0 = nanotime()
}

func prefault[T any](s []T) []T {
	var zero T
	for i := range s {
		s[i] = zero
	}
	return s
}

// totalCalls is the number of listened calls, and of calls made from listened functions, in the phases.
func (p *callProfiler) totalCalls() (calls, childCalls int64) {
	for ph := range p.stats {
		if phase(ph) == phaseOther {
			continue
		}
		for _, st := range p.stats[ph] {
			calls += st.calls
			childCalls += st.childCalls
		}
	}
	return calls, childCalls
}

// phaseTime is the time spent in a phase's top-level calls (its export's inclusive time), and their number.
func (p *callProfiler) phaseTime(ph phase) (ns int64, calls int64) {
	for idx, st := range p.stats[ph] {
		if p.phaseOf[idx] == ph {
			ns += st.incl
			calls += st.calls
		}
	}
	return ns, calls
}

// hostTime is the time the phase spent in imported host functions (their Go wrappers' self time: the wrapper
// is a few instructions around the call), with the number of host calls.
func (p *callProfiler) hostTime(ph phase) (ns, calls int64) {
	for idx, st := range p.stats[ph] {
		if p.fns[idx].host != "" {
			ns += st.self
			calls += st.calls
		}
	}
	return ns, calls
}

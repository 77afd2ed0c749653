package main

import (
	"runtime"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/translate"
)

// Header helpers: a failed header call is logged, never fatal. A missing header reads as "".

func requestHeader(name string) string {
	v, err := proxywasm.GetHttpRequestHeader(name)
	if err != nil {
		return ""
	}
	return v
}

func setRequestHeader(name, value string) {
	if err := proxywasm.ReplaceHttpRequestHeader(name, value); err != nil {
		proxywasm.LogErrorf("aidialect: setting request header %s failed: %v", name, err)
	}
}

func removeRequestHeader(name string) {
	if err := proxywasm.RemoveHttpRequestHeader(name); err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogErrorf("aidialect: removing request header %s failed: %v", name, err)
	}
}

func responseHeader(name string) string {
	v, err := proxywasm.GetHttpResponseHeader(name)
	if err != nil {
		return ""
	}
	return v
}

func setResponseHeader(name, value string) {
	if err := proxywasm.ReplaceHttpResponseHeader(name, value); err != nil {
		proxywasm.LogErrorf("aidialect: setting response header %s failed: %v", name, err)
	}
}

func removeResponseHeader(name string) {
	if err := proxywasm.RemoveHttpResponseHeader(name); err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogErrorf("aidialect: removing response header %s failed: %v", name, err)
	}
}

// clearRouteCache asks Envoy (>= 1.33) to pick the route again after our header edits. Older hosts lack the
// foreign function; ABI 0.2.0 hosts clear the cache on every header edit anyway (envoy-host.md section 2).
func clearRouteCache() {
	_, _ = proxywasm.CallForeignFunction("clear_route_cache", nil)
}

// requestState holds the buffers one exchange needs; they are reused across requests so a long-lived worker
// does not allocate per request.
type requestState struct {
	body    translate.RequestBody
	out     []byte
	scratch []byte
	stream  translate.StreamTranslator
}

// statePool is a free list: the VM runs one callback at a time, so no locking is needed.
type statePool struct {
	free     []*requestState
	released int
}

const (
	maxPooledStates = 64
	// maxPooledBuffer keeps one huge request from pinning its buffers in linear memory for ever.
	maxPooledBuffer = 1 << 20
	// collectEvery runs the garbage collector after this many finished requests: linear memory never
	// shrinks, so garbage must be reclaimed before the heap grows to hold it.
	collectEvery = 256
)

func (p *statePool) get() *requestState {
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	return &requestState{}
}

func (p *statePool) put(s *requestState) {
	if len(p.free) >= maxPooledStates || cap(s.out) > maxPooledBuffer || cap(s.scratch) > maxPooledBuffer {
		return
	}
	s.out, s.scratch = s.out[:0], s.scratch[:0]
	p.free = append(p.free, s)
}

func (p *statePool) maybeCollect() {
	p.released++
	if p.released%collectEvery == 0 {
		runtime.GC()
	}
}

package main

import (
	"runtime"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

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

// clearRouteCache asks Envoy (>= 1.33) to pick the route again after our header edits. Older hosts lack the
// foreign function; ABI 0.2.0 hosts clear the cache on every header edit anyway (docs/envoy-host.md section 2).
func clearRouteCache() {
	_, _ = proxywasm.CallForeignFunction("clear_route_cache", nil)
}

// requestState holds the buffers one exchange needs; they are reused across requests so a long-lived worker
// does not allocate per request.
type requestState struct {
	body    translate.RequestBody
	out     []byte
	scratch []byte
	stream  translate.Stream
}

// statePool is a free list: the VM runs one callback at a time, so no locking is needed.
type statePool struct {
	free     []*requestState
	released int
	// sinceCollect counts the body bytes read from the host since the last collection: each read is a fresh
	// copy in the guest's heap, garbage once the request ends.
	sinceCollect int
}

const (
	maxPooledStates = 64
	// maxPooledFootprint keeps one huge request from pinning its buffers in linear memory for ever: a state
	// whose buffers grew past it is left to the collector instead of being reused.
	maxPooledFootprint = 1 << 20
	// collectEvery runs the garbage collector after this many finished requests: in a wasip1 reactor the
	// background collector barely gets to run, and linear memory never shrinks, so without it memory grows
	// by hundreds of MiB over 100k requests (bench/memory_test.go guards the flat line).
	collectEvery = 256
	// collectAfterBytes runs it as soon as this many body bytes were read since the last collection, so a
	// run of large bodies cannot grow the heap by collectEvery times their size before the next collection:
	// peak memory stays within a few times max_request_bytes whatever the request mix.
	collectAfterBytes = 4 << 20
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
	if len(p.free) >= maxPooledStates || s.footprint() > maxPooledFootprint {
		return
	}
	s.out, s.scratch = s.out[:0], s.scratch[:0]
	s.body.Release()
	s.stream.Release()
	p.free = append(p.free, s)
}

func (s *requestState) footprint() int {
	return cap(s.out) + cap(s.scratch) + s.body.Footprint() + s.stream.Footprint()
}

// handled records n body bytes about to be read from the host, and collects once enough of them piled up. Called from
// inside callbacks too, so a long stream cannot grow the heap chunk after chunk until it ends.
func (p *statePool) handled(n int) {
	p.sinceCollect += n
	if p.sinceCollect >= collectAfterBytes {
		p.collect()
	}
}

func (p *statePool) maybeCollect() {
	p.released++
	if p.released%collectEvery == 0 {
		p.collect()
	}
}

func (p *statePool) collect() {
	p.sinceCollect = 0
	runtime.GC()
}

// headerList is a header map read in one host call, edited locally and written back in one call: every
// host call from the VM costs far more than a lookup in a short list (bench/: header batching halved the
// host-side time of a request).
type headerList struct {
	pairs [][2]string
	dirty bool
}

func readRequestHeaders() headerList {
	pairs, err := proxywasm.GetHttpRequestHeaders()
	if err != nil {
		proxywasm.LogErrorf("aidialect: reading the request headers failed: %v", err)
	}
	return headerList{pairs: pairs}
}

func readResponseHeaders() headerList {
	pairs, err := proxywasm.GetHttpResponseHeaders()
	if err != nil {
		proxywasm.LogErrorf("aidialect: reading the response headers failed: %v", err)
	}
	return headerList{pairs: pairs}
}

// get returns the first value of a header ("" when absent); Envoy hands names over in lower case.
func (l *headerList) get(name string) string {
	for _, kv := range l.pairs {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

// count is how many times a header is present.
func (l *headerList) count(name string) int {
	n := 0
	for _, kv := range l.pairs {
		if kv[0] == name {
			n++
		}
	}
	return n
}

// set replaces every value of a header with one. Not inlined: applyRequestHeaders makes a dozen edits, and
// a copy of the loop at each would cost the module kilobytes for no measurable speed.
//
//go:noinline
func (l *headerList) set(name, value string) {
	l.del(name)
	l.pairs = append(l.pairs, [2]string{name, value})
	l.dirty = true
}

//go:noinline
func (l *headerList) del(name string) {
	kept := l.pairs[:0]
	for _, kv := range l.pairs {
		if kv[0] == name {
			l.dirty = true
			continue
		}
		kept = append(kept, kv)
	}
	l.pairs = kept
}

func (l *headerList) writeRequest() {
	if !l.dirty {
		return
	}
	if err := proxywasm.ReplaceHttpRequestHeaders(l.pairs); err != nil {
		proxywasm.LogErrorf("aidialect: writing the request headers failed: %v", err)
	}
	l.dirty = false
}

func (l *headerList) writeResponse() {
	if !l.dirty {
		return
	}
	if err := proxywasm.ReplaceHttpResponseHeaders(l.pairs); err != nil {
		proxywasm.LogErrorf("aidialect: writing the response headers failed: %v", err)
	}
	l.dirty = false
}

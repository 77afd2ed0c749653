package main

import (
	"encoding/binary"
	"runtime"
	"slices"
	"unsafe"

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

// requestState holds the buffers one exchange needs; they are reused across requests so a long-lived worker
// does not allocate per request.
type requestState struct {
	body   translate.RequestBody
	out    []byte
	stream translate.Stream
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

// put returns a finished exchange's state to the pool; it reports false when the state grew too large to
// be kept (its buffers are then garbage).
func (p *statePool) put(s *requestState) (pooled bool) {
	if s.footprint() > maxPooledFootprint {
		return false
	}
	if len(p.free) >= maxPooledStates {
		return true // small: the collector takes it in its time
	}
	s.out = s.out[:0]
	s.body.Release()
	s.stream.Release()
	p.free = append(p.free, s)
	return true
}

func (s *requestState) footprint() int {
	return cap(s.out) + s.body.Footprint() + s.stream.Footprint()
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

// readRequestHeaders reads the request headers, into buf when it is large enough (pluginContext.takePairs).
func readRequestHeaders(buf [][2]string) headerList {
	pairs, err := getHeaderMap(mapRequestHeaders, buf)
	if err != nil {
		proxywasm.LogErrorf("aidialect: reading the request headers failed: %v", err)
	}
	return headerList{pairs: pairs}
}

// readResponseHeaders reads the response headers, into buf when it is large enough.
func readResponseHeaders(buf [][2]string) headerList {
	pairs, err := getHeaderMap(mapResponseHeaders, buf)
	if err != nil {
		proxywasm.LogErrorf("aidialect: reading the response headers failed: %v", err)
	}
	return headerList{pairs: pairs}
}

// watchedHeaders are the request headers OnHttpRequestHeaders reads, the first six at the fixed places
// below: the request line's, the credentials, the body's encoding and length, then the other
// decisiveHeaders, whose repeats it refuses.
var watchedHeaders = watchList()

const (
	slotMethod = iota
	slotPath
	slotAuthorization
	slotAPIKey
	slotContentEncoding
	slotContentLength
)

// decisiveSlots[i] is the place of decisiveHeaders[i] in watchedHeaders.
var decisiveSlots = func() []int {
	slots := make([]int, len(decisiveHeaders))
	for i, name := range decisiveHeaders {
		slots[i] = watchedIndex(name)
	}
	return slots
}()

func watchList() []string {
	list := []string{":method", ":path", "authorization", "api-key", "content-encoding", "content-length"}
	for _, name := range decisiveHeaders {
		if !slices.Contains(list, name) {
			list = append(list, name)
		}
	}
	if len(list) > maxWatched {
		panic("plugin: more watched request headers than maxWatched")
	}
	return list
}

// watchedBits has the nameBit of every watched header.
var watchedBits = func() uint64 {
	var bits uint64
	for _, name := range watchedHeaders {
		bits |= nameBit(name)
	}
	return bits
}()

// nameBit is a header name's bit in a 64-bit set of names (by its length and last byte): a name whose bit is
// not in a set's is not in the set, which spares most comparisons.
func nameBit(name string) uint64 {
	if name == "" {
		return 1
	}
	return 1 << ((uint(len(name))*7 + uint(name[len(name)-1])) & 63)
}

// maxWatched bounds the headers a requestHead holds.
const maxWatched = 16

// requestHead is what the filter reads of the request headers, taken in one pass over the list rather than
// one per header: the first value of each of watchedHeaders, and how many times it is present (up to 2).
type requestHead struct {
	values [maxWatched]string
	counts [maxWatched]uint8
	list   *headerList
}

//go:noinline
func readRequestHead(l *headerList) requestHead {
	r := requestHead{list: l}
	names := watchedHeaders
	for _, kv := range l.pairs {
		if watchedBits&nameBit(kv[0]) == 0 {
			continue
		}
		for i, name := range names {
			if kv[0] == name {
				if r.counts[i] == 0 {
					r.values[i] = kv[1]
					r.counts[i] = 1
				} else {
					r.counts[i] = 2
				}
				break
			}
		}
	}
	return r
}

// watchedIndex is a header's place in the requestHead, or -1.
func watchedIndex(name string) int {
	for i, n := range watchedHeaders {
		if n == name {
			return i
		}
	}
	return -1
}

// get is headerList.get. Not inlined, like set: OnHttpRequestHeaders reads half a dozen headers.
//
//go:noinline
func (r *requestHead) get(name string) string {
	if i := watchedIndex(name); i >= 0 {
		return r.values[i]
	}
	return r.list.get(name)
}

// repeated reports whether a header is present more than once.
//
//go:noinline
func (r *requestHead) repeated(name string) bool {
	if i := watchedIndex(name); i >= 0 {
		return r.counts[i] > 1
	}
	return r.list.count(name) > 1
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

// headerEdit is one edit of a batch applied by headerList.apply: a set, or a del when del is true.
type headerEdit struct {
	name, value string
	del         bool
}

// headerEdits collects a batch of edits for headerList.apply: in its array (on the caller's stack) up to the
// array's size, every edit in more past it. The fields an edit uses are written one by one: appending whole
// headerEdit values costs the module three times as much. A batch is used once.
type headerEdits struct {
	n     int
	fixed [24]headerEdit
	more  []headerEdit
}

func (e *headerEdits) set(name, value string) {
	if n := e.n; n < len(e.fixed) {
		e.fixed[n].name, e.fixed[n].value = name, value // the array starts zeroed: del is false
		e.n = n + 1
		return
	}
	e.spill(name, value, false)
}

func (e *headerEdits) del(name string) {
	if n := e.n; n < len(e.fixed) {
		e.fixed[n].name, e.fixed[n].del = name, true
		e.n = n + 1
		return
	}
	e.spill(name, "", true)
}

// spill adds an edit past the array.
//
//go:noinline
func (e *headerEdits) spill(name, value string, del bool) {
	if e.more == nil {
		e.more = append(make([]headerEdit, 0, 2*len(e.fixed)), e.fixed[:]...)
	}
	e.more = append(e.more, headerEdit{name: name, value: value, del: del})
}

// list is the batch.
func (e *headerEdits) list() []headerEdit {
	if e.more != nil {
		return e.more
	}
	return e.fixed[:e.n]
}

// apply makes a batch of edits in one rebuild of the list, with the result of making them one by one
// (set and del): every value of a header an edit names is removed, and each set that no later edit of the
// same header undoes is appended, in the order of the edits.
func (l *headerList) apply(edits []headerEdit) { l.applyIn(edits, l.pairs) }

// applyIn is apply rebuilding the list in dst's memory when it is large enough (dst may be the list's own, or
// a buffer whose contents are overwritten), else in a new slice: never in the list's own memory unless dst
// is. (The loops are written out: in the module a call costs more than a comparison.)
func (l *headerList) applyIn(edits []headerEdit, dst [][2]string) {
	if len(edits) > 64 {
		// One by one, on a copy in dst: the result is never in the list's own memory unless dst is.
		t := headerList{pairs: append(dst[:0], l.pairs...), dirty: l.dirty}
		for _, e := range edits {
			if e.del {
				t.del(e.name)
			} else {
				t.set(e.name, e.value)
			}
		}
		*l = t
		return
	}
	// edited has every edited name's nameBit: most headers are passed over on it alone. final has bit i set
	// for a set that no later edit of its header undoes: those are appended.
	var edited, final uint64
	added := 0
	for i := len(edits) - 1; i >= 0; i-- {
		name := edits[i].name
		bit := nameBit(name)
		if !edits[i].del {
			undone := false
			if edited&bit != 0 { // edited holds the later edits' names so far
				for j := i + 1; j < len(edits) && !undone; j++ {
					undone = edits[j].name == name
				}
			}
			if !undone {
				final |= 1 << i
				added++
			}
		}
		edited |= bit
	}
	kept := dst[:0]
	if len(l.pairs)+added > cap(kept) {
		// Made at its final size rather than grown by doubling as the sets are appended.
		kept = make([][2]string, 0, len(l.pairs)+added)
	}
	for _, kv := range l.pairs {
		if edited&nameBit(kv[0]) != 0 {
			found := false
			for j := 0; j < len(edits) && !found; j++ {
				found = edits[j].name == kv[0]
			}
			if found {
				l.dirty = true
				continue
			}
		}
		kept = append(kept, kv)
	}
	for i := range edits {
		if edits[i].del {
			continue
		}
		l.dirty = true
		if final&(1<<i) != 0 {
			kept = append(kept, [2]string{edits[i].name, edits[i].value})
		}
	}
	l.pairs = kept
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

// The proxy-wasm map types of the header maps the filter replaces.
const (
	mapRequestHeaders  uint32 = 0
	mapResponseHeaders uint32 = 2
)

// appendHeaderMap serialises a header map as proxy_set_header_map_pairs takes it: the number of pairs, each
// pair's name and value lengths, then each name and value followed by a NUL (all numbers 32-bit little-endian).
func appendHeaderMap(b []byte, pairs [][2]string) []byte {
	size := 4 + 10*len(pairs)
	for _, kv := range pairs {
		size += len(kv[0]) + len(kv[1])
	}
	// Every byte of the grown slice is written below.
	b = slices.Grow(b[:0], size)[:size]
	binary.LittleEndian.PutUint32(b, uint32(len(pairs)))
	data := 4 + 8*len(pairs)
	for i, kv := range pairs {
		binary.LittleEndian.PutUint32(b[4+8*i:], uint32(len(kv[0])))
		binary.LittleEndian.PutUint32(b[8+8*i:], uint32(len(kv[1])))
		data += copy(b[data:], kv[0])
		b[data] = 0
		data += 1 + copy(b[data+1:], kv[1])
		b[data] = 0
		data++
	}
	return b
}

// decodeHeaderMap is the SDK's, into buf when it is large enough: the names and values are views of the
// host's buffer.
func decodeHeaderMap(b []byte, buf [][2]string) [][2]string {
	n := int(binary.LittleEndian.Uint32(b))
	sizes, data := 4, 4+8*n
	pairs := buf[:0]
	if cap(pairs) < n {
		pairs = make([][2]string, n)
	}
	pairs = pairs[:n]
	for i := range pairs {
		keySize := int(binary.LittleEndian.Uint32(b[sizes:]))
		valueSize := int(binary.LittleEndian.Uint32(b[sizes+4:]))
		sizes += 8
		key := b[data : data+keySize]
		data += keySize + 1
		value := b[data : data+valueSize]
		data += valueSize + 1
		pairs[i] = [2]string{unsafe.String(unsafe.SliceData(key), len(key)), unsafe.String(unsafe.SliceData(value), len(value))}
	}
	return pairs
}

func (l *headerList) writeRequest() {
	if !l.dirty {
		return
	}
	if err := replaceHeaderMap(mapRequestHeaders, l.pairs); err != nil {
		proxywasm.LogErrorf("aidialect: writing the request headers failed: %v", err)
	}
	l.dirty = false
}

func (l *headerList) writeResponse() {
	if !l.dirty {
		return
	}
	if err := replaceHeaderMap(mapResponseHeaders, l.pairs); err != nil {
		proxywasm.LogErrorf("aidialect: writing the response headers failed: %v", err)
	}
	l.dirty = false
}

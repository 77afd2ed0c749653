package translate

import (
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// Footprint is the bytes of reusable buffers a RequestBody keeps between requests. A body kept for reuse
// after one huge request would hold that memory for the VM's life (its linear memory never shrinks), so
// callers drop a body whose footprint grew too large instead of reusing it.
func (b *RequestBody) Footprint() int {
	return cap(b.members)*int(unsafe.Sizeof(jsonscan.Member{})) + cap(b.names)*int(unsafe.Sizeof("")) +
		cap(b.fields)*int(unsafe.Sizeof(fieldInfo{})) + cap(b.plans)*int(unsafe.Sizeof(packedPlan{})) +
		cap(b.planValues)*int(unsafe.Sizeof(planValue{})) +
		b.keys.footprint() + b.bridge.footprint()
}

// Footprint is the bytes of reusable buffers a Stream keeps between streams (see
// RequestBody.Footprint).
func (s *Stream) Footprint() int {
	return cap(s.out) + cap(s.last) + cap(s.carry) + cap(s.members)*int(unsafe.Sizeof(jsonscan.Member{})) + cap(s.kinds) +
		len(s.toolIndex)*64 + s.framer.Footprint() + cap(s.converted) + cap(s.bound) + cap(s.lifecycle)*int(unsafe.Sizeof(0)) + s.tags.footprint()
}

// Release drops every reference the body holds to its source, keeping its buffers for the next Parse: a body
// kept for reuse must not keep the last request's bytes alive.
func (b *RequestBody) Release() {
	clear(b.names)
	clear(b.planValues) // rewritten values (each rendering clears what it used: cap is never walked)
	// The bridge goes too: kept in every pooled body, the buffers of the bridged answers each body happened
	// to serve (a whole answer's text, for a stream) would add up across the pool; a bridged request builds
	// its own (a dozen allocations), and chat requests, the many, carry none.
	*b = RequestBody{members: b.members[:0], names: b.names[:0], fields: b.fields[:0], keys: b.keys, plans: b.plans[:0],
		planValues: b.planValues[:0]}
}

// Release drops the translator's view of the last chunk it was fed, keeping its buffers for the next stream.
func (s *Stream) Release() {
	s.framer.Reset()
	s.parts = eventParts{}
	s.pending = nil
	clear(s.toolIndex)
	// The surface may be the request body's bridge: counted and released there.
	s.surface, s.x.surface = nil, nil
	s.x.Binding = ResponseBinding{}
}

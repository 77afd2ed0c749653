package translate

import "unsafe"

// Footprint is the bytes of reusable buffers a RequestBody keeps between requests. A body kept for reuse
// after one huge request would hold that memory for the VM's life (its linear memory never shrinks), so
// callers drop a body whose footprint grew too large instead of reusing it.
func (b *RequestBody) Footprint() int {
	return cap(b.members)*int(unsafe.Sizeof(member{})) + cap(b.names)*int(unsafe.Sizeof("")) +
		cap(b.fields)*int(unsafe.Sizeof(fieldInfo{}))
}

// Footprint is the bytes of reusable buffers a StreamTranslator keeps between streams (see
// RequestBody.Footprint).
func (s *StreamTranslator) Footprint() int {
	return cap(s.out) + cap(s.edit) + cap(s.last) + cap(s.carry) + cap(s.members)*int(unsafe.Sizeof(member{})) +
		len(s.toolIndex)*64 + cap(s.framer.buf) + cap(s.framer.scratch)
}

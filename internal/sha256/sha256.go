// Package sha256 is SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the filter. crypto/sha256 would
// bring the FIPS module machinery into the .wasm (about 160 KiB, a sixth of the size budget) to hash one
// short key per request, and crypto/hmac with it; sha256_test.go checks both against the standard library.
package sha256

import (
	"encoding/binary"
	"math/bits"
)

// Sum256 is the SHA-256 digest of data.
func Sum256(data []byte) [32]byte {
	d := digest{h: initial}
	d.write(data)
	return d.sum()
}

var initial = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

// digest is a SHA-256 computation in progress: the state after the whole blocks written, and the bytes of
// the block not yet complete.
type digest struct {
	h      [8]uint32
	block  [64]byte
	filled int    // bytes of block in use
	length uint64 // bytes written in all
}

func (d *digest) write(p []byte) {
	d.length += uint64(len(p))
	if d.filled > 0 {
		n := copy(d.block[d.filled:], p)
		d.filled += n
		p = p[n:]
		if d.filled < 64 {
			return
		}
		sha256Block(&d.h, d.block[:])
		d.filled = 0
	}
	for len(p) >= 64 {
		sha256Block(&d.h, p[:64])
		p = p[64:]
	}
	d.filled = copy(d.block[:], p)
}

// sum pads the message and returns its digest; d is spent.
func (d *digest) sum() [32]byte {
	n := d.length
	d.block[d.filled] = 0x80
	clear(d.block[d.filled+1:])
	if d.filled >= 56 {
		sha256Block(&d.h, d.block[:])
		clear(d.block[:])
	}
	binary.BigEndian.PutUint64(d.block[56:], n*8)
	sha256Block(&d.h, d.block[:])
	var out [32]byte
	for i, v := range d.h {
		binary.BigEndian.PutUint32(out[i*4:], v)
	}
	return out
}

// HMAC is HMAC-SHA256 under one key, whose two padded key blocks are hashed once, when it is made: a MAC
// then costs the message's blocks and three more.
type HMAC struct {
	inner, outer [8]uint32
}

// NewHMAC prepares HMAC-SHA256 under key.
func NewHMAC(key []byte) *HMAC {
	if len(key) > 64 {
		sum := Sum256(key)
		key = sum[:]
	}
	var ipad, opad [64]byte
	copy(ipad[:], key)
	copy(opad[:], key)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	m := &HMAC{inner: initial, outer: initial}
	sha256Block(&m.inner, ipad[:])
	sha256Block(&m.outer, opad[:])
	return m
}

// Sum is the MAC of the message made of the parts one after the other.
func (m *HMAC) Sum(parts ...[]byte) [32]byte {
	d := digest{h: m.inner, length: 64}
	for _, p := range parts {
		d.write(p)
	}
	inner := d.sum()
	d = digest{h: m.outer, length: 64}
	d.write(inner[:])
	return d.sum()
}

var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

func sha256Block(h *[8]uint32, p []byte) {
	var w [64]uint32
	for i := 0; i < 16; i++ {
		w[i] = binary.BigEndian.Uint32(p[i*4:])
	}
	for i := 16; i < 64; i++ {
		s0 := bits.RotateLeft32(w[i-15], -7) ^ bits.RotateLeft32(w[i-15], -18) ^ w[i-15]>>3
		s1 := bits.RotateLeft32(w[i-2], -17) ^ bits.RotateLeft32(w[i-2], -19) ^ w[i-2]>>10
		w[i] = w[i-16] + s0 + w[i-7] + s1
	}
	a, b, c, d, e, f, g, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
	for i := 0; i < 64; i++ {
		s1 := bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)
		ch := e&f ^ ^e&g
		t1 := hh + s1 + ch + sha256K[i] + w[i]
		s0 := bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)
		maj := a&b ^ a&c ^ b&c
		t2 := s0 + maj
		hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
	}
	h[0] += a
	h[1] += b
	h[2] += c
	h[3] += d
	h[4] += e
	h[5] += f
	h[6] += g
	h[7] += hh
}

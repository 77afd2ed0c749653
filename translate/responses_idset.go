//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"hash/maphash"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
)

// callIDSet is the set of tool-call ids a bridged Response has given its function calls so far, so that a
// repeated one is replaced by a generated id (clients answer a call by its call_id). The JSON answer and the
// stream converter share it. A bridged request's chat tool names are kept in one too (bridgedTools), in the
// order they were added, so that a call's name finds its tool.
//
// The ids are the upstream's, of any length: comparing each with every earlier one costs n²/2 times their
// length, which in the compiled module (Go's wasm backend compares memory a byte at a time) let 1,024 calls
// with 8 KiB ids differing only at the end hold a worker for seconds. Ids are hashed instead, with a seed
// drawn at random per process (an unkeyed hash would let an upstream craft ids that collide, which would
// bring the comparisons back), and bytes are compared only when two hashes are equal: each id costs its
// length to hash, and about its length again when it is a repeat.
//
// The set holds at most maxBridgedItems ids, the bound on a Response's items; its tables are kept from one
// Response to the next, so in steady state adding costs no allocation. It keeps views of the ids: the
// caller keeps them unchanged until reset.
//
// Ids are compared as the client reads them: "call_1" and "call_\u0031" are one id. The ids are the contents
// of JSON string literals; one with an escape (rare) is decoded into decoded, and the set keeps a view of that
// (decoded only grows until reset, so earlier views stay valid when it moves).
type callIDSet struct {
	ids     [][]byte
	hashes  []uint64
	decoded []byte
	literal []byte // the escaped id being decoded, quoted
	// slots is an open-addressing table of positions in ids, +1 (0: free), twice as large as the set may
	// grow, so a lookup looks at few slots.
	slots []uint16
}

// callIDSlots is the size of a callIDSet's table: a power of two at least twice maxBridgedItems.
const callIDSlots = 2 * maxBridgedItems

// callIDSeed keys the ids' hashes; drawn once per process (per VM in the compiled module).
var callIDSeed = maphash.MakeSeed()

// reset empties the set, keeping its tables, and drops its views of the last Response's ids.
func (s *callIDSet) reset() {
	if len(s.ids) == 0 {
		return
	}
	clear(s.ids)
	s.ids, s.hashes, s.decoded = s.ids[:0], s.hashes[:0], s.decoded[:0]
	clear(s.slots)
}

// add puts id in the set and reports whether it was not there already. It reports false too when the set
// holds maxBridgedItems ids (callers stop at that many items first).
func (s *callIDSet) add(id []byte) bool {
	_, added := s.place(id, true)
	return added
}

// find is the position of id in the set (the order ids were added in), -1 when it is not there.
func (s *callIDSet) find(id []byte) int {
	pos, _ := s.place(id, false)
	return pos
}

// place is the position of id in the set, adding it when it is not there and add is set (added reports
// it); -1 when it is not there and not added (the set is full, or add is not set).
func (s *callIDSet) place(id []byte, add bool) (pos int, added bool) {
	if s.slots == nil {
		if !add {
			return -1, false
		}
		s.slots = make([]uint16, callIDSlots)
	}
	opcount.Add(opcount.StepsTaken, len(id)) // the search for an escape
	if bytes.IndexByte(id, '\\') >= 0 {
		if !add {
			// A lookup keeps nothing: its decoded copy is given back (lookups are one per call of an answer).
			defer func(kept int) { s.decoded = s.decoded[:kept] }(len(s.decoded))
		}
		id = s.decode(id)
	}
	opcount.Add(opcount.BytesHashed, len(id))
	h := maphash.Bytes(callIDSeed, id)
	const mask = callIDSlots - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		opcount.Add(opcount.Probes, 1)
		at := int(s.slots[i]) - 1
		if at < 0 {
			if !add || len(s.ids) >= maxBridgedItems {
				return -1, false
			}
			s.slots[i] = uint16(len(s.ids) + 1)
			s.ids = append(s.ids, id)
			s.hashes = append(s.hashes, h)
			return len(s.ids) - 1, true
		}
		if s.hashes[at] == h && len(s.ids[at]) == len(id) {
			opcount.Add(opcount.BytesCompared, len(id))
			if string(s.ids[at]) == string(id) {
				return at, false
			}
		}
	}
}

// decode is the id an escaped one spells, in s.decoded (the id itself when it is not a well-formed string's
// contents: the client could not read it either).
func (s *callIDSet) decode(id []byte) []byte {
	opcount.Add(opcount.BytesCopied, 2*len(id))
	s.literal = append(append(append(s.literal[:0], '"'), id...), '"')
	start := len(s.decoded)
	decoded, ok := jsonscan.AppendUnquoted(s.decoded, s.literal)
	if !ok {
		return id
	}
	s.decoded = decoded
	return decoded[start:len(decoded):len(decoded)]
}

// footprint is the bytes the set's tables hold.
func (s *callIDSet) footprint() int {
	return cap(s.ids)*24 + cap(s.hashes)*8 + cap(s.slots)*2 + cap(s.decoded) + cap(s.literal)
}

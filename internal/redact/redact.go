// Package redact removes secrets (provider keys) from bytes bound for a client: an upstream may echo the
// request's api-key or Authorization header in an error message, a debug field or a response header.
//
// A Set finds all its keys in one pass over the input, whatever their number: a filter skips the input five
// bytes at a time while no key can start nearby, and an Aho-Corasick automaton reads the rest, so the cost is
// linear in the input and does not grow with the number of keys, nor with the input's near misses.
//
// Every byte of every key occurrence is hidden: occurrences that overlap (a key containing another, a key's
// end beginning another key, or a key overlapping itself) become a single Placeholder; occurrences that only
// touch stay one Placeholder each. Keys are looked for in the input only: a Placeholder is never part of a
// match, so a key made of a Placeholder's bytes and their neighbours could still be built by the replacement
// (no provider key looks like "[redacted]").
package redact

import (
	"unsafe"

	"github.com/aidialect/aidialect/internal/opcount"
)

// Placeholder is what a key becomes.
const Placeholder = "[redacted]"

// MinKeyBytes is the shortest key a Set looks for: a shorter string would match ordinary text and corrupt
// answers, and is no credential worth the name. Keys are compared as written; a key that only appears
// JSON-escaped (a '/' written "\/") is not found.
const MinKeyBytes = 8

// The filter reads the input in blocks of blockBytes at every stride-th position. A key occurrence's first
// MinKeyBytes bytes always hold one such block, at one of stride offsets from its start, so the filter knows
// every block that may begin a key: those of each key's first MinKeyBytes bytes.
const (
	blockBytes = 4
	stride     = MinKeyBytes - blockBytes + 1
	// filterLog is the filter's size, 2^filterLog bits (8 KiB): a block's hash is the top bits of its
	// product by hashMul. At 100 keys (500 blocks) it lets through under 1% of the blocks holding none.
	filterLog = 16
	hashMul   = 0x9e3779b97f4a7c15
)

// Set is a compiled set of keys. The zero Set holds none.
type Set struct {
	filter *[1 << filterLog / 64]uint64 // a bit per hashed block that some key's first MinKeyBytes bytes hold
	root   *[256]int32                  // the root's child for each byte (0: none)
	// The automaton's states are the prefixes of the keys (a trie), numbered breadth first from the root (0),
	// and a last one that only ends the children of the one before it.
	states []state
	maxLen int
}

// state is one state of the automaton. (All int32, without padding: no equality function in the .wasm.)
type state struct {
	first int32 // its children are the states first to the next state's first-1, in the order of their label
	fail  int32 // the longest proper suffix of this state that is also a state
	match int32 // the length of the longest key that ends this state (itself or a suffix of it), 0: none
	label int32 // the byte leading to this state
}

// New prepares a set of keys; empty, short (under MinKeyBytes) and repeated ones are skipped. Its cost grows
// with the keys' total length; the Set holds 16 bytes per distinct key prefix, and 9 KiB.
func New(keys ...string) Set {
	s := Set{filter: new([1 << filterLog / 64]uint64)}
	// The trie, in the order its nodes are made: fail is the node's first child, first its next sibling
	// (children listed in byte order, 0 ends a list: the root is no child), match the length of the key that
	// ends there.
	trie := []state{{}}
	for _, k := range keys {
		if len(k) < MinKeyBytes {
			continue
		}
		for d := 0; d < stride; d++ {
			h := hash([]byte(k[d : d+blockBytes]))
			s.filter[h>>6] |= 1 << (h & 63)
		}
		at := int32(0)
		for _, c := range []byte(k) {
			prev, i := &trie[at].fail, trie[at].fail
			for i != 0 && trie[i].label < int32(c) {
				prev, i = &trie[i].first, trie[i].first
			}
			if i == 0 || trie[i].label != int32(c) {
				*prev = int32(len(trie)) // before the append, which may move the trie
				trie = append(trie, state{first: i, label: int32(c)})
				i = int32(len(trie) - 1)
			}
			at = i
		}
		trie[at].match = int32(len(k))
		s.maxLen = max(s.maxLen, len(k))
	}
	if s.maxLen == 0 {
		return Set{}
	}

	// The automaton: the trie numbered breadth first, so that the children of a state are numbered together,
	// in byte order, right after those of the state before it. order[i] is the trie node of state i.
	order := make([]int32, len(trie))
	s.states = make([]state, len(trie)+1)
	s.root = new([256]int32)
	n := int32(1)
	for i, t := range order {
		st := &s.states[i]
		st.first = n
		for c := trie[t].fail; c != 0; c = trie[c].first {
			order[n] = c
			s.states[n].label, s.states[n].match = trie[c].label, trie[c].match
			if i == 0 {
				s.root[trie[c].label] = n
			} else { // parents before children: a failure is shallower, so already linked and matched
				s.states[n].fail = s.step(st.fail, byte(trie[c].label))
			}
			if s.states[n].match == 0 {
				s.states[n].match = s.states[s.states[n].fail].match
			}
			n++
		}
	}
	s.states[n].first = n
	return s
}

// step is the automaton's transition from state st on byte c, for New (next has it written out).
func (s *Set) step(st int32, c byte) int32 {
	for st != 0 {
		lo, hi := s.states[st].first, s.states[st+1].first
		for lo < hi {
			m := int32(uint32(lo+hi) >> 1)
			if l := s.states[m].label; l < int32(c) {
				lo = m + 1
			} else if l > int32(c) {
				hi = m
			} else {
				return m
			}
		}
		st = s.states[st].fail
	}
	return s.root[c]
}

// skip returns where the automaton must start reading, from b[i] on, for a key that may start there: no
// key starts in b[i:] before that, or anywhere in b[i:] when it returns -1. A key starting at b[p], p >= i,
// holds the block that starts in b[p:p+stride] at a position checked. (A function of its own: the common
// path, kept small.)
func (s *Set) skip(b []byte, i int) int {
	f := s.filter
	_ = f[0] // one nil check, not one a block
	j := i + stride - 1
	// Four blocks at a time while they fit, then one at a time, where the last four let one through.
	for ; j+3*stride+blockBytes <= len(b); j += 4 * stride {
		opcount.Add(opcount.Probes, 4) // four blocks, a filter bit each
		q := b[j : j+3*stride+blockBytes]
		h0, h1, h2, h3 := hash(q[0:]), hash(q[stride:]), hash(q[2*stride:]), hash(q[3*stride:])
		if (f[h0>>6]>>(h0&63)|f[h1>>6]>>(h1&63)|f[h2>>6]>>(h2&63)|f[h3>>6]>>(h3&63))&1 != 0 {
			break
		}
	}
	for ; j+blockBytes <= len(b); j += stride {
		opcount.Add(opcount.Probes, 1)
		if h := hash(b[j:]); f[h>>6]>>(h&63)&1 != 0 {
			return j - (stride - 1)
		}
	}
	return -1 // and no key fits after the last block checked
}

// hash is the filter's bit for the block that q starts with.
func hash(q []byte) uint64 {
	_ = q[blockBytes-1]
	return (uint64(q[0]) | uint64(q[1])<<8 | uint64(q[2])<<16 | uint64(q[3])<<24) * hashMul >> (64 - filterLog)
}

// next finds the next key occurrence in b, reading from b[i] in state st (0 the first time): it returns the
// end of the occurrence, the length of the longest key ending there (which covers any shorter one), and the
// state to go on with. end is -1 when there is none. (The automaton's step is written out, not called: in a
// .wasm a call costs more than the work of a byte.)
func (s *Set) next(b []byte, i int, st int32) (end, n int, state int32) {
	root, states := s.root, s.states
	for {
		if st == 0 {
			if i = s.skip(b, i); i < 0 {
				return -1, 0, 0
			}
		}
		for ; i < len(b); i++ {
			c := int32(b[i])
			opcount.Add(opcount.StepsTaken, 1)
			for st != 0 { // st's child on c, else st's failure's: most states have one child, tried first
				opcount.Add(opcount.StepsTaken, 1) // a state tried (its children searched), then its failure
				lo, hi := states[st].first, states[st+1].first
				if hi == lo+1 {
					if states[lo].label == c {
						st = lo
						break
					}
				} else {
					for lo < hi {
						opcount.Add(opcount.StepsTaken, 1)
						m := int32(uint32(lo+hi) >> 1)
						if l := states[m].label; l < c {
							lo = m + 1
						} else {
							hi = m
						}
					}
					if lo < states[st+1].first && states[lo].label == c {
						st = lo
						break
					}
				}
				st = states[st].fail
			}
			if st == 0 {
				if st = root[c]; st == 0 {
					i++
					break // no key under way: back to the filter
				}
			}
			if m := states[st].match; m != 0 {
				return i + 1, int(m), st
			}
		}
		if i >= len(b) {
			return -1, 0, 0
		}
	}
}

// Empty reports whether there is nothing to look for.
func (s *Set) Empty() bool { return s.maxLen == 0 }

// Found reports whether b holds a key.
func (s *Set) Found(b []byte) bool {
	if s.maxLen == 0 {
		return false
	}
	end, _, _ := s.next(b, 0, 0)
	return end >= 0
}

// FoundString reports whether str holds a key.
func (s *Set) FoundString(str string) bool {
	return s.Found(unsafe.Slice(unsafe.StringData(str), len(str))) // only read, during the call
}

// run is a part of the input replaced by a Placeholder, and where that Placeholder starts in the output.
type run struct{ from, to, at int }

// Redact returns b with every key occurrence replaced by Placeholder (see the package documentation): b
// itself, not copied and with nothing allocated, when it holds none. b is never written to. The output is
// built once, in the same pass that finds the keys.
//
// Replacement is hand-written rather than bytes.ReplaceAll, which would cost the .wasm size budget several
// KiB for a path almost never taken.
func (s *Set) Redact(b []byte) []byte {
	if s.maxLen == 0 {
		return b
	}
	end, n, st := s.next(b, 0, 0)
	if end < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+len(Placeholder)) // one occurrence fits; more grow it by doubling
	// The runs a later occurrence may still overlap: one ending at end may start maxLen-1 bytes earlier.
	var recent [8]run
	runs := recent[:0]
	done := 0 // out holds the output for b[:done]
	for ; end >= 0; end, n, st = s.next(b, end, st) {
		from := end - n
		if k := len(runs) - 1; k >= 0 && runs[k].from <= from && from < runs[k].to {
			runs[k].to, done = end, end // the last run grows (a key overlapping itself): its Placeholder stays
			continue
		}
		// Ends come in order, starts do not: an occurrence may overlap the runs before it (a key holding
		// other keys). Those are undone and merged into it, their text after from taken back.
		for len(runs) > 0 && from < runs[len(runs)-1].to {
			opcount.Add(opcount.StepsTaken, 1) // a run undone
			r := runs[len(runs)-1]
			runs = runs[:len(runs)-1]
			out, done = out[:r.at], r.from
			from = min(from, r.from)
		}
		if from < done {
			out = out[:len(out)-(done-from)]
		} else {
			opcount.Add(opcount.BytesCopied, from-done)
			out = append(out, b[done:from]...)
		}
		if len(runs) == cap(runs) { // drop the runs no later occurrence can reach before growing
			k := 0
			for k < len(runs) && runs[k].to <= end+1-s.maxLen {
				k++
			}
			opcount.Add(opcount.StepsTaken, k+1)
			runs = runs[:copy(runs, runs[k:])]
		}
		runs = append(runs, run{from, end, len(out)})
		opcount.Add(opcount.BytesCopied, len(Placeholder))
		out = append(out, Placeholder...)
		done = end
	}
	opcount.Add(opcount.BytesCopied, len(b)-done)
	return append(out, b[done:]...)
}

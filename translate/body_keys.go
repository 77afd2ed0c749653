package translate

import (
	"hash/maphash"
	"unsafe"

	"github.com/aidialect/aidialect/internal/opcount"
)

// Each top-level key of a request body is hashed once, and the hash serves both its lookups: the field table
// (what the translator knows of the name) and the body's key table (was the key sent before?). In the
// compiled module, per-member work dominates a body of thousands of short keys: Go maps hashed each key
// twice, and the duplicate-key map of a big body was allocated per request, whose collections then cost
// more than the rest of the request.
//
// The hash is keyed with a seed drawn at random per process (per VM in the compiled module): a client cannot
// choose keys that collide, which would bring back a comparison of every key with every other. Bytes are
// compared only when two hashes are equal, so each key costs its length to hash, and about its length again
// when it is a repeat (or a known field).

// keySeed keys the hashes of request keys; drawn once per process.
var keySeed = maphash.MakeSeed()

// hashKey is the seeded hash of a (decoded) key.
func hashKey(key string) uint64 {
	opcount.Add(opcount.BytesHashed, len(key))
	return maphash.String(keySeed, key)
}

// fieldIndex is fieldTable as an open-addressing table probed with hashKey's hash, so that looking a body
// key up costs no second hash. Built once at start (dialect.go's init), read-only after.
type fieldIndex struct {
	names  []string
	hashes []uint64
	infos  []fieldInfo
	// slots holds positions in names, +1 (0: free); a power of two at least four times the names.
	slots []uint16
}

var fieldsByHash fieldIndex

func newFieldIndex(table map[string]fieldInfo) fieldIndex {
	size := 16
	for size < 4*len(table) {
		size *= 2
	}
	f := fieldIndex{slots: make([]uint16, size)}
	for name, info := range table {
		h := maphash.String(keySeed, name)
		i := int(h) & (size - 1)
		for f.slots[i] != 0 {
			i = (i + 1) & (size - 1)
		}
		f.names, f.hashes, f.infos = append(f.names, name), append(f.hashes, h), append(f.infos, info)
		f.slots[i] = uint16(len(f.names))
	}
	return f
}

// lookup is what the translator knows of key, whose hashKey is h (the zero fieldInfo, fieldOther, for a name
// it does not know).
func (f *fieldIndex) lookup(key string, h uint64) fieldInfo {
	mask := len(f.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		opcount.Add(opcount.Probes, 1)
		at := int(f.slots[i]) - 1
		if at < 0 {
			return fieldInfo{}
		}
		if f.hashes[at] == h && len(f.names[at]) == len(key) {
			opcount.Add(opcount.BytesCompared, len(key))
			if f.names[at] == key {
				return f.infos[at]
			}
		}
	}
}

// keyTable finds repeated keys in one body: an open-addressing table of member positions sized to the body
// (at most 2*maxTopLevelMembers slots, 16 KiB), kept from one body to the next and cleared over the part the
// body uses, so a body costs no allocation once the table has grown to its size.
type keyTable struct {
	// slots holds member positions, +1 (0: free); its length, a power of two at least twice the members, is
	// the part of its capacity the current body uses.
	slots []uint16
	// hashes is hashKey of each member's key so far, in member order.
	hashes []uint64
}

// reset prepares the table for a body of n members.
func (t *keyTable) reset(n int) {
	size := 32
	for size < 2*n {
		size *= 2
	}
	t.hashes = t.hashes[:0]
	if cap(t.slots) < size {
		t.slots = make([]uint16, size)
		return
	}
	t.slots = t.slots[:size]
	clear(t.slots)
}

// add records member i of b, whose key is key with hashKey h, and reports whether an earlier member has the
// same key. Members must come in order, from 0.
func (t *keyTable) add(b *RequestBody, i int, key string, h uint64) (repeated bool) {
	t.hashes = append(t.hashes, h)
	mask := len(t.slots) - 1
	for s := int(h) & mask; ; s = (s + 1) & mask {
		opcount.Add(opcount.Probes, 1)
		at := int(t.slots[s]) - 1
		if at < 0 {
			t.slots[s] = uint16(i + 1)
			return false
		}
		if t.hashes[at] == h {
			other := b.keyOf(at)
			if len(other) == len(key) {
				opcount.Add(opcount.BytesCompared, len(key))
				if other == key {
					return true
				}
			}
		}
	}
}

// footprint is the bytes the table keeps.
func (t *keyTable) footprint() int { return cap(t.slots)*2 + cap(t.hashes)*8 }

// keyOf is member i's key as the provider reads it: a view of src when written without escapes (no copy),
// else decoded (once, then kept), so "mo\u0064el" is "model".
func (b *RequestBody) keyOf(i int) string {
	m := b.members[i]
	if m.KeyEscaped {
		return b.memberName(i)
	}
	raw := m.Key(b.src)
	return unsafe.String(unsafe.SliceData(raw), len(raw))
}

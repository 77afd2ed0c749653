//go:build aidialect_opcount

package opcount

import "sync/atomic"

// Enabled reports whether this build counts.
const Enabled = true

var counters [kinds]atomic.Int64

// Add counts n operations of kind k.
func Add(k Kind, n int) { counters[k].Add(int64(n)) }

// Equal counts one comparison of two strings of lengths a and b as Go's == pays it in the compiled module:
// nothing when the lengths differ, else every byte (the wasm backend compares a byte at a time, and a
// hostile input makes the strings differ only at their end).
func Equal(a, b int) {
	if a == b {
		Add(BytesCompared, a)
	}
}

// Lookup counts one lookup (or insertion) of a key of n bytes in a Go map: the key's bytes hashed (a seeded
// hash, so chosen keys cannot make them collide) and one probe.
func Lookup(n int) {
	Add(BytesHashed, n)
	Add(Probes, 1)
}

// Reset sets every counter to zero.
func Reset() {
	for i := range counters {
		counters[i].Store(0)
	}
}

// Snapshot reads every counter.
func Snapshot() Counts {
	var c Counts
	for i := range counters {
		c[i] = counters[i].Load()
	}
	return c
}

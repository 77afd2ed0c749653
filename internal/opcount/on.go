//go:build aidialect_opcount

package opcount

import "sync/atomic"

// Enabled reports whether this build counts.
const Enabled = true

var counters [kinds]atomic.Int64

// Add counts n operations of kind k.
func Add(k Kind, n int) { counters[k].Add(int64(n)) }

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

//go:build !aidialect_opcount

package opcount

// Enabled reports whether this build counts: tests that need counts skip without it, naming the tag.
const Enabled = false

// Add does nothing in a build without the tag aidialect_opcount; the call is inlined away.
func Add(Kind, int) {}

// Equal does nothing in a build without the tag aidialect_opcount.
func Equal(int, int) {}

// Lookup does nothing in a build without the tag aidialect_opcount.
func Lookup(int) {}

// Reset does nothing in a build without the tag aidialect_opcount.
func Reset() {}

// Snapshot is all zeroes in a build without the tag aidialect_opcount.
func Snapshot() Counts { return Counts{} }

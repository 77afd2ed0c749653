// Package opcount counts the operations whose number tells a linear pass from a quadratic one: bytes
// compared, members visited, hash-table probes. Timings compared in a test flake on a loaded machine, and
// natively they hide what the compiled module pays (Go's wasm backend compares memory a byte at a time, so a
// comparison that is one vector instruction natively costs its length there). Counts are exact and the same
// on every engine, so the linearity tests assert on them.
//
// Counting is compiled in only with the build tag aidialect_opcount (`make test` runs the linearity tests
// with it); without the tag Add is an empty function that the compiler removes, so the filter pays nothing.
package opcount

// Kind is what is counted.
type Kind uint8

const (
	// BytesCompared: bytes read to decide whether two keys, names or ids are equal.
	BytesCompared Kind = iota
	// BytesHashed: bytes read to hash a key, name or id for a table.
	BytesHashed
	// Probes: slots of a hash table looked at (a lookup that finds its slot at once is one probe).
	Probes
	// MembersVisited: JSON members or array elements looked at by a pass that searches among them.
	MembersVisited
	// StepsTaken: steps of an automaton or a scanner loop whose work is not a byte compare (redaction's
	// transitions, a framer's boundary searches).
	StepsTaken
	// BytesCopied: bytes moved to carry a tail over to the next chunk or to join data, which a pass could
	// repeat for every chunk or event (and be quadratic) without comparing anything.
	BytesCopied
	kinds
)

var kindNames = [kinds]string{"bytes-compared", "bytes-hashed", "probes", "members-visited", "steps-taken", "bytes-copied"}

// String names the kind as the tests print it.
func (k Kind) String() string {
	if k < kinds {
		return kindNames[k]
	}
	return "unknown"
}

// Counts is a snapshot of every counter.
type Counts [kinds]int64

// Total is the sum of every kind: the work of a pass when its kinds weigh about the same.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

package translate

import (
	"slices"
	"testing"
)

// TestEveryDialectIsListedWithItsTable: every Dialect value below DialectLimit is in Dialects, has its table
// and parses back from its name, so a dialect added to the constants cannot be left out of the tables that
// are sized or iterated by them.
func TestEveryDialectIsListedWithItsTable(t *testing.T) {
	for d := DialectUnknown + 1; d < DialectLimit; d++ {
		if !slices.Contains(Dialects, d) {
			t.Errorf("dialect %d is not in Dialects", d)
		}
		if d.spec() == nil {
			t.Errorf("dialect %d has no table", d)
			continue
		}
		if back, err := ParseDialect(d.String()); err != nil || back != d {
			t.Errorf("dialect %d's name %q does not parse back: %v", d, d.String(), err)
		}
	}
	if len(Dialects) != int(DialectLimit)-1 {
		t.Errorf("Dialects has %d entries, want %d", len(Dialects), DialectLimit-1)
	}
}

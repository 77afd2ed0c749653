package opcount

import "testing"

func TestCounts(t *testing.T) {
	Reset()
	Add(BytesCompared, 7)
	Add(Probes, 2)
	Add(BytesCompared, 3)
	got := Snapshot()
	if !Enabled {
		if got != (Counts{}) {
			t.Fatalf("a build without aidialect_opcount counted: %v", got)
		}
		return
	}
	if got[BytesCompared] != 10 || got[Probes] != 2 || got.Total() != 12 {
		t.Fatalf("counts %v, want 10 bytes compared and 2 probes", got)
	}
	Reset()
	if got := Snapshot(); got.Total() != 0 {
		t.Fatalf("Reset left %v", got)
	}
	if BytesHashed.String() != "bytes-hashed" || Kind(200).String() != "unknown" {
		t.Fatal("kind names")
	}
}

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

func TestHelperCounts(t *testing.T) {
	if !Enabled {
		t.Skip("counts only with -tags aidialect_opcount")
	}
	Reset()
	Equal(5, 6) // lengths differ: == reads no byte
	Equal(9, 9)
	Lookup(12)
	if got := Snapshot(); got[BytesCompared] != 9 || got[BytesHashed] != 12 || got[Probes] != 1 {
		t.Fatalf("counts %v, want 9 bytes compared, 12 hashed, 1 probe", got)
	}
	if BytesCopied.String() != "bytes-copied" {
		t.Fatal("kind names")
	}
}

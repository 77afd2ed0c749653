package wasmtest

import (
	"fmt"
	"strings"
	"testing"
)

// Result is one benchmark run's figures, measured as testing prints them, so that the filter's run can be
// divided by the floor's. BytesPerOp and CPUPerOp are 0 where a run does not measure them.
type Result struct {
	N                             int
	NsPerOp, BytesPerOp, CPUPerOp float64
}

// Best keeps the lowest of each figure over several runs of the same benchmark (noise only ever adds).
func (r Result) Best(o Result) Result {
	if r.N == 0 {
		return o
	}
	r.NsPerOp, r.BytesPerOp, r.CPUPerOp = min(r.NsPerOp, o.NsPerOp), min(r.BytesPerOp, o.BytesPerOp), min(r.CPUPerOp, o.CPUPerOp)
	return r
}

// AgainstFloor runs one lifecycle scenario as two sub-benchmarks, name/floor then name/aidialect, in the
// same process. run measures one module's run (returning what it measured, N = b.N); each run's CPU time per
// request is reported as cpu-ns/op when measured. With -count=N each sub-benchmark runs N times in a row,
// the floor's first: every filter run is divided by the best floor run, the one least disturbed by whatever
// else the machine was doing (ReportRatios).
func AgainstFloor(b *testing.B, name string, run func(b *testing.B, module string) Result) {
	var floor Result
	for _, module := range []string{FloorName, FilterName} {
		b.Run(name+"/"+module, func(b *testing.B) {
			got := run(b, module)
			if got.CPUPerOp > 0 {
				b.ReportMetric(got.CPUPerOp, "cpu-ns/op")
			}
			if module == FloorName {
				floor = floor.Best(got)
				return
			}
			ReportRatios(b, got, floor)
		})
	}
}

// ReportRatios reports the filter's figures divided by the floor's: xfloor-ns (wall time), xfloor-B (bytes
// allocated, where the floor's are measured) and xfloor-cpu (process CPU time, where both are measured;
// steadier on a shared machine). Nothing is reported before a floor run.
func ReportRatios(b *testing.B, got, floor Result) {
	if floor.N == 0 {
		return
	}
	b.ReportMetric(got.NsPerOp/floor.NsPerOp, "xfloor-ns")
	if floor.BytesPerOp > 0 {
		b.ReportMetric(got.BytesPerOp/floor.BytesPerOp, "xfloor-B")
	}
	if floor.CPUPerOp > 0 && got.CPUPerOp > 0 {
		b.ReportMetric(got.CPUPerOp/floor.CPUPerOp, "xfloor-cpu")
	}
}

// MemoryCheckpoints are the request counts at which the memory tests (bench's TestMemory, internal/v8host's
// TestV8Memory) read the guest's linear memory.
var MemoryCheckpoints = []int{1_000, 10_000, 100_000}

// MemoryTable is the memory tests' table: the filter's and the floor's linear memory (MiB) at the start and at
// each of MemoryCheckpoints, over kinds request kinds. engine, when not empty, heads it.
func MemoryTable(engine string, kinds int, filter, floor []uint64) string {
	var table strings.Builder
	if engine != "" {
		table.WriteString(engine + ": ")
	}
	fmt.Fprintf(&table, "linear memory (MiB) over %d request kinds, rotating:\n%10s %10s %10s\n", kinds, "requests", FilterName, FloorName)
	for i, n := range append([]int{0}, MemoryCheckpoints...) {
		fmt.Fprintf(&table, "%10d %10.2f %10.2f\n", n, MiB(filter[i]), MiB(floor[i]))
	}
	return table.String()
}

// CheckMemoryGrowth fails t when the filter's linear memory grew more than 10% from the second-last
// checkpoint (10k requests) to the last (100k): linear memory never shrinks, so a leak, or garbage collected
// too late, shows as growth after warm-up. under, when not empty, says where (" under V8").
func CheckMemoryGrowth(t testing.TB, filter []uint64, under string) {
	t.Helper()
	at10k, at100k := filter[len(filter)-2], filter[len(filter)-1]
	if float64(at100k) > float64(at10k)*1.10 {
		t.Errorf("the filter's linear memory grew after warm-up%s: %.2f MiB at 10k requests, %.2f MiB at 100k (limit +10%%)",
			under, MiB(at10k), MiB(at100k))
	}
}

// MiB is n bytes in MiB.
func MiB(n uint64) float64 { return float64(n) / (1 << 20) }

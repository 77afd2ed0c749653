package v8host

import (
	"fmt"
	"math"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// The adversarial family in the compiled module: each hostile exchange of benchdata.AdversarialPairs beside
// its normal twin, under V8 and under wazero in the same run. tools/benchtable prints hostile/normal per
// shape and engine (BENCHMARKS.md: the goal is <= 3x for every shape on both engines):
//
//	AIDIALECT_WASM=$PWD/dist/aidialect.wasm go test -run '^$' -bench 'V8Adversarial|WazeroAdversarial' \
//	    -benchtime 20x -count 3 ./internal/v8host/ | go run ./tools/benchtable
//
// Timings only: translate's and the internal packages' linearity tests assert on operation counts.

// adversarialSides are a pair's two exchanges, named as benchtable pairs them.
func adversarialSides(p benchdata.AdversarialPair) []struct {
	name string
	x    *benchdata.Exchange
} {
	return []struct {
		name string
		x    *benchdata.Exchange
	}{{"hostile", p.Hostile}, {"normal", p.Normal}}
}

// checkAdversarial: the filter relayed the exchange and the client got a 200, so the benchmark measures the
// intended pass rather than an early refusal.
func checkAdversarial(o wasmtest.Outcome) error {
	if o.Local != nil {
		return fmt.Errorf("answered locally: %d %.300s", o.Local.Status, o.Local.Body)
	}
	if o.Status != 200 || len(o.ClientBody) == 0 {
		return fmt.Errorf("client status %d, %d bytes: %.300s", o.Status, len(o.ClientBody), o.ClientBody)
	}
	return nil
}

func BenchmarkV8Adversarial(b *testing.B) {
	for _, pair := range benchdata.AdversarialPairs() {
		for _, side := range adversarialSides(pair) {
			b.Run(pair.Name+"/"+side.name, func(b *testing.B) {
				p := sharedV8Plugin(b, filterName)
				sc := newScenario(side.x)
				ref := p.ref(b, sc)
				o, err := p.plugin.Exchange(sc.x)
				if err != nil {
					b.Fatal(err)
				}
				if v := o.Verdict(); v != "" {
					b.Fatalf("%s %v", v, o.Rule)
				}
				if err := checkAdversarial(v8Outcome(o)); err != nil {
					b.Fatal(err)
				}
				// Warm up until a batch is no faster than the best before it: V8 compiles what runs.
				best := math.Inf(1)
				for range 20 {
					res, err := p.plugin.Loop([]Ref{ref}, 4, nil)
					if err != nil {
						b.Fatal(err)
					}
					cur := float64(res.CPUNS)
					if cur > 0.97*best {
						break
					}
					best = cur
				}
				b.ResetTimer()
				res, err := p.plugin.Loop([]Ref{ref}, b.N, nil)
				if err != nil {
					b.Fatal(err)
				}
				if res.LastStatus != 200 {
					b.Fatalf("client status %d", res.LastStatus)
				}
				b.ReportMetric(float64(res.NS)/float64(b.N), "ns/op")
				b.ReportMetric(float64(res.CPUNS)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func BenchmarkWazeroAdversarial(b *testing.B) {
	for _, pair := range benchdata.AdversarialPairs() {
		for _, side := range adversarialSides(pair) {
			b.Run(pair.Name+"/"+side.name, func(b *testing.B) {
				g := sharedWazero(b, filterName)
				c, r := &wasmtest.Client{}, &wasmtest.ChunkReader{}
				for range 4 {
					x, err := wasmtest.Play(g.host, side.x, c, r)
					if err != nil {
						b.Fatal(err)
					}
					if err := checkAdversarial(wasmtest.HostemuOutcome(x, c)); err != nil {
						b.Fatal(err)
					}
				}
				cpu := wasmtest.ProcessCPU()
				for b.Loop() {
					if _, err := wasmtest.Play(g.host, side.x, c, r); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64((wasmtest.ProcessCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if c.Status != 200 {
					b.Fatalf("client status %d", c.Status)
				}
			})
		}
	}
}

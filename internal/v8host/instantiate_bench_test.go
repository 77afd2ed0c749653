package v8host

import (
	"testing"
	"time"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// BenchmarkV8CompileInstantiate is what a new worker VM costs under V8 before it serves: compiling the module,
// instantiating it (_initialize included), starting the plugin on benchdata.Config, and the first request
// (V8 compiles a function on its first call, so the first request pays for the code it runs), for the floor
// filter and the filter, each in a fresh node process. ns/op, and the filter's ratio to the floor's
// (xfloor-ns), are compile plus instantiate; compile-ns and instantiate-ns split it, start-ns is starting the
// plugin and first-ns the first request.
func BenchmarkV8CompileInstantiate(b *testing.B) {
	sc := newScenario(benchdata.JSONScenario("llama-3-70b"))
	wasmtest.AgainstFloor(b, "new-vm", func(b *testing.B, name string) wasmtest.Result {
		path := filterWasm(b)
		if name == floorName {
			path = buildWasm(b, wasmtest.FloorPkg)
		}
		var compile, instantiate, start, first time.Duration
		for range b.N {
			h, err := Start()
			if err != nil {
				b.Fatal(err)
			}
			c, err := h.Load(name, path)
			if err != nil {
				b.Fatal(err)
			}
			vm, err := h.NewVM(name, nil)
			if err != nil {
				b.Fatal(err)
			}
			startBegan := time.Now()
			plugin, err := vm.Start(benchdata.Config)
			if err != nil {
				b.Fatal(err)
			}
			start += time.Since(startBegan)
			firstBegan := time.Now()
			o, err := plugin.Exchange(sc.x)
			if err != nil {
				b.Fatal(err)
			}
			if err := wasmtest.CheckScenario(name, sc.Exchange, v8Outcome(o)); err != nil {
				b.Fatal(err)
			}
			first += time.Since(firstBegan)
			compile += c
			instantiate += vm.Instantiate
			h.Close()
		}
		n := float64(b.N)
		b.ReportMetric(float64(compile)/n, "compile-ns")
		b.ReportMetric(float64(instantiate)/n, "instantiate-ns")
		b.ReportMetric(float64(start)/n, "start-ns")
		b.ReportMetric(float64(first)/n, "first-ns")
		b.ReportMetric(float64(compile+instantiate)/n, "ns/op")
		return wasmtest.Result{N: b.N, NsPerOp: float64(compile+instantiate) / n}
	})
}

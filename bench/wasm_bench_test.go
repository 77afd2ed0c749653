package bench

import (
	"runtime"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"

	"github.com/aidialect/aidialect/internal/hostemu"
)

// BenchmarkWasmLifecycle is one request's whole life in the compiled module under wazero: request headers,
// body, response headers, body (one chunk per event for the stream), stream done, context deleted; through
// internal/hostemu's host rules. Each scenario runs the floor module first, then the filter, in the same
// process and over the same emulator path, one hostemu.Host per module for the whole benchmark. The
// filter's line carries its ratios to the floor: xfloor-ns (wall time), xfloor-cpu (process CPU time,
// steadier on a shared machine) and xfloor-B (bytes allocated on the host side; the guest's own heap is
// TestMemory's subject).
func BenchmarkWasmLifecycle(b *testing.B) {
	for _, r := range []*request{jsonScenario("llama-3-70b"), streamScenario("llama-3-70b")} {
		// With -count=N each sub-benchmark runs N times in a row, the floor's first: every filter run is
		// divided by the best floor run, the one least disturbed by whatever else the machine was doing.
		var floor result
		for _, name := range []string{floorName, filterName} {
			b.Run(r.name+"/"+name, func(b *testing.B) {
				got := benchLifecycle(b, sharedGuest(b, name), r)
				if got.cpuPerOp > 0 {
					b.ReportMetric(got.cpuPerOp, "cpu-ns/op")
				}
				if name == floorName {
					floor = floor.best(got)
					return
				}
				if floor.n == 0 {
					return
				}
				b.ReportMetric(got.nsPerOp/floor.nsPerOp, "xfloor-ns")
				b.ReportMetric(got.bytesPerOp/floor.bytesPerOp, "xfloor-B")
				if floor.cpuPerOp > 0 && got.cpuPerOp > 0 {
					b.ReportMetric(got.cpuPerOp/floor.cpuPerOp, "xfloor-cpu")
				}
			})
		}
	}
}

// result is what testing prints, measured the same way, so the filter's benchmark can divide by the floor's;
// plus the process CPU time per request, the figure to trust on a busy machine.
type result struct {
	n                             int
	nsPerOp, bytesPerOp, cpuPerOp float64
}

// best keeps the lowest of each figure over several runs of the same benchmark.
func (r result) best(o result) result {
	if r.n == 0 {
		return o
	}
	r.nsPerOp, r.bytesPerOp, r.cpuPerOp = min(r.nsPerOp, o.nsPerOp), min(r.bytesPerOp, o.bytesPerOp), min(r.cpuPerOp, o.cpuPerOp)
	return r
}

func benchLifecycle(b *testing.B, g *guest, r *request) result {
	s, err := g.start(benchConfig)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	// Warm up (pool filled, heap grown, first-use paths taken), and check the outcome is the intended one.
	for range 64 {
		x, err := s.exchange(r)
		if err != nil {
			b.Fatal(err)
		}
		if err := checkScenario(g, r, x, &s.client); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := processCPU()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.exchange(r); err != nil {
			b.Fatal(err)
		}
	}
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&after)
	if s.client.status != 200 {
		b.Fatalf("client status %d", s.client.status)
	}
	return result{
		n:          b.N,
		nsPerOp:    float64(b.Elapsed().Nanoseconds()) / float64(b.N),
		bytesPerOp: float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N),
		cpuPerOp:   float64(cpu.Nanoseconds()) / float64(b.N),
	}
}

// BenchmarkInstantiate is a module's start as Envoy pays it for each worker VM: compile, instantiate
// (_initialize), OnPluginStart with the four-provider configuration. wasm-bytes is the module's size (the
// filter's budget is 4 MiB, 4194304 bytes).
func BenchmarkInstantiate(b *testing.B) {
	for _, name := range []string{floorName, filterName} {
		b.Run(name, func(b *testing.B) {
			wasm := moduleBytes(name)
			for b.Loop() {
				vm, err := proxytest.NewWasmVMContext(wasm)
				if err != nil {
					b.Fatal(err)
				}
				host, err := hostemu.New(vm, []byte(benchConfig))
				if err != nil {
					b.Fatal(err)
				}
				host.Close()
				vm.Close()
			}
			b.ReportMetric(float64(len(wasm)), "wasm-bytes")
		})
	}
}

// BenchmarkPluginStart is OnPluginStart alone (configuration parsed and validated, metrics defined) on an
// already instantiated module, with the four-provider configuration; BenchmarkInstantiate is dominated by
// wazero compiling the module.
func BenchmarkPluginStart(b *testing.B) {
	for _, name := range []string{floorName, filterName} {
		b.Run(name, func(b *testing.B) {
			g := sharedGuest(b, name)
			for b.Loop() {
				host, err := hostemu.New(g.vm, []byte(benchConfig))
				if err != nil {
					b.Fatal(err)
				}
				host.Close()
			}
		})
	}
}

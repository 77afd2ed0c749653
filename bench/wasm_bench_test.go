package bench

import (
	"runtime"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// BenchmarkWasmLifecycle is one request's whole life in the compiled module under wazero: request headers,
// body, response headers, body (one chunk per event for the stream), stream done, context deleted; through
// internal/hostemu's host rules. Each scenario runs the floor module first, then the filter, in the same
// process and over the same emulator path, one hostemu.Host per module for the whole benchmark. The
// filter's line carries its ratios to the floor: xfloor-ns (wall time), xfloor-cpu (process CPU time,
// steadier on a shared machine) and xfloor-B (bytes allocated on the host side; the guest's own heap is
// TestMemory's subject), each divided by the best floor run (wasmtest.AgainstFloor).
func BenchmarkWasmLifecycle(b *testing.B) {
	for _, r := range []*request{jsonScenario("llama-3-70b"), streamScenario("llama-3-70b")} {
		wasmtest.AgainstFloor(b, r.name, func(b *testing.B, name string) wasmtest.Result {
			return benchLifecycle(b, sharedGuest(b, name), r)
		})
	}
}

// benchLifecycle measures as testing prints (wall time, host-side bytes), plus the process CPU time per
// request, the figure to trust on a busy machine.
func benchLifecycle(b *testing.B, g *guest, r *request) wasmtest.Result {
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
	cpu := wasmtest.ProcessCPU()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.exchange(r); err != nil {
			b.Fatal(err)
		}
	}
	cpu = wasmtest.ProcessCPU() - cpu
	runtime.ReadMemStats(&after)
	if s.client.Status != 200 {
		b.Fatalf("client status %d", s.client.Status)
	}
	return wasmtest.Result{
		N:          b.N,
		NsPerOp:    float64(b.Elapsed().Nanoseconds()) / float64(b.N),
		BytesPerOp: float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N),
		CPUPerOp:   float64(cpu.Nanoseconds()) / float64(b.N),
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

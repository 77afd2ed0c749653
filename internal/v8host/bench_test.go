package v8host

import (
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// The benchmark scenarios are bench's (internal/benchdata: the same bytes, the same configuration), plus
// the same stream cut into 1 KiB network chunks; internal/wasmtest judges their outcomes and divides the
// filter's figures by the floor's, for both packages.

const (
	filterName = wasmtest.FilterName
	floorName  = wasmtest.FloorName
)

// scenario is a benchdata exchange and the same exchange as host.mjs plays it.
type scenario struct {
	*benchdata.Exchange
	x *Exchange
}

func newScenario(bx *benchdata.Exchange) scenario { return scenario{bx, v8Exchange(bx)} }

// v8Exchange is bx in host.mjs's terms. A request with an answer whose body has no chunks gets a body with no
// data, as hostemu relays it through a reader: never a body-less answer.
func v8Exchange(bx *benchdata.Exchange) *Exchange {
	x := &Exchange{Request: Message{Headers: bx.Headers, Chunks: bx.Chunks}}
	if bx.Status != 0 {
		chunks := bx.Answer
		if chunks == nil {
			chunks = [][]byte{}
		}
		x.Response = &Message{Status: bx.Status, Headers: bx.AnswerHeaders, Chunks: chunks}
	}
	return x
}

func scenarios(model string) []scenario {
	return []scenario{
		newScenario(benchdata.JSONScenario(model)),
		newScenario(benchdata.StreamScenario(model, 0)),
		newScenario(benchdata.StreamScenario(model, 1<<10)),
	}
}

// v8Outcome is what an exchange under V8 produced, in wasmtest.CheckScenario's terms.
func v8Outcome(o *Outcome) wasmtest.Outcome {
	var s wasmtest.Outcome
	if o.Local != nil {
		s.Local = &hostemu.Response{Status: o.Local.Status, Headers: o.Local.Headers, Body: o.Local.Body}
	}
	if o.Upstream != nil {
		s.UpstreamHead, s.UpstreamBody = o.Upstream.Headers, o.Upstream.Body
	}
	if o.Client != nil {
		s.Status, s.ClientHead, s.ClientBody = o.Client.Status, o.Client.Headers, o.Client.Body
	}
	return s
}

// ---- V8 ----------------------------------------------------------------------------------------------------

// v8Plugin is one module under V8: a VM with the plugin started on benchdata.Config, shared by the benchmarks.
type v8Plugin struct {
	vm     *VM
	plugin *Plugin
	refs   map[string]Ref
	warmed map[string]bool
}

var (
	v8Mu      sync.Mutex
	v8Plugins = map[string]*v8Plugin{}
)

func v8Module(tb testing.TB, h *Host, name string) {
	tb.Helper()
	if name == filterName {
		load(tb, h, filterName, filterWasm(tb))
	} else {
		load(tb, h, floorName, buildWasm(tb, wasmtest.FloorPkg))
	}
}

func sharedV8Plugin(tb testing.TB, name string) *v8Plugin {
	tb.Helper()
	h := sharedHost(tb)
	v8Module(tb, h, name)
	v8Mu.Lock()
	defer v8Mu.Unlock()
	if p := v8Plugins[name]; p != nil {
		return p
	}
	vm, err := h.NewVM(name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	plugin, err := vm.Start(benchdata.Config)
	if err != nil {
		tb.Fatal(err)
	}
	p := &v8Plugin{vm: vm, plugin: plugin, refs: map[string]Ref{}, warmed: map[string]bool{}}
	v8Plugins[name] = p
	return p
}

func (p *v8Plugin) ref(tb testing.TB, sc scenario) Ref {
	tb.Helper()
	if r, ok := p.refs[sc.Name]; ok {
		return r
	}
	r, err := p.vm.h.Define(sc.x)
	if err != nil {
		tb.Fatal(err)
	}
	p.refs[sc.Name] = r
	return r
}

// warm plays a scenario until V8 has compiled what it runs, once per VM and scenario. V8 compiles a wasm
// function the first time it is called (lazily; with Liftoff off, straight with TurboFan), so the first
// requests of a 4 MB module cost milliseconds each: batches of 200 exchanges run until one is no faster than
// the best before it (CPU time per exchange, at least 1,000 exchanges, at most 30 s).
func (p *v8Plugin) warm(tb testing.TB, sc scenario, ref Ref) {
	tb.Helper()
	if p.warmed[sc.Name] {
		return
	}
	const batch = 200
	best := math.Inf(1)
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; time.Now().Before(deadline); n += batch {
		res, err := p.plugin.Loop([]Ref{ref}, batch, nil)
		if err != nil {
			tb.Fatal(err)
		}
		cur := float64(res.CPUNS) / batch
		if n >= 1000 && cur > 0.97*best {
			break
		}
		best = min(best, cur)
	}
	p.warmed[sc.Name] = true
}

// BenchmarkV8Lifecycle is one request's whole life in the compiled module under V8 (Node's, with Envoy's
// flags: Liftoff off), through host.mjs and the host rules: request headers, body, response headers, body
// (one callback per network chunk), stream done, context deleted. As in bench's BenchmarkWasmLifecycle, each
// scenario runs the floor module first, then the filter, one VM per module; the filter's line carries its
// ratios to the best floor run: xfloor-ns (wall time) and xfloor-cpu (the node process's CPU time). ns/op
// is timed inside the node process (no round trip per request); there is no B/op: V8's heap is not Go's.
func BenchmarkV8Lifecycle(b *testing.B) {
	for _, sc := range scenarios("llama-3-70b") {
		wasmtest.AgainstFloor(b, sc.Name, func(b *testing.B, name string) wasmtest.Result {
			p := sharedV8Plugin(b, name)
			ref := p.ref(b, sc)
			// Warm up (TurboFan code for the paths taken, the guest's pools filled), and check the outcome.
			p.warm(b, sc, ref)
			for range 8 {
				o, err := p.plugin.Exchange(sc.x)
				if err != nil {
					b.Fatal(err)
				}
				if v := o.Verdict(); v != "" {
					b.Fatalf("%s: %s %v", name, v, o.Rule)
				}
				if err := wasmtest.CheckScenario(name, sc.Exchange, v8Outcome(o)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			res, err := p.plugin.Loop([]Ref{ref}, b.N, nil)
			if err != nil {
				b.Fatal(err)
			}
			if res.LastStatus != 200 {
				b.Fatalf("client status %d", res.LastStatus)
			}
			got := wasmtest.Result{N: b.N, NsPerOp: float64(res.NS) / float64(b.N), CPUPerOp: float64(res.CPUNS) / float64(b.N)}
			b.ReportMetric(got.NsPerOp, "ns/op")
			if res.PollWaitNS > 0 { // the guest's runtime waited for a timer: host.mjs slept, in the wall time
				b.ReportMetric(res.PollWaitNS/float64(b.N), "sleep-ns/op")
			}
			return got
		})
	}
}

// ---- wazero, the same scenarios in the same run ------------------------------------------------------------

type wazeroGuest struct {
	vm   proxytest.WasmVMContext
	host *hostemu.Host
}

var (
	wazeroMu     sync.Mutex
	wazeroGuests = map[string]*wazeroGuest{}
)

// sharedWazero is one module under wazero (proxytest's wasm mode) with a hostemu.Host started on
// benchdata.Config. proxytest allows one emulator per process at a time: the other module's is closed first.
func sharedWazero(tb testing.TB, name string) *wazeroGuest {
	tb.Helper()
	wazeroMu.Lock()
	defer wazeroMu.Unlock()
	g := wazeroGuests[name]
	if g == nil {
		path := buildWasm(tb, wasmtest.FloorPkg)
		if name == filterName {
			path = filterWasm(tb)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		vm, err := proxytest.NewWasmVMContext(raw)
		if err != nil {
			tb.Fatal(err)
		}
		g = &wazeroGuest{vm: vm}
		wazeroGuests[name] = g
	}
	for other, o := range wazeroGuests {
		if other != name && o.host != nil {
			o.host.Close()
			o.host = nil
		}
	}
	if g.host == nil {
		h, err := hostemu.New(g.vm, []byte(benchdata.Config))
		if err != nil {
			tb.Fatal(err)
		}
		g.host = h
	}
	return g
}

// BenchmarkWazeroLifecycle is BenchmarkV8Lifecycle's scenarios under wazero through hostemu, in the same
// process and run, measured as bench's BenchmarkWasmLifecycle measures (its first two scenarios are the
// same), so the V8 and wazero ratios to their floors come from one run.
func BenchmarkWazeroLifecycle(b *testing.B) {
	for _, sc := range scenarios("llama-3-70b") {
		wasmtest.AgainstFloor(b, sc.Name, func(b *testing.B, name string) wasmtest.Result {
			g := sharedWazero(b, name)
			c, r := &wasmtest.Client{}, &wasmtest.ChunkReader{}
			for range 64 {
				x, err := wasmtest.Play(g.host, sc.Exchange, c, r)
				if err != nil {
					b.Fatal(err)
				}
				if err := wasmtest.CheckScenario(name, sc.Exchange, wasmtest.HostemuOutcome(x, c)); err != nil {
					b.Fatal(err)
				}
			}
			cpu := wasmtest.ProcessCPU()
			for b.Loop() {
				if _, err := wasmtest.Play(g.host, sc.Exchange, c, r); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = wasmtest.ProcessCPU() - cpu
			if c.Status != 200 {
				b.Fatalf("client status %d", c.Status)
			}
			return wasmtest.Result{N: b.N, NsPerOp: float64(b.Elapsed().Nanoseconds()) / float64(b.N), CPUPerOp: float64(cpu.Nanoseconds()) / float64(b.N)}
		})
	}
}

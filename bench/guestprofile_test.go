//go:build aidialect_profile && linux

package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// TestGuestProfile says where the guest's time goes in the compiled module, for the scenarios of
// BenchmarkWasmLifecycle (and the stream again in 1 KiB network chunks), the filter beside the floor filter.
// It is not part of make test (build tag aidialect_profile, Linux only):
//
//	go test -tags aidialect_profile -run TestGuestProfile -v -timeout 30m ./bench/
//
// Both modules are built like make build but keep their name section (no -ldflags=-s -w: the code section is
// the same), plus one export that reads the Go runtime's counters (an -overlay file, so plugin/ is untouched).
// Four measurements per module and scenario, each over whole blocks of 256 exchanges (so the collection
// forced every 256 requests is amortised exactly):
//
//   - plain: no listener; exchange time, and the runtime's counters (allocations, GC cycles, goroutines);
//   - light: a wazero function listener on the proxy-wasm exports and on the Go wrappers of the imported
//     host functions only: time per export (phase) and per host call, a few hundred ns per listened call;
//   - sampled: the light run, sampled by perf (cpu-clock, CLOCK_MONOTONIC stamps) on the one OS thread
//     running the guest; each sample's address is looked up in wazero's machine code, giving self time per
//     Go function without listener bias; samples are sorted into the light listener's phase windows;
//   - full: a listener on every function, recording every call and return; perf samples of that run are
//     replayed against the record, so each sample has its exact call stack: inclusive time per function and
//     package, exact call counts, and the runtime's and standard library's cost charged to the function of the
//     filter (or SDK) that called it. Samples in the listener's own machinery are set aside; the remaining
//     self-time shares are printed beside the light run's as a cross-check.
//
// Sampling needs perf (apt-get install linux-perf) and Linux; without it only the listener's wall times and call
// counts are printed. Knobs: AIDIALECT_PROFILE_SECONDS (per measurement, default 2), AIDIALECT_PROFILE_TOP
// (rows, default 25), AIDIALECT_PROFILE_PERF=0 (no sampling), AIDIALECT_PROFILE_FULL=0 (no full listener run),
// AIDIALECT_PROFILE_SCENARIOS (substring filter on scenario names), AIDIALECT_PROFILE_OUT (also write the
// report to this file), AIDIALECT_PROFILE_KEEP=1 (keep perf's data files in the test's temporary directory).
func TestGuestProfile(t *testing.T) {
	seconds := envFloat("AIDIALECT_PROFILE_SECONDS", 2)
	top := int(envFloat("AIDIALECT_PROFILE_TOP", 25))
	dir := t.TempDir()
	names, err := newGoNames("github.com/aidialect/aidialect/plugin", "github.com/aidialect/aidialect/bench/floorfilter")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := buildProfileModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	var scenarios []*request
	for _, r := range []*request{jsonScenario("llama-3-70b"), streamScenario("llama-3-70b"), streamChunkedScenario("llama-3-70b", 1<<10)} {
		if f := os.Getenv("AIDIALECT_PROFILE_SCENARIOS"); f == "" || strings.Contains(r.name, f) {
			scenarios = append(scenarios, r)
		}
	}
	perfWhy := perfAvailable()
	if perfWhy != "" {
		t.Logf("no sampling: %s", perfWhy)
	}
	// Every guest call runs on this goroutine, locked to one thread: perf samples that thread only.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()

	results := map[string]map[string]*moduleProfile{} // scenario -> module
	for _, r := range scenarios {
		results[r.name] = map[string]*moduleProfile{}
	}
	for _, name := range []string{floorName, filterName} {
		wasm := mods[name]
		shipped := moduleBytes(name)
		cfg := profileRun{seconds: seconds, tid: tid, dir: dir, perf: perfWhy == ""}
		// Without listeners: the module as make build builds it (only the exchange time, to show the profile
		// build runs alike) and the profile build (with the counters), alternately, the best of three rounds.
		shippedG, err := listenedGuest(name+" (as shipped)", shipped, nil)
		if err != nil {
			t.Fatal(err)
		}
		plainG, err := listenedGuest(name, wasm, nil)
		if err != nil {
			t.Fatal(err)
		}
		shippedG.name, plainG.name = name, name
		for _, r := range scenarios {
			mp := &moduleProfile{}
			results[r.name][name] = mp
			half := cfg
			half.seconds /= 2
			for round := range 3 {
				a, err := half.plain(shippedG, r, false)
				if err != nil {
					t.Fatalf("%s (as shipped), %s: %v", name, r.name, err)
				}
				b, err := half.plain(plainG, r, true)
				if err != nil {
					t.Fatalf("%s, %s: %v", name, r.name, err)
				}
				if round == 0 {
					mp.shipped, mp.plain = a, b
					continue
				}
				mp.shipped.ns, mp.shipped.cpuNs = min(mp.shipped.ns, a.ns), min(mp.shipped.cpuNs, a.cpuNs)
				mp.plain.ns, mp.plain.cpuNs = min(mp.plain.ns, b.ns), min(mp.plain.cpuNs, b.cpuNs)
				mp.plain.exchanges += b.exchanges
				c := &mp.plain.counters
				c.allocBytes += b.counters.allocBytes
				c.allocObjects += b.counters.allocObjects
				c.gcCycles += b.counters.gcCycles
				c.gcForced += b.counters.gcForced
				c.goroutines += b.counters.goroutines
				c.gcCPUns += b.counters.gcCPUns
			}
		}
		shippedG.close()
		plainG.close()
		light := newCallProfiler(names, false)
		if err := eachScenario(name+" (light listener)", wasm, light, scenarios, func(g *guest, r *request) error {
			res, err := cfg.listened(g, r, light, cfg.perf)
			results[r.name][name].light = res
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("AIDIALECT_PROFILE_FULL") != "0" {
			full := newCallProfiler(names, true)
			if err := eachScenario(name+" (full listener)", wasm, full, scenarios, func(g *guest, r *request) error {
				res, err := cfg.listened(g, r, full, cfg.perf)
				results[r.name][name].full = res
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if name == filterName {
				profiledNames = exampleNames(full)
			}
		}
	}
	var out strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&out, "guest profile: %s, %d CPUs, load average %s; %.1f s per measurement; modules %d bytes (aidialect, name section kept) and %d (floor)\n",
		runtime.Version(), runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "), seconds, len(mods[filterName]), len(mods[floorName]))
	if names := profiledNames; len(names) > 0 {
		fmt.Fprintf(&out, "wazero's listener sees the name section's names (api.FunctionDefinition.Name), e.g. %s\n", strings.Join(names, ", "))
	}
	for _, r := range scenarios {
		report(&out, r, results[r.name][filterName], results[r.name][floorName], top)
	}
	fmt.Print(out.String())
	if path := os.Getenv("AIDIALECT_PROFILE_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// profiledNames are a few function names as the listener received them.
var profiledNames []string

func exampleNames(p *callProfiler) []string {
	var out []string
	for _, want := range []func(fnInfo) bool{
		func(i fnInfo) bool {
			return strings.HasSuffix(i.pkg, "aidialect/translate") && strings.Contains(i.wasm, "Parse")
		},
		func(i fnInfo) bool { return i.host == "env.proxy_get_buffer_bytes" },
	} {
		for _, info := range p.fns {
			if want(info) {
				out = append(out, strconv.Quote(info.wasm)+" ("+info.name+")")
				break
			}
		}
	}
	return out
}

// streamChunkedScenario is streamScenario's answer cut into network chunks of size bytes instead of one
// event per chunk: events straddle chunks, and a chunk holds several.
func streamChunkedScenario(model string, size int) *request {
	r := streamScenario(model)
	r.name = fmt.Sprintf("sse-100-events-azure-ai-to-openai-%dB-chunks", size)
	r.answer = split(bytes.Join(r.answer, nil), size)
	return r
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

// countersSource is added to both modules' main packages at build time (go build -overlay): it exports the
// Go runtime's cumulative counters, so a run can be charged its allocations, collections and goroutines.
const countersSource = `//go:build wasip1

package main

import (
	rtmetrics "runtime/metrics"
	"unsafe"
)

var profMetrics = []rtmetrics.Sample{
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/gc/heap/allocs:objects"},
	{Name: "/gc/cycles/total:gc-cycles"},
	{Name: "/gc/cycles/forced:gc-cycles"},
	{Name: "/sched/goroutines-created:goroutines"},
	{Name: "/cpu/classes/gc/total:cpu-seconds"},
	{Name: "/gc/heap/goal:bytes"},
}

var profValues [7]uint64

// profCounters reads the counters into profValues and returns its address.
//
//go:wasmexport aidialect_prof_counters
func profCounters() uint32 {
	rtmetrics.Read(profMetrics)
	for i, s := range profMetrics {
		switch s.Value.Kind() {
		case rtmetrics.KindUint64:
			profValues[i] = s.Value.Uint64()
		case rtmetrics.KindFloat64:
			profValues[i] = uint64(s.Value.Float64() * 1e9)
		}
	}
	return uint32(uintptr(unsafe.Pointer(&profValues[0])))
}
`

type counters struct {
	allocBytes, allocObjects, gcCycles, gcForced, goroutines, gcCPUns, heapGoal uint64
}

func (c counters) minus(o counters) counters {
	return counters{c.allocBytes - o.allocBytes, c.allocObjects - o.allocObjects, c.gcCycles - o.gcCycles,
		c.gcForced - o.gcForced, c.goroutines - o.goroutines, c.gcCPUns - o.gcCPUns, c.heapGoal}
}

func readCounters(g *guest) (counters, error) {
	fn := g.mod.ExportedFunction("aidialect_prof_counters")
	if fn == nil {
		return counters{}, errors.New("the module exports no aidialect_prof_counters")
	}
	res, err := fn.Call(context.Background())
	if err != nil {
		return counters{}, err
	}
	b, ok := g.mod.Memory().Read(uint32(res[0]), 7*8)
	if !ok {
		return counters{}, errors.New("counters out of range")
	}
	v := func(i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }
	return counters{v(0), v(1), v(2), v(3), v(4), v(5), v(6)}, nil
}

// buildProfileModules builds the filter and the floor with make build's flags but the name section kept,
// and the counters export added.
func buildProfileModules(dir string) (map[string][]byte, error) {
	pkgs := map[string]string{filterName: "github.com/aidialect/aidialect/plugin", floorName: "github.com/aidialect/aidialect/bench/floorfilter"}
	src := filepath.Join(dir, "profcounters.go")
	if err := os.WriteFile(src, []byte(countersSource), 0o644); err != nil {
		return nil, err
	}
	replace := map[string]string{}
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %v", pkg, err)
		}
		replace[filepath.Join(strings.TrimSpace(string(out)), "zz_aidialect_profcounters_wasip1.go")] = src
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return nil, err
	}
	mods := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for name, pkg := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := filepath.Join(dir, name+"-named.wasm")
			cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-overlay="+overlayPath, "-o", out, pkg)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			output, err := cmd.CombinedOutput()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("building %s: %v\n%s", pkg, err, output))
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				errs = append(errs, err)
			}
			mods[name] = b
		}()
	}
	wg.Wait()
	return mods, errors.Join(errs...)
}

// eachScenario loads the module once (with the listener factory, if any) and runs f for every scenario.
func eachScenario(name string, wasm []byte, factory experimental.FunctionListenerFactory, scenarios []*request,
	f func(*guest, *request) error) error {
	g, err := listenedGuest(name, wasm, factory)
	if err != nil {
		return err
	}
	defer g.close()
	g.name = strings.Fields(name)[0]
	for _, r := range scenarios {
		if err := f(g, r); err != nil {
			return fmt.Errorf("%s, %s: %w", name, r.name, err)
		}
	}
	return nil
}

type profileRun struct {
	seconds float64
	tid     int
	dir     string
	perf    bool
}

// plainResult is a run without listeners.
type plainResult struct {
	exchanges int
	ns        float64 // wall time per exchange
	cpuNs     float64 // the profiling thread's CPU time per exchange (guest, host functions, harness)
	counters  counters
}

// threadCPU is the calling thread's CPU time (the test locks its goroutine to one thread): unlike wall time
// it does not grow when other jobs share the machine.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// listenedResult is a run with a listener.
type listenedResult struct {
	exchanges int
	ns        float64 // wall time per exchange
	prof      *callProfiler
	stats     [numPhases][]callStats // a copy: the profiler is reused by the next scenario
	samples   *sampleProfile
	trace     *traceProfile // full listener runs
	chunks    int           // response body callbacks per exchange
}

// blocks runs whole blocks of 256 exchanges (one forced collection each) until d has passed.
func blocks(s *session, r *request, d time.Duration) (int, time.Duration, error) {
	start := time.Now()
	n := 0
	for n == 0 || time.Since(start) < d {
		for range 256 {
			if _, err := s.exchange(r); err != nil {
				return n, 0, err
			}
			n++
		}
	}
	return n, time.Since(start), nil
}

// warmUp runs 320 exchanges (the first checked): the pool filled, first-use paths taken, and the guest's heap
// grown through a forced collection to its steady size, so its first touch of fresh pages (page faults) is
// not charged to the measured exchanges.
func warmUp(g *guest, s *session, r *request) error {
	for i := range 320 {
		if i >= 64 {
			if _, err := s.exchange(r); err != nil {
				return err
			}
			continue
		}
		x, err := s.exchange(r)
		if err != nil {
			return err
		}
		if err := checkScenario(g, r, x, &s.client); err != nil {
			return err
		}
	}
	return nil
}

func (c profileRun) plain(g *guest, r *request, withCounters bool) (plainResult, error) {
	s, err := g.start(benchConfig)
	if err != nil {
		return plainResult{}, err
	}
	defer s.close()
	if err := warmUp(g, s, r); err != nil {
		return plainResult{}, err
	}
	var before, after counters
	if withCounters {
		if before, err = readCounters(g); err != nil {
			return plainResult{}, err
		}
	}
	cpu := threadCPU()
	n, d, err := blocks(s, r, time.Duration(c.seconds*float64(time.Second)))
	cpu = threadCPU() - cpu
	if err != nil {
		return plainResult{}, err
	}
	if withCounters {
		if after, err = readCounters(g); err != nil {
			return plainResult{}, err
		}
	}
	return plainResult{exchanges: n, ns: float64(d.Nanoseconds()) / float64(n), cpuNs: float64(cpu.Nanoseconds()) / float64(n),
		counters: after.minus(before)}, nil
}

func (c profileRun) listened(g *guest, r *request, p *callProfiler, sample bool) (*listenedResult, error) {
	s, err := g.start(benchConfig)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := warmUp(g, s, r); err != nil {
		return nil, err
	}
	var code *codeMap
	var perf *perfSession
	if sample {
		if code, err = machineCode(g); err != nil {
			return nil, err
		}
		if perf, err = startPerf(c.dir, c.tid, 20000); err != nil {
			return nil, err
		}
	}
	p.reset()
	p.record = sample
	p.tracing = sample && p.full
	d := time.Duration(c.seconds * float64(time.Second))
	if p.full {
		d *= 2
	}
	n, elapsed, err := blocks(s, r, d)
	p.record, p.tracing = false, false
	res := &listenedResult{exchanges: n, ns: float64(elapsed.Nanoseconds()) / float64(n), prof: p}
	if perf != nil {
		samples, perr := perf.stop()
		if err == nil && perr != nil {
			err = perr
		}
		if perr == nil && p.full {
			res.trace = attributeTrace(samples, p, code)
		} else if perr == nil {
			res.samples = attribute(samples, p.windows, code)
		}
	}
	if err != nil {
		return nil, err
	}
	for i := range p.stats {
		res.stats[i] = append([]callStats(nil), p.stats[i]...)
	}
	_, calls := phaseTimeOf(res, phaseResponseBody)
	res.chunks = int(calls / int64(n))
	return res, nil
}

// moduleProfile is everything measured for one module in one scenario.
type moduleProfile struct {
	shipped     plainResult
	plain       plainResult
	light, full *listenedResult
}

func phaseTimeOf(r *listenedResult, ph phase) (ns, calls int64) {
	for idx, st := range r.stats[ph] {
		if r.prof.phaseOf[idx] == ph {
			ns += st.incl
			calls += st.calls
		}
	}
	return ns, calls
}

func hostTimeOf(r *listenedResult, ph phase) (ns, calls int64) {
	for idx, st := range r.stats[ph] {
		if r.prof.fns[idx].host != "" {
			ns += st.self
			calls += st.calls
		}
	}
	return ns, calls
}

// report writes one scenario's tables.
func report(w *strings.Builder, r *request, filter, floor *moduleProfile, top int) {
	fmt.Fprintf(w, "\n==================== %s ====================\n", r.name)
	us := func(ns float64) string { return strconv.FormatFloat(ns/1e3, 'f', 1, 64) }
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return strconv.FormatFloat(a/b, 'f', 2, 64)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "per exchange\taidialect\tfloor\tratio\t\n")
	fmt.Fprintf(tw, "(no listener: best of 3 rounds, alternating)\t\t\t\t\n")
	fmt.Fprintf(tw, "wall µs, as shipped (make build flags, no listener)\t%s\t%s\t%s\t\n", us(filter.shipped.ns), us(floor.shipped.ns), ratio(filter.shipped.ns, floor.shipped.ns))
	fmt.Fprintf(tw, "thread CPU µs, as shipped\t%s\t%s\t%s\t\n", us(filter.shipped.cpuNs), us(floor.shipped.cpuNs), ratio(filter.shipped.cpuNs, floor.shipped.cpuNs))
	fmt.Fprintf(tw, "wall µs, profile build, no listener\t%s\t%s\t%s\t\n", us(filter.plain.ns), us(floor.plain.ns), ratio(filter.plain.ns, floor.plain.ns))
	fmt.Fprintf(tw, "thread CPU µs, profile build, no listener\t%s\t%s\t%s\t\n", us(filter.plain.cpuNs), us(floor.plain.cpuNs), ratio(filter.plain.cpuNs, floor.plain.cpuNs))
	if filter.light != nil && floor.light != nil {
		fmt.Fprintf(tw, "wall µs, light listener\t%s\t%s\t%s\t\n", us(filter.light.ns), us(floor.light.ns), ratio(filter.light.ns, floor.light.ns))
	}
	if filter.full != nil && floor.full != nil {
		fmt.Fprintf(tw, "wall µs, full listener\t%s\t%s\t%s\t\n", us(filter.full.ns), us(floor.full.ns), ratio(filter.full.ns, floor.full.ns))
	}
	pc := func(m *moduleProfile, f func(c counters) uint64, per float64) float64 {
		return float64(f(m.plain.counters)) / float64(m.plain.exchanges) * per
	}
	row := func(label string, f func(c counters) uint64, per float64, prec int) {
		a, b := pc(filter, f, per), pc(floor, f, per)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", label, strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64), ratio(a, b))
	}
	row("guest heap objects allocated", func(c counters) uint64 { return c.allocObjects }, 1, 1)
	row("guest heap bytes allocated", func(c counters) uint64 { return c.allocBytes }, 1, 0)
	row("guest GC cycles per 1000 exchanges", func(c counters) uint64 { return c.gcCycles }, 1000, 2)
	row("  of which forced (runtime.GC)", func(c counters) uint64 { return c.gcForced }, 1000, 2)
	row("guest goroutines created", func(c counters) uint64 { return c.goroutines }, 1, 2)
	fmt.Fprintf(tw, "exchanges measured (plain)\t%d\t%d\t\t\n", filter.plain.exchanges, floor.plain.exchanges)
	tw.Flush()

	if filter.light == nil || floor.light == nil {
		return
	}
	fmt.Fprintf(w, "\nphases, µs per exchange: wall time of the export (light listener) and, sampled, the CPU time of guest code and of the host side\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "export\tcalls\taidialect wall\tguest CPU\thost CPU\thost calls\tfloor wall\tguest CPU\thost CPU\thost calls\tguest CPU ratio\t\n")
	cpu := func(r *listenedResult, ph phase) (guest, host float64) {
		if r.samples == nil {
			return math.NaN(), math.NaN()
		}
		for k, ns := range r.samples.byPhase[ph] {
			if k.guest {
				guest += float64(ns)
			} else {
				host += float64(ns)
			}
		}
		return guest / float64(r.exchanges), host / float64(r.exchanges)
	}
	var tot [8]float64
	for ph := phase(0); ph < phaseOther; ph++ {
		nsF, callsF := phaseTimeOf(filter.light, ph)
		nsL, _ := phaseTimeOf(floor.light, ph)
		_, hcF := hostTimeOf(filter.light, ph)
		_, hcL := hostTimeOf(floor.light, ph)
		nF, nL := float64(filter.light.exchanges), float64(floor.light.exchanges)
		gF, hF := cpu(filter.light, ph)
		gL, hL := cpu(floor.light, ph)
		for i, v := range []float64{float64(nsF) / nF, gF, hF, float64(hcF) / nF, float64(nsL) / nL, gL, hL, float64(hcL) / nL} {
			tot[i] += v
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%.1f\t%s\t\n", phaseExports[ph], float64(callsF)/nF,
			us(float64(nsF)/nF), us(gF), us(hF), float64(hcF)/nF, us(float64(nsL)/nL), us(gL), us(hL), float64(hcL)/nL, ratio(gF, gL))
	}
	fmt.Fprintf(tw, "all phases\t\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%.1f\t%s\t\n", us(tot[0]), us(tot[1]), us(tot[2]), tot[3],
		us(tot[4]), us(tot[5]), us(tot[6]), tot[7], ratio(tot[1], tot[5]))
	tw.Flush()
	if len(r.answer) > 1 {
		events := float64(streamEvents + 1)
		nsF, _ := phaseTimeOf(filter.light, phaseResponseBody)
		nsL, _ := phaseTimeOf(floor.light, phaseResponseBody)
		gF, hF := cpu(filter.light, phaseResponseBody)
		gL, hL := cpu(floor.light, phaseResponseBody)
		fmt.Fprintf(w, "per event (%d chunks per stream, %d events with [DONE]), proxy_on_response_body: aidialect wall %s µs, CPU guest %s + host %s; floor wall %s µs, CPU guest %s + host %s\n",
			filter.light.chunks, streamEvents+1, us(float64(nsF)/float64(filter.light.exchanges)/events), us(gF/events), us(hF/events),
			us(float64(nsL)/float64(floor.light.exchanges)/events), us(gL/events), us(hL/events))
	}
	hostCalls(w, filter.light, "aidialect")

	if filter.light.samples != nil && floor.light.samples != nil {
		sampledTables(w, filter.light, floor.light, top)
	}
	if filter.full != nil && floor.full != nil {
		listenerTables(w, filter, floor, top)
	}
}

// hostCalls lists the host functions called per exchange, with their time (light listener).
func hostCalls(w *strings.Builder, r *listenedResult, name string) {
	type hc struct {
		name      string
		calls, ns int64
	}
	byName := map[string]*hc{}
	for ph := phase(0); ph < phaseOther; ph++ {
		for idx, st := range r.stats[ph] {
			if h := r.prof.fns[idx].host; h != "" && st.calls > 0 {
				if byName[h] == nil {
					byName[h] = &hc{name: h}
				}
				byName[h].calls += st.calls
				byName[h].ns += st.self
			}
		}
	}
	var list []*hc
	for _, h := range byName {
		list = append(list, h)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ns > list[j].ns })
	n := float64(r.exchanges)
	fmt.Fprintf(w, "\nhost calls of %s per exchange (light listener; time includes wazero's call path and proxytest's emulator)\n", name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "host function\tcalls\tµs\tµs/call\t\n")
	for _, h := range list {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t\n", h.name, float64(h.calls)/n, float64(h.ns)/n/1e3, float64(h.ns)/float64(h.calls)/1e3)
	}
	tw.Flush()
}

// sampledRow is one function (or host bucket) of the sampled profile.
type sampledRow struct {
	key  sampleKey
	info fnInfo
	ns   [4]float64 // per exchange: request, response, done, all
}

// sampledRows charges the samples in the phases to guest functions (guest) and to host code (host), per
// exchange, heaviest first.
func sampledRows(r *listenedResult) (guest, host []*sampledRow) {
	rows := map[sampleKey]*sampledRow{}
	n := float64(r.exchanges)
	for ph := phase(0); ph < phaseOther; ph++ {
		col := map[string]int{"request": 0, "response": 1, "done": 2}[ph.group()]
		for k, ns := range r.samples.byPhase[ph] {
			row := rows[k]
			if row == nil {
				row = &sampledRow{key: k}
				if k.guest {
					row.info = r.prof.names.info(k.fn)
				} else {
					row.info = fnInfo{name: k.fn, short: k.fn, pkg: k.fn}
				}
				rows[k] = row
			}
			row.ns[col] += float64(ns) / n
			row.ns[3] += float64(ns) / n
		}
	}
	for _, row := range rows {
		if row.key.guest {
			guest = append(guest, row)
		} else {
			host = append(host, row)
		}
	}
	for _, list := range [][]*sampledRow{guest, host} {
		sort.Slice(list, func(i, j int) bool { return list[i].ns[3] > list[j].ns[3] })
	}
	return guest, host
}

func sumRows(rows []*sampledRow) (t [4]float64) {
	for _, r := range rows {
		for i := range t {
			t[i] += r.ns[i]
		}
	}
	return t
}

func sampledTables(w *strings.Builder, filter, floor *listenedResult, top int) {
	for _, m := range []struct {
		name string
		r    *listenedResult
		top  int
	}{{"aidialect", filter, top}, {"floor", floor, min(top, 12)}} {
		guest, host := sampledRows(m.r)
		g, h := sumRows(guest), sumRows(host)
		s := m.r.samples
		fmt.Fprintf(w, "\n%s: sampled (perf cpu-clock 20 kHz, %d samples of the guest's thread, %d inside the phases): per exchange %.1f µs of CPU in the phases = %.1f µs guest code (req %.1f, resp %.1f, done %.1f) + %.1f µs host side (req %.1f, resp %.1f, done %.1f)\n",
			m.name, s.samples, s.inGuest, (g[3]+h[3])/1e3, g[3]/1e3, g[0]/1e3, g[1]/1e3, g[2]/1e3, h[3]/1e3, h[0]/1e3, h[1]/1e3, h[2]/1e3)
		fmt.Fprintf(w, "\n%s: guest functions by self time (share of guest code time)\n", m.name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "share\tµs/exch\treq\tresp\tdone\tcum\t function\t\n")
		cum := 0.0
		for i, row := range guest {
			if i == m.top {
				break
			}
			cum += row.ns[3] / g[3]
			fmt.Fprintf(tw, "%.1f%%\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f%%\t %s\t\n", 100*row.ns[3]/g[3], row.ns[3]/1e3, row.ns[0]/1e3, row.ns[1]/1e3, row.ns[2]/1e3, 100*cum, row.info.short)
		}
		tw.Flush()
		fmt.Fprintf(w, "\n%s: guest code by package (the runtime split by what it does)\n", m.name)
		byPackage(w, guest, g[3], "package")
		fmt.Fprintf(w, "\n%s: host side inside the phases (emulator work, not the guest's: share of host time)\n", m.name)
		byPackage(w, host, h[3], "where")
	}
}

func byPackage(w *strings.Builder, rows []*sampledRow, total float64, what string) {
	byPkg := map[string]*[4]float64{}
	for _, row := range rows {
		p := row.info.pkg
		if byPkg[p] == nil {
			byPkg[p] = &[4]float64{}
		}
		for i := range row.ns {
			byPkg[p][i] += row.ns[i]
		}
	}
	type pkgRow struct {
		name string
		ns   [4]float64
	}
	var pkgs []pkgRow
	for p, ns := range byPkg {
		pkgs = append(pkgs, pkgRow{p, *ns})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ns[3] > pkgs[j].ns[3] })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "share\tµs/exch\treq\tresp\tdone\t %s\t\n", what)
	for _, p := range pkgs {
		if p.ns[3]/total < 0.002 {
			continue
		}
		fmt.Fprintf(tw, "%.1f%%\t%.2f\t%.2f\t%.2f\t%.2f\t %s\t\n", 100*p.ns[3]/total, p.ns[3]/1e3, p.ns[0]/1e3, p.ns[1]/1e3, p.ns[2]/1e3, p.name)
	}
	tw.Flush()
}

// listenerTables prints the full listener's run: exact call counts per exchange, and self and inclusive
// CPU time from its perf samples replayed against its call trace (listener machinery set aside). The listener
// still slows the guest's own code (every call leaves the machine code twice), so times are given as shares of
// the run's CPU time in the phases and, as "≈µs", those shares applied to the light run's CPU time.
func listenerTables(w *strings.Builder, filter, floor *moduleProfile, top int) {
	for _, m := range []struct {
		name string
		mp   *moduleProfile
		top  int
	}{{"aidialect", filter, top}, {"floor", floor, min(top, 12)}} {
		full := m.mp.full
		tr := full.trace
		n := float64(full.exchanges)
		var calls float64
		callsOf := map[string]float64{}
		inclOf := map[string]float64{}
		infoOf := map[string]fnInfo{}
		for ph := phase(0); ph < phaseOther; ph++ {
			for idx, st := range full.stats[ph] {
				info := full.prof.fns[idx]
				if st.calls > 0 {
					calls += float64(st.calls) / n
					callsOf[info.name] += float64(st.calls) / n
					infoOf[info.name] = info
				}
				if tr != nil && tr.incl[ph][idx] > 0 {
					inclOf[info.name] += float64(tr.incl[ph][idx]) / n
					infoOf[info.name] = info
				}
			}
		}
		if tr == nil {
			fmt.Fprintf(w, "\n%s: full listener, %.0f listened calls per exchange (no samples: perf unavailable)\n", m.name, calls)
			continue
		}
		var total float64 // ns per exchange kept (guest code and host side)
		selfOf := map[string]float64{}
		hostCalls := map[string]float64{}
		for ph := phase(0); ph < phaseOther; ph++ {
			for k, ns := range tr.self[ph] {
				total += float64(ns) / n
				if k.guest {
					info := full.prof.names.info(k.fn)
					selfOf[info.name] += float64(ns) / n
					infoOf[info.name] = info
				} else {
					hostCalls[k.fn] += float64(ns) / n
				}
			}
		}
		// The light run's CPU time in the phases, and its self time per function, for the "≈µs" columns and
		// the cross-check.
		lightTotal, lightSelf := 0.0, map[string]float64{}
		if m.mp.light != nil && m.mp.light.samples != nil {
			guest, host := sampledRows(m.mp.light)
			g, h := sumRows(guest), sumRows(host)
			lightTotal = g[3] + h[3]
			for _, r := range guest {
				lightSelf[r.info.name] += r.ns[3] / (g[3] + h[3])
			}
		}
		approx := func(share float64) string {
			if lightTotal == 0 {
				return "-"
			}
			return strconv.FormatFloat(share*lightTotal/1e3, 'f', 2, 64)
		}
		fmt.Fprintf(w, "\n%s: full listener (every function listened): %.0f calls per exchange, %.0f µs wall per exchange; %d samples, %d kept in the phases, %.0f µs per exchange of listener machinery set aside, %.0f µs kept (light run: %.0f µs)\n",
			m.name, calls, full.ns/1e3, tr.samples, tr.covered, float64(tr.listener)/n/1e3, total/1e3, lightTotal/1e3)
		names := func(of map[string]float64) []string {
			var list []string
			for k := range of {
				list = append(list, k)
			}
			sort.Slice(list, func(i, j int) bool { return of[list[i]] > of[list[j]] })
			return list
		}
		fmt.Fprintf(w, "%s: functions by self time, listened run (shares of its phase CPU) beside the light run's share: the cross-check\n", m.name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "self share\tlight run\t≈µs\tincl share\t≈µs\tcalls\t function\t\n")
		for i, k := range names(selfOf) {
			if i == m.top {
				break
			}
			fmt.Fprintf(tw, "%.1f%%\t%.1f%%\t%s\t%.1f%%\t%s\t%.1f\t %s\t\n", 100*selfOf[k]/total, 100*lightSelf[k], approx(selfOf[k]/total),
				100*inclOf[k]/total, approx(inclOf[k]/total), callsOf[k], infoOf[k].short)
		}
		tw.Flush()

		own := map[string]float64{}
		for ph := phase(0); ph < phaseOther; ph++ {
			for k, ns := range tr.own[ph] {
				own[k] += float64(ns) / n
			}
		}
		fmt.Fprintf(w, "\n%s: the filter's (and SDK's, gjson's) functions with the runtime and standard-library code they call charged to them (share of phase CPU)\n", m.name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "share\t≈µs\tcalls\t function\t\n")
		for i, k := range names(own) {
			if i == m.top {
				break
			}
			fmt.Fprintf(tw, "%.1f%%\t%s\t%.1f\t %s\t\n", 100*own[k]/total, approx(own[k]/total), callsOf[k], infoOf[k].short)
		}
		tw.Flush()

		fmt.Fprintf(w, "\n%s: host side by host call (share of phase CPU)\n", m.name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "share\t≈µs\t where\t\n")
		for i, k := range names(hostCalls) {
			if i == 8 || hostCalls[k] < 0.001*total {
				break
			}
			fmt.Fprintf(tw, "%.1f%%\t%s\t %s\t\n", 100*hostCalls[k]/total, approx(hostCalls[k]/total), k)
		}
		tw.Flush()
		if m.name != "aidialect" {
			continue
		}
		fmt.Fprintf(w, "\n%s: inclusive time (samples with the function on the listener's call stack) of the filter's functions, runtime entry points and host calls\n", m.name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "incl share\t≈µs\tcalls\t function\t\n")
		shown := 0
		for _, k := range names(inclOf) {
			info := infoOf[k]
			interesting := ownCode(info) || info.host != "" ||
				strings.HasPrefix(k, "runtime.GC") || strings.HasPrefix(k, "runtime.mallocgc") ||
				strings.HasPrefix(k, "runtime.newstack") || strings.HasPrefix(k, "runtime.morestack") ||
				strings.HasPrefix(k, "runtime.growslice") || strings.HasPrefix(k, "runtime.gcStart") ||
				strings.HasPrefix(k, "runtime.gcBgMarkWorker") || strings.HasPrefix(k, "runtime.gcAssistAlloc") ||
				strings.HasPrefix(k, "runtime.memmove") || strings.HasPrefix(k, "strings.") || strings.HasPrefix(k, "bytes.") ||
				strings.HasPrefix(k, "strconv.")
			if !interesting || inclOf[k] < 0.005*total {
				continue
			}
			if shown++; shown > 2*m.top {
				break
			}
			fmt.Fprintf(tw, "%.1f%%\t%s\t%.1f\t %s\t\n", 100*inclOf[k]/total, approx(inclOf[k]/total), callsOf[k], info.short)
		}
		tw.Flush()
		pk := map[string]float64{}
		for ph := phase(0); ph < phaseOther; ph++ {
			for p, ns := range tr.inclPkg[ph] {
				pk[p] += float64(ns) / n
			}
		}
		fmt.Fprintf(w, "\n%s: inclusive time by package (samples with any of its functions on the stack)\n", m.name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "incl share\t≈µs\t package\t\n")
		for i, p := range names(pk) {
			if i == 20 {
				break
			}
			fmt.Fprintf(tw, "%.1f%%\t%s\t %s\t\n", 100*pk[p]/total, approx(pk[p]/total), p)
		}
		tw.Flush()
	}
}

// Command benchtable reads `go test -bench` output on stdin and prints every measured cost beside its floor
// as a ratio, against the project's targets (BENCHMARKS.md). Ratios come from one run on one machine, so
// they hold where absolute times do not. Times are printed in the unit that suits them (ns, µs, ms, s).
//
//	go test -run '^$' -bench . -benchmem ./translate/ ./bench/ | go run ./tools/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// comparison pairs benchmarks (by name pattern, GOMAXPROCS suffix removed) with their floor.
type comparison struct {
	label  string
	cost   string // regexp; several matches are summarised as worst and median
	floor  string // regexp matching exactly one benchmark
	target float64
	// noRatio, when set, replaces the ratio: the floor does not do the same work, so a ratio would mislead.
	noRatio string
	// noAllocs: the run reports no Go allocations for this cost (timed outside Go), so the column says "—".
	noAllocs bool
}

var comparisons = []comparison{
	{label: "render request, 1 KiB, 16 pairs", cost: `^BenchmarkRender/[a-z-]+-to-[a-z-]+/1KiB$`, floor: `^BenchmarkRender/floor/1KiB$`, target: 1.5},
	{label: "render request, 4 KiB, 16 pairs", cost: `^BenchmarkRender/[a-z-]+-to-[a-z-]+/4KiB$`, floor: `^BenchmarkRender/floor/4KiB$`, target: 1.5},
	{label: "render request, 64 KiB, 16 pairs", cost: `^BenchmarkRender/[a-z-]+-to-[a-z-]+/64KiB$`, floor: `^BenchmarkRender/floor/64KiB$`, target: 1.5},
	{label: "render openai -> azure-ai, 4 KiB, two extras dropped", cost: `^BenchmarkRender/openai-to-azure-ai/4KiB$`, floor: `^BenchmarkRender/floor/4KiB$`, target: 2.0},
	{label: "answer azure-openai -> openai (2 KiB)", cost: `^BenchmarkTranslateJSON/azure-openai-to-openai$`, floor: `^BenchmarkTranslateJSON/floor/azure-openai$`, target: 1.5},
	{label: "answer eternalai -> openai (2 KiB)", cost: `^BenchmarkTranslateJSON/eternalai-to-openai$`, floor: `^BenchmarkTranslateJSON/floor/eternalai$`, target: 1.5},
	{label: "edited SSE event vs scan+copy", cost: `^BenchmarkSSEEvent/edited/azure-ai-to-openai$`, floor: `^BenchmarkSSEEvent/floor/scan\+copy$`, target: 1.5},
	{label: "edited SSE event vs boundary+copy", cost: `^BenchmarkSSEEvent/edited/azure-ai-to-openai$`, floor: `^BenchmarkSSEEvent/floor/boundary\+copy$`, target: 2.0},
	{label: "zero-edit stream (100 events)", cost: `^BenchmarkStreamZeroEdit/openai-to-openai$`, floor: `^BenchmarkStreamZeroEdit/floor/boundaries\+copy$`, target: 1.1},
	{label: "SSE framer alone", cost: `^BenchmarkFramerPassthrough$`, floor: `^BenchmarkFramerFloor$`, target: 0},
	{label: "redact 4 KiB answer, no key in it, 1/10/100 keys", cost: `^BenchmarkRedact/4KiB/keys=\d+/clean$`, floor: `^BenchmarkRedact/4KiB/floor/indexbyte$`},
	{label: "redact 4 KiB answer, one key in it, 1/10/100 keys", cost: `^BenchmarkRedact/4KiB/keys=\d+/match$`, floor: `^BenchmarkRedact/4KiB/floor/copy$`},
	{label: "redact 1 KiB chunk, no key in it, 1/10/100 keys", cost: `^BenchmarkRedact/1KiB/keys=\d+/clean$`, floor: `^BenchmarkRedact/1KiB/floor/indexbyte$`},
	{label: "redact 1 KiB chunk, one key in it, 1/10/100 keys", cost: `^BenchmarkRedact/1KiB/keys=\d+/match$`, floor: `^BenchmarkRedact/1KiB/floor/copy$`},
	{label: "redact 4 KiB answer, no key in it, 1/10/100 keys: a search per key (before)", cost: `^BenchmarkRedactPerKey/4KiB/keys=\d+/clean$`, floor: `^BenchmarkRedact/4KiB/floor/indexbyte$`},
	{label: "wasm lifecycle, 4 KiB chat + 2 KiB JSON answer", cost: `^BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/aidialect$`, floor: `^BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/floor$`, target: 1.5},
	{label: "wasm lifecycle, 100-event stream", cost: `^BenchmarkWasmLifecycle/sse-100-events-azure-ai-to-openai/aidialect$`, floor: `^BenchmarkWasmLifecycle/sse-100-events-azure-ai-to-openai/floor$`, target: 1.5},
	// internal/v8host: the same lifecycle under V8 (Node, Liftoff off as in Envoy) and, in the same run, under
	// wazero, each against the floor filter on its own engine. No allocation figures: V8's are not Go's, and
	// that run omits -benchmem.
	{label: "V8 lifecycle, 4 KiB chat + 2 KiB JSON answer", cost: `^BenchmarkV8Lifecycle/json-4KiB-openai-to-azure-ai/aidialect$`, floor: `^BenchmarkV8Lifecycle/json-4KiB-openai-to-azure-ai/floor$`, target: 1.5, noAllocs: true},
	{label: "V8 lifecycle, 100-event stream", cost: `^BenchmarkV8Lifecycle/sse-100-events-azure-ai-to-openai/aidialect$`, floor: `^BenchmarkV8Lifecycle/sse-100-events-azure-ai-to-openai/floor$`, target: 1.5, noAllocs: true},
	{label: "V8 lifecycle, 100-event stream in 1 KiB chunks", cost: `^BenchmarkV8Lifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/aidialect$`, floor: `^BenchmarkV8Lifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/floor$`, target: 1.5, noAllocs: true},
	{label: "wazero lifecycle beside V8, 4 KiB chat + 2 KiB JSON answer", cost: `^BenchmarkWazeroLifecycle/json-4KiB-openai-to-azure-ai/aidialect$`, floor: `^BenchmarkWazeroLifecycle/json-4KiB-openai-to-azure-ai/floor$`, target: 1.5, noAllocs: true},
	{label: "wazero lifecycle beside V8, 100-event stream", cost: `^BenchmarkWazeroLifecycle/sse-100-events-azure-ai-to-openai/aidialect$`, floor: `^BenchmarkWazeroLifecycle/sse-100-events-azure-ai-to-openai/floor$`, target: 1.5, noAllocs: true},
	{label: "wazero lifecycle beside V8, 100-event stream in 1 KiB chunks", cost: `^BenchmarkWazeroLifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/aidialect$`, floor: `^BenchmarkWazeroLifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/floor$`, target: 1.5, noAllocs: true},
	{label: "instantiate (compile + _initialize + OnPluginStart), per worker VM", cost: `^BenchmarkInstantiate/aidialect$`, floor: `^BenchmarkInstantiate/floor$`},
	{label: "OnPluginStart alone (4 providers)", cost: `^BenchmarkPluginStart/aidialect$`, floor: `^BenchmarkPluginStart/floor$`,
		noRatio: "— (the floor filter reads no configuration: its time is the host's call overhead)"},
}

type result struct {
	nsPerOp, bytesPerOp, allocsPerOp float64
}

var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

func parse(r io.Reader) (map[string]result, []string) {
	results := map[string]result{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		res := result{nsPerOp: ns}
		fields := strings.Fields(m[3])
		for i := 1; i < len(fields); i++ {
			v, err := strconv.ParseFloat(fields[i-1], 64)
			if err != nil {
				continue
			}
			switch fields[i] {
			case "B/op":
				res.bytesPerOp = v
			case "allocs/op":
				res.allocsPerOp = v
			}
		}
		if _, seen := results[m[1]]; !seen {
			order = append(order, m[1])
		}

		// Of repeated runs (-count), keep the fastest: on a shared machine noise only ever adds time.
		if prev, seen := results[m[1]]; !seen || res.nsPerOp < prev.nsPerOp {
			results[m[1]] = res
		}
	}
	return results, order
}

func main() {
	results, order := parse(os.Stdin)
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark lines on stdin")
		os.Exit(1)
	}
	table(os.Stdout, results, order)
	linearity(os.Stdout, results)
	twins(os.Stdout, results, order)
}

// twinGoal is the adversarial family's goal: a hostile shape costs at most this many times its normal twin.
const twinGoal = 3

// twins prints, per benchmark function, every <shape>/hostile beside its <shape>/normal (the adversarial
// family: BenchmarkAdversarial natively, BenchmarkV8Adversarial and BenchmarkWazeroAdversarial in the module).
func twins(w io.Writer, results map[string]result, order []string) {
	header := ""
	for _, name := range order {
		base, ok := strings.CutSuffix(name, "/hostile")
		if !ok {
			continue
		}
		normal, ok := results[base+"/normal"]
		if !ok {
			continue
		}
		fn, shape, _ := strings.Cut(base, "/")
		if fn != header {
			header = fn
			fmt.Fprintf(w, "\n%s: hostile / normal twin (goal <= %dx)\n\n", fn, twinGoal)
			fmt.Fprintln(w, "| shape | hostile | normal | ratio |")
			fmt.Fprintln(w, "|---|---:|---:|---:|")
		}
		ratio := results[name].nsPerOp / normal.nsPerOp
		verdict := ""
		if ratio > twinGoal {
			verdict = " (over)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f%s |\n", shape, duration(results[name].nsPerOp), duration(normal.nsPerOp), ratio, verdict)
	}
}

// duration prints a time in ns/op in the unit that suits it: nanoseconds below 100 µs (the hot-path
// benchmarks), then µs, ms and s.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 1e5:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// table prints one row per comparison whose benchmarks are in results.
func table(w io.Writer, results map[string]result, order []string) {
	fmt.Fprintln(w, "| measured | cost per op | floor per op | ratio | target | allocs/op |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, c := range comparisons {
		costRE, floorRE := regexp.MustCompile(c.cost), regexp.MustCompile(c.floor)
		var floor *result
		var costs []float64
		var allocs float64
		worst := ""
		for _, name := range order {
			r := results[name]
			if floorRE.MatchString(name) {
				floor = &r
			}
			if costRE.MatchString(name) {
				costs = append(costs, r.nsPerOp)
				if r.nsPerOp == slices.Max(costs) {
					worst = strings.TrimPrefix(name, "Benchmark")
				}
				allocs = max(allocs, r.allocsPerOp)
			}
		}
		if floor == nil || len(costs) == 0 {
			continue
		}
		sort.Float64s(costs)
		median := costs[len(costs)/2]
		ratio := fmt.Sprintf("%.2f", median/floor.nsPerOp)
		cost := duration(median)
		if len(costs) > 1 {
			ratio = fmt.Sprintf("%.2f median, %.2f worst (%s)", median/floor.nsPerOp, costs[len(costs)-1]/floor.nsPerOp, worst)
			cost = duration(median) + " median"
		}
		if c.noRatio != "" {
			ratio = c.noRatio
		}
		target := "—"
		if c.target > 0 {
			verdict := "met"
			if costs[len(costs)-1]/floor.nsPerOp > c.target {
				verdict = "missed"
			}
			target = fmt.Sprintf("≤ %.1f: %s", c.target, verdict)
		}
		allocCell := fmt.Sprintf("%.0f", allocs)
		if c.noAllocs {
			allocCell = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", c.label, cost, duration(floor.nsPerOp), ratio, target, allocCell)
	}
}

// linearity reports how rendering time grows from 4 KiB to 64 KiB bodies (16x the bytes).
func linearity(w io.Writer, results map[string]result) {
	var ratios []float64
	for name, r4 := range results {
		if !strings.HasSuffix(name, "/4KiB") || strings.Contains(name, "/floor/") || !strings.HasPrefix(name, "BenchmarkRender/") {
			continue
		}
		if r64, ok := results[strings.TrimSuffix(name, "4KiB")+"64KiB"]; ok {
			ratios = append(ratios, r64.nsPerOp/r4.nsPerOp)
		}
	}
	if len(ratios) == 0 {
		return
	}
	sort.Float64s(ratios)
	fmt.Fprintf(w, "\nrender time 64 KiB / 4 KiB over %d pairs: median %.1f, range %.1f-%.1f (16 is linear in size)\n",
		len(ratios), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}

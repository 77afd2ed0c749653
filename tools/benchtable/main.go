// Command benchtable reads `go test -bench` output on stdin and prints every measured cost beside its floor
// as a ratio, against the project's targets (BENCHMARKS.md). Ratios come from one run on one machine, so
// they hold where absolute times do not.
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
}

var comparisons = []comparison{
	{"render request, 1 KiB, 16 pairs", `^BenchmarkRender/[a-z-]+-to-[a-z-]+/1KiB$`, `^BenchmarkRender/floor/1KiB$`, 1.5},
	{"render request, 4 KiB, 16 pairs", `^BenchmarkRender/[a-z-]+-to-[a-z-]+/4KiB$`, `^BenchmarkRender/floor/4KiB$`, 1.5},
	{"render request, 64 KiB, 16 pairs", `^BenchmarkRender/[a-z-]+-to-[a-z-]+/64KiB$`, `^BenchmarkRender/floor/64KiB$`, 1.5},
	{"render openai -> azure-ai, 4 KiB (issue 2)", `^BenchmarkRender/openai-to-azure-ai/4KiB$`, `^BenchmarkRender/floor/4KiB$`, 2.0},
	{"answer azure-openai -> openai (2 KiB)", `^BenchmarkTranslateJSON/azure-openai-to-openai$`, `^BenchmarkTranslateJSON/floor/azure-openai$`, 1.5},
	{"answer eternalai -> openai (2 KiB)", `^BenchmarkTranslateJSON/eternalai-to-openai$`, `^BenchmarkTranslateJSON/floor/eternalai$`, 1.5},
	{"edited SSE event vs scan+copy", `^BenchmarkSSEEvent/edited/azure-ai-to-openai$`, `^BenchmarkSSEEvent/floor/scan\+copy$`, 1.5},
	{"edited SSE event vs boundary+copy", `^BenchmarkSSEEvent/edited/azure-ai-to-openai$`, `^BenchmarkSSEEvent/floor/boundary\+copy$`, 2.0},
	{"zero-edit stream (100 events)", `^BenchmarkStreamZeroEdit/openai-to-openai$`, `^BenchmarkStreamZeroEdit/floor/boundaries\+copy$`, 1.1},
	{"SSE framer alone", `^BenchmarkFramerPassthrough$`, `^BenchmarkFramerFloor$`, 0},
	{"wasm lifecycle, 4 KiB chat + 2 KiB JSON", `^BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/aidialect$`, `^BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/floor$`, 1.5},
	{"wasm lifecycle, 100-event stream", `^BenchmarkWasmLifecycle/sse-100-events-azure-ai-to-openai/aidialect$`, `^BenchmarkWasmLifecycle/sse-100-events-azure-ai-to-openai/floor$`, 1.5},
	{"instantiate (compile + _initialize + OnPluginStart)", `^BenchmarkInstantiate/aidialect$`, `^BenchmarkInstantiate/floor$`, 0},
	{"OnPluginStart alone", `^BenchmarkPluginStart/aidialect$`, `^BenchmarkPluginStart/floor$`, 0},
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
	fmt.Println("| measured | cost ns/op | floor ns/op | ratio | target | allocs/op |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
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
		cost := fmt.Sprintf("%.0f", median)
		if len(costs) > 1 {
			ratio = fmt.Sprintf("%.2f median, %.2f worst (%s)", median/floor.nsPerOp, costs[len(costs)-1]/floor.nsPerOp, worst)
			cost = fmt.Sprintf("%.0f median", median)
		}
		target := "—"
		if c.target > 0 {
			verdict := "met"
			if costs[len(costs)-1]/floor.nsPerOp > c.target {
				verdict = "missed"
			}
			target = fmt.Sprintf("≤ %.1f: %s", c.target, verdict)
		}
		fmt.Printf("| %s | %s | %.0f | %s | %s | %.0f |\n", c.label, cost, floor.nsPerOp, ratio, target, allocs)
	}
	linearity(results)
}

// linearity reports how rendering time grows from 4 KiB to 64 KiB bodies (16x the bytes).
func linearity(results map[string]result) {
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
	fmt.Printf("\nrender time 64 KiB / 4 KiB over %d pairs: median %.1f, range %.1f-%.1f (16 is linear in size)\n",
		len(ratios), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

// A run's output in the shape `make bench` collects (GOMAXPROCS suffixes, repeated runs).
const sample = `goos: linux
BenchmarkRender/floor/4KiB-2          	  300000	      3780 ns/op	1083.62 MB/s	       0 B/op	       0 allocs/op
BenchmarkRender/openai-to-azure-ai/4KiB-2   	  300000	      3955 ns/op	1035.00 MB/s	    4608 B/op	       8 allocs/op
BenchmarkRender/openai-to-azure-ai/4KiB-2   	  300000	      4100 ns/op	1035.00 MB/s	    4608 B/op	       8 allocs/op
BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/floor-2      	    5000	     42146 ns/op	   12000 B/op	      40 allocs/op
BenchmarkWasmLifecycle/json-4KiB-openai-to-azure-ai/aidialect-2  	    5000	    211022 ns/op	   52000 B/op	     211 allocs/op
BenchmarkInstantiate/floor-2         	       3	1580000000 ns/op	   1900000 wasm-bytes	 9000000 B/op	   50000 allocs/op
BenchmarkInstantiate/aidialect-2     	       3	3220000000 ns/op	   4174154 wasm-bytes	 9000000 B/op	   90000 allocs/op
BenchmarkPluginStart/floor-2         	  300000	      3700 ns/op	     100 B/op	       2 allocs/op
BenchmarkPluginStart/aidialect-2     	    2000	    636000 ns/op	  100000 B/op	    1409 allocs/op
`

func render(t *testing.T) string {
	t.Helper()
	results, order := parse(strings.NewReader(sample))
	var out bytes.Buffer
	table(&out, results, order)
	return out.String()
}

func row(t *testing.T, table, label string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, " | "); len(cells) > 1 && strings.TrimPrefix(cells[0], "| ") == label {
			return cells
		}
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

func TestTableLabelsAndUnits(t *testing.T) {
	out := render(t)
	if strings.Contains(out, "issue") {
		t.Errorf("an internal label leaked:\n%s", out)
	}
	// The fastest of repeated runs; ns below 100 µs.
	if r := row(t, out, "render openai -> azure-ai, 4 KiB, two extras dropped"); r[1] != "3955 ns" || r[2] != "3780 ns" || r[3] != "1.05" {
		t.Errorf("render row %q", r)
	}
	if r := row(t, out, "wasm lifecycle, 4 KiB chat + 2 KiB JSON answer"); r[1] != "211 µs" || r[2] != "42146 ns" {
		t.Errorf("lifecycle row %q", r)
	}
	// Instantiate in seconds, not raw nanoseconds.
	if r := row(t, out, "instantiate (compile + _initialize + OnPluginStart), per worker VM"); r[1] != "3.22 s" || r[2] != "1.58 s" || r[3] != "2.04" {
		t.Errorf("instantiate row %q", r)
	}
	// OnPluginStart: the floor parses nothing, so no ratio, and the row says why.
	r := row(t, out, "OnPluginStart alone (4 providers)")
	if r[1] != "636 µs" || !strings.HasPrefix(r[3], "— (the floor filter reads no configuration") {
		t.Errorf("OnPluginStart row %q", r)
	}
}

func TestDuration(t *testing.T) {
	for ns, want := range map[float64]string{
		0: "0 ns", 1750: "1750 ns", 99999: "99999 ns", 100000: "100 µs", 1583899: "1.6 ms", 999e6: "999.0 ms", 3.2e9: "3.20 s",
	} {
		if got := duration(ns); got != want {
			t.Errorf("duration(%v) = %q, want %q", ns, got, want)
		}
	}
}

func TestTwins(t *testing.T) {
	in := "BenchmarkV8Adversarial/deep/hostile-2 \t 10 \t 300 ns/op\nBenchmarkV8Adversarial/deep/normal-2 \t 10 \t 100 ns/op\n" +
		"BenchmarkV8Adversarial/keys/hostile-2 \t 10 \t 500 ns/op\nBenchmarkV8Adversarial/keys/normal-2 \t 10 \t 100 ns/op\n" +
		"BenchmarkV8Adversarial/alone/hostile-2 \t 10 \t 500 ns/op\n"
	results, order := parse(strings.NewReader(in))
	var out strings.Builder
	twins(&out, results, order)
	for _, want := range []string{"BenchmarkV8Adversarial: hostile / normal twin", "| deep | 300 ns | 100 ns | 3.00 |", "| keys | 500 ns | 100 ns | 5.00 (over) |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "alone") {
		t.Errorf("a hostile benchmark without its twin was printed:\n%s", out.String())
	}
}

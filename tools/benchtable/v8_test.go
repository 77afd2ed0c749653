package main

import (
	"bytes"
	"strings"
	"testing"
)

// internal/v8host's lines as `make bench` collects them: the V8 lines carry their own ns/op (timed inside
// node), cpu-ns/op and the ratios, and no B/op or allocs/op.
const v8Sample = `pkg: github.com/aidialect/aidialect/internal/v8host
BenchmarkV8Lifecycle/json-4KiB-openai-to-azure-ai/floor-2         	    6919	     85915 ns/op	     87255 cpu-ns/op	         0 sleep-ns/op
BenchmarkV8Lifecycle/json-4KiB-openai-to-azure-ai/aidialect-2     	    2788	    228276 ns/op	    223569 cpu-ns/op	         0 sleep-ns/op	         2.650 xfloor-cpu	         2.713 xfloor-ns
BenchmarkV8Lifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/floor-2 	    8654	     68233 ns/op	     69604 cpu-ns/op	         0 sleep-ns/op
BenchmarkV8Lifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/aidialect-2         	    1303	    453589 ns/op	    455668 cpu-ns/op	         0 sleep-ns/op	         6.547 xfloor-cpu	         6.648 xfloor-ns
BenchmarkWazeroLifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/floor-2         	    1634	    330215 ns/op	    332433 cpu-ns/op
BenchmarkWazeroLifecycle/sse-100-events-1KiB-chunks-azure-ai-to-openai/aidialect-2     	     457	   1298972 ns/op	   1295022 cpu-ns/op	         3.896 xfloor-cpu	         3.934 xfloor-ns
`

func TestV8Rows(t *testing.T) {
	results, order := parse(strings.NewReader(v8Sample))
	var out bytes.Buffer
	table(&out, results, order)
	got := out.String()
	if r := row(t, got, "V8 lifecycle, 4 KiB chat + 2 KiB JSON answer"); r[1] != "228 µs" || r[2] != "85915 ns" || r[3] != "2.66" || r[5] != "— |" {
		t.Errorf("V8 JSON row %q", r)
	}
	if r := row(t, got, "V8 lifecycle, 100-event stream in 1 KiB chunks"); r[3] != "6.65" || !strings.HasPrefix(r[4], "≤ 1.5: missed") {
		t.Errorf("V8 1 KiB row %q", r)
	}
	if r := row(t, got, "wazero lifecycle beside V8, 100-event stream in 1 KiB chunks"); r[1] != "1.3 ms" || r[3] != "3.93" {
		t.Errorf("wazero 1 KiB row %q", r)
	}
	if strings.Contains(got, "V8 lifecycle, 100-event stream |") {
		t.Errorf("a row without its benchmarks was printed:\n%s", got)
	}
}

package main

import (
	"regexp"
	"strings"
	"testing"
)

// A profile: root -> loop (host.mjs) -> proxy_on_response_body (wasm) -> Stream.Write (wasm) -> memmove (wasm),
// and a startup sample outside loop that must not count.
const testProfile = `{
 "nodes": [
  {"id":1,"callFrame":{"functionName":"(root)","url":""},"children":[2,6]},
  {"id":2,"callFrame":{"functionName":"loop","url":"file:///tmp/host.mjs"},"children":[3,7]},
  {"id":3,"callFrame":{"functionName":"proxy_on_response_body","url":"wasm://wasm/1"},"children":[4]},
  {"id":4,"callFrame":{"functionName":"github.com_aidialect_aidialect_translate.__Stream_.Write","url":"wasm://wasm/1"},"children":[5]},
  {"id":5,"callFrame":{"functionName":"runtime.memmove","url":"wasm://wasm/1"}},
  {"id":6,"callFrame":{"functionName":"compileModule","url":"file:///tmp/host.mjs"}},
  {"id":7,"callFrame":{"functionName":"bodyCallback","url":"file:///tmp/host.mjs"}}
 ],
 "samples":    [6, 4, 5, 5, 7, 4],
 "timeDeltas": [0, 1000, 100, 100, 100, 100, 100]
}`

func TestReport(t *testing.T) {
	var out strings.Builder
	if err := report(&out, strings.NewReader(testProfile), 10, 5, []*regexp.Regexp{regexp.MustCompile(`Stream\).Write$`)}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"0.5 ms sampled inside loop(); guest code  80.0%    8.00 µs, host JavaScript and V8  20.0%    2.00 µs",
		" 80.0%    8.00 µs  proxy_on_response_body",
		" 20.0%    2.00 µs  (host, between callbacks)",
		" 40.0%    4.00 µs  runtime: memmove",
		" 40.0%    4.00 µs  translate.(*Stream).Write",
		" 80.0%    8.00 µs  translate.(*Stream).Write", // inclusive
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "compileModule") {
		t.Errorf("a sample outside loop() was counted:\n%s", got)
	}
}

func TestReportRefusesOtherProfiles(t *testing.T) {
	var out strings.Builder
	if err := report(&out, strings.NewReader(`{"nodes":[],"samples":[],"timeDeltas":[]}`), 0, 5, nil); err == nil {
		t.Error("a profile without loop() samples was accepted")
	}
	if err := report(&out, strings.NewReader(`not json`), 0, 5, nil); err == nil {
		t.Error("a file that is not a profile was accepted")
	}
}

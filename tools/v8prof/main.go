// Command v8prof reads a V8 CPU profile (.cpuprofile, as node --cpu-prof writes it) of the compiled module
// run by internal/v8host and says where the time of the timed exchanges went: per proxy-wasm callback (the
// outermost proxy_on_* export on the stack), guest code against the host's JavaScript, self time per
// function and per Go package, and inclusive time of the functions named on the command line.
//
//	AIDIALECT_V8_CPU_PROFILE=/tmp/prof AIDIALECT_WASM=$PWD/named.wasm \
//	  go test -run='^$' -bench='V8Lifecycle/json-4KiB-openai-to-azure-ai/aidialect' -benchtime=2s ./internal/v8host/
//	go run ./tools/v8prof -us 99 /tmp/prof/*.cpuprofile 'RequestBody..parse$' 'RenderBody$'
//
// Only samples taken inside host.mjs's loop (the timed exchanges and the warm-up batches, all after the
// module is compiled and instantiated) count. Build the module without -ldflags=-s -w to keep the names of
// its functions (the code is the same). With -us, the exchange's time measured without the profiler, shares
// are also given as µs per exchange.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

type profile struct {
	Nodes []struct {
		ID        int `json:"id"`
		CallFrame struct {
			FunctionName string `json:"functionName"`
			URL          string `json:"url"`
		} `json:"callFrame"`
		Children []int `json:"children"`
	} `json:"nodes"`
	Samples    []int   `json:"samples"`
	TimeDeltas []int64 `json:"timeDeltas"`
}

type frame struct {
	name   string
	guest  bool // a function of the wasm module
	parent int  // index of the caller's frame, -1 at the root
}

// tally sums sample time (µs) by key.
type tally map[string]int64

func (t tally) top(n int) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return t[keys[i]] > t[keys[j]] || t[keys[i]] == t[keys[j]] && keys[i] < keys[j] })
	if n > 0 && len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

func main() {
	us := flag.Float64("us", 0, "µs per exchange measured without the profiler: shares are also printed as µs")
	top := flag.Int("top", 30, "rows of the self-time table")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: v8prof [-us N] [-top N] profile.cpuprofile [function regexp...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	var inclusive []*regexp.Regexp
	for _, arg := range flag.Args()[1:] {
		re, err := regexp.Compile(arg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "v8prof: %q is not a regular expression: %v\n", arg, err)
			os.Exit(2)
		}
		inclusive = append(inclusive, re)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "v8prof:", err)
		os.Exit(1)
	}
	defer f.Close()
	if err := report(os.Stdout, f, *us, *top, inclusive); err != nil {
		fmt.Fprintln(os.Stderr, "v8prof:", err)
		os.Exit(1)
	}
}

func report(w io.Writer, r io.Reader, usPerExchange float64, top int, inclusive []*regexp.Regexp) error {
	var p profile
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return fmt.Errorf("not a V8 CPU profile: %v", err)
	}
	frames, index := make([]frame, len(p.Nodes)), make(map[int]int, len(p.Nodes))
	for i, n := range p.Nodes {
		index[n.ID] = i
		frames[i] = frame{name: shortName(n.CallFrame.FunctionName, n.CallFrame.URL), guest: strings.HasPrefix(n.CallFrame.URL, "wasm://"), parent: -1}
	}
	for i, n := range p.Nodes {
		for _, c := range n.Children {
			if j, ok := index[c]; ok {
				frames[j].parent = i
			}
		}
	}
	self, pkgs, phases, incl := tally{}, tally{}, tally{}, tally{}
	var total, guest int64
	for s, id := range p.Samples {
		var dt int64
		if s+1 < len(p.TimeDeltas) {
			dt = p.TimeDeltas[s+1] // the time until the next sample is this sample's
		}
		leaf, ok := index[id]
		if !ok {
			continue
		}
		phase, inLoop := "", false
		for i := leaf; i >= 0; i = frames[i].parent {
			fr := frames[i]
			if fr.name == "loop" && !fr.guest {
				inLoop = true
			}
			if fr.guest && strings.HasPrefix(fr.name, "proxy_on_") {
				phase = fr.name // the outermost one wins
			}
		}
		if !inLoop {
			continue
		}
		if len(inclusive) > 0 {
			seen := map[string]bool{} // a recursive function counts once per sample
			for i := leaf; i >= 0; i = frames[i].parent {
				if name := frames[i].name; !seen[name] {
					seen[name] = true
					for _, re := range inclusive {
						if re.MatchString(name) {
							incl[name] += dt
							break
						}
					}
				}
			}
		}
		total += dt
		fr := frames[leaf]
		self[fr.name] += dt
		pkgs[packageOf(fr)] += dt
		if fr.guest {
			guest += dt
		}
		if phase == "" {
			phase = "(host, between callbacks)"
		}
		phases[phase] += dt
	}
	if total == 0 {
		return fmt.Errorf("no sample inside host.mjs's loop: was the profile taken by internal/v8host's benchmark?")
	}
	share := func(v int64) string {
		s := fmt.Sprintf("%5.1f%%", 100*float64(v)/float64(total))
		if usPerExchange > 0 {
			s += fmt.Sprintf(" %7.2f µs", usPerExchange*float64(v)/float64(total))
		}
		return s
	}
	fmt.Fprintf(w, "%.1f ms sampled inside loop(); guest code %s, host JavaScript and V8 %s\n\n", float64(total)/1000, share(guest), share(total-guest))
	fmt.Fprintln(w, "by callback (outermost proxy_on_* export on the stack):")
	for _, k := range phases.top(0) {
		fmt.Fprintf(w, "  %s  %s\n", share(phases[k]), k)
	}
	fmt.Fprintln(w, "\nself time by package:")
	for _, k := range pkgs.top(0) {
		if pkgs[k]*1000 >= total { // 0.1% and up
			fmt.Fprintf(w, "  %s  %s\n", share(pkgs[k]), k)
		}
	}
	fmt.Fprintf(w, "\nself time, top %d functions:\n", top)
	for _, k := range self.top(top) {
		fmt.Fprintf(w, "  %s  %s\n", share(self[k]), k)
	}
	if len(inclusive) > 0 {
		fmt.Fprintln(w, "\ninclusive time (samples with the function on the stack):")
		for _, k := range incl.top(0) {
			fmt.Fprintf(w, "  %s  %s\n", share(incl[k]), k)
		}
	}
	return nil
}

// shortName drops the module path Go's wasm names carry ("github.com_aidialect_aidialect_translate.__Stream_.Write"
// becomes "translate.(*Stream).Write"); JavaScript functions keep theirs, anonymous ones get their file.
func shortName(fn, url string) string {
	if fn == "" {
		if url == "" {
			return "(anonymous)"
		}
		return "(anonymous " + url[strings.LastIndexByte(url, '/')+1:] + ")"
	}
	if !strings.HasPrefix(url, "wasm://") {
		return fn
	}
	fn = strings.TrimPrefix(fn, "github.com_aidialect_aidialect_")
	fn = strings.TrimPrefix(fn, "github.com_")
	fn = strings.ReplaceAll(fn, ".__", ".(*")
	if i := strings.Index(fn, ".(*"); i >= 0 {
		if j := strings.Index(fn[i:], "_."); j >= 0 {
			fn = fn[:i+j] + ")." + fn[i+j+2:]
		}
	}
	return fn
}

// packageOf groups a frame: the guest by Go package (the runtime split by what it does), the host as
// host.mjs, Node's own JavaScript, or V8.
func packageOf(fr frame) string {
	if !fr.guest {
		switch {
		case strings.HasPrefix(fr.name, "(garbage collector)"):
			return "V8: garbage collector"
		case strings.HasPrefix(fr.name, "("):
			return "V8: " + fr.name
		}
		return "host: JavaScript (host.mjs, Node's Buffers)"
	}
	name := fr.name
	if strings.HasPrefix(name, "runtime.") {
		n := strings.ToLower(name)
		switch {
		case strings.Contains(n, "malloc") || strings.Contains(n, "mcache") || strings.Contains(n, "mheap") ||
			strings.Contains(n, "span") || strings.Contains(n, "makeslice") || strings.Contains(n, "growslice") ||
			strings.Contains(n, "memclr"):
			return "runtime: allocation"
		case strings.Contains(n, "gc") || strings.Contains(n, "mark") || strings.Contains(n, "sweep") ||
			strings.Contains(n, "barrier") || strings.Contains(n, "scanobject") || strings.Contains(n, "wbbuf"):
			return "runtime: GC and write barriers"
		case strings.Contains(n, "memmove"):
			return "runtime: memmove"
		case strings.Contains(n, "map"):
			return "runtime: maps"
		}
		return "runtime: other"
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

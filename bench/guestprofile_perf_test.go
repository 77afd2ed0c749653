//go:build aidialect_profile && linux

package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sampling: perf record samples the profiling thread (cpu-clock, a timer, so no hardware counters are
// needed); each sample's instruction address is looked up in wazero's machine code (codeMap), so a sample in
// the guest names its Go function, unbiased by listener calls. Samples are stamped with CLOCK_MONOTONIC and
// sorted into the light listener's windows: one per top-level entry into the guest, labelled with the export.
// A sample outside the guest module's code but inside a window is host work the guest asked for (wazero's
// host-call path, proxytest's emulator) or the kernel.

// perfSession is one perf record attached to a thread, its events enabled and disabled through perf's
// control fifo (so sampling starts exactly when the measured loop does, however long perf takes to attach).
type perfSession struct {
	cmd      *exec.Cmd
	out      string
	ctl, ack *os.File
	errb     bytes.Buffer
}

// perfAvailable reports why perf cannot sample this process, or "".
func perfAvailable() string {
	if os.Getenv("AIDIALECT_PROFILE_PERF") == "0" {
		return "AIDIALECT_PROFILE_PERF=0"
	}
	if _, err := exec.LookPath("perf"); err != nil {
		return "no perf on PATH (apt-get install linux-perf)"
	}
	return ""
}

func startPerf(dir string, tid, freq int) (*perfSession, error) {
	stamp := time.Now().UnixNano()
	s := &perfSession{out: filepath.Join(dir, fmt.Sprintf("perf-%d.data", stamp))}
	ctl, ack := filepath.Join(dir, fmt.Sprintf("ctl-%d", stamp)), filepath.Join(dir, fmt.Sprintf("ack-%d", stamp))
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return nil, err
		}
	}
	s.cmd = exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(freq), "-k", "CLOCK_MONOTONIC",
		"-t", strconv.Itoa(tid), "-o", s.out, "-D", "-1", "--control", "fifo:"+ctl+","+ack)
	s.cmd.Stderr = &s.errb
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	var err error
	// Opening a fifo blocks until the other side opens it: perf opens both while it starts.
	if s.ctl, err = os.OpenFile(ctl, os.O_WRONLY, 0); err == nil {
		s.ack, err = os.OpenFile(ack, os.O_RDONLY, 0)
	}
	if err == nil {
		err = s.command("enable")
	}
	if err != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		return nil, fmt.Errorf("perf record did not start: %v: %s", err, s.errb.String())
	}
	return s, nil
}

// command sends perf a control command and waits for its acknowledgement.
func (s *perfSession) command(c string) error {
	if _, err := s.ctl.WriteString(c + "\n"); err != nil {
		return err
	}
	buf := make([]byte, 16)
	n, err := s.ack.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "ack") {
		return fmt.Errorf("perf answered %q to %s", buf[:n], c)
	}
	return nil
}

func stoppedByInterrupt(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// perfSample is one sample of the profiled thread.
type perfSample struct {
	time   int64 // CLOCK_MONOTONIC ns
	ip     uintptr
	period int64 // ns of CPU the sample stands for
	sym    string
	dso    string
}

func (s *perfSession) stop() ([]perfSample, error) {
	derr := s.command("disable")
	s.ctl.Close()
	s.ack.Close()
	s.cmd.Process.Signal(syscall.SIGINT)
	// perf record writes its data, then re-raises the signal it stopped on: that exit is the normal one.
	if err := s.cmd.Wait(); err != nil && !stoppedByInterrupt(err) {
		return nil, fmt.Errorf("perf record: %v: %s", err, s.errb.String())
	}
	if os.Getenv("AIDIALECT_PROFILE_KEEP") == "" {
		defer os.Remove(s.out)
	} else {
		fmt.Fprintf(os.Stderr, "perf data kept: %s\n", s.out)
	}
	cmd := exec.Command("perf", "script", "-i", s.out, "--ns", "-F", "time,ip,sym,dso,period")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("perf script: %v: %s", err, errb.String())
	}
	if derr != nil {
		return nil, fmt.Errorf("perf record: disabling: %v", derr)
	}
	var samples []perfSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// "    1234.567890123:      10000      7f3a2b1c0d10 sym+0x12 (dso)"; the period column comes before ip
		// in perf's fixed order (time, period, ip, sym, dso).
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		ts := strings.TrimSuffix(f[0], ":")
		sec, frac, ok := strings.Cut(ts, ".")
		if !ok {
			continue
		}
		secs, err1 := strconv.ParseInt(sec, 10, 64)
		nsec, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		period, err3 := strconv.ParseInt(f[1], 10, 64)
		ip, err4 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		sm := perfSample{time: secs*1e9 + nsec, ip: uintptr(ip), period: period}
		if len(f) > 3 {
			sm.dso = strings.Trim(f[len(f)-1], "()")
			sm.sym = strings.Join(f[3:len(f)-1], " ")
			if i := strings.LastIndex(sm.sym, "+0x"); i > 0 {
				sm.sym = sm.sym[:i]
			}
		}
		samples = append(samples, sm)
	}
	if len(samples) == 0 && sc.Err() == nil {
		return nil, errors.New("perf recorded no sample")
	}
	return samples, sc.Err()
}

// sampleKey is what a sample is charged to.
type sampleKey struct {
	fn    string // guest: the wasm function's name-section name; else a host bucket or symbol
	guest bool
}

// sampleProfile is the samples of one run, sorted into phases.
type sampleProfile struct {
	byPhase  [numPhases]map[sampleKey]int64 // ns
	total    [numPhases]int64
	outside  int64 // ns sampled between guest entries: the harness and emulator bookkeeping
	samples  int
	inGuest  int // samples inside a window
	unmapped int // samples in a window at an address no region or symbol explains
}

// attribute sorts samples into windows (both sorted by time) and charges each to its function.
func attribute(samples []perfSample, windows []phaseWindow, code *codeMap) *sampleProfile {
	p := &sampleProfile{samples: len(samples)}
	for i := range p.byPhase {
		p.byPhase[i] = map[sampleKey]int64{}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].time < samples[j].time })
	w := 0
	for _, s := range samples {
		for w < len(windows) && windows[w].end < s.time {
			w++
		}
		if w == len(windows) || s.time < windows[w].start {
			p.outside += s.period
			continue
		}
		p.inGuest++
		ph := windows[w].phase
		p.total[ph] += s.period
		key := sampleKey{}
		if fn, guest, ok := code.lookup(s.ip); ok {
			key = sampleKey{fn: fn, guest: guest}
		} else {
			key.fn = hostBucket(s)
			if key.fn == "" {
				p.unmapped++
				key.fn = "host: (unknown code)"
			}
		}
		p.byPhase[ph][key] += s.period
	}
	return p
}

// hostFunc is the Go function (the outermost, when the code at pc was inlined) of a host-side sample.
func hostFunc(s perfSample) string {
	if s.sym != "" && s.sym != "[unknown]" {
		return s.sym
	}
	if f := runtime.FuncForPC(s.ip); f != nil {
		if outer := runtime.FuncForPC(f.Entry()); outer != nil {
			return outer.Name()
		}
		return f.Name()
	}
	return ""
}

// kernelPageFault reports a kernel sample in the page-fault path: the first touch of memory (the guest's
// linear memory as its heap grows, or the host's).
func kernelPageFault(sym string) bool {
	for _, k := range []string{"page_fault", "clear_page", "do_anonymous_page", "handle_mm_fault", "alloc_pages",
		"memcg", "lru", "folio", "rmqueue", "get_page_from_freelist"} {
		if strings.Contains(sym, k) {
			return true
		}
	}
	return false
}

// hostBucket names host-side code by package: the test binary's Go symbols, the kernel, libc.
func hostBucket(s perfSample) string {
	switch {
	case strings.Contains(s.dso, "kernel") && kernelPageFault(s.sym):
		return "host: kernel, page faults (first touch of memory)"
	case strings.Contains(s.dso, "kernel") || strings.HasPrefix(s.dso, "[vdso]"):
		return "host: kernel (" + s.dso + ")"
	}
	// go test links its binary without a symbol table perf could read; the process can name its own code.
	sym := hostFunc(s)
	switch {
	case sym == "" || sym == "[unknown]":
		return ""
	case strings.HasPrefix(sym, "github.com/tetratelabs/wazero"):
		return "host: wazero (Go side of host calls and calls into the guest)"
	case strings.HasPrefix(sym, "reflect."):
		return "host: reflect (wazero calls proxytest's host functions with reflect.Value.Call)"
	case strings.HasPrefix(sym, "github.com/proxy-wasm/proxy-wasm-go-sdk"):
		return "host: proxytest emulator (host functions)"
	case strings.HasPrefix(sym, "github.com/aidialect/aidialect"):
		return "host: aidialect harness (hostemu, listeners)"
	case strings.HasPrefix(sym, "runtime.") || strings.HasPrefix(sym, "internal/") || strings.HasPrefix(sym, "sync"):
		return "host: Go runtime (host allocations, GC assists, maps)"
	}
	return "host: other Go (" + strings.SplitN(sym, ".", 2)[0] + ")"
}

// traceProfile is a full-listener run's samples replayed against its call trace: the listener supplies
// each sample's call stack (exact, call by call), perf the CPU time. Samples in the listener's own machinery
// (trampolines, wazero's listener dispatch and stack walk, the listener, its clock) are set aside, so neither
// the listener's cost nor the time the thread was off the CPU is charged to any function.
type traceProfile struct {
	self    [numPhases]map[sampleKey]int64 // as sampleProfile.byPhase
	incl    [numPhases][]int64             // by module function index: ns of samples with it on the stack
	inclPkg [numPhases]map[string]int64    // by package: ns of samples with any of its functions on the stack
	// own: each guest sample charged to the innermost function of the filter's own code (or the SDK's, or
	// gjson's) on the stack: its self time plus the runtime and standard library code it called, so the
	// runtime's cost lands on the code that asked for it.
	own      [numPhases]map[string]int64 // by fnInfo.name
	total    [numPhases]int64
	listener int64 // ns in the listener machinery, set aside
	samples  int
	covered  int // samples inside the trace and inside a guest entry
}

func attributeTrace(samples []perfSample, p *callProfiler, code *codeMap) *traceProfile {
	t := &traceProfile{samples: len(samples)}
	for i := range t.self {
		t.self[i] = map[sampleKey]int64{}
		t.incl[i] = make([]int64, len(p.fns))
		t.inclPkg[i] = map[string]int64{}
		t.own[i] = map[string]int64{}
	}
	byWasm := map[string]int32{}
	for idx, info := range p.fns {
		if info.wasm != "" {
			byWasm[info.wasm] = int32(idx)
		}
	}
	pkgSeen := map[string]int{}
	if len(p.trace) == 0 {
		return t
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].time < samples[j].time })
	last := p.t0 + int64(p.trace[len(p.trace)-1]>>14)
	var stack []int32
	ph := phaseOther
	stamp := make([]int, len(p.fns))
	e := 0
	for si, s := range samples {
		if s.time > last {
			break
		}
		for e < len(p.trace) && p.t0+int64(p.trace[e]>>14) <= s.time {
			ev := p.trace[e]
			fn := int32(ev>>1) & (1<<13 - 1)
			if ev&1 == 0 {
				if len(stack) == 0 {
					ph = phaseOther
					if x := p.phaseOf[fn]; x >= 0 {
						ph = x
					}
				}
				stack = append(stack, fn)
			} else if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			e++
		}
		if len(stack) == 0 {
			continue
		}
		var key sampleKey
		if fn, guest, ok := code.lookup(s.ip); ok && guest {
			key = sampleKey{fn: fn, guest: true}
		} else if ok && strings.Contains(fn, "listener") {
			t.listener += s.period
			continue
		} else if inner := p.fns[stack[len(stack)-1]]; inner.host != "" {
			key = sampleKey{fn: "host call: " + inner.host}
		} else if listenerCode(s) {
			t.listener += s.period
			continue
		} else {
			b := hostBucket(s)
			if ok {
				b = fn
			}
			key = sampleKey{fn: "under " + inner.short + ": " + b}
		}
		t.covered++
		t.total[ph] += s.period
		t.self[ph][key] += s.period
		frames := stack
		if key.guest {
			// The sample's own function, when the listener has not stamped its entry yet (its prologue) or
			// already stamped its exit (its epilogue).
			if idx, ok := byWasm[key.fn]; ok && stack[len(stack)-1] != idx {
				frames = append(stack[:len(stack):len(stack)], idx)
			}
			for i := len(frames) - 1; i >= 0; i-- {
				if info := p.fns[frames[i]]; ownCode(info) {
					t.own[ph][info.name] += s.period
					break
				}
			}
		}
		for _, fn := range frames {
			if stamp[fn] != si+1 {
				stamp[fn] = si + 1
				t.incl[ph][fn] += s.period
			}
			if pkg := p.fns[fn].pkg; pkgSeen[pkg] != si+1 {
				pkgSeen[pkg] = si + 1
				t.inclPkg[ph][pkg] += s.period
			}
		}
	}
	return t
}

// ownCode is code the filter chose: its packages, the SDK, gjson (not the runtime or the standard library).
func ownCode(info fnInfo) bool {
	return strings.Contains(info.pkg, "aidialect") || strings.HasPrefix(info.pkg, "main") ||
		strings.Contains(info.pkg, "proxy-wasm-go-sdk") || strings.Contains(info.pkg, "tidwall")
}

// listenerCode reports whether a host-side sample taken while a guest function (not a host call) was
// innermost is the listener's machinery: wazero's exit to Go for the listener, its stack walk, the listener
// itself and its clock.
func listenerCode(s perfSample) bool {
	if strings.HasPrefix(s.dso, "[vdso]") {
		return true
	}
	if strings.Contains(s.dso, "kernel") {
		return !kernelPageFault(s.sym)
	}
	sym := hostFunc(s)
	return strings.Contains(sym, "wazero/internal/engine/wazevo") || strings.Contains(sym, "aidialect/bench.") ||
		strings.Contains(sym, "wazero/internal/wasm.") || strings.Contains(sym, "wazero/internal/wasmdebug") ||
		strings.HasPrefix(sym, "runtime.") || sym == "" || sym == "[unknown]"
}

// Package v8host runs compiled proxy-wasm modules under V8, the engine Envoy runs them in by default, through
// host.mjs: a proxy-wasm 0.2.1 host in Node.js that enforces the Envoy host rules internal/hostemu enforces
// under wazero, reading the same rule table (internal/hostemu/rules.json). This file is the Go side: it
// starts one node process and speaks host.mjs's line protocol over its stdin and stdout.
//
// The tests replay the golden cases under V8 (TestGoldenCasesUnderV8), hold the V8 host to the rule table
// beside hostemu (TestRuleTableUnderV8), and the benchmarks measure the filter against the floor filter
// under V8 and under wazero in the same run (BenchmarkV8Lifecycle, BenchmarkWazeroLifecycle, TestV8Memory).
package v8host

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aidialect/aidialect/internal/hostemu"
)

//go:embed host.mjs
var hostScript []byte

// NodeFlags are the V8 flags the host runs with: Envoy's. proxy-wasm-cpp-host turns Liftoff, V8's baseline
// compiler, off, so every function is compiled by TurboFan before the module runs.
var NodeFlags = []string{"--no-liftoff"}

// ErrNoNode: node is not on PATH.
var ErrNoNode = errors.New("node (Node.js >= 20) is not on PATH")

// Host is one node process running host.mjs. Calls are serialised; a Host may be shared by tests.
type Host struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	dir    string
	nextID int
	err    error // set once the process is gone
	// Info is what the host reported at start: node and V8 versions, V8 flags.
	Info Info
}

// Info describes the engine.
type Info struct {
	Node     string   `json:"node"`
	V8       string   `json:"v8"`
	ExecArgv []string `json:"exec_argv"`
	Rules    int      `json:"rules"`
}

// Start starts node with host.mjs and the rule table hostemu embeds (written to a temporary directory with the
// script, so the process reads exactly the bytes hostemu was built with).
func Start() (*Host, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, ErrNoNode
	}
	dir, err := os.MkdirTemp("", "aidialect-v8host")
	if err != nil {
		return nil, err
	}
	script, rules := filepath.Join(dir, "host.mjs"), filepath.Join(dir, "rules.json")
	if err := errors.Join(os.WriteFile(script, hostScript, 0o644), os.WriteFile(rules, hostemu.RulesJSON, 0o644)); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h := &Host{dir: dir, stderr: &tail{max: 16 << 10}}
	args := append([]string(nil), NodeFlags...)
	if dir := os.Getenv("AIDIALECT_V8_CPU_PROFILE"); dir != "" {
		// A V8 CPU profile, written to dir when the process ends; tools/v8prof reads it (BENCHMARKS.md).
		args = append(args, "--cpu-prof", "--cpu-prof-dir="+dir, "--cpu-prof-interval=100")
	}
	h.cmd = exec.Command(node, append(args, script, "--rules", rules)...)
	h.cmd.Stderr = h.stderr
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := h.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := h.call("hello", nil, &h.Info); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Close ends the node process.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return nil
	}
	h.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		err = <-done
	}
	h.cmd = nil
	os.RemoveAll(h.dir)
	return err
}

// Stderr is the tail of what node and the guests wrote to standard error.
// ClearSharedData forgets the shared data of every VM of the host (one Envoy process): the next exchange
// runs as in a freshly started Envoy, whatever the health of providers earlier exchanges recorded.
func (h *Host) ClearSharedData() error { return h.call("clear_shared_data", map[string]any{}, nil) }

func (h *Host) Stderr() string { return h.stderr.String() }

// call sends one request and decodes its result into result (when not nil).
func (h *Host) call(op string, args map[string]any, result any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	h.nextID++
	req := map[string]any{"id": h.nextID, "op": op}
	for k, v := range args {
		req[k] = v
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := h.stdin.Write(append(line, '\n')); err != nil {
		return h.lost(err)
	}
	reply, err := h.stdout.ReadBytes('\n')
	if err != nil {
		return h.lost(err)
	}
	var res struct {
		ID     int             `json:"id"`
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(reply, &res); err != nil {
		return fmt.Errorf("v8host: undecodable reply to %s: %v: %.300s", op, err, reply)
	}
	if res.ID != h.nextID {
		return fmt.Errorf("v8host: reply %d to request %d", res.ID, h.nextID)
	}
	if !res.OK {
		return fmt.Errorf("v8host: %s: %s", op, res.Error)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(res.Result, result)
}

func (h *Host) lost(err error) error {
	h.err = fmt.Errorf("v8host: the node process is gone (%v); its stderr:\n%s", err, h.stderr.String())
	return h.err
}

// Load compiles a module once under the name; VMs are instances of it. It returns V8's compile time.
func (h *Host) Load(name, path string) (time.Duration, error) {
	var r struct {
		NS int64 `json:"compile_ns"`
	}
	err := h.call("load", map[string]any{"name": name, "path": path}, &r)
	return time.Duration(r.NS), err
}

// VM is one instance of a loaded module: its own linear memory, _initialize run, proxy_on_vm_start called.
type VM struct {
	h  *Host
	ID int
	// Instantiate is how long instantiating and initialising took.
	Instantiate time.Duration
}

// NewVM instantiates a loaded module; env is its environment (os.Getenv in the guest).
func (h *Host) NewVM(module string, env map[string]string) (*VM, error) {
	var r struct {
		VM int   `json:"vm"`
		NS int64 `json:"instantiate_ns"`
	}
	if env == nil {
		env = map[string]string{}
	}
	if err := h.call("vm", map[string]any{"module": module, "env": env}, &r); err != nil {
		return nil, err
	}
	return &VM{h: h, ID: r.VM, Instantiate: time.Duration(r.NS)}, nil
}

// Close forgets the VM.
func (vm *VM) Close() error { return vm.h.call("close_vm", map[string]any{"vm": vm.ID}, nil) }

// MemoryBytes is the guest's linear memory size (it only grows).
func (vm *VM) MemoryBytes() (uint64, error) {
	var r struct {
		Bytes uint64 `json:"bytes"`
	}
	err := vm.h.call("memory", map[string]any{"vm": vm.ID}, &r)
	return r.Bytes, err
}

// Counter reads a counter metric.
func (vm *VM) Counter(name string) (uint64, error) {
	var r struct {
		Value string `json:"value"`
		Error string `json:"error"`
	}
	if err := vm.h.call("counter", map[string]any{"vm": vm.ID, "name": name}, &r); err != nil {
		return 0, err
	}
	if r.Error != "" {
		return 0, errors.New(r.Error)
	}
	var v uint64
	_, err := fmt.Sscan(r.Value, &v)
	return v, err
}

// Plugin is one root context (a plugin started with its configuration) in a VM.
type Plugin struct {
	vm *VM
	ID int
}

// Start creates a root context and runs OnPluginStart with config. A refused start is an error carrying the
// plugin's critical log lines.
func (vm *VM) Start(config string) (*Plugin, error) {
	var r struct {
		Plugin   int      `json:"plugin"`
		Error    string   `json:"error"`
		Critical []string `json:"critical"`
	}
	if err := vm.h.call("start", map[string]any{"vm": vm.ID, "config": config}, &r); err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, fmt.Errorf("%s: %s", r.Error, strings.Join(r.Critical, "\n"))
	}
	return &Plugin{vm: vm, ID: r.Plugin}, nil
}

// Stop ends the plugin (proxy_on_done, proxy_on_delete).
func (p *Plugin) Stop() error { return p.vm.h.call("stop", map[string]any{"plugin": p.ID}, nil) }

// Exchange plays one exchange on the plugin.
func (p *Plugin) Exchange(x *Exchange) (*Outcome, error) {
	o := &Outcome{}
	return o, p.vm.h.call("exchange", map[string]any{"plugin": p.ID, "x": x}, o)
}

// Tick runs the plugin's proxy_on_tick (hostemu's Host.Tick), then checks each of the plugin's withheld
// exchanges for a local reply the tick sent, with the checks of any local reply (Exchange.CheckTickReply).
// It returns the outcomes of the exchanges it answered (Outcome.Withheld names each); they are finished.
func (p *Plugin) Tick() ([]*Outcome, error) {
	replies, _, err := p.TickWith(nil)
	return replies, err
}

// TickWith is Tick for a plugin that makes callouts from its tick (budget charges): they get answers, in
// order, and are returned as made.
func (p *Plugin) TickWith(answers []CalloutAnswer) ([]*Outcome, []Callout, error) {
	var r struct {
		Replies  []*Outcome `json:"replies"`
		Callouts []Callout  `json:"callouts"`
		Dead     string     `json:"dead"`
	}
	if err := p.vm.h.call("tick", map[string]any{"plugin": p.ID, "callouts": answers}, &r); err != nil {
		return nil, nil, err
	}
	if r.Dead != "" {
		return nil, r.Callouts, errors.New(r.Dead)
	}
	return r.Replies, r.Callouts, nil
}

// Finish ends a withheld exchange the plugin never answered (hostemu's Exchange.Finish).
func (p *Plugin) Finish(withheld int) error {
	return p.vm.h.call("finish", map[string]any{"withheld": withheld}, nil)
}

// Run starts a plugin with config, plays one exchange, and stops the plugin: one plugin test's run().
func (vm *VM) Run(config string, x *Exchange) (*Outcome, error) {
	o := &Outcome{}
	return o, vm.h.call("run", map[string]any{"vm": vm.ID, "config": config, "x": x}, o)
}

// Ref names an exchange kept in the node process for Loop.
type Ref int

// Define keeps x in the node process, decoded once, for Loop.
func (h *Host) Define(x *Exchange) (Ref, error) {
	var r struct {
		Ref Ref `json:"ref"`
	}
	err := h.call("define", map[string]any{"x": x}, &r)
	return r.Ref, err
}

// LoopResult is what a Loop measured, inside the node process.
type LoopResult struct {
	NS     int64 `json:"ns"`     // wall time of the n exchanges
	CPUNS  int64 `json:"cpu_ns"` // the node process's CPU time over them (user + system)
	Memory []struct {
		Requests int    `json:"requests"`
		Bytes    uint64 `json:"bytes"`
	} `json:"memory"`
	// Polls counts the guest's poll_oneoff calls (the Go runtime waiting for a timer), PollWaitNS the time
	// they asked to sleep, which host.mjs sleeps.
	Polls      int64    `json:"polls"`
	PollWaitNS float64  `json:"poll_wait_ns"`
	LastStatus int      `json:"last_status"`
	FailedAt   int      `json:"failed_at"`
	Outcome    *Outcome `json:"outcome"` // the failing exchange's
}

// Loop plays n exchanges on the plugin, rotating over refs, timed by the node process itself (no round trip
// per exchange), reading the guest's memory size after the request counts in checkpoints. It stops at the
// first broken rule or trap (FailedAt, Outcome).
func (p *Plugin) Loop(refs []Ref, n int, checkpoints []int) (*LoopResult, error) {
	r := &LoopResult{}
	if checkpoints == nil {
		checkpoints = []int{}
	}
	err := p.vm.h.call("loop", map[string]any{"plugin": p.ID, "refs": refs, "n": n, "checkpoints": checkpoints}, r)
	if err == nil && r.FailedAt > 0 {
		err = fmt.Errorf("exchange %d failed: %s", r.FailedAt, r.Outcome.Verdict())
	}
	return r, err
}

// Exchange is a request and the upstream's answer, as host.mjs plays them (hostemu's SendRequestTrailers,
// then RelayResponse).
type Exchange struct {
	Request  Message  `json:"request"`
	Response *Message `json:"response,omitempty"` // nil: the request gets no answer
	// WithholdBodies is hostemu's Host.WithholdBodies for this exchange: an Envoy without
	// allow_on_headers_stop_iteration, where a paused headers callback gets no body callbacks. Such a request
	// stays open (Outcome.Withheld) until a tick answers it (Plugin.Tick) or Plugin.Finish ends it.
	WithholdBodies bool `json:"withhold_bodies,omitempty"`
	// Callouts answer the HTTP callouts the filter makes (failover attempts), in order; Clusters are the
	// clusters Envoy has (nil: any).
	Callouts []CalloutAnswer `json:"callouts,omitempty"`
	Clusters []string        `json:"clusters,omitempty"`
}

// CalloutAnswer is how one callout ends: an answer, a failure (reset, timeout, over the buffer limit), or the
// client gone first.
type CalloutAnswer struct {
	Status     int     `json:"status"`
	Headers    Headers `json:"headers"`
	Body       []byte  `json:"body"`
	Failed     bool    `json:"failed,omitempty"`
	ClientGone bool    `json:"client_gone,omitempty"`
}

// Callout is a callout the filter made.
type Callout struct {
	Cluster string  `json:"cluster"`
	Headers Headers `json:"headers"`
	Body    []byte  `json:"body"`
}

// Message is a request (Status unused; Headers with :method, :path, :authority) or an answer. Chunks nil on
// an answer: a body-less response. Trailers nil: end_of_stream on the last body callback.
type Message struct {
	Status   int      `json:"status,omitempty"`
	Headers  Headers  `json:"headers"`
	Chunks   [][]byte `json:"chunks"`
	Trailers Headers  `json:"trailers"`
	// EndWithLast (answers without trailers): the last chunk's callback carries end_of_stream, instead of a
	// last, empty one.
	EndWithLast bool `json:"end_with_last,omitempty"`
}

// Outcome is what one exchange produced.
type Outcome struct {
	Local       *Response `json:"local"`    // the filter's own reply
	Upstream    *Request  `json:"upstream"` // the request as the upstream got it
	Client      *Response `json:"client"`   // what the client got from a relayed answer
	Rule        *Rule     `json:"rule"`     // a broken host rule
	Dead        string    `json:"dead"`     // non-empty: the VM trapped
	RouteClears int       `json:"route_clears"`
	Withheld    int       `json:"withheld"`    // non-zero: the request is stuck, withheld; its id for Finish
	StartError  string    `json:"start_error"` // Run: the plugin refused to start
	Critical    []string  `json:"critical"`    // the plugin's critical log lines during the call
	Errors      []string  `json:"errors"`
	Warnings    []string  `json:"warnings"`
	Callouts    []Callout `json:"callouts"`
	ClientGone  bool      `json:"client_gone"`
}

// Verdict is the outcome in the rule table's terms: "", the rule, or "trap".
func (o *Outcome) Verdict() string {
	switch {
	case o.Dead != "":
		return "trap"
	case o.Rule != nil:
		return o.Rule.Rule
	}
	return ""
}

// Response is an answer as the client gets it.
type Response struct {
	Status   int     `json:"status"`
	Headers  Headers `json:"headers"`
	Body     []byte  `json:"body"`
	Trailers Headers `json:"trailers"`
}

// Request is a request as the upstream gets it.
type Request struct {
	Headers  Headers `json:"headers"`
	Body     []byte  `json:"body"`
	Trailers Headers `json:"trailers"`
}

// Rule is a broken host rule: the rule, the check (its row in the table) and what happened.
type Rule struct {
	Rule   string `json:"rule"`
	Check  string `json:"check"`
	Detail string `json:"detail"`
}

func (r *Rule) String() string { return r.Rule + " (" + r.Check + "): " + r.Detail }

// Headers are header pairs. On the wire each byte is one latin1 character, so any byte survives JSON.
type Headers [][2]string

// Get returns the first value of name (case-insensitive), "" when absent.
func (hs Headers) Get(name string) string {
	for _, kv := range hs {
		if strings.EqualFold(kv[0], name) {
			return kv[1]
		}
	}
	return ""
}

// Map is the headers by lower-case name (the last of repeated names wins).
func (hs Headers) Map() map[string]string {
	m := make(map[string]string, len(hs))
	for _, kv := range hs {
		m[strings.ToLower(kv[0])] = kv[1]
	}
	return m
}

// MarshalJSON writes [[name, value], ...] with latin1 strings.
func (hs Headers) MarshalJSON() ([]byte, error) {
	if hs == nil {
		return []byte("null"), nil
	}
	out := make([][2]string, len(hs))
	for i, kv := range hs {
		out[i] = [2]string{toLatin1(kv[0]), toLatin1(kv[1])}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (hs *Headers) UnmarshalJSON(b []byte) error {
	var in [][2]string
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if in == nil {
		*hs = nil
		return nil
	}
	out := make(Headers, len(in))
	for i, kv := range in {
		k, err := fromLatin1(kv[0])
		if err != nil {
			return err
		}
		v, err := fromLatin1(kv[1])
		if err != nil {
			return err
		}
		out[i] = [2]string{k, v}
	}
	*hs = out
	return nil
}

func toLatin1(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

func fromLatin1(s string) (string, error) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return "", fmt.Errorf("v8host: header character %U is not latin1", r)
		}
		b = append(b, byte(r))
	}
	return string(b), nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

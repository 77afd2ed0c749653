package bench

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/wazero/api"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// The two modules under test, built once per process by TestMain with the flags of `make build`.
var (
	filterWasm []byte // ./plugin: dist/aidialect.wasm (AIDIALECT_WASM names a prebuilt one instead)
	floorWasm  []byte // ./bench/floorfilter
	// memstatsWasm is ./plugin built with the aidialect_memstats tag, which exports the guest's live heap
	// (TestMemoryWorstCase).
	memstatsWasm []byte
)

func TestMain(m *testing.M) {
	// proxytest narrates every host call (foreign calls, logs) through the log package.
	log.SetOutput(io.Discard)
	dir, err := os.MkdirTemp("", "aidialect-bench")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := buildModules(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// buildModules builds both modules the way `make build` builds the filter (wasmtest.BuildFlags), in parallel.
func buildModules(dir string) error {
	var wg sync.WaitGroup
	var filterErr, floorErr, memstatsErr error
	build := func(pkg, out string, dst *[]byte, errp *error, flags []string) {
		defer wg.Done()
		if *errp = wasmtest.Build(pkg, out, flags); *errp == nil {
			*dst, *errp = os.ReadFile(out)
		}
	}
	wg.Add(3)
	go build(wasmtest.FloorPkg, filepath.Join(dir, "floor.wasm"), &floorWasm, &floorErr, wasmtest.BuildFlags)
	go func() {
		defer wg.Done()
		filterWasm, filterErr = wasmtest.FilterModule(wasmtest.BuildFlags)
	}()
	go build(wasmtest.FilterPkg, filepath.Join(dir, "memstats.wasm"), &memstatsWasm, &memstatsErr,
		slices.Concat(wasmtest.BuildFlags, []string{"-tags=aidialect_memstats"}))
	wg.Wait()
	return errors.Join(filterErr, floorErr, memstatsErr)
}

// guest is one compiled module running in its own wazero runtime, as proxytest.NewWasmVMContext makes it.
type guest struct {
	name string
	vm   proxytest.WasmVMContext
	mod  api.Module // the guest's module instance: its linear memory, its exports
}

func loadGuest(name string, wasm []byte) (*guest, error) {
	vm, err := proxytest.NewWasmVMContext(wasm)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	mod, err := hostemu.GuestModule(vm)
	if err != nil {
		vm.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &guest{name: name, vm: vm, mod: mod}, nil
}

func (g *guest) close() { g.vm.Close() }

// Compiling a module takes seconds: tests and benchmarks share one guest per module, loaded on first use.
// (TestMemory loads its own, so its memory starts clean.)
var (
	sharedMu     sync.Mutex
	sharedGuests = map[string]*guest{}
)

func sharedGuest(tb testing.TB, name string) *guest {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if g := sharedGuests[name]; g != nil {
		return g
	}
	g, err := loadGuest(name, moduleBytes(name))
	if err != nil {
		tb.Fatal(err)
	}
	sharedGuests[name] = g
	return g
}

func moduleBytes(name string) []byte {
	if name == floorName {
		return floorWasm
	}
	return filterWasm
}

// memoryBytes is the guest's linear memory size; it only grows.
func (g *guest) memoryBytes() uint32 { return g.mod.Memory().Size() }

// session is one hostemu.Host on a guest: the plugin started once, then any number of exchanges.
type session struct {
	g      *guest
	host   *hostemu.Host
	reader wasmtest.ChunkReader
	client wasmtest.Client
}

func (g *guest) start(config string) (*session, error) {
	host, err := hostemu.New(g.vm, []byte(config))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.name, err)
	}
	return &session{g: g, host: host}, nil
}

func (s *session) close() { s.host.Close() }

// exchange plays one request through the filter, and the upstream's answer back, then ends the stream the
// way Envoy does (wasmtest.Play; TestScenarios checks the emulator's stream map is left empty).
func (s *session) exchange(r *request) (*hostemu.Exchange, error) {
	x := r.exchange()
	return wasmtest.Play(s.host, &x, &s.client, &s.reader)
}

// request is a client request and the upstream's answer to it: a benchdata.Exchange under the names this
// package's tests read and edit.
type request struct {
	name          string
	headers       [][2]string // with :method, :path, :authority, content-length
	chunks        [][]byte    // request body chunks
	status        int
	answerHeaders [][2]string
	answer        [][]byte // upstream answer body chunks
}

func newRequest(x *benchdata.Exchange) *request {
	return &request{name: x.Name, headers: x.Headers, chunks: x.Chunks, status: x.Status, answerHeaders: x.AnswerHeaders, answer: x.Answer}
}

func (r *request) exchange() benchdata.Exchange {
	return benchdata.Exchange{Name: r.name, Headers: r.headers, Chunks: r.chunks, Status: r.status, AnswerHeaders: r.answerHeaders, Answer: r.answer}
}

// The shared inputs (internal/benchdata) and module names (internal/wasmtest) under the names this package's
// tests use.
const (
	benchConfig  = benchdata.Config
	streamEvents = benchdata.StreamEvents
	filterName   = wasmtest.FilterName
	floorName    = wasmtest.FloorName
)

func split(b []byte, n int) [][]byte { return benchdata.Split(b, n) }

// jsonScenario is benchdata.JSONScenario: a 4 KiB chat request rendered for azure-ai, a 2 KiB JSON answer.
func jsonScenario(model string) *request { return newRequest(benchdata.JSONScenario(model)) }

// streamScenario is benchdata.StreamScenario with one event per network chunk: 100 events, each edited.
func streamScenario(model string) *request { return newRequest(benchdata.StreamScenario(model, 0)) }

// checkScenario checks one exchange's outcome (wasmtest.CheckScenario): the filter translated, the floor
// changed nothing.
func checkScenario(g *guest, r *request, x *hostemu.Exchange, c *wasmtest.Client) error {
	want := r.exchange()
	return wasmtest.CheckScenario(g.name, &want, wasmtest.HostemuOutcome(x, c))
}

// TestScenarios checks what the benchmarks measure: both modules load, the filter translates each scenario
// and the floor leaves it alone, and the session bookkeeping (memory size, proxy_on_delete) works.
func TestScenarios(t *testing.T) {
	for _, name := range []string{filterName, floorName} {
		t.Run(name, func(t *testing.T) {
			g := sharedGuest(t, name)
			s, err := g.start(benchConfig)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			for _, r := range []*request{jsonScenario("llama-3-70b"), streamScenario("llama-3-70b")} {
				for range 3 {
					x, err := s.exchange(r)
					if err != nil {
						t.Fatalf("%s: %v", r.name, err)
					}
					if err := checkScenario(g, r, x, &s.client); err != nil {
						t.Fatalf("%s: %v", r.name, err)
					}
				}
			}
			if g.memoryBytes() == 0 {
				t.Fatal("the guest's linear memory reads as empty")
			}
			if n := s.host.OpenStreams(); n != 0 {
				t.Fatalf("%d stream states left in the emulator", n)
			}
		})
	}
}

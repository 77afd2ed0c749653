package v8host

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aidialect/aidialect/internal/wasmtest"
)

// The tests share one node process and build each module at most once.
var (
	hostOnce sync.Once
	shared   *Host
	hostErr  error

	buildMu  sync.Mutex
	built    = map[string]string{} // package -> .wasm path
	buildDir string
)

func TestMain(m *testing.M) {
	// proxytest (the wazero side of the comparisons) narrates every host call through the log package.
	log.SetOutput(io.Discard)
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// sharedHost is the node process of this test binary; the test is skipped, saying why, when node is missing.
func sharedHost(tb testing.TB) *Host {
	tb.Helper()
	hostOnce.Do(func() { shared, hostErr = Start() })
	if errors.Is(hostErr, ErrNoNode) {
		tb.Skipf("skipped: %v; the V8 runs need Node.js >= 20", hostErr)
	}
	if hostErr != nil {
		tb.Fatal(hostErr)
	}
	return shared
}

// filterWasm is the compiled filter named by AIDIALECT_WASM (make test and make bench set it to
// dist/aidialect.wasm); the test is skipped, saying why, when it is unset.
func filterWasm(tb testing.TB) string {
	tb.Helper()
	path, err := wasmtest.Prebuilt()
	if path == "" {
		tb.Skip("skipped: AIDIALECT_WASM is unset; run `make test` (or AIDIALECT_WASM=$PWD/dist/aidialect.wasm go test ./internal/v8host) to replay the golden cases under V8")
	}
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// filterVM is a new VM of the compiled filter in the shared node process, closed when the test ends.
func filterVM(tb testing.TB) *VM {
	tb.Helper()
	wasm := filterWasm(tb)
	h := sharedHost(tb)
	load(tb, h, filterName, wasm)
	vm, err := h.NewVM(filterName, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { vm.Close() })
	return vm
}

// buildWasm builds a package of this module for wasip1 exactly as `make build` builds the filter, once per
// test binary, and returns the .wasm path.
func buildWasm(tb testing.TB, pkg string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := built[pkg]; ok {
		return path
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "aidialect-v8host-build")
		if err != nil {
			tb.Fatal(err)
		}
		buildDir = dir
	}
	out := filepath.Join(buildDir, fmt.Sprintf("m%d.wasm", len(built)))
	if err := wasmtest.Build(pkg, out, wasmtest.BuildFlags); err != nil {
		tb.Fatal(err)
	}
	built[pkg] = out
	return out
}

// load compiles the module at path in the shared node process under name, once.
var loaded = map[string]bool{}

func load(tb testing.TB, h *Host, name, path string) {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if loaded[name] {
		return
	}
	if _, err := h.Load(name, path); err != nil {
		tb.Fatal(err)
	}
	loaded[name] = true
}

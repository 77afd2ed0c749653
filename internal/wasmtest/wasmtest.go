// Package wasmtest is what the tests and benchmarks that run the compiled filter share: plugin's wasm-mode
// tests, bench (wazero) and internal/v8host (V8, and wazero beside it). Test code of one package cannot be
// imported by another, so each used to carry its own copy of these, and copies drift; here they exist once:
//
//   - where the compiled filter comes from (AIDIALECT_WASM, else a build made as `make build` makes it), and
//     that build for any module of this repository (Build);
//   - the process's CPU time (ProcessCPU), the figure that holds on a shared machine;
//   - playing a benchdata exchange through internal/hostemu (Play) and judging what a lifecycle scenario
//     produced (CheckScenario), whichever engine ran it;
//   - the floor comparison of the lifecycle benchmarks (AgainstFloor: sub-benchmark names, cpu-ns/op and
//     xfloor-* metrics, which tools/benchtable and benchstat read) and the memory tests' table and verdict.
//
// It is test support: the filter (./plugin's non-test files) must never import it.
package wasmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Env names the prebuilt filter (make test and make bench set it to dist/aidialect.wasm).
const Env = "AIDIALECT_WASM"

// The modules the tests build, by import path, and the names the benchmarks give them.
const (
	FilterPkg  = "github.com/aidialect/aidialect/plugin"
	FloorPkg   = "github.com/aidialect/aidialect/bench/floorfilter"
	FilterName = "aidialect"
	FloorName  = "floor"
)

// BuildFlags are `make build`'s: the module Envoy runs, and every module the benchmarks measure beside it.
var BuildFlags = []string{"-buildmode=c-shared", "-trimpath", "-ldflags=-s -w"}

// NamedBuildFlags are BuildFlags without -ldflags=-s -w: the module keeps its name section, so a trap's wasm
// stack trace names the guest's functions. plugin's wasm-mode tests build the filter so when AIDIALECT_WASM
// is unset.
var NamedBuildFlags = []string{"-buildmode=c-shared", "-trimpath"}

// Build compiles pkg (an import path of this module) for wasip1 into out with flags (BuildFlags, plus
// -tags=... where a test needs them).
func Build(pkg, out string, flags []string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for wasip1: %v\n%s", pkg, err, output)
	}
	return nil
}

// Prebuilt is the path AIDIALECT_WASM names: "" when it is unset, with an error when it names no file.
func Prebuilt() (string, error) {
	path := os.Getenv(Env)
	if path == "" {
		return "", nil
	}
	if _, err := os.Stat(path); err != nil {
		return path, fmt.Errorf("%s=%s: %v (run make build)", Env, path, err)
	}
	return path, nil
}

// FilterModule is the compiled filter's bytes: the file AIDIALECT_WASM names, else FilterPkg built with flags
// in a temporary directory (removed before it returns).
func FilterModule(flags []string) ([]byte, error) {
	if path := os.Getenv(Env); path != "" {
		wasm, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s=%s: %v (run make build, or unset %s)", Env, path, err, Env)
		}
		return wasm, nil
	}
	dir, err := os.MkdirTemp("", "aidialect-wasm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "aidialect.wasm")
	if err := Build(FilterPkg, out, flags); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

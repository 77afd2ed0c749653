package e2e_test

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package; the gateway has its own logger.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// wasmPath is the compiled filter under test: $AIDIALECT_WASM (make test sets it), else ../dist/aidialect.wasm.
func wasmPath() string {
	if p := os.Getenv("AIDIALECT_WASM"); p != "" {
		return p
	}
	return filepath.Join("..", "dist", "aidialect.wasm")
}

// quietLogger keeps the gateway's per-request lines out of passing test output; -v shows them.
func quietLogger(t *testing.T) *log.Logger {
	if testing.Verbose() {
		return log.New(os.Stderr, "gateway: ", log.Lmicroseconds)
	}
	return log.New(io.Discard, "", 0)
}

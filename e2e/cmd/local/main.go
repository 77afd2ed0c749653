// Command local is what `make run` starts: the local gateway running dist/aidialect.wasm in front of the four
// mock providers (or, with -config, in front of the real providers the configuration names).
//
//	go run ./cmd/local -wasm ../dist/aidialect.wasm [-listen 127.0.0.1:8080] [-config my-config.json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/aidialect/aidialect/e2e/demo"
)

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "local: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	wasmPath := flag.String("wasm", "../dist/aidialect.wasm", "compiled filter (make build)")
	listen := flag.String("listen", "127.0.0.1:8080", "gateway address")
	configPath := flag.String("config", os.Getenv("CONFIG"), "filter configuration for real providers (default: the demo with mock providers); api_key_env is read from this process's environment")
	flag.Parse()
	// proxytest narrates every host call through the standard logger; the gateway logs through its own.
	log.SetOutput(io.Discard)

	wasm, err := os.ReadFile(*wasmPath)
	if err != nil {
		fatalf("reading the filter: %v (run make build first)", err)
	}
	opts := demo.Options{Wasm: wasm, Listen: *listen, Logger: log.New(os.Stderr, "gateway: ", log.LstdFlags)}
	if *configPath != "" {
		if opts.Config, err = os.ReadFile(*configPath); err != nil {
			fatalf("reading the configuration: %v", err)
		}
	}
	env, err := demo.Start(opts)
	if err != nil {
		fatalf("starting: %v", err)
	}
	defer env.Close()
	fmt.Print(env.Describe())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("\nstopping")
}

//go:build !wasip1

package main

import (
	"fmt"
	"io"
	"os"
)

// runCommand gives the native build of the filter one job: checking a configuration the way the filter will
// at OnPluginStart, before it reaches an Envoy.
//
//	go run ./plugin check-config [file]     (stdin without a file; api_key_env is read from the environment)
//
// The wasm build has no command line (check_wasip1.go).
func runCommand() {
	if len(os.Args) < 2 || os.Args[1] != "check-config" || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./plugin check-config [config.json]   (the filter itself is built with make build)")
		os.Exit(2)
	}
	in := io.Reader(os.Stdin)
	if len(os.Args) == 3 {
		f, err := os.Open(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg, err := parseConfig(data, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("configuration valid: %d providers, routing header %q\n", len(cfg.providers), cfg.routingHeader)
}

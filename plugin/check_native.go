//go:build !wasip1

package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// runCommand gives the native build of the filter one job: checking a configuration the way the filter will
// at OnPluginStart, before it reaches an Envoy.
//
//	go run ./plugin check-config [file]     (stdin without a file; api_key_env is read from the environment)
//	go run ./plugin ratelimit-config [file] (a starting configuration for Envoy's rate-limit service)
//
// The wasm build has no command line (check_wasip1.go).
func runCommand() {
	os.Exit(checkConfig(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// checkConfig runs the check-config command: args are the command-line arguments after the program name;
// the result is the exit status (0 valid, 1 invalid or unreadable, 2 usage).
func checkConfig(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) < 1 || args[0] != "check-config" && args[0] != "ratelimit-config" || len(args) > 2 {
		fmt.Fprintln(stderr, "usage: go run ./plugin check-config [config.json]   (stdin without a file; the filter itself is built with make build)\n"+
			"       go run ./plugin ratelimit-config [config.json]   (prints a starting configuration for the rate-limit service the budgets use)")
		return 2
	}
	in, name := stdin, "stdin"
	if len(args) == 2 {
		f, err := os.Open(args[1])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer f.Close()
		in, name = f, args[1]
	}
	data, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintf(stderr, "reading %s: %v\n", name, err)
		return 1
	}
	// api_key_env is read from this process's environment, which the advice for a missing variable says;
	// ratelimit-config needs no key, so any variable will do there.
	if args[0] == "ratelimit-config" {
		getenv = func(string) string { return "unused-by-ratelimit-config" }
	}
	cfg, err := parseConfigFrom(data, getenv, envFromShell)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	warn := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s: warning: %s\n", name, fmt.Sprintf(format, args...))
	}
	warnAPIVersions(cfg, warn)
	warnCandidates(cfg, warn)
	warnBudgets(cfg, warn)
	if args[0] == "ratelimit-config" {
		if !cfg.budgets.on {
			fmt.Fprintf(stderr, "%s: has no \"budgets\": nothing for the rate-limit service to count\n", name)
			return 1
		}
		io.WriteString(stdout, rateLimitConfig(cfg))
		return 0
	}
	fmt.Fprintf(stdout, "configuration valid: %d providers, routing header %q\n", len(cfg.providers), cfg.routingHeader)
	if b := &cfg.budgets; b.on {
		per := "consumer"
		switch {
		case b.perConsumer && b.perModel:
			per = "consumer, and consumer and model"
		case b.perModel:
			per = "consumer and model"
		}
		fmt.Fprintf(stdout, "token budgets: per %s, counted by the rate-limit service on cluster %q (domain %q; its limits: go run ./plugin ratelimit-config)\n", per, b.cluster, b.domain)
	}
	return 0
}

// describeJSONError places a syntax error for a person editing the file: the scanner's message (it ends
// "at byte N"), the line and column (1-based, counted in bytes) of that offset, and the likely mistake
// when the offending bracket follows a comma. Native builds only (check-config, and the tests): the .wasm
// keeps the scanner's message with its byte offset (check_wasip1.go), as every byte of the module counts.
func describeJSONError(data []byte, offset int, err error) string {
	offset = min(max(offset, 0), len(data))
	line, lineStart := 1, 0
	for i, c := range data[:offset] {
		if c == '\n' {
			line, lineStart = line+1, i+1
		}
	}
	problem := strings.TrimPrefix(err.Error(), "invalid JSON: ")
	if k := strings.Index(problem, "(is the body truncated?)"); k >= 0 {
		problem = problem[:k] + "(is the file cut short?)" + problem[k+len("(is the body truncated?)"):]
	}
	msg := problem + " (line " + strconv.Itoa(line) + ", column " + strconv.Itoa(offset-lineStart+1) + ")"
	if offset < len(data) && (data[offset] == '}' || data[offset] == ']') {
		k := offset - 1
		for k >= 0 && isSpace(data[k]) {
			k--
		}
		if k >= 0 && data[k] == ',' {
			msg += ": remove the trailing comma before it (JSON allows none)"
		}
	}
	return msg
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

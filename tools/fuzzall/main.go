// Command fuzzall is what `make fuzz` runs: every fuzz target of a package, one after the other, for the
// same time each, whatever the earlier ones did.
//
//	go run ./tools/fuzzall -fuzztime 60s ./translate/
//
// A failed run is one of two things. A finding: Go wrote a reproducer under the package's
// testdata/fuzz/<Target>/, or the target fails on its seed corpus when run again without fuzzing. Or a
// hiccup of Go's fuzzing coordinator (for example "context deadline exceeded" as the time runs out,
// golang/go#75804): no reproducer, and the seed corpus passes. Hiccups are reported and do not fail the
// command; findings do (exit status 1), each with the command that replays it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// goTool runs the go command with args, streaming its output to out, and returns that output too.
type goTool func(out io.Writer, args ...string) (string, error)

func runGo(goCmd string) goTool {
	return func(out io.Writer, args ...string) (string, error) {
		var buf bytes.Buffer
		cmd := exec.Command(goCmd, args...)
		cmd.Stdout = io.MultiWriter(out, &buf)
		cmd.Stderr = cmd.Stdout
		err := cmd.Run()
		return buf.String(), err
	}
}

// outcome of one target.
type outcome int

const (
	passed  outcome = iota
	hiccup          // the run failed, no reproducer, seed corpus passes
	finding         // a reproducer was written, or the seed corpus fails
)

type report struct {
	target  string
	outcome outcome
	files   []string // new reproducers, relative to the package directory
}

func main() {
	fuzztime := flag.String("fuzztime", "60s", "time for each target (go test -fuzztime)")
	goCmd := flag.String("go", "go", "the go command")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./tools/fuzzall [-fuzztime 60s] ./package/")
		os.Exit(2)
	}
	os.Exit(fuzzAll(runGo(*goCmd), flag.Arg(0), *fuzztime, os.Stdout))
}

// fuzzAll runs every target of pkg and returns the exit status.
func fuzzAll(gotool goTool, pkg, fuzztime string, out io.Writer) int {
	listing, err := gotool(io.Discard, "test", "-list", "^Fuzz", pkg)
	if err != nil {
		fmt.Fprintf(out, "fuzz: listing the fuzz targets of %s failed:\n%s", pkg, listing)
		return 1
	}
	var targets []string
	for _, line := range strings.Split(listing, "\n") {
		if strings.HasPrefix(line, "Fuzz") {
			targets = append(targets, strings.TrimSpace(line))
		}
	}
	if len(targets) == 0 {
		fmt.Fprintf(out, "fuzz: %s has no fuzz targets\n", pkg)
		return 1
	}
	dir, err := gotool(io.Discard, "list", "-f", "{{.Dir}}", pkg)
	if err != nil {
		fmt.Fprintf(out, "fuzz: locating %s failed:\n%s", pkg, dir)
		return 1
	}
	dir = strings.TrimSpace(dir)

	var reports []report
	for _, target := range targets {
		fmt.Fprintf(out, "== %s (%s)\n", target, fuzztime)
		reports = append(reports, fuzzOne(gotool, pkg, dir, target, fuzztime, out))
	}
	return summarise(reports, pkg, out)
}

func fuzzOne(gotool goTool, pkg, dir, target, fuzztime string, out io.Writer) report {
	corpus := filepath.Join(dir, "testdata", "fuzz", target)
	before := corpusFiles(corpus)
	output, err := gotool(out, "test", "-run", "^$", "-fuzz", "^"+target+"$", "-fuzztime", fuzztime, pkg)
	if err == nil {
		return report{target: target, outcome: passed}
	}
	var added []string
	for _, f := range corpusFiles(corpus) {
		if !slices.Contains(before, f) {
			added = append(added, filepath.ToSlash(filepath.Join("testdata", "fuzz", target, f)))
		}
	}
	if len(added) > 0 {
		return report{target: target, outcome: finding, files: added}
	}
	// No reproducer: replay the seed corpus (testdata included) without fuzzing. If that fails, the failure
	// is real and already reproducible; if it passes, the fuzzing machinery failed, not the target.
	fmt.Fprintf(out, "-- %s failed without writing a reproducer; replaying its seed corpus\n", target)
	if _, err := gotool(out, "test", "-count=1", "-run", "^"+target+"$", pkg); err != nil {
		return report{target: target, outcome: finding}
	}
	// Only the coordinator's known failure is a hiccup; anything else unexplained (a crasher Go could not
	// write, a new kind of fuzzing error) fails the run rather than pass unseen.
	if strings.Contains(output, "context deadline exceeded") {
		return report{target: target, outcome: hiccup}
	}
	fmt.Fprintf(out, "-- %s failed without a reproducer, for a reason other than the coordinator's deadline: see its output above\n", target)
	return report{target: target, outcome: finding}
}

// corpusFiles lists the file names in dir (none when it does not exist).
func corpusFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

func summarise(reports []report, pkg string, out io.Writer) int {
	var ok, hiccups []string
	var findings []report
	for _, r := range reports {
		switch r.outcome {
		case passed:
			ok = append(ok, r.target)
		case hiccup:
			hiccups = append(hiccups, r.target)
		case finding:
			findings = append(findings, r)
		}
	}
	fmt.Fprintf(out, "\nfuzz: %d targets: %d passed, %d with findings, %d hiccups\n", len(reports), len(ok), len(findings), len(hiccups))
	if len(hiccups) > 0 {
		fmt.Fprintf(out, "hiccups (the fuzzing coordinator failed, e.g. golang/go#75804; no reproducer, seed corpus passes; run them again): %s\n",
			strings.Join(hiccups, ", "))
	}
	for _, r := range findings {
		if len(r.files) == 0 {
			fmt.Fprintf(out, "FINDING %s: fails on its seed corpus: go test -run '^%s$' %s\n", r.target, r.target, pkg)
			continue
		}
		for _, f := range r.files {
			fmt.Fprintf(out, "FINDING %s: reproducer %s: go test -run '^%s$/^%s$' %s\n", r.target, f, r.target, filepath.Base(f), pkg)
		}
	}
	if len(findings) > 0 {
		return 1
	}
	return 0
}

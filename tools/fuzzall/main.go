// Command fuzzall is what `make fuzz` runs: every fuzz target of some packages, one after the other, for the
// same time each, whatever the earlier ones did. A pattern with "..." stands for the packages it matches that
// have fuzz targets; a package named alone must have some.
//
//	go run ./tools/fuzzall -fuzztime 60s ./translate/ ./internal/...
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
	pkg     string
	target  string
	outcome outcome
	files   []string // new reproducers, relative to the package directory
}

func main() {
	fuzztime := flag.String("fuzztime", "60s", "time for each target (go test -fuzztime)")
	goCmd := flag.String("go", "go", "the go command")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./tools/fuzzall [-fuzztime 60s] ./package/ ./packages/...")
		os.Exit(2)
	}
	os.Exit(fuzzAll(runGo(*goCmd), flag.Args(), *fuzztime, os.Stdout))
}

// fuzzPackage is a package to fuzz: as named on the command line (or found by a pattern), its directory and
// its fuzz targets.
type fuzzPackage struct {
	pkg, dir string
	targets  []string
}

// fuzzAll runs every target of the packages and returns the exit status. Every package is listed before any
// is fuzzed, so a mistyped one fails at once.
func fuzzAll(gotool goTool, patterns []string, fuzztime string, out io.Writer) int {
	var pkgs []fuzzPackage
	for _, pattern := range patterns {
		names := []string{pattern}
		if strings.Contains(pattern, "...") {
			listing, err := gotool(io.Discard, "list", "-f", "{{.Dir}}", pattern)
			if err != nil {
				fmt.Fprintf(out, "fuzz: listing the packages of %s failed:\n%s", pattern, listing)
				return 1
			}
			names = relativeDirs(strings.Fields(listing))
		}
		for _, pkg := range names {
			p, err := listTargets(gotool, pkg)
			if err != "" {
				fmt.Fprint(out, err)
				return 1
			}
			if len(p.targets) == 0 && names[0] == pattern { // named alone
				fmt.Fprintf(out, "fuzz: %s has no fuzz targets\n", pkg)
				return 1
			}
			if len(p.targets) > 0 {
				pkgs = append(pkgs, p)
			}
		}
	}
	if len(pkgs) == 0 {
		fmt.Fprintf(out, "fuzz: %s: no fuzz targets\n", strings.Join(patterns, " "))
		return 1
	}

	var reports []report
	for _, p := range pkgs {
		for _, target := range p.targets {
			fmt.Fprintf(out, "== %s %s (%s)\n", p.pkg, target, fuzztime)
			reports = append(reports, fuzzOne(gotool, p.pkg, p.dir, target, fuzztime, out))
		}
	}
	return summarise(reports, out)
}

// listTargets finds the fuzz targets of pkg and its directory; the error is a message for the output.
func listTargets(gotool goTool, pkg string) (fuzzPackage, string) {
	p := fuzzPackage{pkg: pkg}
	listing, err := gotool(io.Discard, "test", "-list", "^Fuzz", pkg)
	if err != nil {
		return p, fmt.Sprintf("fuzz: listing the fuzz targets of %s failed:\n%s", pkg, listing)
	}
	for _, line := range strings.Split(listing, "\n") {
		if strings.HasPrefix(line, "Fuzz") {
			p.targets = append(p.targets, strings.TrimSpace(line))
		}
	}
	if len(p.targets) == 0 {
		return p, ""
	}
	dir, err := gotool(io.Discard, "list", "-f", "{{.Dir}}", pkg)
	if err != nil {
		return p, fmt.Sprintf("fuzz: locating %s failed:\n%s", pkg, dir)
	}
	p.dir = strings.TrimSpace(dir)
	return p, ""
}

// relativeDirs names package directories as ./dir/ from the working directory, where they are under it.
func relativeDirs(dirs []string) []string {
	wd, _ := os.Getwd()
	names := make([]string, len(dirs))
	for i, dir := range dirs {
		names[i] = dir
		if rel, err := filepath.Rel(wd, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			names[i] = "./" + filepath.ToSlash(rel) + "/"
		}
	}
	return names
}

func fuzzOne(gotool goTool, pkg, dir, target, fuzztime string, out io.Writer) report {
	corpus := filepath.Join(dir, "testdata", "fuzz", target)
	before := corpusFiles(corpus)
	output, err := gotool(out, "test", "-run", "^$", "-fuzz", "^"+target+"$", "-fuzztime", fuzztime, pkg)
	if err == nil {
		return report{pkg: pkg, target: target, outcome: passed}
	}
	var added []string
	for _, f := range corpusFiles(corpus) {
		if !slices.Contains(before, f) {
			added = append(added, filepath.ToSlash(filepath.Join("testdata", "fuzz", target, f)))
		}
	}
	if len(added) > 0 {
		return report{pkg: pkg, target: target, outcome: finding, files: added}
	}
	// No reproducer: replay the seed corpus (testdata included) without fuzzing. If that fails, the failure
	// is real and already reproducible; if it passes, the fuzzing machinery failed, not the target.
	fmt.Fprintf(out, "-- %s failed without writing a reproducer; replaying its seed corpus\n", target)
	if _, err := gotool(out, "test", "-count=1", "-run", "^"+target+"$", pkg); err != nil {
		return report{pkg: pkg, target: target, outcome: finding}
	}
	// Only the coordinator's known failure is a hiccup; anything else unexplained (a crasher Go could not
	// write, a new kind of fuzzing error) fails the run rather than pass unseen.
	if strings.Contains(output, "context deadline exceeded") {
		return report{pkg: pkg, target: target, outcome: hiccup}
	}
	fmt.Fprintf(out, "-- %s failed without a reproducer, for a reason other than the coordinator's deadline: see its output above\n", target)
	return report{pkg: pkg, target: target, outcome: finding}
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

func summarise(reports []report, out io.Writer) int {
	var ok, hiccups []string
	var findings []report
	several := reports[0].pkg != reports[len(reports)-1].pkg // packages: hiccups are named with theirs
	for _, r := range reports {
		switch r.outcome {
		case passed:
			ok = append(ok, r.target)
		case hiccup:
			name := r.target
			if several {
				name += " (" + r.pkg + ")"
			}
			hiccups = append(hiccups, name)
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
			fmt.Fprintf(out, "FINDING %s: fails on its seed corpus: go test -run '^%s$' %s\n", r.target, r.target, r.pkg)
			continue
		}
		for _, f := range r.files {
			fmt.Fprintf(out, "FINDING %s: reproducer %s: go test -run '^%s$/^%s$' %s\n", r.target, filepath.ToSlash(filepath.Join(r.pkg, f)),
				r.target, filepath.Base(f), r.pkg)
		}
	}
	if len(findings) > 0 {
		return 1
	}
	return 0
}

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo plays the go command over a package directory: each target behaves as behaviour says.
//
//	pass     fuzzing succeeds
//	hiccup   fuzzing fails (context deadline exceeded) without a reproducer; the seed corpus passes
//	crash    fuzzing fails and writes a reproducer under testdata/fuzz/<Target>/
//	seedfail fuzzing fails at once on an existing corpus entry; replaying the seed corpus fails too
type fakeGo struct {
	dir       string
	behaviour map[string]string
	order     []string
	calls     []string
}

func (f *fakeGo) run(out io.Writer, args ...string) (string, error) {
	f.calls = append(f.calls, strings.Join(args, " "))
	switch {
	case args[0] == "list":
		return f.dir + "\n", nil
	case args[1] == "-list":
		return strings.Join(f.order, "\n") + "\nok  \texample/pkg\t0.01s\n", nil
	case args[1] == "-run" && args[3] == "-fuzz":
		target := strings.Trim(args[4], "^$")
		switch f.behaviour[target] {
		case "hiccup":
			msg := "fuzz: elapsed: 10s, execs: 1000\n--- FAIL: " + target + "\n    context deadline exceeded\nFAIL\n"
			io.WriteString(out, msg)
			return msg, errors.New("exit status 1")
		case "unexplained":
			msg := "--- FAIL: " + target + "\n    could not create corpus file: read-only file system\nFAIL\n"
			io.WriteString(out, msg)
			return msg, errors.New("exit status 1")
		case "crash":
			corpus := filepath.Join(f.dir, "testdata", "fuzz", target)
			os.MkdirAll(corpus, 0o755)
			os.WriteFile(filepath.Join(corpus, "582528ddfad69eb5"), []byte("go test fuzz v1\n[]byte(\"x\")\n"), 0o644)
			io.WriteString(out, "--- FAIL: "+target+"\n    Failing input written to testdata/fuzz/"+target+"/582528ddfad69eb5\n")
			return "", errors.New("exit status 1")
		case "seedfail":
			io.WriteString(out, "failure while testing seed corpus entry: "+target+"/6f211ac69a4b0818\n")
			return "", errors.New("exit status 1")
		}
		return "", nil
	case args[1] == "-count=1":
		if f.behaviour[strings.Trim(args[3], "^$")] == "seedfail" {
			return "", errors.New("exit status 1")
		}
		return "", nil
	}
	panic("unexpected go " + strings.Join(args, " "))
}

func newFake(t *testing.T, targets ...[2]string) *fakeGo {
	f := &fakeGo{dir: t.TempDir(), behaviour: map[string]string{}}
	// An existing corpus entry, which must not count as new.
	old := filepath.Join(f.dir, "testdata", "fuzz", "FuzzB")
	os.MkdirAll(old, 0o755)
	os.WriteFile(filepath.Join(old, "7d8ee1039608a79c"), nil, 0o644)
	for _, tb := range targets {
		f.order = append(f.order, tb[0])
		f.behaviour[tb[0]] = tb[1]
	}
	return f
}

func fuzzed(f *fakeGo) []string {
	var targets []string
	for _, c := range f.calls {
		if _, after, ok := strings.Cut(c, "-fuzz ^"); ok {
			targets = append(targets, strings.Fields(after)[0])
		}
	}
	return targets
}

// A coordinator hiccup is reported by name, the other targets still run, and the command succeeds.
func TestHiccupDoesNotFail(t *testing.T) {
	f := newFake(t, [2]string{"FuzzA", "pass"}, [2]string{"FuzzB", "hiccup"}, [2]string{"FuzzC", "pass"})
	var out bytes.Buffer
	if status := fuzzAll(f.run, []string{"./pkg/"}, "10s", &out); status != 0 {
		t.Errorf("status %d, want 0:\n%s", status, &out)
	}
	if got := fuzzed(f); strings.Join(got, " ") != "FuzzA$ FuzzB$ FuzzC$" {
		t.Errorf("fuzzed %v, want every target", got)
	}
	if !strings.Contains(out.String(), "hiccups (") || !strings.Contains(out.String(), "run them again): FuzzB\n") {
		t.Errorf("the hiccup is not named:\n%s", &out)
	}
	if strings.Contains(out.String(), "FINDING") {
		t.Errorf("a hiccup reported as a finding:\n%s", &out)
	}
}

// A reproducer under testdata/fuzz/<Target>/ is a finding: exit 1, the file named, later targets still run.
func TestReproducerIsAFinding(t *testing.T) {
	f := newFake(t, [2]string{"FuzzA", "crash"}, [2]string{"FuzzB", "hiccup"}, [2]string{"FuzzC", "pass"})
	var out bytes.Buffer
	if status := fuzzAll(f.run, []string{"./pkg/"}, "10s", &out); status != 1 {
		t.Errorf("status %d, want 1:\n%s", status, &out)
	}
	if got := fuzzed(f); len(got) != 3 {
		t.Errorf("fuzzed %v, want every target", got)
	}
	want := "FINDING FuzzA: reproducer pkg/testdata/fuzz/FuzzA/582528ddfad69eb5: go test -run '^FuzzA$/^582528ddfad69eb5$' ./pkg/"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "run them again): FuzzB\n") {
		t.Errorf("output lacks %q or the hiccup:\n%s", want, &out)
	}
}

// A failure on an existing corpus entry writes nothing new, but replaying the seed corpus fails: a finding.
func TestSeedCorpusFailureIsAFinding(t *testing.T) {
	f := newFake(t, [2]string{"FuzzB", "seedfail"}, [2]string{"FuzzC", "pass"})
	var out bytes.Buffer
	if status := fuzzAll(f.run, []string{"./pkg/"}, "10s", &out); status != 1 {
		t.Errorf("status %d, want 1:\n%s", status, &out)
	}
	if !strings.Contains(out.String(), "FINDING FuzzB: fails on its seed corpus: go test -run '^FuzzB$' ./pkg/") {
		t.Errorf("output:\n%s", &out)
	}
}

func TestAllPass(t *testing.T) {
	f := newFake(t, [2]string{"FuzzA", "pass"}, [2]string{"FuzzB", "pass"})
	var out bytes.Buffer
	if status := fuzzAll(f.run, []string{"./pkg/"}, "1s", &out); status != 0 || !strings.Contains(out.String(), "2 targets: 2 passed, 0 with findings, 0 hiccups") {
		t.Errorf("status %d:\n%s", status, &out)
	}
}

// A failure with neither a reproducer nor the coordinator's deadline message is not passed off as a hiccup.
func TestUnexplainedFailureIsAFinding(t *testing.T) {
	f := newFake(t, [2]string{"FuzzA", "unexplained"}, [2]string{"FuzzB", "pass"})
	var out bytes.Buffer
	if status := fuzzAll(f.run, []string{"./pkg/"}, "1s", &out); status == 0 || !strings.Contains(out.String(), "FuzzA failed without a reproducer") {
		t.Errorf("status %d:\n%s", status, &out)
	}
}

// A pattern stands for its packages with fuzz targets, fuzzed one after the other and named in the output;
// a package named alone without any fails before anything is fuzzed.
func TestPackages(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	targets := map[string][]string{"./a/": {"FuzzA"}, "./b/": nil, "./c/": {"FuzzA", "FuzzC"}, "./d/": {"FuzzD"}}
	var calls []string
	fake := func(out io.Writer, args ...string) (string, error) {
		calls = append(calls, strings.Join(args, " "))
		last := args[len(args)-1]
		switch {
		case args[0] == "list" && last == "./x/...":
			return filepath.Join(root, "a") + "\n" + filepath.Join(root, "b") + "\n" + filepath.Join(root, "c") + "\n", nil
		case args[0] == "list":
			return filepath.Join(root, strings.Trim(last, "./")) + "\n", nil
		case args[1] == "-list":
			return strings.Join(targets[last], "\n") + "\nok  \texample/pkg\t0.01s\n", nil
		case args[3] == "-fuzz" && last == "./c/" && args[4] == "^FuzzA$":
			io.WriteString(out, "context deadline exceeded\n")
			return "context deadline exceeded\n", errors.New("exit status 1")
		case args[3] == "-fuzz" || args[1] == "-count=1":
			return "", nil
		}
		panic("unexpected go " + strings.Join(args, " "))
	}
	var out bytes.Buffer
	if status := fuzzAll(fake, []string{"./x/...", "./d/"}, "1s", &out); status != 0 {
		t.Fatalf("status %d:\n%s", status, &out)
	}
	var fuzzed []string
	for _, c := range calls {
		if strings.Contains(c, " -fuzz ") {
			f := strings.Fields(c)
			fuzzed = append(fuzzed, f[len(f)-1]+f[4])
		}
	}
	if got := strings.Join(fuzzed, " "); got != "./a/^FuzzA$ ./c/^FuzzA$ ./c/^FuzzC$ ./d/^FuzzD$" {
		t.Errorf("fuzzed %s", got)
	}
	if !strings.Contains(out.String(), "4 targets: 3 passed, 0 with findings, 1 hiccups") || !strings.Contains(out.String(), "run them again): FuzzA (./c/)\n") {
		t.Errorf("output:\n%s", &out)
	}

	calls, out = nil, bytes.Buffer{}
	if status := fuzzAll(fake, []string{"./a/", "./b/"}, "1s", &out); status != 1 || !strings.Contains(out.String(), "./b/ has no fuzz targets") {
		t.Errorf("status %d:\n%s", status, &out)
	}
	for _, c := range calls {
		if strings.Contains(c, " -fuzz ") {
			t.Errorf("fuzzed before every package was listed: %s", c)
		}
	}
}

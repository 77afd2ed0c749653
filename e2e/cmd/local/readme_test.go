package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README's "Two commands" name the Go that make run and make test need: the newest `go` line of the
// repository's modules (major.minor), so a module raising its minimum cannot leave the README behind.
func TestREADMENamesTheGoTheModulesNeed(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\*\*Go (\d+)\.(\d+) or newer\*\*`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md does not say "**Go X.Y or newer**"`)
	}
	stated := [2]int{atoi(t, string(m[1])), atoi(t, string(m[2]))}

	goLine := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)(?:\.\d+)?\s*$`)
	var newest [2]int
	newestIn := ""
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		g := goLine.FindSubmatch(b)
		if g == nil {
			t.Errorf("%s has no go line", path)
			return nil
		}
		v := [2]int{atoi(t, string(g[1])), atoi(t, string(g[2]))}
		if v[0] > newest[0] || v[0] == newest[0] && v[1] > newest[1] {
			newest, newestIn = v, path
		}
		return nil
	})
	if newestIn == "" {
		t.Fatal("no go.mod found")
	}
	if stated != newest {
		t.Errorf("README.md says Go %d.%d or newer; %s needs Go %d.%d", stated[0], stated[1], newestIn, newest[0], newest[1])
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

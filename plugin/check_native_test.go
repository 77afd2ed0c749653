//go:build !wasip1

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// runCheck runs the check-config command on config (as a file) with the environment env.
func runCheck(t *testing.T, config string, env map[string]string) (status int, stdout, stderr string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "my.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	status = checkConfig([]string{"check-config", path}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
	return status, out.String(), errOut.String()
}

func wantAll(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%q lacks %q", got, w)
		}
	}
}

// A syntax error names its byte offset, line and column; a trailing comma is called one.
func TestCheckConfigPlacesSyntaxErrors(t *testing.T) {
	arrayComma := "{\n  \"providers\": [\n    " + minimalProvider + ",\n  ]\n}\n"
	for _, tt := range []struct {
		name, config string
		want         []string
		comma        bool
	}{
		{"trailing comma in an array", arrayComma,
			[]string{"is not valid JSON", "at byte " + strconv.Itoa(strings.LastIndex(arrayComma, "]")), "(line 4, column 3)"}, true},
		{"trailing comma in an object", "{\"providers\": [],\n \"usage\": \"off\",\n}", []string{"at byte 35", "(line 3, column 1)"}, true},
		{"cut short", `{"providers": [`, []string{"at byte 15", "(line 1, column 16)", "cut short"}, false},
		{"missing colon", "{\n\"providers\" []}", []string{"at byte 14", "(line 2, column 13)"}, false},
		{"after leading blank lines", "\n\n  {\"usage\" \"off\"}", []string{"at byte 13", "(line 3, column 12)"}, false},
		{"data after the object", `{"providers": []} {}`, []string{"at byte 18", "(line 1, column 19)"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, stderr := runCheck(t, tt.config, nil)
			if status != 1 {
				t.Fatalf("status %d, want 1 (%s)", status, stderr)
			}
			wantAll(t, stderr, tt.want...)
			if got := strings.Contains(stderr, "trailing comma"); got != tt.comma {
				t.Errorf("%q: names a trailing comma = %v, want %v", stderr, got, tt.comma)
			}
		})
	}
}

// The offsets are the scanner's: JSONSyntaxError fails exactly where ValidJSON does and points into b.
func TestJSONSyntaxErrorAgreesWithValidJSON(t *testing.T) {
	for _, in := range []string{``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `"x`, `"\u12"`, `01`, `1.`,
		`-`, `tru`, `{"a":1} 2`, "\"\x01\"", "\"\xff\"", `{"a":[{"b":null}]}`, ` {"k":"v"} `,
		strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		off, err := jsonscan.Check([]byte(in))
		if valid := jsonscan.Valid([]byte(in)); (err == nil) != valid {
			t.Errorf("%q: JSONSyntaxError %v, ValidJSON %v", in, err, valid)
		}
		if err != nil && (off < 0 || off > len(in) || !strings.HasSuffix(err.Error(), "at byte "+strconv.Itoa(off))) {
			t.Errorf("%q: offset %d, error %q", in, off, err)
		}
	}
}

// On the command line a missing api_key_env variable is to be exported; in Envoy it belongs in vm_config.
// Neither message names the variable (a pasted key can look like a name).
func TestMissingKeyVariableAdvice(t *testing.T) {
	const config = `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key_env":"a0b1c2d3e4f5a6b7c8d9","models":[{"name":"*"}]}]}`
	status, _, stderr := runCheck(t, config, nil)
	if status != 1 {
		t.Fatalf("status %d (%s)", status, stderr)
	}
	wantAll(t, stderr, "providers[0] (p).api_key_env", "in this shell", "export")
	if strings.Contains(stderr, "a0b1c2d3e4f5a6b7c8d9") {
		t.Errorf("%q echoes the variable", stderr)
	}

	_, err := parseConfig([]byte(config), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "vm_config.environment_variables") || strings.Contains(err.Error(), "shell") {
		t.Errorf("in the VM: %v", err)
	}

	if status, stdout, stderr := runCheck(t, config, map[string]string{"a0b1c2d3e4f5a6b7c8d9": "sk-test"}); status != 0 ||
		!strings.Contains(stdout, "configuration valid") {
		t.Errorf("with the variable set: status %d, %q %q", status, stdout, stderr)
	}
}

// Errors in a models entry name its provider, as the provider's own errors do.
func TestModelErrorsNameTheProvider(t *testing.T) {
	for _, tt := range []struct{ name, config, field string }{
		{"model chain_id", `{"providers":[{"name":"chain","dialect":"eternalai","host":"h","api_key":"k","models":[{"name":"x","chain_id":"base"}]}]}`,
			"providers[0].models[0].chain_id (provider chain)"},
		{"model chain_id on openai", `{"providers":[{"name":"oai","dialect":"openai","host":"h","api_key":"k","models":[{"name":"x","chain_id":"1"}]}]}`,
			"providers[0].models[0].chain_id (provider oai)"},
		{"provider chain_id", `{"providers":[{"name":"eai","dialect":"eternalai","host":"h","api_key":"k","chain_id":"base","models":[{"name":"x"}]}]}`,
			"providers[0] (eai).chain_id"},
		{"deployment", `{"providers":[{"name":"az","dialect":"azure-openai","host":"h","api_key":"k","models":[{"name":"m","deployment":"a/b"}]}]}`,
			"providers[0].models[0].deployment (provider az)"},
		{"duplicate exact model", `{"providers":[` + minimalProvider + `,{"name":"q","dialect":"openai","host":"h","api_key":"k","models":[{"name":"m"},{"name":"m"}]}]}`,
			"providers[1].models[1].name (provider q)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, stderr := runCheck(t, tt.config, nil)
			if status != 1 || !strings.Contains(stderr, "configuration "+tt.field+": ") {
				t.Errorf("status %d, %q does not name %q", status, stderr, tt.field)
			}
		})
	}
}

func TestCheckConfigUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if status := checkConfig([]string{"check"}, strings.NewReader(""), &out, &errOut, os.Getenv); status != 2 ||
		!strings.Contains(errOut.String(), "usage: go run ./plugin check-config") {
		t.Errorf("status %d, %q", status, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if status := checkConfig([]string{"check-config"}, strings.NewReader(`{"providers":[`+minimalProvider+`]}`), &out, &errOut, os.Getenv); status != 0 ||
		!strings.Contains(out.String(), "configuration valid: 1 providers") {
		t.Errorf("stdin: status %d, %q %q", status, out.String(), errOut.String())
	}
}

// ratelimit-config needs no provider key: an unset api_key_env does not stop it.
func TestRateLimitConfigNeedsNoKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	config := `{"providers":[{"name":"p","dialect":"openai","host":"api.openai.com","api_key_env":"UNSET_KEY","models":[{"name":"m"}]}],
	  "consumers":[{"name":"a","key_sha256":"` + strings.Repeat("ab", 32) + `"}],"budgets":{}}`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if status := checkConfig([]string{"ratelimit-config", path}, strings.NewReader(""), &out, &errOut, func(string) string { return "" }); status != 0 ||
		!strings.Contains(out.String(), "value: a") {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out.String(), errOut.String())
	}
	out.Reset()
	if status := checkConfig([]string{"check-config", path}, strings.NewReader(""), &out, &errOut, func(k string) string { return "k-" + k }); status != 0 ||
		!strings.Contains(out.String(), "token budgets: per consumer") {
		t.Fatalf("check-config: status %d, stdout %q", status, out.String())
	}
}

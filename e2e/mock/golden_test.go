package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenCases is the filter's golden-case folder (testdata/cases at the repository root).
const goldenCases = "../../testdata/cases"

// goldenProvider is the part of a golden case's case.json that configures the provider.
type goldenProvider struct {
	Dialect    string `json:"dialect"`
	BasePath   string `json:"base_path"`
	Deployment string `json:"deployment"`
	Model      string `json:"model"`
	Auth       string `json:"auth"`
	Key        string `json:"key"`
}

// mockFor is the strict mock standing for a golden case's provider: it knows only the entry's deployment
// (azure-openai: the classic path segment or the v1 body model; azure-ai: azureml-model-deployment) and
// model, so a request naming anything else is refused as the real service refuses it.
func mockFor(p goldenProvider) *Provider {
	opts := Options{APIKey: p.Key, BasePath: p.BasePath, Bearer: p.Auth == "bearer"}
	if p.Auth == "passthrough" {
		opts.APIKey = "" // the client's own key goes upstream
	}
	switch p.Dialect {
	case AzureOpenAI:
		// Without a deployment the entry's model (else the client's name) is the deployment.
		d := p.Deployment
		if d == "" {
			d = p.Model
		}
		if d != "" {
			opts.Deployments = []string{d}
		}
	case AzureAI:
		if p.Deployment != "" {
			opts.Deployments = []string{p.Deployment}
		}
		if p.Model != "" {
			opts.Models = []string{p.Model}
		}
	default:
		if p.Model != "" {
			opts.Models = []string{p.Model}
		}
	}
	return New(p.Dialect, opts)
}

// readHTTP parses a golden .http file: a request line, header lines, a blank line, the body.
func readHTTP(t *testing.T, path string) spec {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	method, target, _ := strings.Cut(lines[0], " ")
	s := spec{method: method, target: target, header: http.Header{}, body: string(bytes.TrimRight(body, "\n"))}
	for _, l := range lines[1:] {
		name, value, _ := strings.Cut(l, ":")
		s.header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return s
}

// TestGoldenUpstreamRequestsAccepted replays every upstream request the golden cases expect the filter to
// send against the strict mock of that provider: an expected request the real service would refuse (a path
// its api-version lacks, a body model that names no deployment on the Azure OpenAI v1 surface, ...) fails
// here, so a golden case cannot encode a request that only works against the filter's own expectations.
func TestGoldenUpstreamRequestsAccepted(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenCases, "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases under %s: %v", goldenCases, err)
	}
	for _, dir := range dirs {
		upstream := filepath.Join(dir, "upstream_request.http")
		if _, err := os.Stat(upstream); err != nil {
			continue // answered by the filter itself
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
			if err != nil {
				t.Fatal(err)
			}
			var c struct {
				Provider goldenProvider `json:"provider"`
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			rec := serve(mockFor(c.Provider), readHTTP(t, upstream))
			if rec.status >= 300 {
				t.Fatalf("the %s mock refuses the expected upstream request: %d %s", c.Provider.Dialect, rec.status, rec.body())
			}
		})
	}
}

//go:build !wasip1

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// check-config warns about a provider whose pinned api_version lacks an operation of its dialect: every such
// request for its models is refused locally, which the configuration being valid does not show.
func TestCheckConfigWarnsAboutVersionsWithoutAnOperation(t *testing.T) {
	provider := func(dialect, version string) string {
		v := ""
		if version != "" {
			v = `"api_version":"` + version + `",`
		}
		return `{"providers":[{"name":"p","dialect":"` + dialect + `","host":"h",` + v + `"api_key":"k","models":[{"name":"*"}]}]}`
	}
	for _, tt := range []struct {
		name, config, want string
	}{
		{"azure-ai pinned past 2024-04-01-preview", provider("azure-ai", "2024-05-01-preview"),
			`provider "p": api_version "2024-05-01-preview" has no completions operation, so completions requests for its models are refused (404 unsupported_operation): only 2024-04-01-preview has it`},
		{"azure-ai GA", provider("azure-ai", "2025-04-01"), "has no completions operation"},
		{"azure-openai v1 surface", provider("azure-openai", "latest"), `api_version "latest" has no completions operation`},
		{"azure-ai pinned to the version with completions", provider("azure-ai", "2024-04-01-preview"), ""},
		{"azure-ai unpinned", provider("azure-ai", ""), ""},
		{"azure-openai dated, before the Responses API", provider("azure-openai", "2024-10-21"),
			`api_version "2024-10-21" has no responses operation, so responses requests for its models are refused (404 unsupported_operation): v1, latest and preview (the v1 surface, /openai/v1/responses) and 2025-03-01-preview and later have it; or mark its models chat_only, to bridge Responses requests to their chat completions`},
		{"azure-openai dated, every model chat_only", strings.Replace(provider("azure-openai", "2024-10-21"), `{"name":"*"}`, `{"name":"*","chat_only":true}`, 1), ""},
		{"azure-openai dated, with the Responses API", provider("azure-openai", "2025-04-01-preview"), ""},
		{"a fallback that cannot serve embeddings", `{"providers":[
			{"name":"oa","dialect":"openai","host":"h","api_key":"k","models":[{"name":"m"}]},
			{"name":"et","dialect":"eternalai","host":"h2","api_key":"k","models":[{"name":"m","priority":1}]}]}`,
			`model "m": provider "et" (eternalai) has no embeddings: embeddings requests for this model pass it over and go to its other providers only`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/c.json"
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			status := checkConfig([]string{"check-config", path}, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
			if status != 0 || !strings.Contains(out.String(), "configuration valid") {
				t.Fatalf("status %d: %s %s", status, out.String(), errOut.String())
			}
			if tt.want == "" {
				if errOut.Len() > 0 {
					t.Errorf("unexpected warning: %s", errOut.String())
				}
				return
			}
			if !strings.Contains(errOut.String(), "warning: ") || !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("warning %q lacks %q", errOut.String(), tt.want)
			}
			if strings.Count(errOut.String(), "warning:") != 1 {
				t.Errorf("one warning expected: %s", errOut.String())
			}
		})
	}
}

// A context_window on a model no other provider serves does nothing: check-config says so.
func TestCheckConfigWarnsAboutALoneContextWindow(t *testing.T) {
	status, out, errOut := runCheck(t, `{"providers":[{"name":"p","dialect":"openai","host":"api.openai.com","api_key":"k",
	  "models":[{"name":"m","context_window":8192}]}]}`, nil)
	if status != 0 || !strings.Contains(errOut, `model "m": context_window on provider "p" does nothing`) {
		t.Fatalf("status %d, stdout %q, stderr %q", status, out, errOut)
	}
}

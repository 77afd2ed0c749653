package main

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestAzureModelList: GET /openai/models?api-version= (go-openai's Azure ListModels, the openai SDKs'
// AzureOpenAI models.list) is answered by the filter like /v1/models, in Azure OpenAI's shape (created_at,
// status, lifecycle_status; no created or owned_by). It used to fall through to unknown_paths.
func TestAzureModelList(t *testing.T) {
	tests := []struct {
		name  string
		ex    exchange
		check func(t *testing.T, o *outcome)
	}{
		{"listed from the configuration in the Azure OpenAI shape",
			exchange{config: testConfig, method: "GET", path: "/openai/models?api-version=2024-10-21", headers: [][2]string{{"api-key", "k"}}},
			func(t *testing.T, o *outcome) {
				if o.local == nil || o.status != 200 || o.clientHead["content-type"] != "application/json" {
					t.Fatalf("not answered locally: %d %v %s", o.status, o.clientHead, o.clientBody)
				}
				if !gjson.ValidBytes(o.clientBody) || gjson.GetBytes(o.clientBody, "object").String() != "list" {
					t.Fatalf("body %s", o.clientBody)
				}
				if got := gjson.GetBytes(o.clientBody, "data.#.id").Raw; got != `["gpt-4o","llama-3-70b","intellect-1","gpt-4.1"]` {
					t.Errorf("ids %s", got)
				}
				for _, m := range gjson.GetBytes(o.clientBody, "data").Array() {
					if m.Get("object").String() != "model" || m.Get("created_at").Type != gjson.Number || m.Get("status").String() != "succeeded" ||
						m.Get("lifecycle_status").String() != "generally-available" || m.Get("created").Exists() || m.Get("owned_by").Exists() {
						t.Errorf("not Azure OpenAI's model object: %s", m.Raw)
					}
				}
			}},
		{"filtered for a consumer",
			exchange{config: withConsumers(testConfig), method: "GET", path: "/openai/models?api-version=2024-10-21",
				headers: [][2]string{{"api-key", "team-a-key"}}},
			func(t *testing.T, o *outcome) {
				if got := gjson.GetBytes(o.clientBody, "data.#.id").Raw; o.status != 200 || got != `["gpt-4o","gpt-4.1"]` {
					t.Errorf("%d %s", o.status, o.clientBody)
				}
			}},
		{"the OpenAI shape stays on /openai/v1/models",
			exchange{config: testConfig, method: "GET", path: "/openai/v1/models"},
			func(t *testing.T, o *outcome) {
				if m := gjson.GetBytes(o.clientBody, "data.0"); m.Get("owned_by").String() != "azure-east" || !m.Get("created").Exists() {
					t.Errorf("%s", o.clientBody)
				}
			}},
		{"POST is refused in Azure OpenAI's envelope",
			exchange{config: testConfig, method: "POST", path: "/openai/models?api-version=2024-10-21", body: []string{`{}`}},
			wantLocal(405, "method_not_allowed")},
		{"a v1-surface api-version is refused on the classic list",
			exchange{config: testConfig, method: "GET", path: "/openai/models?api-version=v1"},
			wantLocal(400, "invalid_api_version")},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					o := run(t, md, tt.ex)
					o.assertRules(t)
					tt.check(t, o)
				})
			}
		})
	}
}

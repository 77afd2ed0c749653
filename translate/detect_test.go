package translate

import "testing"

func TestDetect(t *testing.T) {
	tests := []struct {
		method, path, prefix string
		dialect              Dialect
		op                   Operation
		deployment, version  string
		azureV1              bool
		errCode              ErrorCode
	}{
		{"POST", "/v1/chat/completions", "", OpenAI, OpChatCompletions, "", "", false, ""},
		{"POST", "/v1/completions", "", OpenAI, OpCompletions, "", "", false, ""},
		{"POST", "/v1/embeddings", "", OpenAI, OpEmbeddings, "", "", false, ""},
		{"GET", "/v1/models", "", OpenAI, OpListModels, "", "", false, ""},
		{"GET", "/models", "", OpenAI, OpListModels, "", "", false, ""},
		{"POST", "/v1/models", "", OpenAI, OpListModels, "", "", false, ErrMethodNotAllowed},
		{"GET", "/openai/v1/models", "", AzureOpenAI, OpListModels, "", "", true, ""},
		{"GET", "/openai/models?api-version=2024-10-21", "", AzureOpenAI, OpListModels, "", "2024-10-21", false, ""},
		{"GET", "/openai/models", "", AzureOpenAI, OpListModels, "", "", false, ""},
		{"POST", "/openai/models?api-version=2024-10-21", "", AzureOpenAI, OpListModels, "", "", false, ErrMethodNotAllowed},
		{"GET", "/openai/models?api-version=v1", "", AzureOpenAI, OpListModels, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions", "", OpenAI, OpChatCompletions, "", "", false, ""},
		{"POST", "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "gpt4o-prod", "2024-10-21", false, ""},
		{"POST", "/openai/deployments/d/embeddings?api-version=2024-02-15-preview", "", AzureOpenAI, OpEmbeddings, "d", "2024-02-15-preview", false, ""},
		{"POST", "/openai/deployments/gpt4o/completions", "", AzureOpenAI, OpCompletions, "gpt4o", "", false, ""},
		{"POST", "/openai/v1/chat/completions", "", AzureOpenAI, OpChatCompletions, "", "", true, ""},
		{"POST", "/openai/v1/chat/completions?api-version=preview", "", AzureOpenAI, OpChatCompletions, "", "preview", true, ""},
		{"POST", "/openai/v1/chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "", "", true, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=2024-05-01-preview", "", AzureAI, OpChatCompletions, "", "2024-05-01-preview", false, ""},
		{"POST", "/models/chat/completions?api-version=2025-04-01", "", AzureAI, OpChatCompletions, "", "2025-04-01", false, ""},
		{"POST", "/embeddings?api-version=2024-05-01-preview", "", AzureAI, OpEmbeddings, "", "2024-05-01-preview", false, ""},
		{"POST", "/gw/v1/chat/completions", "/gw", OpenAI, OpChatCompletions, "", "", false, ""},
		// The Responses API: OpenAI's routes, Azure's v1 and classic surfaces and deployment routes.
		{"POST", "/v1/responses", "", OpenAI, OpResponses, "", "", false, ""},
		{"POST", "/responses", "", OpenAI, OpResponses, "", "", false, ""},
		{"POST", "/openai/v1/responses", "", AzureOpenAI, OpResponses, "", "", true, ""},
		{"POST", "/openai/v1/responses?api-version=preview", "", AzureOpenAI, OpResponses, "", "preview", true, ""},
		{"POST", "/openai/responses?api-version=2025-04-01-preview", "", AzureOpenAI, OpResponses, "", "2025-04-01-preview", false, ""},
		{"POST", "/openai/deployments/gpt4o/responses?api-version=2025-04-01-preview", "", AzureOpenAI, OpResponses, "gpt4o", "2025-04-01-preview", false, ""},
		{"GET", "/v1/responses", "", OpenAI, OpResponses, "", "", false, ErrMethodNotAllowed},
		// Stored responses need the provider that stored them: refused on every surface, whatever the method.
		{"GET", "/v1/responses/resp_123", "", OpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		{"DELETE", "/v1/responses/resp_123", "", OpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		{"POST", "/v1/responses/resp_123/cancel", "", OpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		{"GET", "/v1/responses/resp_123/input_items", "", OpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		// The stateless sub-routes name their model in the body: served like a create.
		{"POST", "/v1/responses/input_tokens", "", OpenAI, OpResponsesInputTokens, "", "", false, ""},
		{"POST", "/v1/responses/compact", "", OpenAI, OpResponsesCompact, "", "", false, ""},
		{"POST", "/openai/responses/compact?api-version=2025-04-01-preview", "", AzureOpenAI, OpResponsesCompact, "", "2025-04-01-preview", false, ""},
		{"POST", "/v1/responses/input_tokens/x", "", OpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		{"GET", "/openai/v1/responses/resp_1", "", AzureOpenAI, OpStoredResponse, "", "", true, ErrUnsupportedParameter},
		{"DELETE", "/openai/responses/resp_1?api-version=2025-04-01-preview", "", AzureOpenAI, OpStoredResponse, "", "", false, ErrUnsupportedParameter},
		// Azure AI Model Inference has no Responses API.
		{"POST", "/responses?api-version=2024-05-01-preview", "", AzureAI, OpResponses, "", "", false, ErrUnsupportedOperation},
		// Hostile or malformed request lines.
		{"POST", "/openai/deployments/../chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "", "", false, ErrInvalidDeployment},
		{"POST", "/openai/deployments/a%2Fb/chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "", "", false, ErrInvalidDeployment},
		{"POST", "/openai/deployments//chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "", "", false, ErrInvalidDeployment},
		{"POST", "/chat/completions?api-version=2024-05-01-preview&api-version=2024-04-01-preview", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=2024-05-01-preview&api%2Dversion=x", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=2024-05-01%26x=1", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=2024-05-01%0D%0AX:1", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=%zz", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/chat/completions?api-version=", "", AzureAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"POST", "/v1/chat/completions?api-version=2024-10-21", "", OpenAI, OpChatCompletions, "", "", false, ErrInvalidAPIVersion},
		{"GET", "/v1/chat/completions", "", OpenAI, OpChatCompletions, "", "", false, ErrMethodNotAllowed},
		{"HEAD", "/openai/deployments/d/chat/completions?api-version=2024-10-21", "", AzureOpenAI, OpChatCompletions, "d", "", false, ErrMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := Detect(tt.method, tt.path, tt.prefix)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode {
					t.Fatalf("error = %v, want code %s", err, tt.errCode)
				}
				if req.Dialect != tt.dialect {
					t.Errorf("error answered in %s, want %s", req.Dialect, tt.dialect)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if req.Dialect != tt.dialect || req.Op != tt.op || req.Deployment != tt.deployment ||
				req.APIVersion != tt.version || (req.SurfaceVersion == "v1") != tt.azureV1 {
				t.Errorf("got %+v", req)
			}
		})
	}
}

func TestDetectUnknownPaths(t *testing.T) {
	for _, path := range []string{
		"/", "/healthz", "/v1/chat/completions/", "/v2/chat/completions", "/openai/deployments/d",
		"/openai/deployments/d/images/generations?api-version=2024-10-21", "/v1/images/generations",
		"/other/v1/chat/completions", "/gwx/v1/chat/completions",
		// The classic surface's Responses route needs its api-version; other operations have no such route.
		"/openai/responses", "/openai/chat/completions?api-version=2024-10-21",
	} {
		prefix := ""
		if path == "/other/v1/chat/completions" || path == "/gwx/v1/chat/completions" {
			prefix = "/gw"
		}
		req, err := Detect("POST", path, prefix)
		if req.Known() || err != nil {
			t.Errorf("%s: got %+v, %v; want unknown", path, req, err)
		}
	}
}

func TestEternalAIDetectedByChainID(t *testing.T) {
	req, _ := Detect("POST", "/v1/chat/completions", "")
	var body RequestBody
	if err := body.Parse([]byte(`{"model":"m","chain_id":"8453","messages":[]}`)); err != nil {
		t.Fatal(err)
	}
	req.RefineWithBody(&body)
	if req.Dialect != EternalAI || body.ChainID != "8453" {
		t.Fatalf("dialect %s chain %q", req.Dialect, body.ChainID)
	}
}

func TestValidDeployment(t *testing.T) {
	for s, want := range map[string]bool{
		"gpt4o-prod": true, "a.b_c-9": true, "": false, ".": false, "..": false, "a/b": false, "a b": false,
		"a\r\nb": false, "%2F": false, string(make([]byte, 65)): false, "x-" + string(make([]byte, 0)): true,
	} {
		if got := ValidDeployment(s); got != want {
			t.Errorf("ValidDeployment(%q) = %v", s, got)
		}
	}
}

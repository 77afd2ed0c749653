package translate

import "testing"

// TestResponsesUpstreamLines: a Responses request goes natively to a provider that has the API (its path
// and api-version rules), and as chat completions to one that has not, or to a model marked chat_only.
func TestResponsesUpstreamLines(t *testing.T) {
	tests := []struct {
		name, path   string
		target       Target
		wantPath     string
		wantErr      ErrorCode
		wantBridged  bool
		wantBodyName bool // the upstream body names the model (for Azure OpenAI, the deployment)
	}{
		{name: "openai to openai", path: "/v1/responses", target: Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o"},
			wantPath: "/v1/responses", wantBodyName: true},
		{name: "openai to azure-openai, no version: the v1 surface", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Deployment: "gpt4o-prod"},
			wantPath: "/openai/v1/responses", wantBodyName: true},
		{name: "openai to azure-openai preview", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "preview", Deployment: "d"},
			wantPath: "/openai/v1/responses?api-version=preview", wantBodyName: true},
		{name: "openai to azure-openai dated: the classic surface, deployment in the body", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "2025-04-01-preview", Deployment: "d"},
			wantPath: "/openai/responses?api-version=2025-04-01-preview", wantBodyName: true},
		{name: "azure-openai version before the Responses API", path: "/v1/responses",
			target:  Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "2024-10-21", Deployment: "d"},
			wantErr: ErrUnsupportedOperation},
		{name: "azure classic client keeps its version", path: "/openai/responses?api-version=2025-03-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Deployment: "d"},
			wantPath: "/openai/responses?api-version=2025-03-01-preview", wantBodyName: true},
		{name: "azure classic client with an old version", path: "/openai/responses?api-version=2025-01-01-preview",
			target:  Target{Dialect: AzureOpenAI, BasePath: "/openai", Deployment: "d"},
			wantErr: ErrUnsupportedOperation},
		{name: "azure deployment route", path: "/openai/deployments/d/responses?api-version=2025-04-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Deployment: "d"},
			wantPath: "/openai/responses?api-version=2025-04-01-preview", wantBodyName: true},
		{name: "azure v1 client to openai", path: "/openai/v1/responses", target: Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o"},
			wantPath: "/v1/responses", wantBodyName: true},
		{name: "bridged to azure-ai", path: "/v1/responses",
			target:   Target{Dialect: AzureAI, BasePath: "", Model: "Llama", Deployment: "llama-blue"},
			wantPath: "/chat/completions?api-version=2024-05-01-preview", wantBridged: true, wantBodyName: true},
		{name: "bridged to eternalai", path: "/openai/v1/responses",
			target:   Target{Dialect: EternalAI, BasePath: "/v1", Model: "m", DefaultChainID: "8453"},
			wantPath: "/v1/chat/completions", wantBridged: true, wantBodyName: true},
		{name: "bridged to a chat_only openai model", path: "/v1/responses",
			target:   Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-3.5-turbo", ChatOnly: true},
			wantPath: "/v1/chat/completions", wantBridged: true, wantBodyName: true},
		{name: "bridged to a chat_only azure-openai model on the classic surface", path: "/openai/deployments/d/responses?api-version=2025-04-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Deployment: "d", ChatOnly: true},
			wantPath: "/openai/deployments/d/chat/completions?api-version=2025-04-01-preview", wantBridged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, e := Detect("POST", tt.path, "")
			if e != nil || req.Op != OpResponses {
				t.Fatalf("Detect: %+v, %v", req, e)
			}
			head, e := RenderHead(&req, &tt.target)
			if tt.wantErr != "" {
				if e == nil || e.Code != tt.wantErr {
					t.Fatalf("RenderHead error %v, want %s", e, tt.wantErr)
				}
				return
			}
			if e != nil {
				t.Fatalf("RenderHead: %v", e)
			}
			if head.Path != tt.wantPath {
				t.Errorf("path %q, want %q", head.Path, tt.wantPath)
			}
			if got := bridges(&req, &tt.target); got != tt.wantBridged {
				t.Errorf("bridged %v, want %v", got, tt.wantBridged)
			}
			op := req.Op
			if tt.wantBridged {
				op = OpChatCompletions
			}
			version, _ := resolveAPIVersion(&ClientRequest{Dialect: req.Dialect, Op: op, APIVersion: req.APIVersion,
				SurfaceVersion: req.SurfaceVersion}, &tt.target)
			if _, named := tt.target.Dialect.spec().bodyModel(&ClientRequest{Op: op}, &tt.target, version); named != tt.wantBodyName {
				t.Errorf("body names the model: %v, want %v", named, tt.wantBodyName)
			}
		})
	}
}

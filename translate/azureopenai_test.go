package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Tests of azureopenai.go's hooks, each alone.

// TestAzureOpenAIPath: the upstream path on the v1 surface (the deployment in the body) and on the classic
// one (the deployment in the path, which must be a valid name).
func TestAzureOpenAIPath(t *testing.T) {
	gpt := Target{Dialect: AzureOpenAI, Model: "gpt-4o"}
	prod := Target{Dialect: AzureOpenAI, Model: "gpt-4o", Settings: Settings{deployment: "prod-1"}}
	tests := []struct {
		name    string
		op      Operation
		target  Target
		version string
		want    string
		errCode ErrorCode
		errMsg  string
	}{
		{"v1 surface, no api-version on the wire", OpChatCompletions, gpt, "v1", "/openai/v1/chat/completions", "", ""},
		{"v1 surface, preview sent", OpChatCompletions, gpt, "preview", "/openai/v1/chat/completions?api-version=preview", "", ""},
		{"v1 surface, latest sent", OpEmbeddings, gpt, "latest", "/openai/v1/embeddings?api-version=latest", "", ""},
		{"v1 surface ignores the deployment", OpChatCompletions, prod, "v1", "/openai/v1/chat/completions", "", ""},
		{"v1 surface takes a model that is no deployment name", OpChatCompletions,
			Target{Dialect: AzureOpenAI, Model: "org/model"}, "v1", "/openai/v1/chat/completions", "", ""},
		{"classic with a deployment", OpChatCompletions, prod, "2024-10-21",
			"/openai/deployments/prod-1/chat/completions?api-version=2024-10-21", "", ""},
		{"classic with the model as deployment", OpCompletions, gpt, "2024-10-21",
			"/openai/deployments/gpt-4o/completions?api-version=2024-10-21", "", ""},
		{"classic, preview dated version", OpEmbeddings, prod, "2025-04-01-preview",
			"/openai/deployments/prod-1/embeddings?api-version=2025-04-01-preview", "", ""},
		{"classic refuses a model that is no deployment name", OpChatCompletions,
			Target{Dialect: AzureOpenAI, Model: "org/model"}, "2024-10-21", "/openai", ErrInvalidDeployment,
			`the model name "org/model" cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it`},
		{"classic refuses a dot-dot model", OpChatCompletions,
			Target{Dialect: AzureOpenAI, Model: ".."}, "2024-10-21", "/openai", ErrInvalidDeployment,
			`the model name ".." cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it`},
		{"classic refuses an empty model", OpChatCompletions,
			Target{Dialect: AzureOpenAI}, "2024-10-21", "/openai", ErrInvalidDeployment,
			`the model name "" cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it`},
		{"classic refuses a 65-character model", OpChatCompletions,
			Target{Dialect: AzureOpenAI, Model: strings.Repeat("a", 65)}, "2024-10-21", "/openai", ErrInvalidDeployment,
			`the model name "` + strings.Repeat("a", 64) + `..." cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it`},
		{"a valid deployment wins over an invalid model", OpChatCompletions,
			Target{Dialect: AzureOpenAI, Model: "org/model", Settings: Settings{deployment: "d"}}, "2024-10-21",
			"/openai/deployments/d/chat/completions?api-version=2024-10-21", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ClientRequest{Dialect: OpenAI, Op: tt.op}
			got, err := azureOpenAIPath([]byte("/openai"), req.Op, &req, &tt.target, tt.version)
			if string(got) != tt.want {
				t.Errorf("path %q, want %q", got, tt.want)
			}
			if tt.errCode == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || err.Code != tt.errCode || err.Param != "model" || err.Message != tt.errMsg {
				t.Errorf("error %+v, want %s on model: %s", err, tt.errCode, tt.errMsg)
			}
		})
	}
}

// TestAzureOpenAIBodyModel: the body names the model (the deployment) on the v1 surface only.
func TestAzureOpenAIBodyModel(t *testing.T) {
	tests := []struct {
		name     string
		target   Target
		version  string
		want     string
		wantBody bool
	}{
		{"classic: no body model", Target{Model: "gpt-4o", Settings: Settings{deployment: "prod"}}, "2024-10-21", "prod", false},
		{"classic preview: no body model", Target{Model: "gpt-4o"}, "2025-04-01-preview", "gpt-4o", false},
		{"v1: the deployment", Target{Model: "gpt-4o", Settings: Settings{deployment: "prod"}}, "v1", "prod", true},
		{"v1: the model when no deployment", Target{Model: "gpt-4o"}, "v1", "gpt-4o", true},
		{"latest is the v1 surface", Target{Model: "gpt-4o"}, "latest", "gpt-4o", true},
		{"preview is the v1 surface", Target{Model: "gpt-4o", Settings: Settings{deployment: "d"}}, "preview", "d", true},
		{"no version is the classic surface", Target{Model: "gpt-4o"}, "", "gpt-4o", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Dialect = AzureOpenAI
			req := ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}
			got, ok := azureOpenAIBodyModel(&req, &tt.target, tt.version)
			if got != tt.want || ok != tt.wantBody {
				t.Errorf("azureOpenAIBodyModel = (%q, %v), want (%q, %v)", got, ok, tt.want, tt.wantBody)
			}
		})
	}
}

// TestIsAzureOpenAIV1: the api-version values that select the v1 surface.
func TestIsAzureOpenAIV1(t *testing.T) {
	tests := []struct {
		version string
		want    bool
	}{
		{"v1", true},
		{"latest", true},
		{"preview", true},
		{"2024-10-21", false},
		{"2025-04-01-preview", false},
		{"V1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isAzureOpenAIV1(tt.version); got != tt.want {
			t.Errorf("isAzureOpenAIV1(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}

// TestIsAnnotationEvent: Azure's content-filter chunks (an empty object name, or no choices and no usage)
// are dropped for other dialects' clients; content and usage chunks are not.
func TestIsAnnotationEvent(t *testing.T) {
	tests := []struct {
		name                   string
		object, choices, usage string // "" = member absent
		want                   bool
	}{
		{"empty object name", `""`, `[]`, "", true},
		{"empty object name with choices", `""`, `[{"index":0,"delta":{}}]`, "", true},
		{"prompt filter chunk: no choices, no usage", `"chat.completion.chunk"`, `[]`, "", true},
		{"empty choices with spaces", `"chat.completion.chunk"`, `[ ]`, "", true},
		{"empty choices, null usage", `"chat.completion.chunk"`, `[]`, `null`, true},
		{"usage chunk kept", `"chat.completion.chunk"`, `[]`, `{"prompt_tokens":1}`, false},
		{"content chunk kept", `"chat.completion.chunk"`, `[{"index":0,"delta":{"content":"hi"}}]`, "", false},
		{"content chunk with usage kept", `"chat.completion.chunk"`, `[{"index":0}]`, `{"prompt_tokens":1}`, false},
		{"no choices member at all kept", `"chat.completion.chunk"`, "", "", false},
		{"no object member, content kept", "", `[{"index":0}]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := eventParts{object: nilIfEmpty(tt.object), choices: nilIfEmpty(tt.choices), usage: nilIfEmpty(tt.usage)}
			x := Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}
			if got := isAnnotationEvent(&x, &ev); got != tt.want {
				t.Errorf("isAnnotationEvent = %v, want %v", got, tt.want)
			}
		})
	}
}

// nilIfEmpty is an event member's value as editChunk gives it: nil when the member is absent.
func nilIfEmpty(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// TestAzureOpenAIModelObject: the classic surface's model shape, and OpenAI's on the v1 surface.
func TestAzureOpenAIModelObject(t *testing.T) {
	const classic = `,"object":"model","created_at":0,"status":"succeeded","lifecycle_status":"generally-available"}`
	tests := []struct {
		name  string
		req   ClientRequest
		owner string
		want  string
	}{
		{"classic surface", ClientRequest{Dialect: AzureOpenAI, Op: OpListModels, APIVersion: "2024-10-21"}, "az", classic},
		{"classic surface names no owner", ClientRequest{Dialect: AzureOpenAI, Op: OpListModels}, `a"b`, classic},
		{"v1 surface: OpenAI's shape", ClientRequest{Dialect: AzureOpenAI, Op: OpListModels, SurfaceVersion: "v1"}, "az",
			`,"object":"model","created":0,"owned_by":"az"}`},
		{"v1 surface escapes the owner", ClientRequest{Dialect: AzureOpenAI, Op: OpListModels, SurfaceVersion: "v1"}, `a"b`,
			`,"object":"model","created":0,"owned_by":"a\"b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := azureOpenAIModelObject(&tt.req, tt.owner); got != tt.want {
				t.Errorf("azureOpenAIModelObject = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestAzureOpenAIErrorEnvelope: Azure OpenAI clients get OpenAI's envelope with the upstream's innererror
// (content-filter verdicts) kept, and see a 422 as 400.
func TestAzureOpenAIErrorEnvelope(t *testing.T) {
	env := azureOpenAISpec.errors
	tests := []struct {
		name string
		f    errorFields
		want string
	}{
		{"innererror kept", errorFields{status: 400, message: "filtered", param: "prompt", code: "content_filter",
			inner: `{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true}}}`},
			`{"error":{"message":"filtered","type":"invalid_request_error","param":"prompt","code":"content_filter",` +
				`"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true}}}}}`},
		{"no innererror, none written", errorFields{status: 429, message: "slow", code: "429"},
			`{"error":{"message":"slow","type":"rate_limit_error","param":null,"code":"429"}}`},
		{"a filter error's code and param", errorFields{status: 400, message: "m", code: string(ErrInvalidDeployment), param: "model"},
			`{"error":{"message":"m","type":"invalid_request_error","param":"model","code":"invalid_deployment"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(env.write(nil, &tt.f)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if !env.unprocessableAs400 {
		t.Error("azure-openai clients must see a 422 as 400")
	}
	if !env.recognises(gjson.Parse(`{"message":"m","type":null,"param":null,"code":"c"}`)) {
		t.Error("azure-openai does not recognise OpenAI's envelope")
	}
}

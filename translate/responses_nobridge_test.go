//go:build aidialect_no_bridge

package translate

import (
	"strings"
	"testing"
)

// TestNoBridge: built without the bridge, a Responses request toward a provider without the Responses API
// (or a chat_only model) is refused with a message saying what to do, before anything is rendered; toward a
// provider with the API it is served natively, and chat requests are served as ever.
func TestNoBridge(t *testing.T) {
	responses := ClientRequest{Dialect: OpenAI, Op: OpResponses}
	chat := ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}
	tests := []struct {
		name    string
		req     ClientRequest
		body    string
		target  Target
		refused bool
	}{
		{"responses to azure-ai", responses, `{"model":"m","input":"hi"}`, Target{Dialect: AzureAI, Model: "m"}, true},
		{"responses to eternalai", responses, `{"model":"m","input":"hi"}`, Target{Dialect: EternalAI, BasePath: "/v1", Model: "m"}, true},
		{"responses to a chat_only model", responses, `{"model":"m","input":"hi"}`,
			Target{Dialect: OpenAI, BasePath: "/v1", Model: "m", ChatOnly: true}, true},
		{"responses to openai", responses, `{"model":"m","input":"hi"}`, Target{Dialect: OpenAI, BasePath: "/v1", Model: "m"}, false},
		{"chat to azure-ai", chat, `{"model":"m","messages":[]}`, Target{Dialect: AzureAI, Model: "m"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body RequestBody
			if e := body.Parse([]byte(tt.body)); e != nil {
				t.Fatal(e)
			}
			attempt := NewAttempt(&tt.req, &tt.target)
			_, headErr := attempt.Head(&tt.req, nil)
			_, bodyErr := attempt.Render(nil, &tt.req, &body)
			for _, e := range []*Error{headErr, bodyErr} {
				if refused := e != nil; refused != tt.refused {
					t.Fatalf("refused %v (%v), want %v", refused, e, tt.refused)
				}
				if e != nil && (e.Code != ErrUnsupportedOperation || !strings.Contains(e.Message, "aidialect_no_bridge")) {
					t.Errorf("refusal %s %q", e.Code, e.Message)
				}
			}
		})
	}
}

package translate

import "testing"

// TestOperationsByAPIVersion: the dialect tables say which api-versions have an operation, and which version
// an operation gets when nobody names one (reference: Azure AI /completions is in 2024-04-01-preview only;
// the Azure OpenAI v1 surface has no legacy completions).
func TestOperationsByAPIVersion(t *testing.T) {
	tests := []struct {
		d       Dialect
		op      Operation
		version string
		has     bool
	}{
		{AzureAI, OpCompletions, "2024-04-01-preview", true},
		{AzureAI, OpCompletions, "2024-05-01-preview", false},
		{AzureAI, OpCompletions, "2025-04-01", false},
		{AzureAI, OpChatCompletions, "2025-04-01", true},
		{AzureAI, OpEmbeddings, "2024-04-01-preview", true},
		{AzureOpenAI, OpCompletions, "2024-10-21", true},
		{AzureOpenAI, OpCompletions, "v1", false},
		{AzureOpenAI, OpCompletions, "latest", false},
		{AzureOpenAI, OpCompletions, "preview", false},
		{AzureOpenAI, OpChatCompletions, "v1", true},
		{AzureOpenAI, OpEmbeddings, "preview", true},
		{OpenAI, OpCompletions, "", true},
		{AzureAI, OpCompletions, "", true},
		{AzureOpenAI, OpCompletions, "", true},
		{EternalAI, OpEmbeddings, "", false},
	}
	for _, tt := range tests {
		if got := ProviderHasOperation(tt.d, tt.op, tt.version); got != tt.has {
			t.Errorf("%s %s at %q: %v, want %v", tt.d, tt.op, tt.version, got, tt.has)
		}
	}
	defaults := []struct {
		d    Dialect
		op   Operation
		want string
	}{
		{AzureAI, OpCompletions, "2024-04-01-preview"},
		{AzureAI, OpChatCompletions, "2024-05-01-preview"},
		{AzureAI, OpEmbeddings, "2024-05-01-preview"},
		{AzureOpenAI, OpCompletions, "2024-10-21"},
		{OpenAI, OpCompletions, ""},
	}
	for _, tt := range defaults {
		if got := tt.d.DefaultAPIVersionFor(tt.op); got != tt.want {
			t.Errorf("%s %s default %q, want %q", tt.d, tt.op, got, tt.want)
		}
		if !ProviderHasOperation(tt.d, tt.op, "") {
			t.Errorf("%s %s: a provider without api_version must have the operation", tt.d, tt.op)
		}
	}
	if ProviderHasOperation(AzureAI, OpCompletions, "2025-04-01") || ProviderHasOperation(AzureOpenAI, OpCompletions, "v1") {
		t.Error("a pinned version without completions must not serve them")
	}
}

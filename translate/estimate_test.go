package translate

import (
	"strings"
	"testing"
)

func TestEstimatePromptTokens(t *testing.T) {
	words := strings.Repeat("the quick brown fox jumps over the lazy dog ", 100) // 4,400 bytes of text
	image := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 10000)
	tests := []struct {
		name     string
		body     string
		min, max int
	}{
		{"empty", ``, 0, 0},
		{"not JSON", `hello world`, 0, 0},
		{"text", `{"model":"gpt-4o","messages":[{"role":"user","content":"` + words + `"}]}`, 880, 900},
		{"an inline image costs nothing here", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + image + `"}}]}]}`, 0, 20},
		{"a long spaceless run is data", `{"input":"` + strings.Repeat("A", 100000) + `"}`, 0, 2},
		{"escapes stay inside their string", `{"content":"a \"quoted\" word \\ and more"}`, 5, 8},
		{"an unterminated string", `{"content":"abc`, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EstimatePromptTokens([]byte(tt.body))
			if got < tt.min || got > tt.max {
				t.Fatalf("EstimatePromptTokens = %d, want %d..%d", got, tt.min, tt.max)
			}
		})
	}
}

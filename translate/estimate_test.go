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
		// Text without spaces is still text: the providers tokenize it (CJK about a token a character, code
		// and punctuation-joined text 2-4 bytes a token), so leaving it out let any prompt reserve nothing.
		{"CJK text has no spaces", `{"content":"` + strings.Repeat("中文的文本", 2000) + `"}`, 5000, 7000},
		{"minified code has no spaces", `{"content":"` + strings.Repeat("x=f(y);", 5000) + `"}`, 6000, 8000},
		{"text joined by escaped newlines", `{"content":"` + strings.Repeat("line\\n", 5000) + `"}`, 3500, 6000},
		{"one base64 run does not hide the text around it", `{"content":"` + strings.Repeat("QUJD", 100) + ` ` + words + `"}`, 870, 900},
		{"a data: prefix on text is not a data URL", `{"content":"data: ` + words + `"}`, 870, 900},
		{"a data URL of text after its comma", `{"url":"data:text/plain,` + strings.Repeat("中文", 5000) + `"}`, 5000, 7000},
		{"a data URL with escaped slashes is data", `{"url":"data:image/png;base64,` + strings.Repeat(`iVBO\/w0K`, 10000) + `"}`, 0, 2},
		// \uXXXX is one character of at most 3 bytes of UTF-8 (a surrogate pair, 4 for two escapes): counted as 2,
		// so escaped CJK (Python's json.dumps default) is not counted three times over.
		{"escaped CJK", `{"content":"` + strings.Repeat(`\u4e2d\u6587`, 1000) + `"}`, 600, 1300},
		// Token ids (embeddings, completions) cost a token each.
		{"token ids", `{"input":[[` + strings.Repeat("1234,", 7999) + `1234]]}`, 7500, 8100},
		{"numbers that are not in arrays are parameters", `{"max_tokens":100000,"temperature":0.5,"n":1}`, 0, 8},
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

// FuzzEstimatePromptTokens: any body, never a panic, never more than its length, and linear (one pass).
func FuzzEstimatePromptTokens(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `"data:,` + strings.Repeat("A", 300), `"\u`, `"\`, `[1,2,-3e5]`, `"data:x\n`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if n := EstimatePromptTokens(body); n < 0 || n > len(body) {
			t.Fatalf("estimate %d for %d bytes", n, len(body))
		}
	})
}

// Package benchdata makes the inputs the benchmarks and memory tests share, so that their figures measure the
// same bytes wherever they run: the chat request body (native translate benchmarks and the compiled filter's),
// the lifecycle scenarios and their configuration (bench under wazero, internal/v8host under V8 and wazero
// beside it), and the memory tests' request mix. One package's test code cannot import another's, so these
// live here, once, rather than copied into each package and left to drift apart.
package benchdata

import (
	"fmt"
	"strings"
)

// ChatRequest is an OpenAI chat request for model of about size bytes: many short user messages with quotes
// and non-ASCII text, and two fields Azure AI does not know (user, logit_bias).
func ChatRequest(model string, size int) []byte {
	var msgs []string
	n := 0
	for i := 0; n < size-300; i++ {
		m := fmt.Sprintf(`{"role":"user","content":"Message %d: the quick brown fox jumps over the lazy dog, \"quoted\" and ünïcödé text."}`, i)
		msgs = append(msgs, m)
		n += len(m) + 1
	}
	return []byte(`{"model":"` + model + `","messages":[` + strings.Join(msgs, ",") +
		`],"temperature":0.2,"max_tokens":256,"stream":false,"user":"user-42","logit_bias":{"50256":-100}}`)
}

// ResponsesRequest is ChatRequest's conversation as a Responses API request: the same messages as input
// items, the same sampling settings (logit_bias has no Responses equivalent).
func ResponsesRequest(model string, size int) []byte {
	var msgs []string
	n := 0
	for i := 0; n < size-300; i++ {
		m := fmt.Sprintf(`{"role":"user","content":"Message %d: the quick brown fox jumps over the lazy dog, \"quoted\" and ünïcödé text."}`, i)
		msgs = append(msgs, m)
		n += len(m) + 1
	}
	return []byte(`{"model":"` + model + `","input":[` + strings.Join(msgs, ",") +
		`],"temperature":0.2,"max_output_tokens":256,"stream":false,"user":"user-42","store":false}`)
}

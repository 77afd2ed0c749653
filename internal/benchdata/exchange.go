package benchdata

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Exchange is a client request and the upstream's answer to it, in no host's terms: bench plays it through
// internal/hostemu under wazero, internal/v8host through host.mjs under V8.
type Exchange struct {
	Name          string
	Headers       [][2]string // with :method, :path, :authority, and content-length when there is a body
	Chunks        [][]byte    // request body chunks; nil: a body-less request
	Status        int         // the upstream's status; 0: the request gets no answer
	AnswerHeaders [][2]string
	Answer        [][]byte // upstream answer body chunks
}

// NewExchange is a request to the gateway (:authority gateway.local) with headers after the pseudo-headers,
// and body, announced by content-length, cut into bodyChunks chunks.
func NewExchange(name, method, path string, headers [][2]string, body []byte, bodyChunks int) *Exchange {
	x := &Exchange{Name: name}
	x.Headers = append([][2]string{{":method", method}, {":path", path}, {":authority", "gateway.local"}}, headers...)
	if len(body) > 0 {
		x.Headers = append(x.Headers, [2]string{"content-length", strconv.Itoa(len(body))})
		x.Chunks = Split(body, (len(body)+bodyChunks-1)/bodyChunks)
	}
	return x
}

// AnswerWith sets the upstream's answer and returns x.
func (x *Exchange) AnswerWith(status int, headers [][2]string, chunks [][]byte) *Exchange {
	x.Status, x.AnswerHeaders, x.Answer = status, headers, chunks
	return x
}

// Body is the whole request body.
func (x *Exchange) Body() []byte { return bytes.Join(x.Chunks, nil) }

// Reply is the whole answer body.
func (x *Exchange) Reply() []byte { return bytes.Join(x.Answer, nil) }

// Split cuts b into pieces of at most n bytes (sharing b's memory, each capped at its own length).
func Split(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, b[:k:k])
		b = b[k:]
	}
	return out
}

// Config is the lifecycle benchmarks' filter configuration: the README's four providers, keys inline
// (proxytest's wasm mode has no environment).
const Config = `{
  "providers": [
    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "azure-key",
     "api_version": "2024-10-21", "models": [{"name": "gpt-4o", "deployment": "gpt4o-prod"}, {"name": "gpt-35-*"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama-ep.eastus2.models.ai.azure.com", "api_key": "ai-key",
     "extra_parameters": "drop",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct", "deployment": "llama3-blue"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "eternal-key",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"}]},
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-openai",
     "models": [{"name": "*"}]}
  ],
  "default_provider": "openai"
}`

// ClientHeaders are an OpenAI client's headers on a JSON request (a new slice each call: callers append).
func ClientHeaders() [][2]string {
	return [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer sk-client-key"}}
}

// JSONScenario: a 4 KiB OpenAI chat request for model (ChatRequest), which Config routes to the azure-ai
// provider for llama-3-70b (rewritten, two fields dropped), answered with a 2 KiB Azure AI chat completion.
func JSONScenario(model string) *Exchange {
	x := NewExchange("json-4KiB-openai-to-azure-ai", "POST", "/v1/chat/completions", ClientHeaders(), ChatRequest(model, 4<<10), 1)
	head := `{"id":"1f3b9c2e7d8a4e0f","object":"chat.completion","created":1732000000,"model":"Meta-Llama-3-70B-Instruct","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`
	tail := `","tool_calls":null}}],"usage":{"prompt_tokens":918,"completion_tokens":412,"total_tokens":1330}}`
	var content strings.Builder
	for content.Len() < 2048-len(head)-len(tail) {
		content.WriteString("The quick brown fox jumps over the lazy dog. ")
	}
	answer := head + content.String()[:2048-len(head)-len(tail)] + tail
	return x.AnswerWith(200, [][2]string{{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(answer))}},
		[][]byte{[]byte(answer)})
}

// StreamEvents is the number of data events in StreamScenario's answer (then data: [DONE]).
const StreamEvents = 100

// StreamScenario: an OpenAI client's streamed chat for model, on the azure-ai provider for llama-3-70b,
// answered with 100 Azure AI events; every event is edited ("object":"chat.completion" becomes
// "chat.completion.chunk"). chunkBytes 0: one event per network chunk; otherwise the stream is cut into
// chunkBytes-byte chunks, and the name says so.
func StreamScenario(model string, chunkBytes int) *Exchange {
	name := "sse-100-events-azure-ai-to-openai"
	if chunkBytes > 0 {
		size := fmt.Sprintf("%dB", chunkBytes)
		if chunkBytes%1024 == 0 {
			size = fmt.Sprintf("%dKiB", chunkBytes/1024)
		}
		name = "sse-100-events-" + size + "-chunks-azure-ai-to-openai"
	}
	body := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"Tell me a story."}],"stream":true,"max_tokens":256}`)
	x := NewExchange(name, "POST", "/v1/chat/completions",
		append(ClientHeaders(), [2]string{"accept", "text/event-stream"}), body, 1)
	const event = `data: {"id":"9c1d2e3f","object":"chat.completion","created":1732000000,"model":"Meta-Llama-3-70B-Instruct","choices":[{"index":0,"delta":%s,"finish_reason":%s}]%s}` + "\n\n"
	var chunks [][]byte
	for i := range StreamEvents {
		switch i {
		case 0:
			chunks = append(chunks, fmt.Appendf(nil, event, `{"role":"assistant","content":""}`, "null", ""))
		case StreamEvents - 1:
			chunks = append(chunks, fmt.Appendf(nil, event, `{"content":""}`, `"stop"`,
				`,"usage":{"prompt_tokens":12,"completion_tokens":98,"total_tokens":110}`))
		default:
			chunks = append(chunks, fmt.Appendf(nil, event, fmt.Sprintf(`{"content":" token%d"}`, i), "null", ""))
		}
	}
	chunks = append(chunks, []byte("data: [DONE]\n\n"))
	if chunkBytes > 0 {
		chunks = Split(bytes.Join(chunks, nil), chunkBytes)
	}
	return x.AnswerWith(200, [][2]string{{"content-type", "text/event-stream"}}, chunks)
}

// Streams reports whether the answer is an event stream.
func (x *Exchange) Streams() bool {
	for _, h := range x.AnswerHeaders {
		if strings.EqualFold(h[0], "content-type") {
			return strings.Contains(h[1], "event-stream")
		}
	}
	return false
}

package jsonscan_test

import (
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/jsonscan"
)

// The inputs the filter scans most: the 4 KiB chat request of translate's benchmarks and of the compiled
// module's (benchdata.ChatRequest: short messages, quotes, two-byte UTF-8), a 2 KiB chat answer (one long
// ASCII string), and two stream events (OpenAI's chunk, Azure AI's).
var (
	chatRequest = benchdata.ChatRequest("gpt-4o", 4<<10)
	chatAnswer  = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1732000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("The quick brown fox jumps over the lazy dog. ", 36) +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18,"completion_tokens":300,"total_tokens":318}}`)
	openAIEvent  = []byte(`{"id":"chatcmpl-S1","object":"chat.completion.chunk","created":1732000000,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"token 42 "},"logprobs":null,"finish_reason":null}]}`)
	azureAIEvent = []byte(`{"id":"9c1d2e3f","object":"chat.completion","created":1732000000,"model":"Meta-Llama-3-70B-Instruct","choices":[{"index":0,"delta":{"content":" the quick brown fox jumps over"},"finish_reason":null}]}`)
)

var (
	sinkMembers []jsonscan.Member
	sinkInt     int
	sinkBytes   []byte
)

// BenchmarkMembers is the validating scan of a client request and of a JSON answer (translate's
// RequestBody.Parse and Answer).
func BenchmarkMembers(b *testing.B) {
	for _, in := range []struct {
		name string
		src  []byte
	}{{"request-4KiB", chatRequest}, {"answer-2KiB", chatAnswer}} {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]jsonscan.Member, 0, 32)
			b.SetBytes(int64(len(in.src)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = jsonscan.Members(in.src, dst[:0], 256); err != nil {
					b.Fatal(err)
				}
			}
			sinkMembers = dst
		})
	}
}

// BenchmarkCheck is Valid's scan (plugin configuration, error bodies, a stream's last event).
func BenchmarkCheck(b *testing.B) {
	b.SetBytes(int64(len(chatRequest)))
	b.ReportAllocs()
	for b.Loop() {
		off, err := jsonscan.Check(chatRequest)
		if err != nil {
			b.Fatal(err)
		}
		sinkInt += off
	}
}

// BenchmarkSkim is the per-event scan of a stream (translate's Stream.editChunk).
func BenchmarkSkim(b *testing.B) {
	for _, in := range []struct {
		name string
		src  []byte
	}{{"openai-event", openAIEvent}, {"azure-ai-event", azureAIEvent}} {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]jsonscan.Member, 0, 32)
			b.SetBytes(int64(len(in.src)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = jsonscan.Skim(in.src, dst[:0], 256); err != nil {
					b.Fatal(err)
				}
			}
			sinkMembers = dst
		})
	}
}

// BenchmarkAppendString writes a short ASCII string and a message with quotes and non-ASCII text.
func BenchmarkAppendString(b *testing.B) {
	for _, in := range []struct{ name, s string }{
		{"ascii", "Meta-Llama-3-70B-Instruct"},
		{"escaped", `Message 1: the quick brown fox, "quoted" and ünïcödé text.`},
	} {
		b.Run(in.name, func(b *testing.B) {
			buf := make([]byte, 0, 128)
			b.ReportAllocs()
			for b.Loop() {
				buf = jsonscan.AppendString(buf[:0], in.s)
			}
			sinkBytes = buf
		})
	}
}

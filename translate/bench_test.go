package translate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/benchdata"
)

// Each benchmark of a hot path sits beside its floor: the least any implementation must do with the same
// bytes (one validating scan plus one copy). BENCHMARKS.md reports cost / floor ratios from one run.

// chatBody is the benchmarks' shared chat request (two fields Azure AI does not know).
func chatBody(size int) []byte { return benchdata.ChatRequest("gpt-4o", size) }

var sinkBytes []byte
var sinkBool bool

// clientRequest is how each client dialect sends the same chat request.
func clientRequest(client Dialect, body []byte) (method, path string, out []byte) {
	switch client {
	case AzureOpenAI:
		// The deployment is in the path; Azure clients send no model in the body.
		return "POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
			bytes.Replace(body, []byte(`"model":"gpt-4o",`), nil, 1)
	case AzureAI:
		return "POST", "/chat/completions?api-version=2024-05-01-preview", body
	case EternalAI:
		return "POST", "/v1/chat/completions", bytes.Replace(body, []byte(`{"model"`), []byte(`{"chain_id":"45762","model"`), 1)
	}
	return "POST", "/v1/chat/completions", body
}

var benchTargets = map[Dialect]Target{
	OpenAI:      {Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o-2024-08-06"},
	AzureOpenAI: {Dialect: AzureOpenAI, BasePath: "/openai", Model: "gpt-4o", Settings: Settings{deployment: "gpt4o-prod"}},
	AzureAI:     {Dialect: AzureAI, Model: "Meta-Llama-3-70B-Instruct", Settings: Settings{deployment: "llama3-blue"}},
	EternalAI:   {Dialect: EternalAI, BasePath: "/v1", Model: "PrimeIntellect/INTELLECT-1-Instruct", Settings: Settings{defaultChainID: "45762"}},
}

// benchRender measures what the filter does with a request body: one validating parse, the request line,
// and the rendered body.
func benchRender(b *testing.B, client, provider Dialect, raw []byte) {
	method, path, body := clientRequest(client, raw)
	benchRenderLine(b, method, path, provider, body)
}

// benchScanCopyFloor is the least any translator must do with a body: validate it once and copy it once.
func benchScanCopyFloor(b *testing.B, body []byte) {
	dst := make([]byte, len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = gjson.ValidBytes(body)
		copy(dst, body)
	}
	sinkBytes = dst
}

// BenchmarkRender covers every client x provider pair on 1, 4 and 64 KiB chat bodies (with two fields
// Azure AI does not know), each size beside its floor.
func BenchmarkRender(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 64 << 10} {
		raw := chatBody(size)
		kib := fmt.Sprintf("%dKiB", size>>10)
		b.Run("floor/"+kib, func(b *testing.B) { benchScanCopyFloor(b, raw) })
		for _, client := range Dialects {
			for _, provider := range Dialects {
				b.Run(client.String()+"-to-"+provider.String()+"/"+kib, func(b *testing.B) {
					benchRender(b, client, provider, raw)
				})
			}
		}
	}
}

// chatAnswer is a ~2 KiB chat answer of the provider's dialect.
func chatAnswer(provider Dialect) []byte {
	content := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 36)
	extra := ""
	switch provider {
	case AzureOpenAI:
		extra = `,"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]`
	case EternalAI:
		extra = `,"onchain_data":{"infer_id":2917,"pbft_committee":["0x1a2b","0x3c4d"],"proposer":"0x1a2b","infer_tx":"0xabc123","propose_tx":"0xdef456"}`
	}
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1732000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18,"completion_tokens":300,"total_tokens":318}` + extra + `}`)
}

// BenchmarkTranslateJSON measures answers that need edits (annotations removed, onchain_data to headers)
// beside the scan+copy floor of the same bytes.
func BenchmarkTranslateJSON(b *testing.B) {
	for _, provider := range []Dialect{AzureOpenAI, EternalAI} {
		body := chatAnswer(provider)
		x := Exchange{Client: OpenAI, Provider: provider, Op: OpChatCompletions}
		b.Run(provider.String()+"-to-openai", func(b *testing.B) {
			dst := make([]byte, 0, len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				out, _, _, err := Answer(dst, &x, body)
				if err != nil || len(out) == len(body) {
					b.Fatalf("not translated: %v", err)
				}
				sinkBytes = out
			}
		})
		b.Run("floor/"+provider.String(), func(b *testing.B) { benchScanCopyFloor(b, body) })
	}
}

// azureAIChunk is a typical Azure AI stream event: object "chat.completion" must become
// "chat.completion.chunk" for every OpenAI-family client.
var azureAIChunk = []byte("data: {\"id\":\"9c1d2e3f\",\"object\":\"chat.completion\",\"created\":1732000000,\"model\":\"Meta-Llama-3-70B-Instruct\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the quick brown fox jumps over\"},\"finish_reason\":null}]}\n\n")

func BenchmarkSSEEvent(b *testing.B) {
	b.Run("edited/azure-ai-to-openai", func(b *testing.B) {
		s := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 0)
		b.SetBytes(int64(len(azureAIChunk)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := s.Write(azureAIChunk)
			if err != nil || len(out) == len(azureAIChunk) {
				b.Fatalf("event not edited: %v %s", err, out)
			}
			sinkBytes = out
		}
	})
	b.Run("floor/boundary+copy", func(b *testing.B) {
		dst := make([]byte, len(azureAIChunk))
		b.SetBytes(int64(len(azureAIChunk)))
		b.ReportAllocs()
		for b.Loop() {
			end := bytes.Index(azureAIChunk, []byte("\n\n"))
			copy(dst, azureAIChunk[:end+2])
		}
		sinkBytes = dst
	})
	b.Run("floor/scan+copy", func(b *testing.B) {
		dst := make([]byte, len(azureAIChunk))
		data := azureAIChunk[len("data: ") : len(azureAIChunk)-2]
		b.SetBytes(int64(len(azureAIChunk)))
		b.ReportAllocs()
		for b.Loop() {
			end := bytes.Index(azureAIChunk, []byte("\n\n"))
			sinkBool = gjson.ValidBytes(data)
			copy(dst, azureAIChunk[:end+2])
		}
		sinkBytes = dst
	})
}

// openAIStream is a 100-event OpenAI stream cut into network-sized chunks.
func openAIStream() [][]byte {
	var all []byte
	for i := 0; i < 100; i++ {
		all = fmt.Appendf(all, "data: {\"id\":\"chatcmpl-S1\",\"object\":\"chat.completion.chunk\",\"created\":1732000000,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
	}
	all = append(all, "data: [DONE]\n\n"...)
	var chunks [][]byte
	for len(all) > 0 {
		n := min(1400, len(all))
		chunks = append(chunks, all[:n])
		all = all[n:]
	}
	return chunks
}

func BenchmarkStreamZeroEdit(b *testing.B) {
	chunks := openAIStream()
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	b.Run("openai-to-openai", func(b *testing.B) {
		s := NewStream(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
		b.SetBytes(int64(total))
		b.ReportAllocs()
		for b.Loop() {
			s.Reset(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
			for _, c := range chunks {
				out, err := s.Write(c)
				if err != nil {
					b.Fatal(err)
				}
				sinkBytes = out
			}
			sinkBytes = s.Close()
		}
	})
	b.Run("floor/boundaries+copy", func(b *testing.B) {
		dst := make([]byte, 0, 4096)
		b.SetBytes(int64(total))
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range chunks {
				for rest := c; ; {
					i := bytes.Index(rest, []byte("\n\n"))
					if i < 0 {
						break
					}
					rest = rest[i+2:]
				}
				dst = append(dst[:0], c...)
			}
		}
		sinkBytes = dst
	})
}

func TestStreamZeroEditAllocatesNothing(t *testing.T) {
	chunks := openAIStream()
	s := NewStream(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
	run := func() {
		s.Reset(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
		for _, c := range chunks {
			if _, err := s.Write(c); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	run() // grow the buffers once
	if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
		t.Errorf("zero-edit stream allocates %.1f times per stream, want 0", allocs)
	}
}

// BenchmarkRenderResponses: a Responses request bridged to a chat-only provider beside the chat request of
// the same conversation to the same provider (the goal: within 1.5x), each beside its scan+copy floor.
func BenchmarkRenderResponses(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 64 << 10} {
		kib := fmt.Sprintf("%dKiB", size>>10)
		chat, responses := chatBody(size), benchdata.ResponsesRequest("gpt-4o", size)
		b.Run("floor/chat/"+kib, func(b *testing.B) { benchScanCopyFloor(b, chat) })
		b.Run("floor/responses/"+kib, func(b *testing.B) { benchScanCopyFloor(b, responses) })
		for _, provider := range []Dialect{AzureAI, EternalAI} {
			b.Run("chat/openai-to-"+provider.String()+"/"+kib, func(b *testing.B) {
				benchRender(b, OpenAI, provider, chat)
			})
			b.Run("responses/openai-to-"+provider.String()+"/"+kib, func(b *testing.B) {
				benchRenderLine(b, "POST", "/v1/responses", provider, responses)
			})
		}
	}
}

// benchRenderLine is benchRender for a request line of the caller's choosing.
func benchRenderLine(b *testing.B, method, path string, provider Dialect, body []byte) {
	req, err := Detect(method, path, "")
	if err != nil {
		b.Fatal(err)
	}
	target := benchTargets[provider]
	var parsed RequestBody
	dst := make([]byte, 0, len(body)+256)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := parsed.Parse(body); err != nil {
			b.Fatal(err)
		}
		r := req
		r.RefineWithBody(&parsed)
		if _, err := RenderHead(&r, &target); err != nil {
			b.Fatal(err)
		}
		out, err := RenderBody(dst, &r, &parsed, &target)
		if err != nil {
			b.Fatal(err)
		}
		sinkBytes = out.Body
	}
}

// BenchmarkFallbackAttempt: a failover attempt renders the client's request again for another target, from
// the body parsed for the first attempt (plugin/failover.go). "first" is the first attempt (the body parsed,
// the request line and body rendered toward OpenAI); "fallback-to-X" is a later attempt's render toward X
// from the same parsed body, which must cost no more than the first.
func BenchmarkFallbackAttempt(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		raw := chatBody(size)
		kib := fmt.Sprintf("%dKiB", size>>10)
		method, path, body := clientRequest(OpenAI, raw)
		req, derr := Detect(method, path, "")
		if derr != nil {
			b.Fatal(derr)
		}
		b.Run("first/"+kib, func(b *testing.B) { benchRenderLine(b, method, path, OpenAI, body) })
		for _, provider := range []Dialect{AzureOpenAI, AzureAI, EternalAI} {
			b.Run("fallback-to-"+provider.String()+"/"+kib, func(b *testing.B) {
				var parsed RequestBody
				if err := parsed.Parse(body); err != nil {
					b.Fatal(err)
				}
				r := req
				r.RefineWithBody(&parsed)
				first := benchTargets[OpenAI]
				a := NewAttempt(&r, &first)
				dst := make([]byte, 0, len(body)+256)
				if _, err := a.Render(dst, &r, &parsed); err != nil {
					b.Fatal(err)
				}
				target := benchTargets[provider]
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					next := NewAttempt(&r, &target)
					if _, err := next.Head(&r, nil); err != nil {
						b.Fatal(err)
					}
					out, err := next.Render(dst, &r, &parsed)
					if err != nil {
						b.Fatal(err)
					}
					sinkBytes = out.Body
				}
			})
		}
	}
}

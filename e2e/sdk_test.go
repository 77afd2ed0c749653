package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/ai/azopenai"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"

	"github.com/aidialect/aidialect/e2e/demo"
)

// Each real client SDK talks to the local gateway running the compiled filter, which talks to the strict
// mock providers: the SDK must accept every answer (JSON, stream, error) whatever dialect served it, and the
// mocks must accept every request the filter rendered.

// provider is one route of the demo, seen from a client.
type provider struct {
	name       string // demo provider name (mock key)
	chatModel  string
	embedModel string // "" when the dialect has no embeddings
}

var providers = []provider{
	{"openai", demo.ModelOpenAI, "text-embedding-3-large"},
	{"azure", demo.ModelAzureOpenAI, demo.ModelAzureEmbed},
	{"llama", demo.ModelAzureAI, demo.ModelAzureAIEmbed},
	{"eternal", demo.ModelEternalAI, ""},
}

// sdkClient adapts one SDK to the operations the matrix runs.
type sdkClient struct {
	name   string
	chat   func(ctx context.Context, model string, header http.Header) (string, error)
	stream func(ctx context.Context, model string) (string, error)
	embed  func(ctx context.Context, model string) (int, error)
	// status extracts the HTTP status and error code from the SDK's error.
	status func(err error) (int, string)
}

func openAIClients(gatewayURL string) []sdkClient {
	build := func(name string, azureClient bool, opts ...option.RequestOption) sdkClient {
		opts = append(opts, option.WithMaxRetries(0), option.WithRequestTimeout(30*time.Second))
		c := openai.NewClient(opts...)
		return sdkClient{
			name: name,
			chat: func(ctx context.Context, model string, header http.Header) (string, error) {
				var extra []option.RequestOption
				for k, v := range header {
					extra = append(extra, option.WithHeader(k, v[0]))
				}
				res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model:    model,
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello from the e2e suite")},
					User:     openai.String("e2e"),
				}, extra...)
				if err != nil {
					return "", err
				}
				if len(res.Choices) == 0 {
					return "", errors.New("no choices")
				}
				return res.Choices[0].Message.Content, nil
			},
			stream: func(ctx context.Context, model string) (string, error) {
				s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Model:         model,
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream hello")},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				})
				acc := openai.ChatCompletionAccumulator{}
				for s.Next() {
					chunk := s.Current()
					if chunk.Object == "" && azureClient {
						// Azure OpenAI's content-filter annotation chunk: part of the dialect, kept for its clients.
						continue
					}
					if chunk.Object != "chat.completion.chunk" {
						return "", fmt.Errorf("chunk object %q", chunk.Object)
					}
					acc.AddChunk(chunk)
				}
				if err := s.Err(); err != nil {
					return "", err
				}
				if len(acc.Choices) == 0 {
					return "", errors.New("stream without choices")
				}
				if acc.Usage.TotalTokens == 0 {
					return "", errors.New("stream without the usage chunk the client asked for")
				}
				return acc.Choices[0].Message.Content, nil
			},
			embed: func(ctx context.Context, model string) (int, error) {
				res, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
					Model: model,
					Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("embed me")},
				})
				if err != nil {
					return 0, err
				}
				if len(res.Data) == 0 {
					return 0, errors.New("no embeddings")
				}
				return len(res.Data[0].Embedding), nil
			},
			status: func(err error) (int, string) {
				var apiErr *openai.Error
				if errors.As(err, &apiErr) {
					return apiErr.StatusCode, apiErr.Code
				}
				return 0, err.Error()
			},
		}
	}
	return []sdkClient{
		build("openai-go", false, option.WithBaseURL(gatewayURL+"/v1/"), option.WithAPIKey("client-key")),
		build("openai-go/azure", true, azure.WithEndpoint(gatewayURL, "2024-10-21"), azure.WithAPIKey("client-key"),
			azure.WithUnsafeAllowHTTP()),
	}
}

func azopenaiClient(t *testing.T, gatewayURL string) sdkClient {
	c, err := azopenai.NewClientWithKeyCredential(gatewayURL, azcore.NewKeyCredential("client-key"),
		&azopenai.ClientOptions{ClientOptions: policy.ClientOptions{InsecureAllowCredentialWithHTTP: true,
			Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	messages := func(text string) []azopenai.ChatRequestMessageClassification {
		return []azopenai.ChatRequestMessageClassification{
			&azopenai.ChatRequestUserMessage{Content: azopenai.NewChatRequestUserMessageContent(text)},
		}
	}
	return sdkClient{
		name: "azopenai",
		chat: func(ctx context.Context, model string, header http.Header) (string, error) {
			if len(header) > 0 {
				ctx = policy.WithHTTPHeader(ctx, header)
			}
			res, err := c.GetChatCompletions(ctx, azopenai.ChatCompletionsOptions{DeploymentName: &model, Messages: messages("Say hello")}, nil)
			if err != nil {
				return "", err
			}
			if len(res.Choices) == 0 || res.Choices[0].Message == nil || res.Choices[0].Message.Content == nil {
				return "", errors.New("no message")
			}
			return *res.Choices[0].Message.Content, nil
		},
		stream: func(ctx context.Context, model string) (string, error) {
			res, err := c.GetChatCompletionsStream(ctx, azopenai.ChatCompletionsStreamOptions{DeploymentName: &model, Messages: messages("Stream hello")}, nil)
			if err != nil {
				return "", err
			}
			defer res.ChatCompletionsStream.Close()
			var text strings.Builder
			for {
				chunk, err := res.ChatCompletionsStream.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return "", err
				}
				for _, choice := range chunk.Choices {
					if choice.Delta != nil && choice.Delta.Content != nil {
						text.WriteString(*choice.Delta.Content)
					}
				}
			}
			return text.String(), nil
		},
		embed: func(ctx context.Context, model string) (int, error) {
			res, err := c.GetEmbeddings(ctx, azopenai.EmbeddingsOptions{DeploymentName: &model, Input: []string{"embed me"}}, nil)
			if err != nil {
				return 0, err
			}
			if len(res.Data) == 0 {
				return 0, errors.New("no embeddings")
			}
			return len(res.Data[0].Embedding), nil
		},
		status: func(err error) (int, string) {
			var re *azcore.ResponseError
			if errors.As(err, &re) {
				return re.StatusCode, re.ErrorCode
			}
			return 0, err.Error()
		},
	}
}

// startDemo brings up the local stack, or, when E2E_GATEWAY_URL is set (make e2e-envoy), uses the Envoy
// that docker-compose started in front of the same mock providers.
func startDemo(t *testing.T) *demo.Env {
	t.Helper()
	if url := os.Getenv("E2E_GATEWAY_URL"); url != "" {
		return &demo.Env{GatewayURL: strings.TrimSuffix(url, "/")}
	}
	wasm, err := os.ReadFile(wasmPath())
	if err != nil {
		t.Fatalf("reading the filter (make build): %v", err)
	}
	env, err := demo.Start(demo.Options{Wasm: wasm, Listen: "127.0.0.1:0", Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

func TestGoClientSDKs(t *testing.T) {
	env := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := append(openAIClients(env.GatewayURL), azopenaiClient(t, env.GatewayURL))
	for _, c := range clients {
		for _, p := range providers {
			t.Run(c.name+"/"+p.name, func(t *testing.T) {
				mock := env.Mocks[p.name] // nil against a remote Envoy: the mocks run in their own container
				before := 0
				if mock != nil {
					before = len(mock.Received())
				}
				t.Run("chat", func(t *testing.T) {
					text, err := c.chat(ctx, p.chatModel, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(text, "hello") {
						t.Errorf("answer %q does not echo the request", text)
					}
				})
				t.Run("stream", func(t *testing.T) {
					text, err := c.stream(ctx, p.chatModel)
					if err != nil {
						t.Fatal(err)
					}
					if text == "" {
						t.Error("empty streamed answer")
					}
				})
				t.Run("embeddings", func(t *testing.T) {
					n, err := c.embed(ctx, orDefault(p.embedModel, p.chatModel))
					if p.embedModel == "" {
						status, code := c.status(err)
						if status != 404 || code != "unsupported_operation" {
							t.Fatalf("embeddings toward %s: %v (status %d, code %q), want 404 unsupported_operation", p.name, err, status, code)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						t.Error("empty embedding")
					}
				})
				t.Run("error", func(t *testing.T) {
					_, err := c.chat(ctx, p.chatModel, http.Header{"X-Mock-Fail": {"429-brief"}})
					status, _ := c.status(err)
					if status != 429 {
						t.Fatalf("injected 429 came back as %v (status %d)", err, status)
					}
				})
				if mock == nil {
					return
				}
				for _, rec := range mock.Received()[before:] {
					for _, h := range []string{"Authorization", "Api-Key"} {
						if strings.Contains(rec.Header.Get(h), "client-key") {
							t.Errorf("the client's key reached %s in %s", p.name, h)
						}
					}
				}
			})
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

package e2e_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/demo"
)

// The api-version and surface rules of the Azure dialects, through real clients and the strict mocks: Azure
// AI completions exist only in 2024-04-01-preview, the Azure OpenAI v1 surface names the deployment in the
// body model, and Azure OpenAI clients list models at /openai/models.
func TestAzureVersionsAndSurfaces(t *testing.T) {
	env := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithRequestTimeout(30 * time.Second)}
	received := func(name string) int {
		if env.Mocks == nil {
			return 0
		}
		return len(env.Mocks[name].Received())
	}

	t.Run("v1-surface client: the body model becomes the deployment", func(t *testing.T) {
		// What @ai-sdk/azure sends: POST {resource}/openai/v1/chat/completions, the deployment as model. The
		// demo's azure provider pins no api_version, so it takes the client's surface; the mock knows only
		// the deployment gpt-4o-mini-prod, as Azure knows only deployments.
		c := openai.NewClient(append(opts, option.WithBaseURL(env.GatewayURL+"/openai/v1/"), option.WithAPIKey("client-key"))...)
		res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    demo.ModelAzureOpenAI,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello on the v1 surface")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) == 0 || !strings.Contains(res.Choices[0].Message.Content, "hello") {
			t.Errorf("answer %+v", res.Choices)
		}
		if env.Mocks == nil {
			return // the mocks run elsewhere (docker-compose): only the answer can be checked
		}
		recs := env.Mocks["azure"].Received()
		if len(recs) == 0 {
			t.Fatal("the azure mock received nothing")
		}
		last := recs[len(recs)-1]
		if !strings.HasPrefix(last.Path, "/openai/v1/") || gjson.GetBytes(last.Body, "model").String() != "gpt-4o-mini-prod" {
			t.Errorf("upstream got %s %s with model %q, want the v1 surface with the deployment gpt-4o-mini-prod",
				last.Method, last.Path, gjson.GetBytes(last.Body, "model").String())
		}
	})

	t.Run("completions toward azure-ai use 2024-04-01-preview", func(t *testing.T) {
		c := openai.NewClient(append(opts, option.WithBaseURL(env.GatewayURL+"/v1/"), option.WithAPIKey("client-key"))...)
		res, err := c.Completions.New(ctx, openai.CompletionNewParams{
			Model:  openai.CompletionNewParamsModel(demo.ModelAzureAI),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hello completions")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) == 0 || res.Choices[0].Text == "" {
			t.Errorf("answer %+v", res)
		}
	})

	t.Run("an azure-ai client's version without completions is refused locally", func(t *testing.T) {
		before := received("llama")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.GatewayURL+"/completions?api-version=2024-05-01-preview",
			strings.NewReader(`{"model":"`+demo.ModelAzureAI+`","prompt":"hello"}`))
		req.Header.Set("api-key", "client-key")
		req.Header.Set("content-type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 404 || res.Header.Get("x-aidialect-error") != "unsupported_operation" ||
			!strings.Contains(string(body), `"status":404`) {
			t.Errorf("%d %v %s, want the filter's 404 unsupported_operation in the Azure AI envelope", res.StatusCode, res.Header, body)
		}
		if got := received("llama"); got != before {
			t.Errorf("the upstream was called (%d requests)", got-before)
		}
	})

	t.Run("Azure OpenAI clients list models at /openai/models", func(t *testing.T) {
		c := openai.NewClient(append(opts, azure.WithEndpoint(env.GatewayURL, "2024-10-21"), azure.WithAPIKey("client-key"),
			azure.WithUnsafeAllowHTTP())...)
		page, err := c.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		if !strings.Contains(","+strings.Join(ids, ",")+",", ","+demo.ModelAzureOpenAI+",") {
			t.Errorf("models %v", ids)
		}
	})
}

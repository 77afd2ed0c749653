package mock

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aidialect/aidialect/translate"
)

// TestAcceptsEveryOperation: a valid request of each operation is answered 200 with the dialect's shape.
func TestAcceptsEveryOperation(t *testing.T) {
	for _, d := range Dialects {
		for _, op := range operationsOf[d] {
			t.Run(d+"/"+op, func(t *testing.T) {
				p := New(d, testOpts[d])
				rec := serve(p, validSpec(d, op))
				if rec.status != 200 {
					t.Fatalf("status %d: %s", rec.status, rec.body())
				}
				if ct := rec.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content-type %q", ct)
				}
				m := decode(t, rec.body())
				checkAnswerShape(t, d, op, m)
			})
		}
	}
}

func checkAnswerShape(t *testing.T, d, op string, m map[string]any) {
	t.Helper()
	want := map[string]string{chat: "chat.completion", completions: "text_completion", embeddings: "list"}[op]
	if m["object"] != want {
		t.Errorf("object %v, want %s", m["object"], want)
	}
	if get(m, "usage.prompt_tokens") == nil || get(m, "usage.total_tokens") == nil {
		t.Errorf("usage missing: %v", m["usage"])
	}
	if op == embeddings {
		data, _ := m["data"].([]any)
		if len(data) != 2 || get(data[0], "object") != "embedding" || get(data[1], "index") != float64(1) {
			t.Fatalf("data %v", data)
		}
		if vec, _ := get(data[0], "embedding").([]any); len(vec) != defaultDimensions {
			t.Errorf("embedding length %d", len(vec))
		}
		if has(m, "id") != (d == AzureAI) {
			t.Errorf("id presence wrong for %s: %v", d, m["id"])
		}
		return
	}
	text := get(m, "choices.0.text")
	if op == chat {
		text = get(m, "choices.0.message.content")
		if get(m, "choices.0.message.role") != "assistant" {
			t.Errorf("role %v", get(m, "choices.0.message.role"))
		}
	}
	if text != "echo: hello mock" {
		t.Errorf("text %q, want the echo", text)
	}
	if get(m, "choices.0.finish_reason") != "stop" {
		t.Errorf("finish_reason %v", get(m, "choices.0.finish_reason"))
	}
	id, _ := m["id"].(string)
	switch d {
	case OpenAI:
		if m["system_fingerprint"] == nil || m["model"] != validModel(op) {
			t.Errorf("openai: fingerprint %v model %v", m["system_fingerprint"], m["model"])
		}
	case AzureOpenAI:
		if get(m, "prompt_filter_results.0.content_filter_results.hate.severity") != "safe" {
			t.Errorf("prompt_filter_results %v", m["prompt_filter_results"])
		}
		if get(m, "choices.0.content_filter_results.violence.filtered") != false {
			t.Errorf("content_filter_results %v", get(m, "choices.0.content_filter_results"))
		}
		if model, _ := m["model"].(string); model == "" || strings.Contains(model, "prod") {
			t.Errorf("model %q must be the underlying model, not the deployment", model)
		}
	case AzureAI:
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || has(m, "system_fingerprint") {
			t.Errorf("azure-ai: id %q fingerprint present %v", id, has(m, "system_fingerprint"))
		}
	case EternalAI:
		for _, f := range []string{"infer_id", "pbft_committee", "proposer", "infer_tx", "propose_tx"} {
			if !has(m, "onchain_data."+f) {
				t.Errorf("onchain_data.%s missing: %v", f, m["onchain_data"])
			}
		}
	}
}

func validModel(op string) string {
	return map[string]string{chat: "gpt-4o", completions: "gpt-3.5-turbo-instruct", embeddings: "text-embedding-3-small"}[op]
}

// TestAcceptsVariants: other valid requests (the surface, credential and header variants).
func TestAcceptsVariants(t *testing.T) {
	rows := []struct {
		name string
		d    string
		op   string
		edit func(s *spec)
		opts func(o *Options)
		then func(t *testing.T, m map[string]any)
	}{
		{name: "azure-openai classic with a body model", d: AzureOpenAI, op: chat,
			edit: func(s *spec) { s.set("model", "whatever") }},
		{name: "azure-openai preview api-version", d: AzureOpenAI, op: chat,
			edit: func(s *spec) { s.target = strings.Replace(s.target, "2024-10-21", "2025-04-01-preview", 1) }},
		{name: "azure-openai v1 without api-version", d: AzureOpenAI, op: chat,
			edit: func(s *spec) { s.target = "/openai/v1/chat/completions"; s.set("model", "gpt4o-prod") }},
		{name: "azure-openai v1 api-version=v1", d: AzureOpenAI, op: embeddings,
			edit: func(s *spec) { s.target = "/openai/v1/embeddings?api-version=v1"; s.set("model", "embed-prod") }},
		{name: "azure-openai v1 api-version=latest", d: AzureOpenAI, op: chat,
			edit: func(s *spec) {
				s.target = "/openai/v1/chat/completions?api-version=latest"
				s.set("model", "gpt4o-prod")
			}},
		{name: "azure-openai v1 api-version=preview, key as Bearer", d: AzureOpenAI, op: chat,
			edit: func(s *spec) {
				s.target = "/openai/v1/chat/completions?api-version=preview"
				s.set("model", "gpt4o-prod")
				s.header.Del("api-key")
				s.header.Set("Authorization", "Bearer aoai-key")
			}},
		{name: "azure-openai Entra bearer", d: AzureOpenAI, op: chat,
			opts: func(o *Options) { o.Bearer = true },
			edit: func(s *spec) { s.header.Del("api-key"); s.header.Set("Authorization", "Bearer aoai-key") }},
		{name: "azure-openai embeddings allow unknown keys", d: AzureOpenAI, op: embeddings,
			edit: func(s *spec) { s.set("input_type", "query") }},
		{name: "azure-ai api-key only", d: AzureAI, op: chat, edit: func(s *spec) { s.header.Del("Authorization") }},
		{name: "azure-ai Bearer only", d: AzureAI, op: chat, edit: func(s *spec) { s.header.Del("api-key") }},
		{name: "azure-ai services path /models", d: AzureAI, op: chat,
			edit: func(s *spec) { s.target = "/models" + s.target }},
		{name: "azure-ai GA api-version", d: AzureAI, op: chat,
			edit: func(s *spec) { s.target = "/chat/completions?api-version=2025-04-01" }},
		{name: "azure-ai model matched ignoring case", d: AzureAI, op: chat,
			edit: func(s *spec) { s.set("model", "meta-llama-3-70b-instruct") },
			then: func(t *testing.T, m map[string]any) {
				if m["model"] != "Meta-Llama-3-70B-Instruct" {
					t.Errorf("model %v", m["model"])
				}
			}},
		{name: "azure-ai no body model, no deployment header", d: AzureAI, op: chat,
			edit: func(s *spec) { s.set("model", nil); s.header.Del("azureml-model-deployment") }},
		{name: "azure-ai drop ignores extras", d: AzureAI, op: chat,
			edit: func(s *spec) { s.set("n", 3); s.set("user", "u1"); s.header.Set("extra-parameters", "drop") },
			then: func(t *testing.T, m map[string]any) {
				if n := len(m["choices"].([]any)); n != 1 {
					t.Errorf("drop: %d choices, want 1", n)
				}
			}},
		{name: "azure-ai pass-through accepts extras", d: AzureAI, op: chat,
			edit: func(s *spec) {
				s.set("logit_bias", map[string]int{"1": 2})
				s.header.Set("extra-parameters", "pass-through")
			}},
		{name: "azure-ai ignore with 2024-04-01-preview", d: AzureAI, op: completions,
			edit: func(s *spec) { s.set("best_of", 2); s.header.Set("extra-parameters", "ignore") }},
		{name: "azure-ai modalities known in 2025-04-01", d: AzureAI, op: chat,
			edit: func(s *spec) {
				s.target = "/chat/completions?api-version=2025-04-01"
				s.set("modalities", []string{"text"})
			}},
		{name: "azure-ai embeddings int8", d: AzureAI, op: embeddings,
			edit: func(s *spec) { s.set("encoding_format", "int8"); s.set("dimensions", 4) },
			then: func(t *testing.T, m map[string]any) {
				v, _ := get(m, "data.0.embedding").([]any)
				if len(v) != 4 {
					t.Errorf("embedding %v", v)
				}
			}},
		{name: "eternalai string chain_id", d: EternalAI, op: chat, edit: func(s *spec) { s.set("chain_id", "45762") }},
		{name: "openai ignores OpenAI-Organization", d: OpenAI, op: chat,
			edit: func(s *spec) { s.header.Set("OpenAI-Organization", "org-1"); s.header.Set("OpenAI-Project", "p") }},
		{name: "azure-openai ignores OpenAI-Organization", d: AzureOpenAI, op: chat,
			edit: func(s *spec) { s.header.Set("OpenAI-Organization", "org-1") }},
		{name: "openai base64 embeddings with dimensions", d: OpenAI, op: embeddings,
			edit: func(s *spec) { s.set("encoding_format", "base64"); s.set("dimensions", 3); s.set("input", "one") },
			then: func(t *testing.T, m map[string]any) {
				raw, err := base64.StdEncoding.DecodeString(fmt.Sprint(get(m, "data.0.embedding")))
				if err != nil || len(raw) != 12 {
					t.Errorf("base64 embedding: %d bytes, %v", len(raw), err)
				}
			}},
		{name: "openai n=2 and max_tokens cut", d: OpenAI, op: chat,
			edit: func(s *spec) { s.set("n", 2); s.set("max_completion_tokens", 1) },
			then: func(t *testing.T, m map[string]any) {
				if len(m["choices"].([]any)) != 2 || get(m, "choices.1.finish_reason") != "length" ||
					get(m, "choices.1.message.content") != "echo: " {
					t.Errorf("choices %v", m["choices"])
				}
			}},
		{name: "completions default max_tokens is 16", d: OpenAI, op: completions,
			edit: func(s *spec) { s.set("prompt", strings.Repeat("w ", 30)) },
			then: func(t *testing.T, m map[string]any) {
				if get(m, "choices.0.finish_reason") != "length" || get(m, "usage.completion_tokens") != float64(16) {
					t.Errorf("choices %v usage %v", m["choices"], m["usage"])
				}
			}},
		{name: "azure-ai completions default max_tokens is 256", d: AzureAI, op: completions,
			edit: func(s *spec) { s.set("prompt", strings.Repeat("w ", 30)) },
			then: func(t *testing.T, m map[string]any) {
				if get(m, "choices.0.finish_reason") != "stop" {
					t.Errorf("choices %v", m["choices"])
				}
			}},
		{name: "tools give a tool call", d: OpenAI, op: chat,
			edit: func(s *spec) {
				s.set("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{}}}})
			},
			then: func(t *testing.T, m map[string]any) {
				if get(m, "choices.0.finish_reason") != "tool_calls" || get(m, "choices.0.message.tool_calls.0.function.name") != "lookup" {
					t.Errorf("choices %v", m["choices"])
				}
				if args := fmt.Sprint(get(m, "choices.0.message.tool_calls.0.function.arguments")); !json.Valid([]byte(args)) {
					t.Errorf("arguments %q", args)
				}
			}},
		{name: "GET /v1/models", d: OpenAI, op: chat,
			edit: func(s *spec) { s.method = http.MethodGet; s.target = "/v1/models"; s.body = "" },
			then: func(t *testing.T, m map[string]any) {
				if m["object"] != "list" || get(m, "data.0.object") != "model" {
					t.Errorf("models %v", m)
				}
			}},
		{name: "GET /info", d: AzureAI, op: chat,
			edit: func(s *spec) { s.method = http.MethodGet; s.target = "/info?api-version=2025-04-01"; s.body = "" },
			then: func(t *testing.T, m map[string]any) {
				if m["model_name"] != "Meta-Llama-3-70B-Instruct" {
					t.Errorf("info %v", m)
				}
			}},
		{name: "Accept-Encoding is fine", d: EternalAI, op: completions,
			edit: func(s *spec) { s.header.Set("Accept-Encoding", "gzip, br") }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			opts := testOpts[row.d]
			if row.opts != nil {
				row.opts(&opts)
			}
			s := validSpec(row.d, row.op)
			row.edit(&s)
			rec := serve(New(row.d, opts), s)
			if rec.status != 200 {
				t.Fatalf("status %d: %s", rec.status, rec.body())
			}
			m := decode(t, rec.body())
			if row.then != nil {
				row.then(t, m)
			}
		})
	}
}

// errShape checks an error body.
type errShape func(t *testing.T, m map[string]any)

// openaiErr expects the OpenAI envelope with all four keys and a message containing msg.
func openaiErr(code any, msg string) errShape {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		for _, k := range []string{"message", "type", "param", "code"} {
			if _, ok := e[k]; !ok {
				t.Errorf("OpenAI envelope lacks %s: %v", k, m)
			}
		}
		if code != "*" && e["code"] != code {
			t.Errorf("code %v, want %v", e["code"], code)
		}
		if !strings.Contains(fmt.Sprint(e["message"]), msg) {
			t.Errorf("message %q lacks %q", e["message"], msg)
		}
	}
}

// azureErr expects Azure OpenAI's {"error":{"code":"..","message":".."}}.
func azureErr(code, msg string) errShape {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if get(m, "error.code") != code || !strings.Contains(fmt.Sprint(get(m, "error.message")), msg) {
			t.Errorf("got %v, want code %q message ~%q", m, code, msg)
		}
	}
}

// aiErr expects Azure AI's {"error":{"code","message","status"}}.
func aiErr(code, msg string) errShape {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if get(m, "error.code") != code || get(m, "error.status") == nil ||
			!strings.Contains(fmt.Sprint(get(m, "error.message")), msg) {
			t.Errorf("got %v, want code %q message ~%q", m, code, msg)
		}
	}
}

// aiFlat expects Azure AI's flat {"error":name,"message","status"}.
func aiFlat(name string, status int) errShape {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if m["error"] != name || m["status"] != float64(status) || m["message"] == nil {
			t.Errorf("got %v, want flat %q %d", m, name, status)
		}
	}
}

// ai422 expects Azure AI's flat 422 naming a field.
func ai422(code, field string) errShape {
	return func(t *testing.T, m map[string]any) {
		t.Helper()
		if m["status"] != float64(422) || m["code"] != code || get(m, "detail.loc.1") != field {
			t.Errorf("got %v, want 422 %s on %s", m, code, field)
		}
	}
}

// TestRejects: every strictness rule, with the service's status and error shape.
func TestRejects(t *testing.T) {
	type row struct {
		name   string
		d      string
		op     string
		opts   func(o *Options)
		edit   func(s *spec)
		status int
		shape  errShape
	}
	target := func(t string) func(s *spec) { return func(s *spec) { s.target = t } }
	field := func(k string, v any) func(s *spec) { return func(s *spec) { s.set(k, v) } }
	header := func(k, v string) func(s *spec) {
		return func(s *spec) {
			if v == "" {
				s.header.Del(k)
			} else {
				s.header.Set(k, v)
			}
		}
	}
	body := func(b string) func(s *spec) { return func(s *spec) { s.body = b } }
	rows := []row{
		// paths
		{"openai unknown path", OpenAI, chat, nil, target("/v1/chat/completion"), 404, openaiErr(nil, "Invalid URL (POST /v1/chat/completion)")},
		{"openai wrong base", OpenAI, chat, nil, target("/chat/completions"), 404, openaiErr(nil, "Invalid URL")},
		{"openai GET on an operation", OpenAI, chat, nil, func(s *spec) { s.method = http.MethodGet }, 404, openaiErr(nil, "Invalid URL (GET")},
		{"openai trailing slash", OpenAI, chat, nil, target("/v1/chat/completions/"), 404, openaiErr(nil, "Invalid URL")},
		{"eternalai has no embeddings", EternalAI, chat, nil, target("/v1/embeddings"), 404, openaiErr(nil, "Invalid URL")},
		{"eternalai has no model list", EternalAI, chat, nil, func(s *spec) { s.method = http.MethodGet; s.target = "/v1/models" }, 404, openaiErr(nil, "Invalid URL")},
		{"azure-openai unknown operation", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat?api-version=2024-10-21"), 404, azureErr("404", "Resource not found")},
		{"azure-openai encoded deployment", AzureOpenAI, chat, nil, target("/openai/deployments/a%2Fb/chat/completions?api-version=2024-10-21"), 404, azureErr("404", "Resource not found")},
		{"azure-openai dot deployment", AzureOpenAI, chat, nil, target("/openai/deployments/../chat/completions?api-version=2024-10-21"), 404, azureErr("404", "Resource not found")},
		{"azure-openai v1 has no completions", AzureOpenAI, completions, nil, target("/openai/v1/completions"), 404, azureErr("404", "Resource not found")},
		{"azure-openai openai-style path", AzureOpenAI, chat, nil, target("/v1/chat/completions"), 404, azureErr("404", "Resource not found")},
		{"azure-ai unknown path", AzureAI, chat, nil, target("/v1/chat/completions?api-version=2024-05-01-preview"), 404, aiFlat("NotFound", 404)},
		{"azure-ai completions needs 2024-04-01-preview", AzureAI, completions, nil, target("/completions?api-version=2024-05-01-preview"), 404, aiFlat("NotFound", 404)},
		{"azure-ai GA has no completions", AzureAI, completions, nil, target("/models/completions?api-version=2025-04-01"), 404, aiFlat("NotFound", 404)},

		// api-version
		{"openai refuses api-version", OpenAI, chat, nil, target("/v1/chat/completions?api-version=2024-10-21"), 400, openaiErr(nil, "api-version")},
		{"eternalai refuses api-version", EternalAI, completions, nil, target("/v1/completions?api-version=v1"), 400, openaiErr(nil, "api-version")},
		{"azure-openai missing api-version", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions"), 404, azureErr("404", "Resource not found")},
		{"azure-openai empty api-version", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions?api-version="), 404, azureErr("404", "Resource not found")},
		{"azure-openai unknown api-version", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-11-11"), 400, azureErr("BadRequest", "API version not supported")},
		{"azure-openai malformed api-version", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21-beta"), 400, azureErr("BadRequest", "API version not supported")},
		{"azure-openai v1 on classic", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions?api-version=v1"), 400, azureErr("BadRequest", "API version not supported")},
		{"azure-openai duplicate api-version", AzureOpenAI, chat, nil, target("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21&api-version=2024-10-21"), 400, azureErr("BadRequest", "more than once")},
		{"azure-openai v1 refuses a dated version", AzureOpenAI, chat, nil, func(s *spec) {
			s.target = "/openai/v1/chat/completions?api-version=2024-10-21"
			s.set("model", "gpt4o-prod")
		}, 400, azureErr("BadRequest", "API version not supported")},
		{"azure-ai missing api-version", AzureAI, chat, nil, target("/chat/completions"), 400, aiErr("BadRequest", "api-version")},
		{"azure-ai unknown api-version", AzureAI, chat, nil, target("/chat/completions?api-version=2024-10-21"), 400, aiErr("BadRequest", "API version not supported")},
		{"azure-ai duplicate api-version", AzureAI, chat, nil, target("/chat/completions?api-version=2025-04-01&api-version=2025-04-01"), 400, aiErr("BadRequest", "more than once")},
		{"openai duplicate api-version", OpenAI, chat, nil, target("/v1/chat/completions?api-version=a&api-version=b"), 400, openaiErr(nil, "more than once")},

		// credentials
		{"openai no key", OpenAI, chat, nil, header("Authorization", ""), 401, openaiErr("invalid_api_key", "didn't provide an API key")},
		{"openai wrong key", OpenAI, chat, nil, header("Authorization", "Bearer sk-wrong"), 401, openaiErr("invalid_api_key", "Incorrect API key")},
		{"openai not Bearer", OpenAI, chat, nil, header("Authorization", "Basic c2stb3BlbmFp"), 401, openaiErr("invalid_api_key", "Incorrect API key")},
		{"openai refuses a leaked api-key", OpenAI, chat, nil, header("api-key", "client-key"), 400, openaiErr(nil, "api-key")},
		{"eternalai wrong key", EternalAI, chat, nil, header("Authorization", "Bearer nope"), 401, openaiErr("invalid_api_key", "Incorrect API key")},
		{"azure-openai no key", AzureOpenAI, chat, nil, header("api-key", ""), 401, azureErr("401", "Access denied due to invalid subscription key")},
		{"azure-openai wrong key", AzureOpenAI, chat, nil, header("api-key", "nope"), 401, azureErr("401", "Access denied")},
		{"azure-openai classic Bearer is not api-key", AzureOpenAI, chat, nil, func(s *spec) {
			s.header.Del("api-key")
			s.header.Set("Authorization", "Bearer aoai-key")
		}, 401, azureErr("401", "Access denied")},
		{"azure-openai both credentials", AzureOpenAI, chat, nil, header("Authorization", "Bearer aoai-key"), 400, azureErr("BadRequest", "both api-key and Authorization")},
		{"azure-openai Entra provider refuses api-key", AzureOpenAI, chat, func(o *Options) { o.Bearer = true }, nil, 401, azureErr("401", "Access denied")},
		{"azure-ai no credential", AzureAI, chat, nil, func(s *spec) { s.header.Del("api-key"); s.header.Del("Authorization") }, 401, aiFlat("Unauthorized", 401)},
		{"azure-ai wrong api-key beside a right Bearer", AzureAI, chat, nil, header("api-key", "nope"), 401, aiFlat("Unauthorized", 401)},
		{"azure-ai wrong Bearer", AzureAI, chat, nil, func(s *spec) { s.header.Del("api-key"); s.header.Set("Authorization", "Bearer nope") }, 401, aiFlat("Unauthorized", 401)},

		// deployments
		{"azure-openai unknown deployment", AzureOpenAI, chat, nil, target("/openai/deployments/nope/chat/completions?api-version=2024-10-21"), 404, azureErr("DeploymentNotFound", "does not exist")},
		{"azure-openai v1 unknown model", AzureOpenAI, chat, nil, func(s *spec) { s.target = "/openai/v1/chat/completions"; s.set("model", "gpt-4o") }, 404, azureErr("DeploymentNotFound", "does not exist")},
		{"azure-openai v1 needs a model", AzureOpenAI, chat, nil, target("/openai/v1/chat/completions"), 400, openaiErr(nil, "you must provide a model parameter")},
		{"azure-ai unknown azureml-model-deployment", AzureAI, chat, nil, header("azureml-model-deployment", "nope"), 404, aiFlat("NotFound", 404)},
		{"azure-ai unknown model", AzureAI, chat, nil, field("model", "gpt-4o"), 400, aiErr("unknown_model", "Unknown model: gpt-4o")},
		{"openai unknown model", OpenAI, chat, func(o *Options) { o.Models = []string{"gpt-4o-mini"} }, nil, 404, openaiErr("model_not_found", "`gpt-4o` does not exist")},

		// transport
		{"Content-Length too short", OpenAI, chat, nil, header("Content-Length", "5"), 400, openaiErr(nil, "Content-Length")},
		{"Content-Length too long", AzureAI, chat, nil, header("Content-Length", "99999"), 400, aiErr("BadRequest", "Content-Length")},
		{"Content-Type text/plain", AzureOpenAI, chat, nil, header("Content-Type", "text/plain"), 400, openaiErr(nil, "Content-Type")},
		{"no Content-Type", EternalAI, chat, nil, header("Content-Type", ""), 400, openaiErr(nil, "Content-Type")},

		// body
		{"not JSON", OpenAI, chat, nil, body(`{"model":`), 400, openaiErr(nil, "could not parse the JSON body")},
		{"not an object", AzureOpenAI, chat, nil, body(`[{"role":"user"}]`), 400, openaiErr(nil, "could not parse the JSON body")},
		{"trailing data", EternalAI, chat, nil, body(`{"model":"m","messages":[{"role":"user","content":"x"}]} {}`), 400, openaiErr(nil, "could not parse")},
		{"repeated key", OpenAI, chat, nil, body(`{"model":"a","model":"b","messages":[{"role":"user","content":"x"}]}`), 400, openaiErr(nil, `repeats a top-level key "model"`)},
		{"azure-ai repeated key", AzureAI, chat, nil, body(`{"messages":[],"messages":[]}`), 400, aiErr("BadRequest", "repeats")},
		{"invalid UTF-8", OpenAI, chat, nil, body("{\"model\":\"m\xff\",\"messages\":[]}"), 400, openaiErr(nil, "UTF-8")},
		{"openai needs model", OpenAI, chat, nil, field("model", nil), 400, openaiErr(nil, "you must provide a model parameter")},
		{"eternalai needs model", EternalAI, completions, nil, field("model", nil), 400, openaiErr(nil, "you must provide a model parameter")},
		{"model must be a string", OpenAI, chat, nil, field("model", 4), 400, openaiErr("invalid_type", "Invalid type for 'model'")},
		{"openai needs messages", OpenAI, chat, nil, field("messages", nil), 400, openaiErr("missing_required_parameter", "Missing required parameter: 'messages'")},
		{"empty messages", AzureOpenAI, chat, nil, field("messages", []any{}), 400, openaiErr("invalid_value", "empty array")},
		{"message without role", EternalAI, chat, nil, field("messages", []any{map[string]any{"content": "x"}}), 400, openaiErr("invalid_value", "role")},
		{"azure-openai needs prompt", AzureOpenAI, completions, nil, field("prompt", nil), 400, openaiErr("missing_required_parameter", "'prompt'")},
		{"openai needs input", OpenAI, embeddings, nil, field("input", nil), 400, openaiErr("missing_required_parameter", "'input'")},
		{"stream must be a boolean", OpenAI, chat, nil, field("stream", "yes"), 400, openaiErr("invalid_type", "'stream'")},
		{"openai chain_id", OpenAI, chat, nil, field("chain_id", "45762"), 400, openaiErr(nil, "Unrecognized request argument supplied: chain_id")},
		{"azure-openai chain_id", AzureOpenAI, chat, nil, field("chain_id", "45762"), 400, openaiErr(nil, "Unrecognized request argument supplied: chain_id")},
		{"azure-ai chain_id even with pass-through", AzureAI, chat, nil, func(s *spec) {
			s.set("chain_id", "45762")
			s.header.Set("extra-parameters", "pass-through")
		}, 400, aiErr("BadRequest", "Unrecognized request argument supplied: chain_id")},
		{"eternalai numeric chain_id", EternalAI, chat, nil, field("chain_id", 45762), 400, openaiErr("invalid_type", "Invalid type for 'chain_id': expected a string, but got an integer")},
		{"openai data_sources", OpenAI, chat, nil, field("data_sources", []any{}), 400, openaiErr(nil, "Unrecognized request argument supplied: data_sources")},
		{"openai embeddings unknown key", OpenAI, embeddings, nil, field("input_type", "query"), 400, openaiErr(nil, "Unrecognized request argument supplied: input_type")},
		{"openai embeddings stream", OpenAI, embeddings, nil, field("stream", true), 400, openaiErr(nil, "Unrecognized request argument supplied: stream")},
		{"openai embeddings encoding_format", OpenAI, embeddings, nil, field("encoding_format", "int8"), 400, openaiErr("invalid_value", "encoding_format")},
		{"n above 128", AzureOpenAI, chat, nil, field("n", 129), 400, openaiErr("invalid_value", "'n'")},
		{"n zero", EternalAI, completions, nil, field("n", 0), 400, openaiErr("invalid_value", "'n'")},
		{"openai stream_options without stream", OpenAI, chat, nil, field("stream_options", map[string]any{"include_usage": true}), 400, openaiErr("invalid_value", "only allowed when 'stream' is enabled")},

		// azure-ai extra parameters and types
		{"azure-ai extra without header", AzureAI, chat, nil, field("n", 2), 400, aiErr("BadRequest", "Extra parameters ['n'] are not allowed when extra-parameters is not set or set to be 'error'")},
		{"azure-ai extras with error", AzureAI, chat, nil, func(s *spec) {
			s.body = `{"messages":[{"role":"user","content":"x"}],"user":"u","n":2}`
			s.header.Set("extra-parameters", "error")
		}, 400, aiErr("BadRequest", "Extra parameters ['user', 'n']")},
		{"azure-ai max_completion_tokens is extra", AzureAI, chat, nil, field("max_completion_tokens", 5), 400, aiErr("BadRequest", "['max_completion_tokens']")},
		{"azure-ai stream_options is extra", AzureAI, chat, nil, func(s *spec) { s.set("stream", true); s.set("stream_options", map[string]any{"include_usage": true}) }, 400, aiErr("BadRequest", "['stream_options']")},
		{"azure-ai embeddings user is extra", AzureAI, embeddings, nil, field("user", "u"), 400, aiErr("BadRequest", "['user']")},
		{"azure-ai modalities is extra before 2025-04-01", AzureAI, chat, nil, field("modalities", []string{"text"}), 400, aiErr("BadRequest", "['modalities']")},
		{"azure-ai ignore needs 2024-04-01-preview", AzureAI, chat, nil, header("extra-parameters", "ignore"), 400, aiErr("BadRequest", "'ignore'")},
		{"azure-ai unknown extra-parameters value", AzureAI, chat, nil, header("extra-parameters", "allow"), 400, aiErr("BadRequest", "'allow'")},
		{"azure-ai stop must be an array", AzureAI, chat, nil, field("stop", "END"), 422, ai422("invalid_value", "stop")},
		{"azure-ai stop must not be empty", AzureAI, completions, nil, field("stop", []string{}), 422, ai422("invalid_value", "stop")},
		{"azure-ai embeddings input must be an array", AzureAI, embeddings, nil, field("input", "hello"), 422, ai422("invalid_value", "input")},
		{"azure-ai embeddings input of tokens", AzureAI, embeddings, nil, field("input", []int{1, 2}), 422, ai422("invalid_value", "input")},
		{"azure-ai needs messages", AzureAI, chat, nil, field("messages", nil), 422, ai422("missing", "messages")},
		{"azure-ai model must be a string", AzureAI, chat, nil, field("model", 1), 422, ai422("invalid_type", "model")},

		// the injection header itself
		{"unknown x-mock-fail", OpenAI, chat, nil, header("x-mock-fail", "500"), 400, openaiErr(nil, "x-mock-fail")},
	}
	for _, r := range rows {
		t.Run(r.d+"/"+r.name, func(t *testing.T) {
			opts := testOpts[r.d]
			if r.opts != nil {
				r.opts(&opts)
			}
			p := New(r.d, opts)
			s := validSpec(r.d, r.op)
			if r.edit != nil {
				r.edit(&s)
			}
			rec := serve(p, s)
			if rec.status != r.status {
				t.Fatalf("status %d, want %d: %s", rec.status, r.status, rec.body())
			}
			if ct := rec.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content-type %q", ct)
			}
			if r.d == AzureAI && rec.header.Get("x-ms-error-code") == "" {
				t.Errorf("azure-ai error without x-ms-error-code")
			}
			r.shape(t, decode(t, rec.body()))
			if n := len(p.Received()); n != 1 {
				t.Errorf("recorded %d requests", n)
			}
		})
	}
}

// streamSpec is a valid streaming request.
func streamSpec(d, op string) spec {
	s := validSpec(d, op)
	s.set("stream", true)
	return s
}

// checkStreamWrites: several writes, at least one of which ends inside an event.
func checkStreamWrites(t *testing.T, rec *chunkRecorder) {
	t.Helper()
	if len(rec.writes) < 3 || rec.flushes < len(rec.writes) {
		t.Errorf("%d writes, %d flushes", len(rec.writes), rec.flushes)
	}
	split := 0
	for _, w := range rec.writes[:len(rec.writes)-1] {
		if !bytes.HasSuffix(w, []byte("\n\n")) {
			split++
		}
	}
	if split == 0 {
		t.Errorf("no write ends inside an event")
	}
}

// TestStreams: every dialect's stream reassembles into the echo and ends with exactly one [DONE].
func TestStreams(t *testing.T) {
	for _, d := range Dialects {
		for _, op := range []string{chat, completions} {
			if !strings.Contains(strings.Join(operationsOf[d], ","), op) {
				continue
			}
			for _, usage := range []bool{false, true} {
				if usage && (d == AzureAI) {
					continue // stream_options is an extra parameter there; usage comes anyway
				}
				t.Run(fmt.Sprintf("%s/%s/include_usage=%v", d, op, usage), func(t *testing.T) {
					s := streamSpec(d, op)
					s.set("messages", []any{map[string]any{"role": "user", "content": "héllo wörld ✓ mock"}})
					s.set("prompt", "héllo wörld ✓ mock")
					if op == completions {
						s.set("messages", nil)
					} else {
						s.set("prompt", nil)
					}
					if usage {
						s.set("stream_options", map[string]any{"include_usage": true})
					}
					rec := serve(New(d, testOpts[d]), s)
					if rec.status != 200 {
						t.Fatalf("status %d: %s", rec.status, rec.body())
					}
					if ct := rec.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
						t.Errorf("content-type %q", ct)
					}
					checkStreamWrites(t, rec)
					events, tail := sseEvents(t, rec.body())
					if tail != "" || countDone(events) != 1 || events[len(events)-1] != "[DONE]" {
						t.Fatalf("want exactly one final [DONE], tail %q; events %q", tail, events)
					}
					if got := streamText(t, events); got != "echo: héllo wörld ✓ mock" {
						t.Errorf("text %q", got)
					}
					checkStreamShape(t, d, op, usage, events[:len(events)-1])
				})
			}
		}
	}
}

func checkStreamShape(t *testing.T, d, op string, usage bool, events []string) {
	t.Helper()
	var ms []map[string]any
	for _, e := range events {
		ms = append(ms, decode(t, []byte(e)))
	}
	first, last := ms[0], ms[len(ms)-1]
	wantObject := "chat.completion.chunk"
	if op == completions {
		wantObject = "text_completion"
	} else if d == AzureAI {
		wantObject = "chat.completion"
	}
	usageChunks := 0
	for _, m := range ms {
		if u, ok := m["usage"].(map[string]any); ok && u != nil {
			usageChunks++
		}
		if m["object"] != wantObject && !(d == AzureOpenAI && m["object"] == "") {
			t.Errorf("object %v", m["object"])
		}
	}
	switch d {
	case OpenAI, EternalAI:
		if op == chat && get(first, "choices.0.delta.role") != "assistant" {
			t.Errorf("first chunk %v", first)
		}
		if usage != (usageChunks == 1) || (usage && len(last["choices"].([]any)) != 0) {
			t.Errorf("usage chunks %d (include_usage %v); last %v", usageChunks, usage, last)
		}
		if usage && !has(ms[0], "usage") {
			t.Errorf("with include_usage every chunk carries usage: null")
		}
		if d == EternalAI && !has(last, "onchain_data.infer_tx") {
			t.Errorf("eternalai: last chunk lacks onchain_data: %v", last)
		}
	case AzureOpenAI:
		if first["object"] != "" || first["id"] != "" || get(first, "prompt_filter_results.0.prompt_index") != float64(0) ||
			len(first["choices"].([]any)) != 0 {
			t.Errorf("first chunk is not the prompt annotation: %v", first)
		}
		if last["object"] != "" || !has(last, "choices.0.content_filter_offsets") {
			t.Errorf("last chunk is not the async filter annotation: %v", last)
		}
		if get(ms[2], "choices.0.content_filter_results.hate.severity") != "safe" {
			t.Errorf("content chunk without content_filter_results: %v", ms[2])
		}
		if usage != (usageChunks == 1) {
			t.Errorf("usage chunks %d", usageChunks)
		}
	case AzureAI:
		if op == chat && (get(first, "choices.0.delta.role") != "assistant" || get(first, "choices.0.delta.content") != "") {
			t.Errorf("first delta %v", get(first, "choices.0.delta"))
		}
		if get(last, "choices.0.finish_reason") != "stop" || get(last, "usage.total_tokens") == nil || usageChunks != 1 {
			t.Errorf("last chunk %v", last)
		}
		if id, _ := first["id"].(string); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || has(first, "system_fingerprint") {
			t.Errorf("first chunk %v", first)
		}
	}
}

// TestStreamToolCalls: Azure AI's tool-call delta lacks index; the others carry it and split the arguments.
func TestStreamToolCalls(t *testing.T) {
	for _, d := range Dialects {
		t.Run(d, func(t *testing.T) {
			s := streamSpec(d, chat)
			s.set("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}})
			rec := serve(New(d, testOpts[d]), s)
			events, _ := sseEvents(t, rec.body())
			if countDone(events) != 1 {
				t.Fatalf("events %q", events)
			}
			var args strings.Builder
			var finish any
			calls := 0
			for _, e := range events[:len(events)-1] {
				m := decode(t, []byte(e))
				if f := get(m, "choices.0.finish_reason"); f != nil {
					finish = f
				}
				tc := get(m, "choices.0.delta.tool_calls.0")
				if tc == nil {
					continue
				}
				calls++
				if has(tc, "index") == (d == AzureAI) {
					t.Errorf("%s: index present = %v in %v", d, has(tc, "index"), tc)
				}
				if name := get(tc, "function.name"); name != nil && name != "lookup" {
					t.Errorf("name %v", name)
				}
				args.WriteString(fmt.Sprint(get(tc, "function.arguments")))
			}
			if finish != "tool_calls" || !json.Valid([]byte(args.String())) || !strings.Contains(args.String(), "hello mock") {
				t.Errorf("finish %v, arguments %q", finish, args.String())
			}
			if (d == AzureAI) != (calls == 1) {
				t.Errorf("%d tool-call deltas", calls)
			}
		})
	}
}

// TestInjectedErrors: x-mock-fail status injections answer in the dialect's shape and are recorded.
func TestInjectedErrors(t *testing.T) {
	rows := []struct {
		d, fail string
		status  int
		shape   errShape
		header  [2]string
	}{
		{OpenAI, "401", 401, openaiErr("invalid_api_key", "API key"), [2]string{}},
		{AzureOpenAI, "401", 401, azureErr("401", "Access denied"), [2]string{}},
		{AzureAI, "401", 401, aiFlat("Unauthorized", 401), [2]string{"x-ms-error-code", "Unauthorized"}},
		{EternalAI, "401", 401, openaiErr("invalid_api_key", "API key"), [2]string{}},
		{OpenAI, "404", 404, openaiErr("model_not_found", "does not exist"), [2]string{}},
		{AzureOpenAI, "404", 404, azureErr("DeploymentNotFound", "does not exist"), [2]string{}},
		{AzureAI, "404", 404, aiFlat("NotFound", 404), [2]string{"x-ms-error-code", "NotFound"}},
		{EternalAI, "404", 404, openaiErr("model_not_found", "does not exist"), [2]string{}},
		{OpenAI, "422", 400, openaiErr(nil, "response_format"), [2]string{}},
		{AzureOpenAI, "422", 400, openaiErr(nil, "response_format"), [2]string{}},
		{AzureAI, "422", 422, func(t *testing.T, m map[string]any) {
			want := `{"status":422,"code":"parameter_not_supported","detail":{"loc":["body","response_format"],"input":"json_object"},"message":"One of the parameters contain invalid values."}`
			if got := string(mustJSON(m)); got != string(mustJSON(decode(t, []byte(want)))) {
				t.Errorf("got %s", got)
			}
		}, [2]string{"x-ms-error-code", "parameter_not_supported"}},
		{EternalAI, "422", 400, openaiErr(nil, "response_format"), [2]string{}},
		{OpenAI, "429", 429, openaiErr("rate_limit_exceeded", "Rate limit reached"), [2]string{"Retry-After", "2"}},
		{AzureOpenAI, "429", 429, azureErr("429", "have exceeded token rate limit"), [2]string{"Retry-After", "2"}},
		{AzureAI, "429", 429, aiFlat("Too Many Requests", 429), [2]string{"Retry-After", "2"}},
		{EternalAI, "429", 429, openaiErr("rate_limit_exceeded", "Rate limit"), [2]string{"Retry-After", "2"}},
	}
	for _, r := range rows {
		t.Run(r.d+"/"+r.fail, func(t *testing.T) {
			p := New(r.d, testOpts[r.d])
			s := validSpec(r.d, chat)
			s.header.Set("x-mock-fail", r.fail)
			rec := serve(p, s)
			if rec.status != r.status || rec.header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %q: %s", rec.status, rec.header.Get("Content-Type"), rec.body())
			}
			r.shape(t, decode(t, rec.body()))
			if r.header[0] != "" && rec.header.Get(r.header[0]) != r.header[1] {
				t.Errorf("%s = %q", r.header[0], rec.header.Get(r.header[0]))
			}
			if got := p.Received(); len(got) != 1 || got[0].Header.Get("x-mock-fail") != r.fail {
				t.Errorf("not recorded: %v", got)
			}
		})
	}
	t.Run("context-length", func(t *testing.T) {
		// Each dialect's wording is one the filter recognises, so a context-length failover can be tried
		// against every mock.
		for _, d := range Dialects {
			s := validSpec(d, chat)
			s.header.Set("x-mock-fail", "context-length")
			rec := serve(New(d, testOpts[d]), s)
			if rec.status != 400 || !translate.IsContextLengthError(rec.status, rec.body()) {
				t.Errorf("%s: %d %s, want a 400 the filter reads as a context-length error", d, rec.status, rec.body())
			}
		}
	})
	t.Run("502-html", func(t *testing.T) {
		for _, d := range Dialects {
			s := validSpec(d, chat)
			s.header.Set("x-mock-fail", "502-html")
			rec := serve(New(d, testOpts[d]), s)
			if rec.status != 502 || rec.header.Get("Content-Type") != "text/html" ||
				!bytes.Contains(rec.body(), []byte("<center>nginx</center>")) {
				t.Errorf("%s: %d %q %s", d, rec.status, rec.header.Get("Content-Type"), rec.body())
			}
		}
	})
}

// TestInjectedStreamDamage: cut-stream, no-done, huge-event and gzip.
func TestInjectedStreamDamage(t *testing.T) {
	for _, d := range Dialects {
		t.Run(d+"/cut-stream", func(t *testing.T) {
			s := streamSpec(d, chat)
			s.header.Set("x-mock-fail", "cut-stream")
			rec := serve(New(d, testOpts[d]), s)
			events, tail := sseEvents(t, rec.body())
			if rec.status != 200 || countDone(events) != 0 || tail == "" || !strings.HasPrefix(tail, "data: {") || json.Valid([]byte(tail[6:])) {
				t.Errorf("want a stream cut inside an event: events %q tail %q", events, tail)
			}
		})
		t.Run(d+"/cut-stream non-streaming", func(t *testing.T) {
			s := validSpec(d, chat)
			s.header.Set("x-mock-fail", "cut-stream")
			rec := serve(New(d, testOpts[d]), s)
			if json.Valid(rec.body()) || rec.header.Get("Content-Length") == fmt.Sprint(len(rec.body())) {
				t.Errorf("want a truncated body: CL %s, %d bytes", rec.header.Get("Content-Length"), len(rec.body()))
			}
		})
		t.Run(d+"/no-done", func(t *testing.T) {
			s := streamSpec(d, chat)
			s.header.Set("x-mock-fail", "no-done")
			rec := serve(New(d, testOpts[d]), s)
			events, tail := sseEvents(t, rec.body())
			if countDone(events) != 0 || tail != "" || streamText(t, events) != "echo: hello mock" {
				t.Errorf("events %q tail %q", events, tail)
			}
		})
		t.Run(d+"/huge-event", func(t *testing.T) {
			s := streamSpec(d, chat)
			s.header.Set("x-mock-fail", "huge-event")
			rec := serve(New(d, testOpts[d]), s)
			events, _ := sseEvents(t, rec.body())
			big := 0
			for _, e := range events {
				if len(e) >= hugeSize {
					big++
				}
			}
			text := streamText(t, events)
			if big != 1 || countDone(events) != 1 || len(text) != hugeSize+len("echo: hello mock") {
				t.Errorf("%d huge events, %d [DONE], text %d bytes", big, countDone(events), len(text))
			}
		})
		t.Run(d+"/gzip stream", func(t *testing.T) {
			s := streamSpec(d, chat)
			s.header.Set("x-mock-fail", "gzip")
			rec := serve(New(d, testOpts[d]), s)
			if rec.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("content-encoding %q", rec.header.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(rec.body()))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			events, _ := sseEvents(t, plain)
			if countDone(events) != 1 || streamText(t, events) != "echo: hello mock" {
				t.Errorf("events %q", events)
			}
		})
		t.Run(d+"/gzip json", func(t *testing.T) {
			s := validSpec(d, completions)
			s.header.Set("x-mock-fail", "gzip")
			rec := serve(New(d, testOpts[d]), s)
			if rec.header.Get("Content-Encoding") != "gzip" || rec.header.Get("Content-Type") != "application/json" {
				t.Fatalf("headers %v", rec.header)
			}
			zr, err := gzip.NewReader(bytes.NewReader(rec.body()))
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := io.ReadAll(zr)
			checkAnswerShape(t, d, completions, decode(t, plain))
		})
	}
}

// TestReceived: requests are recorded in order, as received, including rejected ones; Reset forgets them.
func TestReceived(t *testing.T) {
	p := New(AzureOpenAI, testOpts[AzureOpenAI])
	ok := validSpec(AzureOpenAI, chat)
	ok.header.Set("OpenAI-Organization", "org-9")
	bad := validSpec(AzureOpenAI, embeddings)
	bad.header.Set("api-key", "wrong")
	serve(p, ok)
	serve(p, bad)
	got := p.Received()
	if len(got) != 2 {
		t.Fatalf("%d recorded", len(got))
	}
	r := got[0]
	if r.Method != "POST" || r.Path != "/openai/deployments/gpt4o-prod/chat/completions" ||
		r.RawQuery != "api-version=2024-10-21" || string(r.Body) != ok.body ||
		r.Header.Get("OpenAI-Organization") != "org-9" || r.Host != "mock.local" {
		t.Errorf("recorded %+v", r)
	}
	if got[1].Header.Get("api-key") != "wrong" || !strings.HasSuffix(got[1].Path, "/embeddings") {
		t.Errorf("second %+v", got[1])
	}
	got[0].Header.Set("api-key", "mutated")
	got[0].Body[0] = 'X'
	if again := p.Received(); again[0].Header.Get("api-key") != "aoai-key" || string(again[0].Body) != ok.body {
		t.Errorf("Received shares its header with the caller")
	}
	p.Reset()
	if n := len(p.Received()); n != 0 {
		t.Errorf("%d after Reset", n)
	}

	// concurrent use
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(p, validSpec(AzureOpenAI, completions))
			_ = p.Received()
		}()
	}
	wg.Wait()
	if n := len(p.Received()); n != 32 {
		t.Errorf("%d recorded concurrently", n)
	}
}

// TestOverHTTP runs a provider behind a real server: a stream arrives whole, a cut non-streaming answer
// fails on the client, and the declared Content-Length is checked by the HTTP layer.
func TestOverHTTP(t *testing.T) {
	p := New(OpenAI, testOpts[OpenAI])
	srv := httptest.NewServer(p)
	defer srv.Close()
	send := func(s spec) (*http.Response, []byte, error) {
		r, err := http.NewRequest(s.method, srv.URL+s.target, strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header = s.header
		resp, err := srv.Client().Do(r)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}

	resp, b, err := send(streamSpec(OpenAI, chat))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	events, _ := sseEvents(t, b)
	if countDone(events) != 1 || streamText(t, events) != "echo: hello mock" {
		t.Errorf("events %q", events)
	}

	cut := validSpec(OpenAI, chat)
	cut.header.Set("x-mock-fail", "cut-stream")
	if _, _, err := send(cut); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut answer: err %v, want unexpected EOF", err)
	}

	resp, b, err = send(validSpec(OpenAI, embeddings))
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("x-request-id") == "" {
		t.Fatalf("embeddings: %v %v %s", resp, err, b)
	}
	if got := p.Received()[2]; got.Header.Get("Authorization") != "Bearer sk-openai" || got.Header.Get("Content-Length") == "" {
		t.Errorf("recorded %+v", got)
	}
}

// TestNewPanicsOnUnknownDialect guards the constructor.
func TestNewPanicsOnUnknownDialect(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	New("bedrock", Options{})
}

// TestBasePath: a configured base path replaces the default.
func TestBasePath(t *testing.T) {
	p := New(AzureAI, Options{APIKey: "k", BasePath: "/api/models/"})
	s := validSpec(AzureAI, chat)
	s.header.Set("api-key", "k")
	s.header.Set("Authorization", "Bearer k")
	s.target = "/api/models/chat/completions?api-version=2025-04-01"
	if rec := serve(p, s); rec.status != 200 {
		t.Errorf("status %d: %s", rec.status, rec.body())
	}
	s.target = "/chat/completions?api-version=2025-04-01"
	if rec := serve(p, s); rec.status != 404 {
		t.Errorf("root served with a base path: %d", rec.status)
	}
}

// ---- the Responses API ------------------------------------------------------------------------------------

// respSurfaces are the Responses routes of the mocks: openai, and the two surfaces of azure-openai.
var respSurfaces = []struct {
	name    string
	d       string
	classic bool
}{
	{"openai", OpenAI, false},
	{"azure-openai v1", AzureOpenAI, false},
	{"azure-openai classic", AzureOpenAI, true},
}

var lookupTool = map[string]any{"type": "function", "name": "lookup", "description": "looks a text up",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}

// checkResponse checks a Response's envelope and returns its output items.
func checkResponse(t *testing.T, d string, m map[string]any, status string) []any {
	t.Helper()
	id, _ := m["id"].(string)
	if m["object"] != "response" || !regexp.MustCompile(`^resp_[0-9a-f]{50}$`).MatchString(id) || m["status"] != status {
		t.Errorf("object %v id %q status %v, want a %s response", m["object"], id, m["status"], status)
	}
	if _, ok := m["created_at"].(float64); !ok {
		t.Errorf("created_at %v", m["created_at"])
	}
	if (status == "completed") != (m["completed_at"] != nil) {
		t.Errorf("completed_at %v in status %s", m["completed_at"], status)
	}
	wantModel := "gpt-4o"
	if d == AzureOpenAI {
		wantModel = "gpt-4o-2024-08-06" // the model behind the deployment
	}
	if m["model"] != wantModel {
		t.Errorf("model %v, want %s", m["model"], wantModel)
	}
	for _, k := range []string{"error", "incomplete_details", "instructions", "tools", "tool_choice", "parallel_tool_calls",
		"metadata", "temperature", "top_p", "store", "text", "usage", "output"} {
		if !has(m, k) {
			t.Errorf("Response lacks %s", k)
		}
	}
	in, out, total := get(m, "usage.input_tokens"), get(m, "usage.output_tokens"), get(m, "usage.total_tokens")
	if i, _ := in.(float64); i <= 0 || out == nil || total != i+out.(float64) {
		t.Errorf("usage %v", m["usage"])
	}
	if get(m, "usage.input_tokens_details.cached_tokens") != float64(0) || get(m, "usage.output_tokens_details.reasoning_tokens") != float64(0) {
		t.Errorf("usage details %v", m["usage"])
	}
	output, _ := m["output"].([]any)
	return output
}

// checkMessage checks a message output item and returns its text.
func checkMessage(t *testing.T, item any, status string) string {
	t.Helper()
	id, _ := get(item, "id").(string)
	if get(item, "type") != "message" || !strings.HasPrefix(id, "msg_") || get(item, "role") != "assistant" ||
		get(item, "status") != status || get(item, "content.0.type") != "output_text" || get(item, "content.0.annotations") == nil {
		t.Errorf("message item %v", item)
	}
	s, _ := get(item, "content.0.text").(string)
	return s
}

// checkCall checks a function_call output item and returns its call_id and arguments.
func checkCall(t *testing.T, item any, name string) (callID string, args map[string]any) {
	t.Helper()
	id, _ := get(item, "id").(string)
	callID, _ = get(item, "call_id").(string)
	if get(item, "type") != "function_call" || !strings.HasPrefix(id, "fc_") || !strings.HasPrefix(callID, "call_") ||
		get(item, "name") != name || get(item, "status") != "completed" {
		t.Errorf("function_call item %v", item)
	}
	raw, _ := get(item, "arguments").(string)
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Errorf("arguments %q: %v", raw, err)
	}
	return callID, args
}

// TestResponses: valid Responses requests on every surface, answered with a Response.
func TestResponses(t *testing.T) {
	for _, sf := range respSurfaces {
		t.Run(sf.name, func(t *testing.T) {
			p := New(sf.d, testOpts[sf.d])
			post := func(t *testing.T, s spec) map[string]any {
				t.Helper()
				rec := serve(p, s)
				if rec.status != 200 || rec.header.Get("Content-Type") != "application/json" {
					t.Fatalf("status %d %q: %s", rec.status, rec.header.Get("Content-Type"), rec.body())
				}
				return decode(t, rec.body())
			}

			t.Run("text", func(t *testing.T) {
				m := post(t, respSpec(sf.d, sf.classic))
				out := checkResponse(t, sf.d, m, "completed")
				if len(out) != 1 || checkMessage(t, out[0], "completed") != "echo: hello mock" {
					t.Errorf("output %v", out)
				}
				if m["store"] != true || m["tool_choice"] != "auto" || m["parallel_tool_calls"] != true ||
					get(m, "text.format.type") != "text" || m["incomplete_details"] != nil {
					t.Errorf("defaults not echoed: %v", m)
				}
			})

			t.Run("items, instructions and echoes", func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("instructions", "Be terse.")
				s.set("input", []any{
					map[string]any{"role": "developer", "content": "Answer in English."},
					map[string]any{"type": "message", "role": "user", "content": []any{
						map[string]any{"type": "input_text", "text": "first"},
						map[string]any{"type": "input_image", "image_url": "https://example.com/a.png"},
					}},
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "ok"}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "second turn"}}},
				})
				s.set("temperature", 0.5)
				s.set("metadata", map[string]any{"k": "v"})
				s.set("store", false)
				s.set("text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "r", "schema": map[string]any{"type": "object"}}})
				m := post(t, s)
				out := checkResponse(t, sf.d, m, "completed")
				if got := checkMessage(t, out[0], "completed"); got != "echo: second turn" {
					t.Errorf("text %q", got)
				}
				if m["instructions"] != "Be terse." || m["temperature"] != 0.5 || get(m, "metadata.k") != "v" ||
					m["store"] != false || get(m, "text.format.name") != "r" {
					t.Errorf("echoes %v", m)
				}
			})

			t.Run("function call, then its output", func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("tools", []any{lookupTool})
				s.set("store", false)
				s.set("input", "Look up Paris")
				m := post(t, s)
				out := checkResponse(t, sf.d, m, "completed")
				if len(out) != 1 {
					t.Fatalf("output %v", out)
				}
				callID, args := checkCall(t, out[0], "lookup")
				if args["text"] != "Look up Paris" {
					t.Errorf("arguments %v", args)
				}
				// the second turn: the whole conversation, the call replayed as it came
				s.set("input", []any{
					map[string]any{"role": "user", "content": "Look up Paris"},
					out[0],
					map[string]any{"type": "function_call_output", "call_id": callID, "output": `{"chars":13}`},
				})
				m = post(t, s)
				out = checkResponse(t, sf.d, m, "completed")
				if len(out) != 1 || checkMessage(t, out[0], "completed") != `echo: {"chars":13}` {
					t.Errorf("output %v", out)
				}
			})

			t.Run("tool_choice", func(t *testing.T) {
				other := map[string]any{"type": "function", "name": "other"}
				s := respSpec(sf.d, sf.classic)
				s.set("tools", []any{lookupTool, other, map[string]any{"type": "web_search"}})
				s.set("tool_choice", map[string]any{"type": "function", "name": "other"})
				if out := checkResponse(t, sf.d, post(t, s), "completed"); len(out) != 1 || get(out[0], "name") != "other" {
					t.Errorf("named choice: %v", out)
				}
				s.set("tool_choice", "none")
				if out := checkResponse(t, sf.d, post(t, s), "completed"); len(out) != 1 || get(out[0], "type") != "message" {
					t.Errorf("none: %v", out)
				}
				s.set("tools", []any{map[string]any{"type": "web_search"}})
				s.set("tool_choice", nil)
				if out := checkResponse(t, sf.d, post(t, s), "completed"); len(out) != 1 || get(out[0], "type") != "message" {
					t.Errorf("built-in tools only: %v", out)
				}
			})

			t.Run("previous_response_id and item_reference", func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("tools", []any{lookupTool})
				s.set("input", "Look up Rome")
				first := post(t, s) // store defaults to true
				out := checkResponse(t, sf.d, first, "completed")
				callID, _ := checkCall(t, out[0], "lookup")

				s.set("previous_response_id", first["id"])
				s.set("input", []any{map[string]any{"type": "function_call_output", "call_id": callID, "output": "found"}})
				second := post(t, s)
				if out := checkResponse(t, sf.d, second, "completed"); checkMessage(t, out[0], "completed") != "echo: found" ||
					second["previous_response_id"] != first["id"] {
					t.Errorf("continued: %v", second)
				}

				// the same turn again, the call named by reference instead of by previous_response_id
				s.set("previous_response_id", nil)
				s.set("input", []any{
					map[string]any{"role": "user", "content": "Look up Rome"},
					map[string]any{"type": "item_reference", "id": get(out[0], "id")},
					map[string]any{"type": "function_call_output", "call_id": callID, "output": "found again"},
				})
				if out := checkResponse(t, sf.d, post(t, s), "completed"); checkMessage(t, out[0], "completed") != "echo: found again" {
					t.Errorf("by reference: %v", out)
				}
			})

			t.Run("max_output_tokens cut", func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("input", strings.Repeat("word ", 40))
				s.set("max_output_tokens", 16)
				m := post(t, s)
				out := checkResponse(t, sf.d, m, "incomplete")
				text := checkMessage(t, out[0], "incomplete")
				if get(m, "incomplete_details.reason") != "max_output_tokens" || len(strings.Fields(text)) != 16 ||
					get(m, "usage.output_tokens") != float64(16) || m["max_output_tokens"] != float64(16) {
					t.Errorf("incomplete %v", m)
				}
			})
		})
	}
}

// TestResponsesStore: store false keeps nothing, and the store forgets the oldest responses first.
func TestResponsesStore(t *testing.T) {
	p := New(OpenAI, testOpts[OpenAI])
	s := respSpec(OpenAI, false)
	s.set("store", false)
	m := decode(t, serve(p, s).body())
	s.set("store", nil)
	s.set("previous_response_id", m["id"])
	rec := serve(p, s)
	if rec.status != 400 {
		t.Fatalf("a response created with store false was found: %d %s", rec.status, rec.body())
	}
	openaiErr("previous_response_not_found", "not found")(t, decode(t, rec.body()))

	s.set("previous_response_id", nil)
	first := decode(t, serve(p, s).body())
	for range maxStored {
		serve(p, s)
	}
	s.set("previous_response_id", first["id"])
	if rec := serve(p, s); rec.status != 400 {
		t.Errorf("the oldest response outlived %d newer ones: %d", maxStored, rec.status)
	}
}

// TestResponsesStreams: the event sequence of a text and a function-call answer on every surface.
func TestResponsesStreams(t *testing.T) {
	for _, sf := range respSurfaces {
		for _, tools := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tools=%v", sf.name, tools), func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("stream", true)
				s.set("input", "héllo wörld ✓ mock")
				if tools {
					s.set("tools", []any{lookupTool})
				}
				rec := serve(New(sf.d, testOpts[sf.d]), s)
				if rec.status != 200 || !strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d %q: %s", rec.status, rec.header.Get("Content-Type"), rec.body())
				}
				checkStreamWrites(t, rec)
				events, tail := respEvents(t, rec.body())
				if tail != "" || strings.Contains(string(rec.body()), "[DONE]") {
					t.Fatalf("a Responses stream ends after its terminal event, without [DONE]: tail %q", tail)
				}
				var names []string
				for i, e := range events {
					names = append(names, e.name)
					if e.data["sequence_number"] != float64(i) {
						t.Errorf("event %d (%s) has sequence_number %v", i, e.name, e.data["sequence_number"])
					}
				}
				want := []string{"response.created", "response.in_progress", "response.output_item.added",
					"response.content_part.added", "response.output_text.delta", "response.output_text.done",
					"response.content_part.done", "response.output_item.done", "response.completed"}
				delta := "response.output_text.delta"
				if tools {
					want = []string{"response.created", "response.in_progress", "response.output_item.added",
						"response.function_call_arguments.delta", "response.function_call_arguments.done",
						"response.output_item.done", "response.completed"}
					delta = "response.function_call_arguments.delta"
				}
				// collapse the run of deltas
				var got []string
				deltas := 0
				for _, n := range names {
					if n == delta {
						deltas++
						if len(got) > 0 && got[len(got)-1] == n {
							continue
						}
					}
					got = append(got, n)
				}
				if strings.Join(got, " ") != strings.Join(want, " ") || deltas < 2 {
					t.Fatalf("events %v", names)
				}

				created, final := events[0].data["response"], events[len(events)-1].data["response"]
				if get(created, "status") != "in_progress" || len(get(created, "output").([]any)) != 0 || get(created, "usage") != nil {
					t.Errorf("created %v", created)
				}
				if get(created, "id") != get(final, "id") || get(events[1].data, "response.id") != get(final, "id") {
					t.Errorf("the response id changes along the stream")
				}
				out := checkResponse(t, sf.d, final.(map[string]any), "completed")
				added, done := events[2].data, events[len(events)-2].data
				itemID := get(added, "item.id")
				if len(out) != 1 || get(out[0], "id") != itemID || get(done, "item.id") != itemID ||
					get(added, "output_index") != float64(0) || get(added, "item.status") != "in_progress" {
					t.Fatalf("items: added %v done %v output %v", added, done, out)
				}
				if !reflect.DeepEqual(get(done, "item"), out[0]) {
					t.Errorf("output_item.done %v differs from the final output %v", get(done, "item"), out[0])
				}
				var text strings.Builder
				for _, e := range events[3 : len(events)-2] {
					if get(e.data, "item_id") != itemID || get(e.data, "output_index") != float64(0) {
						t.Errorf("%s names item %v at %v", e.name, get(e.data, "item_id"), get(e.data, "output_index"))
					}
					if e.name == delta {
						text.WriteString(get(e.data, "delta").(string))
						if get(e.data, "obfuscation") == nil {
							t.Errorf("delta without obfuscation: %s", e.raw)
						}
					}
				}
				if tools {
					_, args := checkCall(t, out[0], "lookup")
					if text.String() != get(out[0], "arguments") || args["text"] != "héllo wörld ✓ mock" ||
						get(events[len(events)-3].data, "arguments") != text.String() {
						t.Errorf("arguments: deltas %q, item %v", text.String(), out[0])
					}
					return
				}
				if text.String() != "echo: héllo wörld ✓ mock" || checkMessage(t, out[0], "completed") != text.String() ||
					get(events[len(events)-4].data, "text") != text.String() || get(events[len(events)-3].data, "part.text") != text.String() {
					t.Errorf("text: deltas %q, item %v", text.String(), out[0])
				}
			})
		}
	}
	t.Run("incomplete, without obfuscation", func(t *testing.T) {
		s := respSpec(OpenAI, false)
		s.set("stream", true)
		s.set("stream_options", map[string]any{"include_obfuscation": false})
		s.set("input", strings.Repeat("word ", 40))
		s.set("max_output_tokens", 16)
		events, _ := respEvents(t, serve(New(OpenAI, testOpts[OpenAI]), s).body())
		last := events[len(events)-1]
		if last.name != "response.incomplete" || get(last.data, "response.incomplete_details.reason") != "max_output_tokens" ||
			get(last.data, "response.output.0.status") != "incomplete" {
			t.Errorf("last event %s", last.raw)
		}
		for _, e := range events {
			if strings.Contains(e.raw, "obfuscation") {
				t.Errorf("obfuscation after include_obfuscation false: %s", e.raw)
			}
		}
	})
	t.Run("cut-stream", func(t *testing.T) {
		s := respSpec(AzureOpenAI, false)
		s.set("stream", true)
		s.header.Set("x-mock-fail", "cut-stream")
		events, tail := respEvents(t, serve(New(AzureOpenAI, testOpts[AzureOpenAI]), s).body())
		if tail == "" || events[len(events)-1].name == "response.completed" {
			t.Errorf("want a stream cut inside an event before its end: tail %q", tail)
		}
	})
}

// TestResponsesRejects: what the Responses routes refuse, with the service's status and error shape.
func TestResponsesRejects(t *testing.T) {
	type row struct {
		name    string
		d       string
		classic bool
		edit    func(s *spec)
		status  int
		shape   errShape
	}
	target := func(t string) func(s *spec) { return func(s *spec) { s.target = t } }
	field := func(k string, v any) func(s *spec) { return func(s *spec) { s.set(k, v) } }
	input := func(items ...any) func(s *spec) { return func(s *spec) { s.set("input", items) } }
	call := map[string]any{"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"}
	rows := []row{
		// routes
		{"eternalai has no Responses", EternalAI, false, nil, 404, openaiErr(nil, "Invalid URL (POST /v1/responses)")},
		{"azure-ai has no Responses", AzureAI, false, nil, 404, aiFlat("NotFound", 404)},
		{"GET", OpenAI, false, func(s *spec) { s.method = http.MethodGet }, 404, openaiErr(nil, "Invalid URL (GET /v1/responses)")},
		{"azure deployment route", AzureOpenAI, true, target("/openai/deployments/gpt4o-prod/responses?api-version=2025-04-01-preview"), 404, azureErr("404", "Resource not found")},

		// api-version
		{"azure classic without api-version", AzureOpenAI, true, target("/openai/responses"), 404, azureErr("404", "Resource not found")},
		{"azure classic GA api-version", AzureOpenAI, true, target("/openai/responses?api-version=2024-10-21"), 400, azureErr("BadRequest", "Azure OpenAI Responses API is enabled only for api-version 2025-03-01-preview and later")},
		{"azure classic api-version before 2025-03-01-preview", AzureOpenAI, true, target("/openai/responses?api-version=2025-02-01-preview"), 400, azureErr("BadRequest", "enabled only for api-version 2025-03-01-preview and later")},
		{"azure classic unknown api-version", AzureOpenAI, true, target("/openai/responses?api-version=2025-03-02-preview"), 400, azureErr("BadRequest", "API version not supported")},
		{"azure classic api-version=v1", AzureOpenAI, true, target("/openai/responses?api-version=v1"), 400, azureErr("BadRequest", "API version not supported")},
		{"azure v1 dated api-version", AzureOpenAI, false, target("/openai/v1/responses?api-version=2025-04-01-preview"), 400, azureErr("BadRequest", "API version not supported")},
		{"openai api-version", OpenAI, false, target("/v1/responses?api-version=2025-04-01-preview"), 400, openaiErr(nil, "api-version")},

		// credentials and target
		{"openai no key", OpenAI, false, func(s *spec) { s.header.Del("Authorization") }, 401, openaiErr("invalid_api_key", "didn't provide an API key")},
		{"azure classic Bearer", AzureOpenAI, true, func(s *spec) { s.header.Del("api-key"); s.header.Set("Authorization", "Bearer aoai-key") }, 401, azureErr("401", "Access denied")},
		{"azure classic unknown deployment", AzureOpenAI, true, field("model", "gpt-4o"), 404, azureErr("DeploymentNotFound", "does not exist")},
		{"azure v1 unknown deployment", AzureOpenAI, false, field("model", "gpt-4o-mini"), 404, azureErr("DeploymentNotFound", "does not exist")},

		// fields
		{"messages", OpenAI, false, field("messages", []any{map[string]any{"role": "user", "content": "x"}}), 400, openaiErr("unsupported_parameter", "moved to 'input'")},
		{"max_tokens", AzureOpenAI, false, field("max_tokens", 20), 400, openaiErr("unsupported_parameter", "Unsupported parameter: 'max_tokens'. In the Responses API, this parameter has moved to 'max_output_tokens'")},
		{"max_completion_tokens", OpenAI, false, field("max_completion_tokens", 20), 400, openaiErr("unsupported_parameter", "'max_output_tokens'")},
		{"response_format", AzureOpenAI, true, field("response_format", map[string]any{"type": "json_object"}), 400, openaiErr("unsupported_parameter", "'text.format'")},
		{"n", OpenAI, false, field("n", 1), 400, openaiErr("unknown_parameter", "Unknown parameter: 'n'.")},
		{"stop", AzureOpenAI, false, field("stop", "x"), 400, openaiErr("unknown_parameter", "Unknown parameter: 'stop'.")},
		{"chain_id", OpenAI, false, field("chain_id", "45762"), 400, openaiErr("unknown_parameter", "'chain_id'")},
		{"stream_options.include_usage", OpenAI, false, func(s *spec) {
			s.set("stream", true)
			s.set("stream_options", map[string]any{"include_usage": true})
		}, 400, openaiErr("unknown_parameter", "'stream_options.include_usage'")},
		{"stream_options without stream", OpenAI, false, field("stream_options", map[string]any{"include_obfuscation": false}), 400, openaiErr("invalid_value", "only allowed when 'stream' is enabled")},
		{"no model", OpenAI, false, field("model", nil), 400, openaiErr("missing_required_parameter", "Missing required parameter: 'model'.")},
		{"no input", AzureOpenAI, false, field("input", nil), 400, openaiErr("missing_required_parameter", "'input'")},
		{"input of the wrong type", OpenAI, false, field("input", 7), 400, openaiErr("invalid_type", "Invalid type for 'input'")},
		{"max_output_tokens below 16", OpenAI, false, field("max_output_tokens", 5), 400, openaiErr("integer_below_min_value", "Expected a value >= 16, but got 5")},
		{"temperature above 2", AzureOpenAI, false, field("temperature", 3.5), 400, openaiErr("decimal_above_max_value", "Invalid 'temperature'")},
		{"store of the wrong type", OpenAI, false, field("store", "no"), 400, openaiErr("invalid_type", "'store'")},
		{"truncation", OpenAI, false, field("truncation", "middle"), 400, openaiErr("invalid_value", "'middle'")},
		{"include", OpenAI, false, field("include", []string{"usage"}), 400, openaiErr("invalid_value", "'usage'")},
		{"metadata value", OpenAI, false, field("metadata", map[string]any{"k": 1}), 400, openaiErr("invalid_type", "'metadata.k'")},
		{"nested json_schema", OpenAI, false, field("text", map[string]any{"format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "r"}}}), 400, openaiErr("unknown_parameter", "text.format.json_schema")},
		{"background", OpenAI, false, field("background", true), 400, openaiErr(nil, "background")},
		{"conversation", OpenAI, false, field("conversation", "conv_1"), 404, openaiErr(nil, "Conversation")},
		{"previous_response_id unknown", AzureOpenAI, true, field("previous_response_id", "resp_nope"), 400, openaiErr("previous_response_not_found", "Previous response with id 'resp_nope' not found.")},
		{"item_reference unknown", OpenAI, false, input(map[string]any{"type": "item_reference", "id": "msg_nope"}), 404, openaiErr(nil, "Item with id 'msg_nope' not found")},

		// tools
		{"chat-shaped tool", OpenAI, false, field("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}}), 400, openaiErr("unknown_parameter", "tools[0].function")},
		{"tool without name", AzureOpenAI, false, field("tools", []any{map[string]any{"type": "function", "parameters": map[string]any{}}}), 400, openaiErr("missing_required_parameter", "'tools[0].name'")},
		{"unknown tool type", OpenAI, false, field("tools", []any{map[string]any{"type": "retrieval"}}), 400, openaiErr("invalid_value", "'retrieval'")},
		{"chat-shaped tool_choice", OpenAI, false, func(s *spec) {
			s.set("tools", []any{lookupTool})
			s.set("tool_choice", map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}})
		}, 400, openaiErr("unknown_parameter", "tool_choice.function")},
		{"tool_choice names no tool", OpenAI, false, func(s *spec) {
			s.set("tools", []any{lookupTool})
			s.set("tool_choice", map[string]any{"type": "function", "name": "other"})
		}, 400, openaiErr("invalid_value", "not found in 'tools'")},

		// items
		{"unknown role", OpenAI, false, input(map[string]any{"role": "tool", "content": "x"}), 400, openaiErr("invalid_value", "Invalid value: 'tool'")},
		{"assistant input_text", OpenAI, false, input(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "input_text", "text": "x"}}}), 400, openaiErr("invalid_value", "Supported values are: 'output_text' and 'refusal'.")},
		{"user output_text", AzureOpenAI, false, input(map[string]any{"role": "user", "content": []any{map[string]any{"type": "output_text", "text": "x"}}}), 400, openaiErr("invalid_value", "'input_text', 'input_image', and 'input_file'")},
		{"chat text part", OpenAI, false, input(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x"}}}), 400, openaiErr("invalid_value", "Invalid value: 'text'")},
		{"chat tool message", OpenAI, false, input(map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "x"}), 400, openaiErr("invalid_value", "'tool'")},
		{"unknown item type", OpenAI, false, input(map[string]any{"type": "tool_result", "call_id": "x"}), 400, openaiErr("invalid_value", "'tool_result'")},
		{"function_call without call_id", OpenAI, false, input(map[string]any{"type": "function_call", "name": "lookup", "arguments": "{}"}), 400, openaiErr("missing_required_parameter", "'input[0].call_id'")},
		{"function_call arguments as an object", OpenAI, false, input(map[string]any{"type": "function_call", "call_id": "c", "name": "lookup", "arguments": map[string]any{}}), 400, openaiErr("invalid_type", "'input[0].arguments'")},
		{"output without its call", AzureOpenAI, true, input(map[string]any{"role": "user", "content": "x"}, map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "r"}), 400, openaiErr(nil, "No tool call found for function call output with call_id call_1.")},
		{"call without its output", OpenAI, false, input(map[string]any{"role": "user", "content": "x"}, call), 400, openaiErr(nil, "No tool output found for function call call_1.")},
	}
	for _, r := range rows {
		t.Run(r.d+"/"+r.name, func(t *testing.T) {
			p := New(r.d, testOpts[r.d])
			var s spec
			switch r.d {
			case OpenAI, AzureOpenAI:
				s = respSpec(r.d, r.classic)
			case EternalAI:
				s = validSpec(r.d, chat)
				s.target = "/v1/responses"
			case AzureAI:
				s = validSpec(r.d, chat)
				s.target = "/responses?api-version=2025-04-01"
			}
			if r.edit != nil {
				r.edit(&s)
			}
			rec := serve(p, s)
			if rec.status != r.status {
				t.Fatalf("status %d, want %d: %s", rec.status, r.status, rec.body())
			}
			r.shape(t, decode(t, rec.body()))
		})
	}
}

package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func renderFor(t *testing.T, method, path string, body string, target Target) (UpstreamHead, UpstreamBody, *Error) {
	t.Helper()
	req, err := Detect(method, path, "")
	if err != nil {
		return UpstreamHead{}, UpstreamBody{}, err
	}
	var b RequestBody
	if err := b.Parse([]byte(body)); err != nil {
		return UpstreamHead{}, UpstreamBody{}, err
	}
	req.RefineWithBody(&b)
	if target.Model == "" {
		if m, ok := req.ModelFromHeaders(); ok {
			target.Model = m
		} else {
			target.Model = b.Model
		}
	}
	if target.BasePath == "" {
		target.BasePath = target.Dialect.DefaultBasePath()
	}
	head, err := RenderHead(&req, &target)
	if err != nil {
		return head, UpstreamBody{}, err
	}
	ub, err := RenderBody(nil, &req, &b, &target)
	return head, ub, err
}

func TestRenderPaths(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		body   string
		target Target
		want   string
	}{
		{"openai to azure classic uses the deployment", "/v1/chat/completions", `{"model":"gpt-4o"}`,
			Target{Dialect: AzureOpenAI, Settings: Settings{deployment: "gpt4o-prod"}}, "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"},
		{"azure classic deployment defaults to the model name", "/v1/embeddings", `{"model":"text-embedding-3-small"}`,
			Target{Dialect: AzureOpenAI}, "/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21"},
		{"provider api_version wins over the client's", "/openai/deployments/x/chat/completions?api-version=2024-02-01", `{}`,
			Target{Dialect: AzureOpenAI, APIVersion: "2024-10-21"}, "/openai/deployments/x/chat/completions?api-version=2024-10-21"},
		{"client api-version kept for the same dialect", "/openai/deployments/x/chat/completions?api-version=2024-02-01", `{}`,
			Target{Dialect: AzureOpenAI}, "/openai/deployments/x/chat/completions?api-version=2024-02-01"},
		{"client api-version not carried across dialects", "/chat/completions?api-version=2024-04-01-preview", `{"model":"m"}`,
			Target{Dialect: AzureOpenAI}, "/openai/deployments/m/chat/completions?api-version=2024-10-21"},
		{"azure v1 surface without api-version", "/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: AzureOpenAI, APIVersion: "v1"}, "/openai/v1/chat/completions"},
		{"azure v1 surface preview", "/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: AzureOpenAI, APIVersion: "preview"}, "/openai/v1/chat/completions?api-version=preview"},
		{"azure-ai serverless root", "/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: AzureAI}, "/chat/completions?api-version=2024-05-01-preview"},
		{"azure-ai completions default to the one version that has them", "/v1/completions", `{"model":"m","prompt":"p"}`,
			Target{Dialect: AzureAI}, "/completions?api-version=2024-04-01-preview"},
		{"azure-ai completions: the provider's pin wins over the client's version", "/completions?api-version=2024-05-01-preview", `{"model":"m","prompt":"p"}`,
			Target{Dialect: AzureAI, APIVersion: "2024-04-01-preview"}, "/completions?api-version=2024-04-01-preview"},
		{"azure-ai client completions toward openai carry no api-version", "/completions?api-version=2024-04-01-preview", `{"model":"m","prompt":"p"}`,
			Target{Dialect: OpenAI}, "/v1/completions"},
		{"azure v1 client keeps its surface", "/openai/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: AzureOpenAI, Settings: Settings{deployment: "d"}}, "/openai/v1/chat/completions"},
		{"azure-ai services /models", "/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: AzureAI, BasePath: "/models", APIVersion: "2025-04-01"}, "/models/chat/completions?api-version=2025-04-01"},
		{"no api-version for openai", "/chat/completions?api-version=2024-05-01-preview", `{"model":"m"}`,
			Target{Dialect: OpenAI}, "/v1/chat/completions"},
		{"no api-version for eternalai", "/openai/deployments/m/completions?api-version=2024-10-21", `{}`,
			Target{Dialect: EternalAI}, "/v1/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, _, err := renderFor(t, "POST", tt.path, tt.body, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if head.Path != tt.want {
				t.Errorf("path %q, want %q", head.Path, tt.want)
			}
			if strings.Count(head.Path, "api-version") > 1 {
				t.Errorf("more than one api-version in %q", head.Path)
			}
		})
	}
}

func TestRenderBodyRules(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		body     string
		target   Target
		want     map[string]string // gjson path -> raw JSON ("" = absent)
		dropped  string
		errCode  ErrorCode
		errParam string
	}{
		{"model renamed for the upstream", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: OpenAI, Model: "gpt-4o-2024-08-06"}, map[string]string{"model": `"gpt-4o-2024-08-06"`}, "", "", ""},
		{"azure classic loses model", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: AzureOpenAI, Settings: Settings{deployment: "d"}}, map[string]string{"model": "", "messages": "[]"}, "", "", ""},
		{"azure v1 keeps model", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: AzureOpenAI, APIVersion: "v1"}, map[string]string{"model": `"gpt-4o"`}, "", "", ""},
		{"azure v1 body model is the entry's deployment", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: AzureOpenAI, APIVersion: "latest", Model: "gpt-4o-2024-08-06", Settings: Settings{deployment: "gpt4o-prod"}},
			map[string]string{"model": `"gpt4o-prod"`}, "", "", ""},
		{"azure v1 body model is the entry's model without a deployment", "/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: AzureOpenAI, APIVersion: "v1", Model: "gpt-4o-2024-08-06"}, map[string]string{"model": `"gpt-4o-2024-08-06"`}, "", "", ""},
		{"azure v1 client: body model becomes the deployment", "/openai/v1/embeddings", `{"model":"text-embedding-3-small","input":"x"}`,
			Target{Dialect: AzureOpenAI, Settings: Settings{deployment: "embed-prod"}}, map[string]string{"model": `"embed-prod"`}, "", "", ""},
		{"azure v1 client with a dated provider pin: classic, no body model", "/openai/v1/chat/completions", `{"model":"gpt-4o","messages":[]}`,
			Target{Dialect: AzureOpenAI, APIVersion: "2024-10-21", Settings: Settings{deployment: "gpt4o-prod"}}, map[string]string{"model": ""}, "", "", ""},
		{"azure client gains model", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", `{"messages":[]}`,
			Target{Dialect: OpenAI}, map[string]string{"model": `"gpt-4o"`}, "", "", ""},
		{"eternalai gets the provider chain_id", "/v1/chat/completions", `{"model":"m"}`,
			Target{Dialect: EternalAI, Settings: Settings{defaultChainID: "45762"}}, map[string]string{"chain_id": `"45762"`}, "", "", ""},
		{"eternalai model chain_id wins", "/v1/chat/completions", `{"model":"m","chain_id":"8453"}`,
			Target{Dialect: EternalAI, Settings: Settings{chainID: "1", defaultChainID: "45762"}}, map[string]string{"chain_id": `"1"`}, "", "", ""},
		{"eternalai client chain_id kept, number made string", "/v1/chat/completions", `{"model":"m","chain_id":8453}`,
			Target{Dialect: EternalAI, Settings: Settings{defaultChainID: "45762"}}, map[string]string{"chain_id": `"8453"`}, "", "", ""},
		{"chain_id stripped for others", "/v1/chat/completions", `{"model":"m","chain_id":"8453"}`,
			Target{Dialect: OpenAI}, map[string]string{"chain_id": ""}, "", "", ""},
		{"azure-ai: stop and max_completion_tokens", "/v1/chat/completions", `{"model":"m","stop":"END","max_completion_tokens":9}`,
			Target{Dialect: AzureAI}, map[string]string{"stop": `["END"]`, "max_tokens": "9", "max_completion_tokens": ""}, "", "", ""},
		{"azure-ai: max_completion_tokens beside max_tokens is an extra", "/v1/chat/completions", `{"model":"m","max_tokens":5,"max_completion_tokens":9}`,
			Target{Dialect: AzureAI}, map[string]string{"max_tokens": "5", "max_completion_tokens": ""}, "max_completion_tokens", "", ""},
		{"azure-ai drop extras", "/v1/chat/completions", `{"model":"m","messages":[],"user":"u","n":2,"logit_bias":{"1":2},"temperature":1}`,
			Target{Dialect: AzureAI}, map[string]string{"user": "", "n": "", "logit_bias": "", "temperature": "1"}, "user,n,logit_bias", "", ""},
		{"azure-ai pass-through extras", "/v1/chat/completions", `{"model":"m","user":"u"}`,
			Target{Dialect: AzureAI, Settings: Settings{extraParameters: extraPassThrough}}, map[string]string{"user": `"u"`}, "", "", ""},
		{"azure-ai error on extras", "/v1/chat/completions", `{"model":"m","user":"u","n":1}`,
			Target{Dialect: AzureAI, Settings: Settings{extraParameters: extraError}}, nil, "", ErrExtraParametersNotAllowed, "user"},
		{"azure-ai embeddings input string to array", "/v1/embeddings", `{"model":"m","input":"hello"}`,
			Target{Dialect: AzureAI}, map[string]string{"input": `["hello"]`}, "", "", ""},
		{"openai embeddings input string kept", "/embeddings?api-version=2024-05-01-preview", `{"model":"m","input":"hello","input_type":"query"}`,
			Target{Dialect: OpenAI}, map[string]string{"input": `"hello"`, "input_type": ""}, "", "", ""},
		{"azure-ai only encodings refused toward openai", "/embeddings?api-version=2024-05-01-preview", `{"model":"m","input":["x"],"encoding_format":"int8"}`,
			Target{Dialect: OpenAI}, nil, "", ErrInvalidParameter, "encoding_format"},
		{"completions default 16 kept for azure-ai", "/v1/completions", `{"model":"m","prompt":"p"}`,
			Target{Dialect: AzureAI}, map[string]string{"max_tokens": "16"}, "", "", ""},
		{"completions default 256 kept from azure-ai", "/completions?api-version=2024-04-01-preview", `{"model":"m","prompt":"p"}`,
			Target{Dialect: OpenAI}, map[string]string{"max_tokens": "256"}, "", "", ""},
		{"completions explicit max_tokens untouched", "/v1/completions", `{"model":"m","prompt":"p","max_tokens":3}`,
			Target{Dialect: AzureAI}, map[string]string{"max_tokens": "3"}, "", "", ""},
		{"data_sources only to azure openai", "/openai/deployments/d/chat/completions?api-version=2024-10-21", `{"messages":[],"data_sources":[{}]}`,
			Target{Dialect: OpenAI}, map[string]string{"data_sources": ""}, "", "", ""},
		{"escaped key cannot smuggle a model", "/v1/chat/completions", `{"mod\u0065l":"gpt-4o"}`,
			Target{Dialect: OpenAI, Model: "x"}, map[string]string{"model": `"x"`}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ub, err := renderFor(t, "POST", tt.path, tt.body, tt.target)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode || err.Param != tt.errParam {
					t.Fatalf("error %v (param %q), want %s param %q", err, paramOf(err), tt.errCode, tt.errParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !gjson.ValidBytes(ub.Body) {
				t.Fatalf("rendered body is not JSON: %s", ub.Body)
			}
			for path, want := range tt.want {
				got := gjson.GetBytes(ub.Body, path)
				if want == "" && got.Exists() || want != "" && got.Raw != want {
					t.Errorf("%s = %s, want %q in %s", path, got.Raw, want, ub.Body)
				}
			}
			if got := strings.Join(ub.Dropped, ","); got != tt.dropped {
				t.Errorf("dropped %q, want %q", got, tt.dropped)
			}
		})
	}
}

func paramOf(e *Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

func TestRenderUnchangedBodyIsNotCopied(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"user":"u"}`
	_, ub, err := renderFor(t, "POST", "/v1/chat/completions", body, Target{Dialect: OpenAI})
	if err != nil {
		t.Fatal(err)
	}
	if ub.Changed || string(ub.Body) != body {
		t.Fatalf("changed=%v body=%s", ub.Changed, ub.Body)
	}
}

func TestRenderHeaders(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		extraHdr   string
		target     Target
		set        map[string]string
		removes    []string
		keeps      []string
		errCode    ErrorCode
		deployment string
	}{
		{"azure-ai gets extra-parameters and deployment", "/v1/chat/completions", "",
			Target{Dialect: AzureAI, Settings: Settings{deployment: "llama3-blue"}},
			map[string]string{"extra-parameters": "drop", "azureml-model-deployment": "llama3-blue"},
			[]string{"openai-organization", "openai-project"}, nil, "", ""},
		{"2024-04-01-preview calls drop ignore", "/v1/chat/completions", "",
			Target{Dialect: AzureAI, APIVersion: "2024-04-01-preview"},
			map[string]string{"extra-parameters": "ignore"}, nil, nil, "", ""},
		{"azure-ai completions go to 2024-04-01-preview, which calls drop ignore", "/v1/completions", "",
			Target{Dialect: AzureAI}, map[string]string{"extra-parameters": "ignore"}, nil, nil, "", ""},
		{"azure-ai client header wins", "/chat/completions?api-version=2024-05-01-preview", "pass-through",
			Target{Dialect: AzureAI}, map[string]string{"extra-parameters": "pass-through"}, nil, nil, "", ""},
		{"azure-ai client header must be a known value", "/chat/completions?api-version=2024-05-01-preview", "sometimes",
			Target{Dialect: AzureAI}, nil, nil, nil, ErrInvalidParameter, ""},
		{"openai keeps org headers, loses azure-ai ones", "/chat/completions?api-version=2024-05-01-preview", "",
			Target{Dialect: OpenAI}, nil, []string{"extra-parameters", "azureml-model-deployment"},
			[]string{"openai-organization"}, "", ""},
		{"unsupported operation", "/v1/embeddings", "", Target{Dialect: EternalAI}, nil, nil, nil, ErrUnsupportedOperation, ""},
		{"v1 surface has no completions", "/v1/completions", "", Target{Dialect: AzureOpenAI, APIVersion: "latest"}, nil, nil, nil, ErrUnsupportedOperation, ""},
		{"v1 client's surface has no completions", "/openai/v1/completions", "", Target{Dialect: AzureOpenAI}, nil, nil, nil, ErrUnsupportedOperation, ""},
		{"azure-ai pinned version without completions", "/v1/completions", "", Target{Dialect: AzureAI, APIVersion: "2025-04-01"}, nil, nil, nil, ErrUnsupportedOperation, ""},
		{"azure-ai client's own version without completions", "/completions?api-version=2024-05-01-preview", "", Target{Dialect: AzureAI}, nil, nil, nil, ErrUnsupportedOperation, ""},
		{"model name unfit for a deployment", "/v1/chat/completions", "", Target{Dialect: AzureOpenAI, Model: "org/model"}, nil, nil, nil, ErrInvalidDeployment, ""},
		{"bad configured api_version", "/v1/chat/completions", "", Target{Dialect: AzureAI, APIVersion: "2024-5-1"}, nil, nil, nil, ErrInvalidAPIVersion, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := Detect("POST", tt.path, "")
			if err != nil {
				t.Fatal(err)
			}
			req.PolicyHeader = tt.extraHdr
			if tt.target.Model == "" {
				tt.target.Model = "m"
			}
			head, err := RenderHead(&req, &tt.target)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode {
					t.Fatalf("error %v, want %s", err, tt.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, h := range head.Set {
				got[h.Name] = h.Value
			}
			for k, v := range tt.set {
				if got[k] != v {
					t.Errorf("header %s = %q, want %q", k, got[k], v)
				}
			}
			for _, name := range tt.removes {
				if !contains(head.Remove, name) {
					t.Errorf("%s not removed (removes %v)", name, head.Remove)
				}
			}
			for _, name := range tt.keeps {
				if contains(head.Remove, name) {
					t.Errorf("%s removed", name)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		body  string
		code  ErrorCode
		param string
	}{
		{``, ErrInvalidJSON, ""},
		{`[]`, ErrInvalidJSON, ""},
		{`"model"`, ErrInvalidJSON, ""},
		{`42`, ErrInvalidJSON, ""},
		{`{"model":"a"`, ErrInvalidJSON, ""},
		{`{"model":"a"} x`, ErrInvalidJSON, ""},
		{`{"model":"a","model":"b"}`, ErrInvalidJSON, "model"},
		{`{"model":"a","mod\u0065l":"b"}`, ErrInvalidJSON, "model"},
		{`{"model":1}`, ErrInvalidParameter, "model"},
		{`{"model":[]}`, ErrInvalidParameter, "model"}, // null is no model (a deployment route names it): TestBehaviours
		{`{"stream":"yes"}`, ErrInvalidParameter, "stream"},
		{`{"stream_options":[]}`, ErrInvalidParameter, "stream_options"},
		{`{"stream_options":{"include_usage":1}}`, ErrInvalidParameter, "stream_options.include_usage"},
		{`{"chain_id":true}`, ErrInvalidParameter, "chain_id"},
		{`{"max_tokens":"9"}`, ErrInvalidParameter, "max_tokens"},
		{"{\"model\":\"a\xff\"}", ErrInvalidJSON, ""},
		{"{\"model\":\"a\nb\"}", ErrInvalidJSON, ""},
		{strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), ErrInvalidJSON, ""},
		{strings.Repeat(`[`, 10000), ErrInvalidJSON, ""},
	}
	for _, tt := range tests {
		var b RequestBody
		err := b.Parse([]byte(tt.body))
		if err == nil || err.Code != tt.code || err.Param != tt.param {
			t.Errorf("Parse(%.40q) = %v (param %q), want %s param %q", tt.body, err, paramOf(err), tt.code, tt.param)
		}
	}
}

package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestTranslateError(t *testing.T) {
	tests := []struct {
		name     string
		client   Dialect
		provider Dialect
		status   int
		body     string
		wantCode int
		want     map[string]string // gjson path -> value (String()); "<absent>" = must not exist
	}{
		{"same dialect, complete envelope: untouched", AzureOpenAI, AzureOpenAI, 400,
			`{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`, 400,
			map[string]string{"error.status": "400", "error.innererror.code": "ResponsibleAIPolicyViolation"}},
		{"same dialect, incomplete envelope: rebuilt", AzureOpenAI, AzureOpenAI, 429,
			`{"error":{"code":"429","message":"Requests have exceeded token rate limit"}}`, 429,
			map[string]string{"error.type": "rate_limit_error", "error.code": "429"}},
		{"openai envelope to azure-ai", AzureAI, 0, 429,
			`{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, 429,
			map[string]string{"error.code": "rate_limit_exceeded", "error.message": "Rate limit reached", "error.status": "429"}},
		{"azure openai content filter to openai", OpenAI, 0, 400,
			`{"error":{"message":"filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`, 400,
			map[string]string{"error.code": "content_filter", "error.param": "prompt", "error.type": "invalid_request_error", "error.innererror": "<absent>"}},
		{"azure openai innererror kept for azure openai clients", AzureOpenAI, 0, 400,
			`{"error":{"message":"filtered","code":"content_filter","inner_error":{"code":"ResponsibleAIPolicyViolation"}}}`, 400,
			map[string]string{"error.innererror.code": "ResponsibleAIPolicyViolation"}},
		{"numeric code as string", OpenAI, 0, 429,
			`{"error":{"code":429,"message":"Requests have exceeded token rate limit"}}`, 429,
			map[string]string{"error.code": "429", "error.type": "rate_limit_error"}},
		{"azure-ai flat 422 to openai becomes 400", OpenAI, 0, 422,
			`{"status":422,"code":"parameter_not_supported","detail":{"loc":["body","response_format"],"input":"json_object"},"message":"One of the parameters contain invalid values."}`, 400,
			map[string]string{"error.code": "parameter_not_supported", "error.param": "response_format", "error.message": "One of the parameters contain invalid values."}},
		{"azure-ai flat 422 stays 422 for azure-ai", AzureAI, 0, 422,
			`{"status":422,"code":"parameter_not_supported","detail":[{"loc":["body","n"]}],"message":"bad"}`, 422,
			map[string]string{"error.code": "parameter_not_supported", "error.target": "n", "error.status": "422"}},
		{"azure core envelope with details", AzureAI, 0, 400,
			`{"error":{"code":"BadRequest","message":"m","target":"messages","details":[{"code":"x","message":"y"}]}}`, 400,
			map[string]string{"error.target": "messages", "error.details.0.code": "x"}},
		{"azure-ai short form {error,message,status}", OpenAI, 0, 401,
			`{"error":"Unauthorized","message":"Access token is missing or invalid","status":401}`, 401,
			map[string]string{"error.message": "Access token is missing or invalid", "error.code": "Unauthorized", "error.type": "authentication_error"}},
		{"strings read as the client reads them, after a lone surrogate too", OpenAI, 0, 400,
			`{"error":{"message":"bad \ud800\u0041","code":"c\ud800\u002dx","param":"p\udc00\u0041","type":"t"}}`, 400,
			map[string]string{"error.message": "bad \uFFFDA", "error.code": "c\uFFFD-x", "error.param": "p\uFFFDA"}},
		{"html from a load balancer", OpenAI, 0, 502,
			`<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>`, 502,
			map[string]string{"error.message": "upstream returned HTTP 502: 502 Bad Gateway", "error.type": "server_error"}},
		{"plain text", AzureAI, 0, 503, "upstream connect error or disconnect/reset before headers", 503,
			map[string]string{"error.message": "upstream returned HTTP 503: upstream connect error or disconnect/reset before headers", "error.code": "ServiceUnavailable"}},
		{"empty body", EternalAI, 0, 500, "", 500,
			map[string]string{"error.message": "upstream returned HTTP 500 with a non-JSON body"}},
		{"truncated JSON", OpenAI, 0, 500, `{"error":{"message":"oops`, 500,
			map[string]string{"error.message": `upstream returned HTTP 500: {"error":{"message":"oops`}},
		{"invalid UTF-8 inside an HTML title (found by FuzzTranslateError)", OpenAI, 0, 502,
			"<html><TITLE>502 \xff\x89 Bad Gateway</TITLE></html>", 502,
			map[string]string{"error.message": "upstream returned HTTP 502: 502 \uFFFD Bad Gateway"}},
		{"invalid utf-8 in text", OpenAI, 0, 500, "bad \xff byte", 500,
			map[string]string{"error.message": "upstream returned HTTP 500: bad \uFFFD byte"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			provider := tt.provider
			if provider == DialectUnknown {
				provider = EternalAI // another dialect than most clients: the envelope must be rebuilt
			}
			status, body := ErrorAnswer(tt.client, provider, tt.status, []byte(tt.body))
			if status != tt.wantCode {
				t.Errorf("status %d, want %d", status, tt.wantCode)
			}
			if !gjson.ValidBytes(body) {
				t.Fatalf("not JSON: %s", body)
			}
			checkEnvelope(t, tt.client, body)
			for path, want := range tt.want {
				got := gjson.GetBytes(body, path)
				if want == "<absent>" {
					if got.Exists() {
						t.Errorf("%s present in %s", path, body)
					}
				} else if got.String() != want {
					t.Errorf("%s = %q, want %q in %s", path, got.String(), want, body)
				}
			}
		})
	}
}

// checkEnvelope asserts the fields each dialect's SDKs read are there with the right types.
func checkEnvelope(t *testing.T, client Dialect, body []byte) {
	t.Helper()
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		t.Fatalf("no error object in %s", body)
	}
	if client == AzureAI {
		if e.Get("code").Type != gjson.String || e.Get("message").Type != gjson.String || e.Get("status").Type != gjson.Number {
			t.Errorf("azure-ai envelope wrong: %s", body)
		}
		return
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if !e.Get(k).Exists() {
			t.Errorf("openai envelope lacks %s: %s", k, body)
		}
	}
	if typ := e.Get("type").Type; e.Get("message").Type != gjson.String || typ != gjson.String && typ != gjson.Null {
		t.Errorf("openai envelope types wrong: %s", body)
	}
}

func TestFilterErrorsInEveryDialect(t *testing.T) {
	for code, status := range errorStatus {
		for _, d := range Dialects {
			e := NewError(code, "model", "something was wrong: fix it\nplease \"now\"")
			if e.Status() != status {
				t.Errorf("%s status %d", code, e.Status())
			}
			body := e.Body(d)
			if !gjson.ValidBytes(body) {
				t.Fatalf("%s/%s: not JSON: %s", code, d, body)
			}
			checkEnvelope(t, d, body)
			if got := gjson.GetBytes(body, "error.code").String(); got != string(code) {
				t.Errorf("%s/%s: code %q", code, d, got)
			}
			if !strings.Contains(gjson.GetBytes(body, "error.message").String(), "fix it") {
				t.Errorf("%s/%s: message lost: %s", code, d, body)
			}
		}
	}
}

func TestIsContextLengthError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"openai chat", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true},
		{"openai responses", 400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, true},
		{"azure openai", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded","innererror":{"code":"x"}}}`, true},
		{"azure ai flat, message only", 400, `{"error":{"code":"Invalid input","status":422,"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"}}`, true},
		{"mistral wording", 400, `{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","code":3051}`, true},
		{"upper case", 422, `{"error":{"message":"MAXIMUM CONTEXT LENGTH is 2048"}}`, true},
		{"413 text body", 413, `maximum context length exceeded`, true},
		{"other 400", 400, `{"error":{"message":"Invalid value for temperature","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, false},
		{"content filter", 400, `{"error":{"message":"The response was filtered","code":"content_filter"}}`, false},
		{"429 naming context", 429, `{"error":{"message":"maximum context length","code":"context_length_exceeded"}}`, false},
		{"500", 500, `{"error":{"message":"maximum context length"}}`, false},
		{"phrase past the searched prefix", 400, `{"error":{"message":"` + strings.Repeat("x", maxContextMessage) + ` maximum context length"}}`, false},
		{"empty", 400, ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsContextLengthError(tt.status, []byte(tt.body)); got != tt.want {
				t.Fatalf("IsContextLengthError = %v, want %v", got, tt.want)
			}
		})
	}
}

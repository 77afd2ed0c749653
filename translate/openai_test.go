package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// Tests of openai.go's hooks, each alone. The golden cases replay whole exchanges; these pin one hook's
// output for one input.

// TestOpenAIModelObject: the tail of an OpenAI model object, the owner written as a JSON string.
func TestOpenAIModelObject(t *testing.T) {
	tests := []struct {
		name  string
		req   ClientRequest
		owner string
		want  string
	}{
		{"plain owner", ClientRequest{Dialect: OpenAI}, "openai-prod",
			`,"object":"model","created":0,"owned_by":"openai-prod"}`},
		{"empty owner", ClientRequest{Dialect: OpenAI}, "",
			`,"object":"model","created":0,"owned_by":""}`},
		{"quote and backslash escaped", ClientRequest{Dialect: OpenAI}, `a"b\c`,
			`,"object":"model","created":0,"owned_by":"a\"b\\c"}`},
		{"control characters escaped", ClientRequest{Dialect: OpenAI}, "a\nb\x01",
			`,"object":"model","created":0,"owned_by":"a\nb\u0001"}`},
		{"non-ASCII kept as UTF-8", ClientRequest{Dialect: OpenAI}, "région",
			`,"object":"model","created":0,"owned_by":"région"}`},
		{"the request does not change the shape", ClientRequest{Dialect: AzureOpenAI, SurfaceVersion: "v1"}, "p",
			`,"object":"model","created":0,"owned_by":"p"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := openAIModelObject(&tt.req, tt.owner)
			if got != tt.want {
				t.Errorf("openAIModelObject = %s, want %s", got, tt.want)
			}
			if !gjson.Valid(`{"id":"m"` + got) {
				t.Errorf("entry is not JSON: {\"id\":\"m\"%s", got)
			}
		})
	}
}

// TestAppendOpenAIError: the OpenAI envelope, with its defaults and the innererror switch.
func TestAppendOpenAIError(t *testing.T) {
	tests := []struct {
		name      string
		f         errorFields
		withInner bool
		want      string
	}{
		{"type from the status, null param and code", errorFields{status: 400, message: "bad"}, false,
			`{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`},
		{"upstream type kept", errorFields{status: 429, message: "slow", typ: "tokens", code: "rate_limit_exceeded"}, false,
			`{"error":{"message":"slow","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
		{"param and code written", errorFields{status: 404, message: "m", param: "model", code: "model_not_found"}, false,
			`{"error":{"message":"m","type":"invalid_request_error","param":"model","code":"model_not_found"}}`},
		{"message escaped", errorFields{status: 400, message: "say \"hi\"\n"}, false,
			`{"error":{"message":"say \"hi\"\n","type":"invalid_request_error","param":null,"code":null}}`},
		{"401 is an authentication_error", errorFields{status: 401, message: "m"}, false,
			`{"error":{"message":"m","type":"authentication_error","param":null,"code":null}}`},
		{"innererror dropped without withInner", errorFields{status: 400, message: "m", inner: `{"code":"x"}`}, false,
			`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{"innererror kept with withInner", errorFields{status: 400, message: "m", code: "content_filter", inner: `{"code":"x"}`}, true,
			`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"content_filter","innererror":{"code":"x"}}}`},
		{"no innererror member when there is none", errorFields{status: 400, message: "m"}, true,
			`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{"details are not part of the envelope", errorFields{status: 400, message: "m", details: `[{"code":"d"}]`}, true,
			`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`},
		{"5xx is a server_error", errorFields{status: 500, message: "m"}, false,
			`{"error":{"message":"m","type":"server_error","param":null,"code":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendOpenAIError([]byte("prefix:"), &tt.f, tt.withInner))
			if got != "prefix:"+tt.want {
				t.Errorf("got  %s\nwant prefix:%s", got, tt.want)
			}
		})
	}
}

// TestOpenAIErrorType: the "type" an OpenAI error gets from its status when the upstream gave none.
func TestOpenAIErrorType(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{400, "invalid_request_error"},
		{401, "authentication_error"},
		{403, "permission_error"},
		{404, "invalid_request_error"},
		{413, "invalid_request_error"},
		{422, "invalid_request_error"},
		{429, "rate_limit_error"},
		{500, "server_error"},
		{502, "server_error"},
		{503, "server_error"},
	}
	for _, tt := range tests {
		if got := errorType(tt.status); got != tt.want {
			t.Errorf("errorType(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

// TestRecognisesOpenAIError: an "error" object is OpenAI's when it has type, param and code (null allowed).
func TestRecognisesOpenAIError(t *testing.T) {
	tests := []struct {
		name  string
		error string
		want  bool
	}{
		{"all four members", `{"message":"m","type":"t","param":"p","code":"c"}`, true},
		{"nulls count as present", `{"message":"m","type":null,"param":null,"code":null}`, true},
		{"numeric code", `{"message":"m","type":"t","param":null,"code":429}`, true},
		{"no type (Azure OpenAI's short form)", `{"message":"m","param":null,"code":"429"}`, false},
		{"no param", `{"message":"m","type":"t","code":"c"}`, false},
		{"no code", `{"message":"m","type":"t","param":null}`, false},
		{"Azure.Core envelope", `{"code":"BadRequest","message":"m","status":400,"details":[]}`, false},
		{"empty object", `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recognisesOpenAIError(gjson.Parse(tt.error)); got != tt.want {
				t.Errorf("recognisesOpenAIError(%s) = %v, want %v", tt.error, got, tt.want)
			}
		})
	}
}

// TestOpenAIEnvelope: the hub's envelope as its table sets it: no innererror, and 422 shown as 400.
func TestOpenAIEnvelope(t *testing.T) {
	f := errorFields{status: 400, message: "m", code: "content_filter", inner: `{"code":"x"}`}
	want := `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"content_filter"}}`
	for _, d := range []Dialect{OpenAI, EternalAI} {
		s := d.spec()
		if got := string(s.errors.write(nil, &f)); got != want {
			t.Errorf("%s envelope = %s, want %s", d, got, want)
		}
		if !s.errors.unprocessableAs400 {
			t.Errorf("%s: unprocessableAs400 is false", d)
		}
	}
}

package translate

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// ErrorCode names an error the filter itself answers with; it is the envelope's code and the value of the
// x-aidialect-error response header.
type ErrorCode string

const (
	ErrModelNotFound             ErrorCode = "model_not_found"
	ErrModelNotAllowed           ErrorCode = "model_not_allowed"
	ErrUnauthorized              ErrorCode = "unauthorized"
	ErrInvalidAPIVersion         ErrorCode = "invalid_api_version"
	ErrInvalidDeployment         ErrorCode = "invalid_deployment"
	ErrInvalidJSON               ErrorCode = "invalid_json"
	ErrInvalidParameter          ErrorCode = "invalid_parameter"
	ErrExtraParametersNotAllowed ErrorCode = "extra_parameters_not_allowed"
	ErrBodyTooLarge              ErrorCode = "body_too_large"
	ErrUnsupportedOperation      ErrorCode = "unsupported_operation"
	// ErrUnsupportedParameter: a field the request uses cannot be served on its route (a stateful Responses
	// feature toward a provider that has only Chat Completions).
	ErrUnsupportedParameter ErrorCode = "unsupported_parameter"
	// ErrPreviousResponseNotFound: a previous_response_id that was not handed to the consumer sending it
	// (binding.go); the code is OpenAI's own for an unknown id, which clients already handle.
	ErrPreviousResponseNotFound ErrorCode = "previous_response_not_found"
	ErrUnsupportedEncoding      ErrorCode = "unsupported_content_encoding"
	ErrUnknownPath              ErrorCode = "unknown_path"
	ErrMethodNotAllowed         ErrorCode = "method_not_allowed"
	ErrUpstreamStream           ErrorCode = "upstream_stream_error"
	ErrUpstreamRedirect         ErrorCode = "upstream_redirect"
	// ErrUpstreamEarlyAnswer: the upstream answered with a success before the filter sent it the whole
	// request, so the answer is to no request the client made.
	ErrUpstreamEarlyAnswer ErrorCode = "upstream_answered_early"
	ErrBodyNeverArrived    ErrorCode = "body_never_arrived"
	ErrInternal            ErrorCode = "internal_error"
	// ErrProvidersThrottled and ErrProvidersUnavailable: every provider of the model is benched (rate
	// limited; or rate limited, its keys rejected, its circuit open), so the request was not sent.
	ErrProvidersThrottled   ErrorCode = "all_providers_rate_limited"
	ErrProvidersUnavailable ErrorCode = "all_providers_unavailable"
	// ErrUpstreamUnreachable: the last attempt got no answer (a failover callout that failed or timed out).
	ErrUpstreamUnreachable ErrorCode = "upstream_unreachable"
	// ErrBudgetExceeded: a token budget of the consumer is spent for its window (the rate-limit service said
	// so); ErrBudgetUnavailable: the budget could not be checked and budgets.on_service_failure is deny.
	ErrBudgetExceeded    ErrorCode = "budget_exceeded"
	ErrBudgetUnavailable ErrorCode = "budget_unavailable"
)

var errorStatus = map[ErrorCode]int{
	ErrModelNotFound:             404,
	ErrModelNotAllowed:           403,
	ErrUnauthorized:              401,
	ErrInvalidAPIVersion:         400,
	ErrInvalidDeployment:         400,
	ErrInvalidJSON:               400,
	ErrInvalidParameter:          400,
	ErrExtraParametersNotAllowed: 400,
	ErrBodyTooLarge:              413,
	ErrUnsupportedOperation:      404,
	ErrUnsupportedParameter:      400,
	ErrPreviousResponseNotFound:  400,
	ErrUnsupportedEncoding:       415,
	ErrUnknownPath:               404,
	ErrMethodNotAllowed:          405,
	ErrUpstreamStream:            502,
	ErrUpstreamRedirect:          502,
	ErrUpstreamEarlyAnswer:       502,
	ErrBodyNeverArrived:          408,
	ErrInternal:                  500,
	ErrProvidersThrottled:        429,
	ErrProvidersUnavailable:      503,
	ErrUpstreamUnreachable:       503,
	ErrBudgetExceeded:            429,
	ErrBudgetUnavailable:         503,
}

// Error is an error the filter answers itself, before or instead of calling the upstream.
type Error struct {
	Code    ErrorCode
	Message string
	Param   string // the request field at fault, if one is
}

// NewError builds a filter error; the message should say what was wrong and what to do.
func NewError(code ErrorCode, param, message string) *Error {
	return &Error{Code: code, Message: message, Param: param}
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status the error is answered with.
func (e *Error) Status() int {
	if s, ok := errorStatus[e.Code]; ok {
		return s
	}
	return 500
}

// Body renders the error in the client's dialect envelope.
func (e *Error) Body(client Dialect) []byte {
	return renderError(client, errorFields{
		status:  e.Status(),
		message: e.Message,
		code:    string(e.Code),
		param:   e.Param,
	})
}

// errorFields is the dialect-neutral content of an error, whatever envelope it arrived in.
type errorFields struct {
	status  int
	message string
	typ     string
	code    string
	param   string
	inner   string // raw JSON of innererror/inner_error, kept for Azure OpenAI clients
	details string // raw JSON of Azure details, kept for Azure AI clients
}

// errorEnvelope is how a dialect's clients receive errors and its providers send them.
type errorEnvelope struct {
	// write appends an error in the envelope.
	write func(b []byte, f *errorFields) []byte
	// recognises is given the "error" member of an upstream error body (an object with a string message)
	// and reports whether the body is already in the envelope, so a client of the same dialect gets it
	// untouched. Envelopes without an "error" member are not recognised (parseUpstreamError still reads
	// their message, code and param).
	recognises func(e gjson.Result) bool
	// unprocessableAs400: the dialect's SDKs treat 422 as unexpected, so its clients see 400.
	unprocessableAs400 bool
}

func renderError(client Dialect, f errorFields) []byte {
	b := make([]byte, 0, 128+len(f.message)+len(f.inner)+len(f.details))
	return client.asClient().errors.write(b, &f)
}

// statusCode is the code name of an HTTP status, for envelopes that want a code when the upstream gave none.
func statusCode(status int) string {
	switch status {
	case 400:
		return "BadRequest"
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden"
	case 404:
		return "NotFound"
	case 413:
		return "PayloadTooLarge"
	case 422:
		return "UnprocessableEntity"
	case 429:
		return "TooManyRequests"
	case 502:
		return "BadGateway"
	case 503:
		return "ServiceUnavailable"
	case 504:
		return "GatewayTimeout"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return strconv.Itoa(status)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonscan.AppendString(b, s)
}

// maxUpstreamMessage bounds how much of a non-JSON upstream body is quoted back to the client.
const maxUpstreamMessage = 512

// ErrorAnswer turns an upstream error response of any provider shape into the client's envelope and
// returns the status the client should see. It understands the OpenAI envelope, Azure OpenAI's (string or
// numeric codes, innererror or inner_error), both Azure AI forms (Azure.Core envelope and the flat
// {status,code,message,detail} form), a bare {"error":"text"} and non-JSON bodies such as a load balancer's
// HTML page.
func ErrorAnswer(client, provider Dialect, status int, body []byte) (int, []byte) {
	if client == provider && hasErrorEnvelope(client, body) {
		// Already in the client's own envelope: forward it untouched, details and all.
		return status, body
	}
	f := parseUpstreamError(status, body)
	f.status = ClientErrorStatus(client, status)
	return f.status, renderError(client, f)
}

// hasErrorEnvelope reports whether body is a JSON error in the dialect's documented envelope.
func hasErrorEnvelope(d Dialect, body []byte) bool {
	if !jsonscan.Valid(body) {
		return false
	}
	e := gjson.GetBytes(body, "error")
	return e.IsObject() && e.Get("message").Type == gjson.String && d.asClient().errors.recognises(e)
}

func parseUpstreamError(status int, body []byte) errorFields {
	f := errorFields{status: status}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && jsonscan.Valid(trimmed) {
		root := gjson.ParseBytes(trimmed)
		obj := root
		if e := root.Get("error"); e.IsObject() {
			obj = e
		} else if e.Type == gjson.String && !root.Get("message").Exists() {
			f.message = stringOf(e)
		}
		if m := obj.Get("message"); m.Exists() && m.Type != gjson.Null {
			f.message = stringOf(m)
		}
		f.code = scalarString(obj.Get("code"))
		if f.code == "" && root.Get("error").Type == gjson.String {
			f.code = stringOf(root.Get("error"))
		}
		f.typ = scalarString(obj.Get("type"))
		f.param = scalarString(obj.Get("param"))
		if f.param == "" {
			f.param = scalarString(obj.Get("target"))
		}
		if f.param == "" {
			f.param = detailParam(obj.Get("detail"))
		}
		if inner := obj.Get("innererror"); inner.IsObject() {
			f.inner = inner.Raw
		} else if inner := obj.Get("inner_error"); inner.IsObject() {
			f.inner = inner.Raw
		}
		if d := obj.Get("details"); d.IsArray() {
			f.details = d.Raw
		}
		if f.message == "" {
			f.message = "upstream returned HTTP " + strconv.Itoa(status) + " without a message"
		}
		return f
	}
	f.message = nonJSONMessage(status, trimmed)
	f.code = statusCode(status)
	if status < 400 {
		f.code = "upstream_error"
	}
	return f
}

// detailParam reads the offending field from Azure AI's flat 422 form: detail.loc = ["body","field"], or a
// list of such objects.
func detailParam(d gjson.Result) string {
	if d.IsArray() {
		d = d.Get("0")
	}
	loc := d.Get("loc")
	if !loc.IsArray() {
		return ""
	}
	// An upstream decides how long loc is: the path is read part by part and cut at maxParamBytes.
	var param strings.Builder
	seen, written := 0, 0
	loc.ForEach(func(_, part gjson.Result) bool {
		name := stringOf(part)
		seen++
		if seen == 1 && name == "body" {
			return true
		}
		if written > 0 {
			param.WriteByte('.')
		}
		written++
		if param.Len()+len(name) > maxParamBytes {
			param.WriteString("...")
			return false
		}
		param.WriteString(name)
		return true
	})
	return param.String()
}

// maxParamBytes bounds the param an upstream error names: it is copied into the client's envelope.
const maxParamBytes = 256

func scalarString(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return stringOf(r)
	case gjson.Number:
		return r.Raw
	case gjson.True, gjson.False:
		return r.Raw
	}
	return ""
}

// nonJSONMessage summarises a non-JSON error body: the HTML <title> when there is one, else the first
// characters of the text, so the client learns what the load balancer said without a page of markup.
func nonJSONMessage(status int, body []byte) string {
	prefix := "upstream returned HTTP " + strconv.Itoa(status)
	text := body
	lower := asciiLower(body[:min(len(body), 4096)])
	if i := bytes.Index(lower, []byte("<title>")); i >= 0 {
		if j := bytes.Index(lower[i:], []byte("</title>")); j >= 0 {
			text = body[i+len("<title>") : i+j]
		}
	} else if bytes.HasPrefix(lower, []byte("<")) {
		text = nil
	}
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return prefix + " with a non-JSON body"
	}
	if len(text) > maxUpstreamMessage {
		text = text[:maxUpstreamMessage]
	}
	return prefix + ": " + strings.ToValidUTF8(collapseSpace(string(text)), "\uFFFD")
}

// asciiLower lower-cases A-Z only, so offsets in the result are offsets in b (bytes.ToLower can change the
// length of invalid UTF-8 and of some letters).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// stringOf is r's text: a string decoded as the client's parser will decode it (jsonscan.AppendUnquoted, not
// gjson's own decoding, which differs after a lone surrogate), anything else as gjson gives it.
func stringOf(r gjson.Result) string {
	if r.Type == gjson.String {
		if strings.IndexByte(r.Raw, '\\') < 0 {
			return r.Str // no escape: both decoders read the bytes as they are, and gjson's view allocates nothing
		}
		return decodeJSONString(readOnlyBytes(r.Raw))
	}
	return r.String()
}

// contextLengthCodes and contextLengthPhrases recognise a provider's "the request does not fit this model's
// context window" error: OpenAI and Azure OpenAI name it by code (Chat Completions and Responses alike); Azure
// AI Model Inference's and EternalAI's hosted models (vLLM, TGI, Mistral's and Meta's servers) say it in the
// message only, in a handful of wordings. Data, so a provider's new wording is a row.
var (
	contextLengthCodes   = []string{"context_length_exceeded", "string_above_max_length_tokens", "model_max_prompt_tokens_exceeded"}
	contextLengthPhrases = [][]byte{
		[]byte("maximum context length"),
		[]byte("context length exceeded"),
		[]byte("exceeds the context window"),
		[]byte("context window of this model"),
		[]byte("too large for model with"),
		[]byte("input is too long for requested model"),
	}
)

// maxContextMessage bounds the part of an error message searched for a context-length phrase: the phrase
// comes first in every known wording, and a provider's long message (it may quote the input) costs no more.
const maxContextMessage = 4096

// IsContextLengthError reports whether an upstream error answer says that the request is larger than the
// model's context window: the one 4xx that another provider's model with a larger window may serve.
func IsContextLengthError(status int, body []byte) bool {
	if status != 400 && status != 413 && status != 422 {
		return false
	}
	f := parseUpstreamError(status, body)
	for _, c := range contextLengthCodes {
		if f.code == c {
			return true
		}
	}
	msg := f.message
	if len(msg) > maxContextMessage {
		msg = msg[:maxContextMessage]
	}
	lower := asciiLower([]byte(msg))
	for _, p := range contextLengthPhrases {
		if bytes.Contains(lower, p) {
			return true
		}
	}
	return false
}

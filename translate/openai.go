package translate

import (
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// OpenAI (api.openai.com/v1): the hub dialect, whose shapes the others are translated to and from. Bearer
// auth, no api-version, completions default to 16 tokens. The API reference:
// https://platform.openai.com/docs/api-reference
var openAISpec = dialectSpec{
	name: "openai",
	operations: ops(OpChatCompletions, OpCompletions, OpEmbeddings, OpListModels, OpResponses,
		OpResponsesInputTokens, OpResponsesCompact),
	routes: []clientRoute{
		{path: "/v1/models", op: OpListModels, version: versionIgnored},
		{path: "/models", op: OpListModels, version: versionAbsent},
		{path: "/v1/"},
		// A base URL without /v1 (many SDKs' configurable base), and Azure AI services' /models prefix used
		// with an OpenAI SDK: without api-version these are OpenAI requests.
		{path: "/models/", version: versionAbsent},
		{path: "/", version: versionAbsent},
	},
	basePath:     always("/v1"),
	upstreamPath: plainPath,
	headEdits:    noHeadEdits,
	// Billing headers: meaningful to OpenAI only (and dropped unless the client's own key is forwarded).
	ownHeaders: []string{"openai-organization", "openai-project"},
	auth:       authBearer,

	claimsRequest:               claimsNothing,
	bodyModel:                   modelInBody,
	prepareBody:                 noPrepare,
	bodyRules:                   noBodyRules,
	bodyAdditions:               noBodyAdditions,
	completionsDefaultMaxTokens: 16,
	streamUsageOption:           true,
	chatBridge:                  openAIChatBridge,
	encodingFormats:             []string{"float", "base64"},

	editsAnswers: neverEdits,
	dropsEvent:   dropsNoEvent,
	editEvent:    noEventEdits,
	modelObject:  openAIModelObject,

	errors: openAIEnvelope,
}

// openAIModelObject ends an OpenAI model object: {"id", "object":"model", "created", "owned_by"}.
func openAIModelObject(_ *ClientRequest, owner string) string {
	return `,"object":"model","created":0,"owned_by":` + string(jsonscan.AppendString(nil, owner)) + `}`
}

// dropsNoEvent is the dropsEvent of a dialect whose providers send no event of their own.
func dropsNoEvent(*Exchange, *eventParts) bool { return false }

// noEventEdits is the editEvent of a dialect whose providers' events are in the hub's shape.
func noEventEdits(*Stream, *eventParts) {}

// openAIEnvelope is {"error":{"message","type","param","code"}}, which OpenAI's SDKs read (and most others).
var openAIEnvelope = errorEnvelope{
	write:              func(b []byte, f *errorFields) []byte { return appendOpenAIError(b, f, false) },
	recognises:         recognisesOpenAIError,
	unprocessableAs400: true,
}

// appendOpenAIError writes the OpenAI envelope; withInner keeps an upstream's innererror (Azure OpenAI's
// content-filter verdicts).
func appendOpenAIError(b []byte, f *errorFields, withInner bool) []byte {
	b = append(b, `{"error":{"message":`...)
	b = jsonscan.AppendString(b, f.message)
	b = append(b, `,"type":`...)
	b = jsonscan.AppendString(b, orDefault(f.typ, errorType(f.status)))
	b = append(b, `,"param":`...)
	b = appendNullableString(b, f.param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, f.code)
	if withInner && f.inner != "" {
		b = append(b, `,"innererror":`...)
		b = append(b, f.inner...)
	}
	return append(b, `}}`...)
}

func recognisesOpenAIError(e gjson.Result) bool {
	return e.Get("type").Exists() && e.Get("param").Exists() && e.Get("code").Exists()
}

// errorType is the OpenAI "type" for a status when the upstream gave none.
func errorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

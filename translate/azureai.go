package translate

// Azure AI Model Inference: routes at the endpoint root (serverless) or under /models (AI services), api-key
// and Bearer, ?api-version=, and a strict parameter list: anything else is an "extra parameter" that the
// extra-parameters header decides on (docs/dialects.md section 3).
var azureAISpec = dialectSpec{
	name:                        "azure-ai",
	operations:                  ops(OpChatCompletions, OpCompletions, OpEmbeddings),
	defaultBasePath:             "",
	defaultAPIVersion:           "2024-05-01-preview",
	auth:                        authAPIKeyBearer,
	completionsDefaultMaxTokens: 256,
	ownFields:                   []string{"input_type"},
	knownParams: map[Operation][]string{
		OpChatCompletions: {
			"messages", "frequency_penalty", "presence_penalty", "temperature", "top_p", "max_tokens",
			"response_format", "stop", "stream", "tools", "tool_choice", "seed", "model", "modalities",
		},
		OpEmbeddings: {"input", "dimensions", "encoding_format", "input_type", "model"},
		OpCompletions: {
			"prompt", "frequency_penalty", "max_tokens", "presence_penalty", "seed", "stop", "stream",
			"temperature", "top_p", "model",
		},
	},
	usesAPIVersion: true,
	// /completions is documented in 2024-04-01-preview only; 2024-05-01-preview and later have no such route.
	versionedOps: []opVersions{{op: OpCompletions, versions: []string{"2024-04-01-preview"},
		fallback: "2024-04-01-preview", hint: "only 2024-04-01-preview has it"}},
	stopMustBeArray:          true,
	inputMustBeArray:         true,
	maxTokensOnly:            true,
	streamToolCallsLackIndex: true,
}

// ExtraParameters is an Azure AI provider's policy for request fields outside its known set.
type ExtraParameters uint8

const (
	// ExtraDrop removes unknown fields and sends "extra-parameters: drop" (the default).
	ExtraDrop ExtraParameters = iota
	// ExtraPassThrough keeps them and sends "extra-parameters: pass-through".
	ExtraPassThrough
	// ExtraError answers 400 locally, naming them; the upstream is not called.
	ExtraError
)

// ParseExtraParameters reads the extra_parameters configuration value; "ignore" is the old name of "drop".
func ParseExtraParameters(s string) (ExtraParameters, bool) {
	switch s {
	case "", "drop", "ignore":
		return ExtraDrop, true
	case "pass-through":
		return ExtraPassThrough, true
	case "error":
		return ExtraError, true
	}
	return ExtraDrop, false
}

// headerValue is the extra-parameters header value for an api-version: 2024-04-01-preview still used the
// older value name "ignore" for drop.
func (p ExtraParameters) headerValue(apiVersion string) string {
	switch p {
	case ExtraPassThrough:
		return "pass-through"
	case ExtraError:
		return "error"
	}
	if apiVersion == "2024-04-01-preview" {
		return "ignore"
	}
	return "drop"
}

func (p ExtraParameters) String() string { return p.headerValue("") }

// parseClientExtraParameters reads an extra-parameters header sent by an azure-ai client (any era's names).
func parseClientExtraParameters(v string) (ExtraParameters, bool) {
	switch v {
	case "pass-through", "allow":
		return ExtraPassThrough, true
	case "drop", "ignore":
		return ExtraDrop, true
	case "error":
		return ExtraError, true
	}
	return ExtraDrop, false
}

package translate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// Azure AI Model Inference: routes at the endpoint root (serverless) or under /models (AI services), api-key
// and Bearer, ?api-version=, and a strict parameter list: anything else is an "extra parameter" that the
// extra-parameters header decides on (docs/dialects.md section 3). Errors use the Azure.Core envelope. The
// REST reference: https://learn.microsoft.com/rest/api/aifoundry/model-inference/
var azureAISpec = dialectSpec{
	name:       "azure-ai",
	operations: ops(OpChatCompletions, OpCompletions, OpEmbeddings),
	// The same paths as OpenAI's base-URL-less ones: the api-version, which every Azure AI request carries,
	// tells them apart.
	routes: []clientRoute{
		{path: "/models/", version: versionNeeded},
		{path: "/", version: versionNeeded},
	},
	basePath:     azureAIBasePath,
	upstreamPath: plainPath,
	headEdits:    azureAIHeaders,
	ownHeaders:   []string{"extra-parameters", "azureml-model-deployment"},
	modelHeader:  "azureml-model-deployment",
	policyHeader: "extra-parameters",
	auth:         authAPIKeyBearer,

	usesAPIVersion:    true,
	defaultAPIVersion: "2024-05-01-preview",
	versionHint:       "2024-05-01-preview or 2025-04-01",
	// /completions is documented in 2024-04-01-preview only; 2024-05-01-preview and later have no such route.
	versionedOps: []opVersions{{op: OpCompletions, versions: []string{"2024-04-01-preview"},
		fallback: "2024-04-01-preview", hint: "only 2024-04-01-preview has it"}},

	claimsRequest: claimsNothing,
	bodyModel:     modelInBody,
	prepareBody:   clientPolicyHeader,
	bodyRules: []bodyRule{
		{fieldStop, wrapStringInArray},
		{fieldInput, wrapEmbeddingsInput},
		{fieldMaxCompletionTokens, renameToMaxTokens},
	},
	bodyAdditions: noBodyAdditions,
	ownFields:     []string{"input_type"},
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
	completionsDefaultMaxTokens: 256,
	// Only the parameters its chat API lists (knownParams); it sends usage in its last chunk unasked.
	chatBridge: bridgeOptions{maxTokensField: "max_tokens"},
	// Its own encodings (int8, uint8, binary, ubinary) besides float and base64: its providers judge the value.
	encodingFormats: nil,

	editsAnswers: alwaysEdits,
	dropsEvent:   dropsNoEvent,
	editEvent:    azureAIEventEdits,
	modelObject:  openAIModelObject,

	errors:       errorEnvelope{write: appendAzureCoreError, recognises: recognisesAzureCoreError},
	providerKeys: []configKey{extraParametersKey},
	modelKeys:    []configKey{deploymentKey},
}

// azureAIBasePath: Azure AI services endpoints (*.services.ai.azure.com) serve the inference routes under
// /models, serverless endpoints at the root.
func azureAIBasePath(host string) string {
	name, _, _ := strings.Cut(host, ":")
	name = strings.TrimSuffix(name, ".") // a fully qualified name is the same host
	if strings.HasSuffix(strings.ToLower(name), ".services.ai.azure.com") {
		return "/models"
	}
	return ""
}

// azureAIHeaders sends the extra-parameters policy and the model entry's deployment.
func azureAIHeaders(head *UpstreamHead, req *ClientRequest, t *Target, version string) *Error {
	policy, e := extraPolicy(req, t)
	if e != nil {
		return e
	}
	head.Set = append(head.Set, Header{"extra-parameters", policy.headerValue(version)})
	if deployment := t.Settings.deployment; deployment != "" {
		if !ValidDeployment(deployment) {
			return NewError(ErrInvalidDeployment, "deployment", "the configured deployment is not a valid name")
		}
		head.Set = append(head.Set, Header{"azureml-model-deployment", deployment})
	} else if req.Dialect != t.Dialect {
		// Azure routes on this header. Only an Azure AI client's own header chose this route (it was the
		// model that was resolved and authorised); from any other client it would pick a deployment the
		// gateway never checked. The full slice expression keeps the shared table from being appended to.
		head.Remove = append(head.Remove[:len(head.Remove):len(head.Remove)], "azureml-model-deployment")
	}
	return nil
}

// extraPolicy is the provider's extra_parameters policy, unless an Azure AI client sent its own header.
func extraPolicy(req *ClientRequest, t *Target) (extraParametersPolicy, *Error) {
	if req.Dialect == t.Dialect && req.PolicyHeader != "" {
		p, ok := parseClientExtraParameters(req.PolicyHeader)
		if !ok {
			return p, NewError(ErrInvalidParameter, "extra-parameters",
				"the extra-parameters header must be pass-through, drop or error, not "+quoteForMessage(req.PolicyHeader))
		}
		return p, nil
	}
	return t.Settings.extraParameters, nil
}

// clientPolicyHeader: an Azure AI client's own extra-parameters header decides toward an Azure AI provider.
func clientPolicyHeader(c *renderContext) *Error {
	if !c.strictParams {
		return nil
	}
	var e *Error
	c.policy, e = extraPolicy(c.req, c.t)
	return e
}

// azureAIEventEdits: Azure AI puts usage on its last content chunk, where an OpenAI client that asked for
// include_usage expects a separate usage chunk (choices: []); and its streamed tool-call deltas carry no
// "index", which OpenAI clients need to assemble calls.
func azureAIEventEdits(s *Stream, ev *eventParts) {
	if s.x.IncludeUsage && ev.hasUsage() && !isEmptyArray(ev.choices) {
		ev.newUsage, ev.usageChunk = nullValue, true
	}
	if s.x.Tools && ev.choices != nil && bytes.Contains(ev.choices, []byte(`"tool_calls"`)) {
		ev.newChoices = s.indexToolCalls(ev.choices)
	}
}

var nullValue = []byte("null")

// appendAzureCoreError writes the Azure.Core envelope {"error":{"code","message","status","target",
// "details"}}, which the Azure AI SDKs read.
func appendAzureCoreError(b []byte, f *errorFields) []byte {
	b = append(b, `{"error":{"code":`...)
	b = jsonscan.AppendString(b, orDefault(f.code, statusCode(f.status)))
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, f.message)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(f.status), 10)
	if f.param != "" {
		b = append(b, `,"target":`...)
		b = jsonscan.AppendString(b, f.param)
	}
	b = append(b, `,"details":`...)
	if f.details != "" {
		b = append(b, f.details...)
	} else {
		b = append(b, `[]`...)
	}
	return append(b, `}}`...)
}

func recognisesAzureCoreError(e gjson.Result) bool { return e.Get("code").Type == gjson.String }

// extraParametersPolicy is an Azure AI provider's policy for request fields outside its known set.
type extraParametersPolicy uint8

const (
	// extraDrop removes unknown fields and sends "extra-parameters: drop" (the default).
	extraDrop extraParametersPolicy = iota
	// extraPassThrough keeps them and sends "extra-parameters: pass-through".
	extraPassThrough
	// extraError answers 400 locally, naming them; the upstream is not called.
	extraError
)

// extraParametersKey is a provider's extra_parameters policy; a dialect with knownParams lists it among its
// providerKeys.
var extraParametersKey = configKey{name: "extra_parameters",
	check: func(v string) error {
		if _, ok := parseExtraParameters(v); !ok {
			return fmt.Errorf("%q is not one of pass-through, drop, error", v)
		}
		return nil
	},
	apply: func(s *Settings, v string) { s.extraParameters, _ = parseExtraParameters(v) },
}

// parseExtraParameters reads the extra_parameters configuration value; "ignore" is the old name of "drop".
func parseExtraParameters(s string) (extraParametersPolicy, bool) {
	switch s {
	case "", "drop", "ignore":
		return extraDrop, true
	case "pass-through":
		return extraPassThrough, true
	case "error":
		return extraError, true
	}
	return extraDrop, false
}

// headerValue is the extra-parameters header value for an api-version: 2024-04-01-preview still used the
// older value name "ignore" for drop.
func (p extraParametersPolicy) headerValue(apiVersion string) string {
	switch p {
	case extraPassThrough:
		return "pass-through"
	case extraError:
		return "error"
	}
	if apiVersion == "2024-04-01-preview" {
		return "ignore"
	}
	return "drop"
}

func (p extraParametersPolicy) String() string { return p.headerValue("") }

// parseClientExtraParameters reads an extra-parameters header sent by an azure-ai client (any era's names).
func parseClientExtraParameters(v string) (extraParametersPolicy, bool) {
	switch v {
	case "pass-through", "allow":
		return extraPassThrough, true
	case "drop", "ignore":
		return extraDrop, true
	case "error":
		return extraError, true
	}
	return extraDrop, false
}

package translate

// Azure OpenAI: the deployment is in the path (classic surface, /openai/deployments/{d}/{op}?api-version=)
// or in the body model (v1 surface, /openai/v1/{op}), the key in api-key (or an Entra bearer token), the
// version in ?api-version=. Answers carry content-filter annotations. The REST reference:
// https://learn.microsoft.com/azure/ai-foundry/openai/reference and, for the v1 surface,
// https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle
var azureOpenAISpec = dialectSpec{
	name: "azure-openai",
	operations: ops(OpChatCompletions, OpCompletions, OpEmbeddings, OpResponses, OpResponsesInputTokens,
		OpResponsesCompact),
	routes: []clientRoute{
		// The classic surface's Responses API has no deployment segment: the body model names the
		// deployment (2025-03-01-preview and later).
		{path: "/openai/", only: ops(OpResponses, OpResponsesInputTokens, OpResponsesCompact, OpStoredResponse),
			version: versionNeeded},
		// The v1 surface lists models in OpenAI's shape, whatever query it gets.
		{path: "/openai/v1/models", op: OpListModels, version: versionIgnored, surfaceVersion: "v1"},
		{path: "/openai/models", op: OpListModels},
		{path: "/openai/v1/", surfaceVersion: "v1"},
		{path: "/openai/deployments/", deploymentSegment: true},
	},
	basePath:     always("/openai"),
	upstreamPath: azureOpenAIPath,
	headEdits:    noHeadEdits,
	auth:         authAPIKey,

	usesAPIVersion:    true,
	defaultAPIVersion: "2024-10-21",
	namedVersions:     azureOpenAIV1Versions,
	versionHint:       "2024-10-21 or 2025-04-01-preview, or be v1, latest or preview for the v1 surface",
	// The v1 surface (/openai/v1) has no legacy completions route.
	versionedOps: []opVersions{
		{op: OpCompletions, versions: azureOpenAIV1Versions, lacking: true,
			hint: "use chat/completions, or a dated api-version (classic surface)"},
		responsesVersions(OpResponses), responsesVersions(OpResponsesInputTokens), responsesVersions(OpResponsesCompact),
	},

	claimsRequest:               claimsNothing,
	bodyModel:                   azureOpenAIBodyModel,
	prepareBody:                 noPrepare,
	bodyRules:                   noBodyRules,
	bodyAdditions:               noBodyAdditions,
	ownFields:                   []string{"data_sources", "user_security_context"},
	completionsDefaultMaxTokens: 16,
	streamUsageOption:           true,
	// Used for models marked chat_only: the same chat API as OpenAI's.
	chatBridge:      azureOpenAIChatBridge,
	encodingFormats: []string{"float", "base64"},

	editsAnswers: alwaysEdits,
	// Top-level content-safety annotations. Per-choice content_filter_results stay: they explain a
	// content_filter finish.
	answerKeys: []answerKey{
		{name: "prompt_filter_results", fate: dropForOthers},
		{name: "prompt_annotations", fate: dropForOthers},
	},
	dropsEvent:  isAnnotationEvent,
	editEvent:   noEventEdits,
	modelObject: azureOpenAIModelObject,

	errors: errorEnvelope{
		write:              func(b []byte, f *errorFields) []byte { return appendOpenAIError(b, f, true) },
		recognises:         recognisesOpenAIError,
		unprocessableAs400: true,
	},
	modelKeys: []configKey{deploymentKey},
	// "auth": "bearer": an Entra token in Authorization instead of api-key.
	providerKeys: []configKey{{name: "auth",
		check: func(v string) error { return checkOneOf(v, "bearer") },
		apply: func(s *Settings, _ string) { s.entraToken = true }}},
}

// responsesVersions: the Responses API is on the v1 surface and in the classic surface's api-versions from
// 2025-03-01-preview on.
func responsesVersions(op Operation) opVersions {
	return opVersions{op: op, versions: azureOpenAIV1Versions, since: "2025-03-01", fallback: "v1",
		hint: "v1, latest and preview (the v1 surface, /openai/v1/responses) and 2025-03-01-preview and later have it"}
}

// azureOpenAIV1Versions are the api-version values that select the v1 surface (/openai/v1/{op}); "v1" is
// the surface's default and is not sent on the wire.
var azureOpenAIV1Versions = []string{"v1", "latest", "preview"}

// isAzureOpenAIV1 reports whether an azure-openai api_version selects the v1 surface.
func isAzureOpenAIV1(apiVersion string) bool { return inList(azureOpenAIV1Versions, apiVersion) }

// azureOpenAIPath is /openai/v1/{op} on the v1 surface, else /openai/deployments/{deployment}/{op}: the
// deployment is the model entry's, else the model name, which must then be a valid deployment name. The
// classic surface's Responses API is /openai/responses, with the deployment in the body.
func azureOpenAIPath(b []byte, op Operation, _ *ClientRequest, t *Target, version string) ([]byte, *Error) {
	if op.responsesFamily() && !isAzureOpenAIV1(version) {
		b = append(append(b, '/'), op.PathSuffix()...)
		return append(append(b, "?api-version="...), version...), nil
	}
	if isAzureOpenAIV1(version) {
		b = append(append(b, "/v1/"...), op.PathSuffix()...)
		if version != "v1" {
			b = append(append(b, "?api-version="...), version...)
		}
		return b, nil
	}
	deployment := firstNonEmpty(t.Settings.deployment, t.Model)
	if !ValidDeployment(deployment) {
		return b, NewError(ErrInvalidDeployment, "model", "the model name "+quoteForMessage(deployment)+
			" cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it")
	}
	b = append(append(append(b, "/deployments/"...), deployment...), '/')
	b = append(append(b, op.PathSuffix()...), "?api-version="...)
	return append(b, version...), nil
}

// azureOpenAIBodyModel: the classic surface names the model in the path, so the body names none; the v1
// surface, and the Responses API on either surface, read the deployment from the body model (the entry's
// deployment, else its model).
func azureOpenAIBodyModel(req *ClientRequest, t *Target, version string) (string, bool) {
	return firstNonEmpty(t.Settings.deployment, t.Model), isAzureOpenAIV1(version) || req.Op.responsesFamily()
}

// isAnnotationEvent reports Azure's content-filter annotation chunks: an empty object name, or no choices
// and no usage.
func isAnnotationEvent(_ *Exchange, ev *eventParts) bool {
	return string(ev.object) == `""` || (isEmptyArray(ev.choices) && !ev.hasUsage())
}

// azureOpenAIModelObject ends a model entry in Azure OpenAI's classic shape (created_at, status,
// lifecycle_status; capabilities are left out: the configuration does not say whether a model chats or
// embeds); the v1 surface lists models in OpenAI's shape.
func azureOpenAIModelObject(req *ClientRequest, owner string) string {
	if req.SurfaceVersion != "" {
		return openAIModelObject(req, owner)
	}
	return `,"object":"model","created_at":0,"status":"succeeded","lifecycle_status":"generally-available"}`
}

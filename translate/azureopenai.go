package translate

// Azure OpenAI: the deployment is in the path (classic surface) or in the body model (v1 surface), the key in
// api-key (or an Entra bearer token), the version in ?api-version=. Answers carry content-filter annotations.
var azureOpenAISpec = dialectSpec{
	name:                        "azure-openai",
	operations:                  ops(OpChatCompletions, OpCompletions, OpEmbeddings),
	defaultBasePath:             "/openai",
	defaultAPIVersion:           "2024-10-21",
	auth:                        authAPIKey,
	completionsDefaultMaxTokens: 16,
	ownFields:                   []string{"data_sources", "user_security_context"},
	usesAPIVersion:              true,
	// The v1 surface (/openai/v1) has no legacy completions route.
	versionedOps: []opVersions{{op: OpCompletions, versions: azureOpenAIV1Versions, lacking: true,
		hint: "use chat/completions, or a dated api-version (classic surface)"}},
	keepsAzureAnnotations: true,
}

// azureOpenAIV1Versions are the api-version values that select the v1 surface (/openai/v1/{op}); "v1" is
// the surface's default and is not sent on the wire.
var azureOpenAIV1Versions = []string{"v1", "latest", "preview"}

// IsAzureOpenAIV1 reports whether an azure-openai api_version selects the v1 surface.
func IsAzureOpenAIV1(apiVersion string) bool { return inList(azureOpenAIV1Versions, apiVersion) }

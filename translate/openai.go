package translate

// OpenAI (api.openai.com/v1): the hub dialect. Bearer auth, no api-version, completions default to 16 tokens.
var openAISpec = dialectSpec{
	name:                        "openai",
	operations:                  ops(OpChatCompletions, OpCompletions, OpEmbeddings, OpListModels),
	defaultBasePath:             "/v1",
	auth:                        authBearer,
	completionsDefaultMaxTokens: 16,
	wantsOrgHeaders:             true,
}

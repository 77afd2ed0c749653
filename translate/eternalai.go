package translate

// EternalAI: OpenAI's shapes plus a string chain_id in requests and onchain_data in answers.
var eternalAISpec = dialectSpec{
	name:                        "eternalai",
	operations:                  ops(OpChatCompletions, OpCompletions),
	defaultBasePath:             "/v1",
	auth:                        authBearer,
	completionsDefaultMaxTokens: 16,
	ownFields:                   []string{"chain_id"},
	chainID:                     true,
}

// DefaultChainID is EternalAI's documented default chain ("Symbiosis").
const DefaultChainID = "45762"

// OnchainData says what happens to EternalAI's onchain_data in answers to clients of other dialects.
type OnchainData uint8

const (
	// OnchainHeaders removes it from the body and exposes its scalar fields as x-onchain-<field> headers.
	OnchainHeaders OnchainData = iota
	// OnchainStrip removes it.
	OnchainStrip
	// OnchainKeep leaves it in the body.
	OnchainKeep
)

// ParseOnchainData reads the onchain_data configuration value.
func ParseOnchainData(s string) (OnchainData, bool) {
	switch s {
	case "", "headers":
		return OnchainHeaders, true
	case "strip":
		return OnchainStrip, true
	case "keep":
		return OnchainKeep, true
	}
	return OnchainHeaders, false
}

package translate

import (
	"fmt"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// EternalAI: OpenAI's shapes plus a string chain_id in requests (the chain that serves the model) and
// onchain_data in answers. https://docs.eternalai.org/
var eternalAISpec = dialectSpec{
	name:       "eternalai",
	operations: eternalAIOperations,
	// Its clients use OpenAI's paths; claimsRequest tells them apart by chain_id.
	routes:       nil,
	basePath:     always("/v1"),
	upstreamPath: plainPath,
	headEdits:    noHeadEdits,
	auth:         authBearer,

	claimsRequest:               claimsChainID,
	bodyModel:                   modelInBody,
	prepareBody:                 chooseChainID,
	bodyRules:                   []bodyRule{{fieldChainID, planChainID}},
	bodyAdditions:               []bodyAddition{addChainID},
	ownFields:                   []string{"chain_id"},
	completionsDefaultMaxTokens: 16,
	streamUsageOption:           true,
	// OpenAI-compatible chat without OpenAI's newer parameters.
	chatBridge:      bridgeOptions{maxTokensField: "max_tokens", streamUsage: true},
	encodingFormats: []string{"float", "base64"},

	editsAnswers: func(x *Exchange) bool { return x.onchain != onchainKeep },
	answerKeys:   []answerKey{{name: "onchain_data", headerPrefix: "x-onchain-", fate: onchainFate}},
	dropsEvent:   dropsNoEvent,
	editEvent:    noEventEdits,
	modelObject:  openAIModelObject,

	errors:       openAIEnvelope,
	gatewayKeys:  []configKey{onchainDataKey},
	providerKeys: []configKey{providerChainIDKey},
	modelKeys:    []configKey{modelChainIDKey},
}

// eternalAIOperations: chat and completions (no Responses API: an OpenAI Responses request with chain_id
// stays an OpenAI client's, bridged to chat).
var eternalAIOperations = ops(OpChatCompletions, OpCompletions)

// defaultEternalAIChain is EternalAI's documented default chain ("Symbiosis").
const defaultEternalAIChain = "45762"

// claimsChainID: an OpenAI-path request whose body carries chain_id is an EternalAI client.
func claimsChainID(req *ClientRequest, body *RequestBody) bool {
	return req.Dialect == OpenAI && body.HasChainID && eternalAIOperations&(1<<req.Op) != 0
}

// chooseChainID picks the chain: the model entry's, else the client's, else the provider's, else the default.
func chooseChainID(c *renderContext) *Error {
	c.chainID = firstNonEmpty(c.t.Settings.chainID, c.body.ChainID, c.t.Settings.defaultChainID, defaultEternalAIChain)
	return nil
}

// planChainID writes the chosen chain over the client's (a number becomes a string, an escaped key plain).
func planChainID(c *renderContext, i int, p *memberPlan) *Error {
	p.settled = true
	if m := c.body.members[i]; !isJSONStringOf(m.Value(c.body.src), c.chainID) || m.KeyEscaped {
		p.edit, p.str = editString, c.chainID
	}
	return nil
}

func addChainID(c *renderContext) (string, []byte, bool) {
	if c.body.has(fieldChainID) {
		return "", nil, false
	}
	return "chain_id", jsonscan.AppendString(nil, c.chainID), true
}

// providerChainIDKey is a provider's chain, for models that pin none and clients that send none;
// modelChainIDKey a models entry's pinned chain, which wins over the client's.
var (
	providerChainIDKey = configKey{name: "chain_id", check: checkChainID,
		apply: func(s *Settings, v string) { s.defaultChainID = v }}
	modelChainIDKey = configKey{name: "chain_id", check: checkChainID,
		apply: func(s *Settings, v string) { s.chainID = v }}
)

func checkChainID(v string) error {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return fmt.Errorf("%q must be a decimal chain id such as \"45762\"", v)
		}
	}
	if v == "" || len(v) > 20 {
		return fmt.Errorf("%q must be a decimal chain id such as \"45762\"", v)
	}
	return nil
}

// onchainPolicy says what happens to EternalAI's onchain_data in answers to clients of other dialects.
type onchainPolicy uint8

const (
	// onchainHeaders removes it from the body and exposes its scalar fields as x-onchain-<field> headers.
	onchainHeaders onchainPolicy = iota
	// onchainStrip removes it.
	onchainStrip
	// onchainKeep leaves it in the body.
	onchainKeep
)

func onchainFate(x *Exchange) keyFate {
	switch x.onchain {
	case onchainKeep:
		return keepKey
	case onchainStrip:
		return dropKey
	}
	return keyToHeaders
}

// onchainDataKey is the gateway's onchain_data: what EternalAI's onchain_data becomes for clients of other
// dialects (a top-level key: it is about the clients, whichever EternalAI provider answers them).
var onchainDataKey = configKey{name: "onchain_data",
	check: func(v string) error {
		if _, ok := parseOnchainData(v); !ok {
			return fmt.Errorf("%q is not one of headers, strip, keep", v)
		}
		return nil
	},
	apply: func(s *Settings, v string) { s.onchain, _ = parseOnchainData(v) },
}

// parseOnchainData reads the onchain_data configuration value.
func parseOnchainData(s string) (onchainPolicy, bool) {
	switch s {
	case "", "headers":
		return onchainHeaders, true
	case "strip":
		return onchainStrip, true
	case "keep":
		return onchainKeep, true
	}
	return onchainHeaders, false
}

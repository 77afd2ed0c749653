package translate

import (
	"strings"
	"testing"
)

// Tests of eternalai.go's hooks, each alone.

// parsedBody parses a request body for a hook under test.
func parsedBody(t *testing.T, body string) *RequestBody {
	t.Helper()
	var b RequestBody
	if err := b.Parse([]byte(body)); err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return &b
}

// TestClaimsChainID: a request on an OpenAI path whose body carries a chain_id is an EternalAI client's.
func TestClaimsChainID(t *testing.T) {
	tests := []struct {
		name   string
		client Dialect
		body   string
		want   bool
	}{
		{"openai path with a string chain_id", OpenAI, `{"model":"m","chain_id":"8453"}`, true},
		{"openai path with a numeric chain_id", OpenAI, `{"chain_id":8453}`, true},
		{"openai path with an empty chain_id", OpenAI, `{"chain_id":""}`, true},
		{"openai path with an escaped chain_id key", OpenAI, `{"chain\u005fid":"1"}`, true},
		{"openai path with a null chain_id", OpenAI, `{"chain_id":null}`, false},
		{"openai path without chain_id", OpenAI, `{"model":"m"}`, false},
		{"azure-openai path with chain_id", AzureOpenAI, `{"chain_id":"8453"}`, false},
		{"azure-ai path with chain_id", AzureAI, `{"chain_id":"8453"}`, false},
		{"unknown path with chain_id", DialectUnknown, `{"chain_id":"8453"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ClientRequest{Dialect: tt.client, Op: OpChatCompletions}
			if got := claimsChainID(&req, parsedBody(t, tt.body)); got != tt.want {
				t.Errorf("claimsChainID = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestChooseChainID: the chain is the model entry's, else the client's, else the provider's, else the
// documented default.
func TestChooseChainID(t *testing.T) {
	tests := []struct {
		name     string
		model    string // Target.ChainID, the model entry's
		provider string // Target.defaultEternalAIChain
		body     string
		want     string
	}{
		{"the model entry's over all", "8453", "1", `{"chain_id":"56"}`, "8453"},
		{"the model entry's over the provider's", "8453", "1", `{}`, "8453"},
		{"the client's over the provider's", "", "1", `{"chain_id":"56"}`, "56"},
		{"the client's numeric chain as digits", "", "", `{"chain_id":56}`, "56"},
		{"the provider's when the client names none", "", "1", `{}`, "1"},
		{"the provider's over the client's empty string", "", "1", `{"chain_id":""}`, "1"},
		{"the provider's over the client's null", "", "1", `{"chain_id":null}`, "1"},
		{"the default when nobody names one", "", "", `{}`, defaultEternalAIChain},
		{"the client's over the default", "", "", `{"chain_id":"56"}`, "56"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ClientRequest{Dialect: EternalAI, Op: OpChatCompletions}
			target := Target{Dialect: EternalAI, Settings: Settings{chainID: tt.model, defaultChainID: tt.provider}}
			c := renderContext{req: &req, body: parsedBody(t, tt.body), t: &target, target: EternalAI.spec()}
			if err := chooseChainID(&c); err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if c.chainID != tt.want {
				t.Errorf("chain %q, want %q", c.chainID, tt.want)
			}
		})
	}
	if defaultEternalAIChain != "45762" {
		t.Errorf("defaultEternalAIChain = %q, want EternalAI's documented 45762", defaultEternalAIChain)
	}
}

// TestPlanChainIDKey: the chain_id member is rewritten only when it differs from the chosen chain, is not
// a plain string, or has an escaped key.
func TestPlanChainIDKey(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		chain string
		edit  memberEdit
		str   string
	}{
		{"the chosen chain as sent", `{"chain_id":"8453"}`, "8453", editKeep, ""},
		{"another chain", `{"chain_id":"56"}`, "8453", editString, "8453"},
		{"a number", `{"chain_id":8453}`, "8453", editString, "8453"},
		{"an escaped value", `{"chain_id":"\u0038453"}`, "8453", editString, "8453"},
		{"an escaped key", `{"chain\u005fid":"8453"}`, "8453", editString, "8453"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := renderContext{body: parsedBody(t, tt.body), chainID: tt.chain}
			var p memberPlan
			if err := planChainID(&c, 0, &p); err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if p.edit != tt.edit || p.str != tt.str || !p.settled {
				t.Errorf("plan %+v, want edit %d str %q settled", p, tt.edit, tt.str)
			}
		})
	}
}

// TestOnchainFate: what becomes of onchain_data for another dialect's client, per onchain_data setting.
func TestOnchainFate(t *testing.T) {
	tests := []struct {
		setting   onchainPolicy
		fate      keyFate
		editsBody bool // eternalAISpec.editsAnswers
	}{
		{onchainHeaders, keyToHeaders, true},
		{onchainStrip, dropKey, true},
		{onchainKeep, keepKey, false},
	}
	for _, tt := range tests {
		x := Exchange{Client: OpenAI, Provider: EternalAI, Op: OpChatCompletions, onchain: tt.setting}
		if got := onchainFate(&x); got != tt.fate {
			t.Errorf("onchainFate(%d) = %d, want %d", tt.setting, got, tt.fate)
		}
		if got := eternalAISpec.editsAnswers(&x); got != tt.editsBody {
			t.Errorf("editsAnswers with onchain %d = %v, want %v", tt.setting, got, tt.editsBody)
		}
	}
	if k := eternalAISpec.answerKeys; len(k) != 1 || k[0].name != "onchain_data" || k[0].headerPrefix != "x-onchain-" {
		t.Errorf("answer keys %+v, want onchain_data exposed as x-onchain-*", k)
	}
}

// TestParseOnchainData: the configuration values of onchain_data.
func TestParseOnchainData(t *testing.T) {
	tests := []struct {
		value string
		want  onchainPolicy
		ok    bool
	}{
		{"", onchainHeaders, true},
		{"headers", onchainHeaders, true},
		{"strip", onchainStrip, true},
		{"keep", onchainKeep, true},
		{"Keep", onchainHeaders, false},
		{"drop", onchainHeaders, false},
	}
	for _, tt := range tests {
		got, ok := parseOnchainData(tt.value)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseOnchainData(%q) = (%d, %v), want (%d, %v)", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

// TestChainIDKey: a pinned chain_id (provider or model) is 1-20 decimal digits.
func TestChainIDKey(t *testing.T) {
	tests := []struct {
		value string
		err   string // "" = accepted
	}{
		{"45762", ""},
		{"0", ""},
		{strings.Repeat("9", 20), ""},
		{strings.Repeat("9", 21), `"999999999999999999999" must be a decimal chain id such as "45762"`},
		{"", `"" must be a decimal chain id such as "45762"`},
		{"84a53", `"84a53" must be a decimal chain id such as "45762"`},
		{"-1", `"-1" must be a decimal chain id such as "45762"`},
		{"84.53", `"84.53" must be a decimal chain id such as "45762"`},
		{" 1", `" 1" must be a decimal chain id such as "45762"`},
		{"١٢", `"١٢" must be a decimal chain id such as "45762"`},
	}
	for _, tt := range tests {
		err := checkChainID(tt.value)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("chain_id %q refused: %v", tt.value, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("chain_id %q: error %v, want %s", tt.value, err, tt.err)
		}
	}
	for _, k := range []configKey{providerChainIDKey, modelChainIDKey} {
		if k.name != "chain_id" {
			t.Errorf("key named %q", k.name)
		}
	}
}

package translate

import (
	"testing"
)

// planOne runs one rule row alone on the first member of body, as RenderBody would toward target.
func planOne(t *testing.T, rule func(*renderContext, int, *memberPlan) *Error, op Operation, client Dialect,
	body string, target Target) (memberPlan, *renderContext, *Error) {
	t.Helper()
	var b RequestBody
	if err := b.Parse([]byte(body)); err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	req := ClientRequest{Dialect: client, Op: op}
	c := b.startRender(&req, &target)
	if err := c.target.prepareBody(c); err != nil {
		return memberPlan{}, c, err
	}
	var p memberPlan
	err := rule(c, 0, &p)
	return p, c, err
}

// TestBodyRules: each row of the request rules, alone: the plan it makes for one member.
func TestBodyRules(t *testing.T) {
	openai := Target{Dialect: OpenAI, Model: "gpt-4o"}
	tests := []struct {
		name    string
		rule    func(*renderContext, int, *memberPlan) *Error
		op      Operation
		body    string
		target  Target
		edit    memberEdit
		str     string
		settled bool
		errCode ErrorCode
	}{
		{"model kept when it is the upstream's", planModel, OpChatCompletions, `{"model":"gpt-4o"}`, openai, editKeep, "", true, ""},
		{"model mapped", planModel, OpChatCompletions, `{"model":"alias"}`, openai, editString, "gpt-4o", true, ""},
		{"escaped model key written plain", planModel, OpChatCompletions, `{"mod\u0065l":"gpt-4o"}`, openai, editString, "gpt-4o", true, ""},
		{"model dropped on the azure classic surface", planModel, OpChatCompletions, `{"model":"gpt-4o"}`,
			Target{Dialect: AzureOpenAI, Model: "gpt-4o"}, editDrop, "", true, ""},
		{"model is the deployment on the azure v1 surface", planModel, OpChatCompletions, `{"model":"gpt-4o"}`,
			Target{Dialect: AzureOpenAI, Model: "gpt-4o", APIVersion: "v1", Settings: Settings{deployment: "prod"}}, editString, "prod", true, ""},
		{"stream_options untouched without forced usage", planStreamOptions, OpChatCompletions, `{"stream_options":{}}`, openai, editKeep, "", false, ""},
		{"stream_options gets include_usage when forced", planStreamOptions, OpChatCompletions, `{"stream_options":{"x":1},"stream":true}`,
			Target{Dialect: OpenAI, ForceStreamUsage: true}, editRaw, "", true, ""},
		{"stop string wrapped", wrapStringInArray, OpChatCompletions, `{"stop":"END"}`, Target{Dialect: AzureAI}, editWrapInArray, "", false, ""},
		{"stop array kept", wrapStringInArray, OpChatCompletions, `{"stop":["a"]}`, Target{Dialect: AzureAI}, editKeep, "", false, ""},
		{"stop number refused", wrapStringInArray, OpChatCompletions, `{"stop":3}`, Target{Dialect: AzureAI}, editKeep, "", false, ErrInvalidParameter},
		{"embeddings input wrapped", wrapEmbeddingsInput, OpEmbeddings, `{"input":"x"}`, Target{Dialect: AzureAI}, editWrapInArray, "", false, ""},
		{"embeddings text array kept", wrapEmbeddingsInput, OpEmbeddings, `{"input":["a", "b"]}`, Target{Dialect: AzureAI}, editKeep, "", false, ""},
		{"embeddings token ids refused", wrapEmbeddingsInput, OpEmbeddings, `{"input":[[15339],[14957]]}`, Target{Dialect: AzureAI}, editKeep, "", false, ErrInvalidParameter},
		{"embeddings one token array refused", wrapEmbeddingsInput, OpEmbeddings, `{"input":[15339, 14957]}`, Target{Dialect: AzureAI}, editKeep, "", false, ErrInvalidParameter},
		{"completions input is no embeddings input", wrapEmbeddingsInput, OpCompletions, `{"input":"x"}`, Target{Dialect: AzureAI}, editKeep, "", false, ""},
		{"max_completion_tokens renamed", renameToMaxTokens, OpChatCompletions, `{"max_completion_tokens":5}`, Target{Dialect: AzureAI},
			editRename, "max_tokens", true, ""},
		{"max_completion_tokens beside max_tokens left to the policy", renameToMaxTokens, OpChatCompletions,
			`{"max_completion_tokens":5,"max_tokens":6}`, Target{Dialect: AzureAI}, editKeep, "", false, ""},
		{"chain_id rewritten to the pinned chain", planChainID, OpChatCompletions, `{"chain_id":"1"}`,
			Target{Dialect: EternalAI, Settings: Settings{chainID: "8453"}}, editString, "8453", true, ""},
		{"client chain_id kept", planChainID, OpChatCompletions, `{"chain_id":"1"}`, Target{Dialect: EternalAI}, editKeep, "", true, ""},
		{"numeric chain_id written as a string", planChainID, OpChatCompletions, `{"chain_id":1}`, Target{Dialect: EternalAI}, editString, "1", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := planOne(t, tt.rule, tt.op, OpenAI, tt.body, tt.target)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode {
					t.Fatalf("error %v, want %s", err, tt.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.edit != tt.edit || p.str != tt.str || p.settled != tt.settled {
				t.Errorf("plan = %+v, want edit %d str %q settled %v", p, tt.edit, tt.str, tt.settled)
			}
		})
	}
}

// TestFallbackRule: a member no rule settled is dropped when another dialect owns it, and judged by the
// extra-parameters policy toward a target with a parameter list.
func TestFallbackRule(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		target Target
		edit   memberEdit
		extras int
	}{
		{"another dialect's field dropped", `{"chain_id":"1"}`, Target{Dialect: OpenAI}, editDrop, 0},
		{"the target's own field kept", `{"data_sources":[]}`, Target{Dialect: AzureOpenAI}, editKeep, 0},
		{"unknown field kept toward a lenient target", `{"user":"u"}`, Target{Dialect: OpenAI}, editKeep, 0},
		{"extra parameter dropped and listed", `{"user":"u"}`, Target{Dialect: AzureAI}, editDrop, 1},
		{"extra parameter passed through", `{"user":"u"}`, Target{Dialect: AzureAI, Settings: Settings{extraParameters: extraPassThrough}}, editKeep, 0},
		{"extra parameter kept and listed for the error", `{"user":"u"}`, Target{Dialect: AzureAI, Settings: Settings{extraParameters: extraError}}, editKeep, 1},
		{"known parameter kept", `{"temperature":1}`, Target{Dialect: AzureAI}, editKeep, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noop := func(*renderContext, int, *memberPlan) *Error { return nil }
			p, c, err := planOne(t, noop, OpChatCompletions, OpenAI, tt.body, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			planFallback(c, 0, &c.body.fields[0], &p)
			if p.edit != tt.edit || c.extras.count() != tt.extras {
				t.Errorf("edit %d with %d extras, want %d with %d", p.edit, c.extras.count(), tt.edit, tt.extras)
			}
		})
	}
}

// TestBodyAdditions: each addition alone.
func TestBodyAdditions(t *testing.T) {
	tests := []struct {
		name   string
		add    bodyAddition
		op     Operation
		client Dialect
		body   string
		target Target
		want   string // key:value, "" for nothing added
	}{
		{"model added when absent", addModel, OpChatCompletions, OpenAI, `{}`, Target{Dialect: OpenAI, Model: "m"}, `model:"m"`},
		{"model not added when present", addModel, OpChatCompletions, OpenAI, `{"model":"x"}`, Target{Dialect: OpenAI, Model: "m"}, ""},
		{"no model on the azure classic surface", addModel, OpChatCompletions, OpenAI, `{}`, Target{Dialect: AzureOpenAI, Model: "m"}, ""},
		{"stream_options added when forced", addStreamOptions, OpChatCompletions, OpenAI, `{"stream":true}`,
			Target{Dialect: OpenAI, ForceStreamUsage: true}, `stream_options:{"include_usage":true}`},
		{"chain_id added", addChainID, OpChatCompletions, OpenAI, `{}`, Target{Dialect: EternalAI}, `chain_id:"45762"`},
		{"a client's chain id is written as JSON", addChainID, OpChatCompletions, OpenAI, `{}`,
			Target{Dialect: EternalAI, Settings: Settings{chainID: `1"2`}}, `chain_id:"1\"2"`},
		{"completions keep the client's default max_tokens", addCompletionsMaxTokens, OpCompletions, OpenAI, `{}`,
			Target{Dialect: AzureAI}, `max_tokens:16`},
		{"no default between dialects that agree", addCompletionsMaxTokens, OpCompletions, OpenAI, `{}`, Target{Dialect: EternalAI}, ""},
		{"no default over the client's", addCompletionsMaxTokens, OpCompletions, OpenAI, `{"max_tokens":3}`, Target{Dialect: AzureAI}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noop := func(*renderContext, int, *memberPlan) *Error { return nil }
			_, c, err := planOne(t, noop, tt.op, tt.client, tt.body, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if key, value, ok := tt.add(c); ok {
				got = key + ":" + string(value)
			}
			if got != tt.want {
				t.Errorf("added %q, want %q", got, tt.want)
			}
		})
	}
}

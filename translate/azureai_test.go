package translate

import (
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// Tests of azureai.go's hooks, each alone.

// TestAzureAIBasePath: AI services endpoints serve the inference routes under /models, others at the root.
func TestAzureAIBasePath(t *testing.T) {
	tests := []struct {
		host string
		want string
	}{
		{"myres.services.ai.azure.com", "/models"},
		{"myres.services.ai.azure.com:443", "/models"},
		{"MyRes.Services.AI.Azure.COM", "/models"},
		{"MYRES.SERVICES.AI.AZURE.COM:8443", "/models"},
		{"myendpoint.eastus2.models.ai.azure.com", ""},
		{"myres.inference.ai.azure.com", ""},
		{"myres.openai.azure.com", ""},
		{"services.ai.azure.com", ""},
		{"myservices.ai.azure.com", ""},
		{"myres.services.ai.azure.com.example.com", ""},
		{"localhost:8080", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := azureAIBasePath(tt.host); got != tt.want {
			t.Errorf("azureAIBasePath(%q) = %q, want %q", tt.host, got, tt.want)
		}
		if got := DefaultBasePathForHost(AzureAI, tt.host); got != tt.want {
			t.Errorf("DefaultBasePathForHost(azure-ai, %q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// TestAzureAIHeaders: the extra-parameters header (the provider's policy, or an Azure AI client's own, with
// the name 2024-04-01-preview used for drop), the configured deployment, and the removal of a model header
// that a client of another dialect could have slipped in.
func TestAzureAIHeaders(t *testing.T) {
	const newer, older = "2024-05-01-preview", "2024-04-01-preview"
	tests := []struct {
		name         string
		client       Dialect
		clientHeader string // the client's extra-parameters header
		target       Target
		version      string
		set          []Header
		removesModel bool // azureml-model-deployment added to the removals
		errCode      ErrorCode
		errParam     string
		errMsg       string
	}{
		{"provider's default policy", OpenAI, "", Target{}, newer,
			[]Header{{"extra-parameters", "drop"}}, true, "", "", ""},
		{"drop is written ignore for 2024-04-01-preview", OpenAI, "", Target{}, older,
			[]Header{{"extra-parameters", "ignore"}}, true, "", "", ""},
		{"drop for a GA version", OpenAI, "", Target{}, "2025-04-01",
			[]Header{{"extra-parameters", "drop"}}, true, "", "", ""},
		{"pass-through in every version", OpenAI, "", Target{Settings: Settings{extraParameters: extraPassThrough}}, older,
			[]Header{{"extra-parameters", "pass-through"}}, true, "", "", ""},
		{"error in every version", OpenAI, "", Target{Settings: Settings{extraParameters: extraError}}, older,
			[]Header{{"extra-parameters", "error"}}, true, "", "", ""},
		{"the configured deployment is sent", OpenAI, "", Target{Settings: Settings{deployment: "llama-prod"}}, newer,
			[]Header{{"extra-parameters", "drop"}, {"azureml-model-deployment", "llama-prod"}}, false, "", "", ""},
		{"an invalid configured deployment refused", OpenAI, "", Target{Settings: Settings{deployment: "a/b"}}, newer,
			nil, false, ErrInvalidDeployment, "deployment", "the configured deployment is not a valid name"},
		{"an azure-ai client's own model header is kept", AzureAI, "", Target{}, newer,
			[]Header{{"extra-parameters", "drop"}}, false, "", "", ""},
		{"an azure-openai client's model header is removed", AzureOpenAI, "", Target{}, newer,
			[]Header{{"extra-parameters", "drop"}}, true, "", "", ""},
		{"an eternalai client's model header is removed", EternalAI, "", Target{}, newer,
			[]Header{{"extra-parameters", "drop"}}, true, "", "", ""},
		{"the azure-ai client's header wins over the provider's", AzureAI, "pass-through", Target{Settings: Settings{extraParameters: extraDrop}}, newer,
			[]Header{{"extra-parameters", "pass-through"}}, false, "", "", ""},
		{"the client's allow is pass-through", AzureAI, "allow", Target{}, newer,
			[]Header{{"extra-parameters", "pass-through"}}, false, "", "", ""},
		{"the client's ignore is drop", AzureAI, "ignore", Target{Settings: Settings{extraParameters: extraPassThrough}}, "2025-04-01",
			[]Header{{"extra-parameters", "drop"}}, false, "", "", ""},
		{"the client's drop is written ignore for 2024-04-01-preview", AzureAI, "drop", Target{Settings: Settings{extraParameters: extraError}}, older,
			[]Header{{"extra-parameters", "ignore"}}, false, "", "", ""},
		{"the client's error", AzureAI, "error", Target{Settings: Settings{extraParameters: extraPassThrough}}, newer,
			[]Header{{"extra-parameters", "error"}}, false, "", "", ""},
		{"an invalid client header refused", AzureAI, "Pass-Through", Target{}, newer,
			nil, false, ErrInvalidParameter, "extra-parameters",
			`the extra-parameters header must be pass-through, drop or error, not "Pass-Through"`},
		{"another dialect's client's header is not read", OpenAI, "bogus", Target{Settings: Settings{extraParameters: extraPassThrough}}, newer,
			[]Header{{"extra-parameters", "pass-through"}}, true, "", "", ""},
		{"the client's header with a deployment", AzureAI, "error", Target{Settings: Settings{deployment: "d1"}}, newer,
			[]Header{{"extra-parameters", "error"}, {"azureml-model-deployment", "d1"}}, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.target.Dialect = AzureAI
			req := ClientRequest{Dialect: tt.client, Op: OpChatCompletions, PolicyHeader: tt.clientHeader}
			shared := headersToRemove[AzureAI]
			// A removal list with room to spare: the hook must not write into the array it was given.
			base := make([]string, len(shared), len(shared)+4)
			copy(base, shared)
			head := UpstreamHead{Remove: base}
			err := azureAIHeaders(&head, &req, &tt.target, tt.version)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode || err.Param != tt.errParam || err.Message != tt.errMsg {
					t.Fatalf("error %+v, want %s on %s: %s", err, tt.errCode, tt.errParam, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !slices.Equal(head.Set, tt.set) {
				t.Errorf("set %v, want %v", head.Set, tt.set)
			}
			wantRemove := slices.Clone(shared)
			if tt.removesModel {
				wantRemove = append(wantRemove, "azureml-model-deployment")
			}
			if !slices.Equal(head.Remove, wantRemove) {
				t.Errorf("remove %v, want %v", head.Remove, wantRemove)
			}
			if spare := base[:len(base)+1][len(base)]; spare != "" {
				t.Errorf("the hook wrote %q into the removal list's shared array", spare)
			}
		})
	}
}

// TestClientPolicyHeader: toward Azure AI, an operation with a parameter list judges the other fields by the
// extra-parameters policy: the provider's, or an Azure AI client's own header.
func TestClientPolicyHeader(t *testing.T) {
	tests := []struct {
		name         string
		client       Dialect
		clientHeader string
		op           Operation
		provider     extraParametersPolicy
		strict       bool
		policy       extraParametersPolicy
		errCode      ErrorCode
	}{
		{"chat: the provider's drop", OpenAI, "", OpChatCompletions, extraDrop, true, extraDrop, ""},
		{"chat: the provider's pass-through", OpenAI, "", OpChatCompletions, extraPassThrough, true, extraPassThrough, ""},
		{"embeddings: the provider's error", OpenAI, "", OpEmbeddings, extraError, true, extraError, ""},
		{"completions are strict too", OpenAI, "", OpCompletions, extraPassThrough, true, extraPassThrough, ""},
		{"no parameter list for model listing: no header read", AzureAI, "error", OpListModels, extraPassThrough, false, extraPassThrough, ""},
		{"an azure-ai client's header wins", AzureAI, "error", OpChatCompletions, extraPassThrough, true, extraError, ""},
		{"an azure-ai client's allow", AzureAI, "allow", OpEmbeddings, extraDrop, true, extraPassThrough, ""},
		{"another client's header is not read", AzureOpenAI, "error", OpChatCompletions, extraDrop, true, extraDrop, ""},
		{"an invalid client header refused", AzureAI, "none", OpChatCompletions, extraDrop, true, extraDrop, ErrInvalidParameter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ClientRequest{Dialect: tt.client, Op: tt.op, PolicyHeader: tt.clientHeader}
			target := Target{Dialect: AzureAI, Settings: Settings{extraParameters: tt.provider}}
			c := renderContext{req: &req, t: &target, target: AzureAI.spec(), source: tt.client.spec(),
				strictParams: AzureAI.spec().knownParams[tt.op] != nil, policy: tt.provider} // as RenderBody sets them
			err := clientPolicyHeader(&c)
			if tt.errCode != "" {
				if err == nil || err.Code != tt.errCode || err.Param != "extra-parameters" {
					t.Fatalf("error %+v, want %s on extra-parameters", err, tt.errCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if c.strictParams != tt.strict || c.policy != tt.policy {
				t.Errorf("strict %v policy %s, want strict %v policy %s", c.strictParams, c.policy, tt.strict, tt.policy)
			}
		})
	}
}

// TestAzureAIEventEdits: usage moved to a separate usage chunk only when the client asked for include_usage
// and a content chunk carries it; tool-call deltas indexed only when the request offered tools.
func TestAzureAIEventEdits(t *testing.T) {
	const (
		content  = `[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]`
		usage    = `{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}`
		toolCall = `[{"index":0,"delta":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]`
	)
	tests := []struct {
		name          string
		includeUsage  bool
		tools         bool
		choices       string // "" = absent
		usage         string // "" = absent
		wantUsage     string // newUsage, "" = unchanged
		wantChunk     bool
		wantNewChoice string // newChoices, "" = unchanged
	}{
		{"usage split off a content chunk", true, false, content, usage, "null", true, ""},
		{"usage left on a content chunk without include_usage", false, false, content, usage, "", false, ""},
		{"usage chunk already separate", true, false, `[]`, usage, "", false, ""},
		{"usage chunk with spaced empty choices", true, false, `[ ]`, usage, "", false, ""},
		{"null usage not split", true, false, content, `null`, "", false, ""},
		{"no usage, nothing to split", true, false, content, "", "", false, ""},
		{"tool-call delta indexed", false, true, toolCall, "", "", false,
			`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]`},
		{"tool-call delta not indexed without tools offered", false, false, toolCall, "", "", false, ""},
		{"content chunk with tools offered untouched", false, true, content, "", "", false, ""},
		{"a delta that has its index untouched", false, true,
			`[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"call_1"}]}}]`, "", "", false, ""},
		{"two calls in one delta", false, true,
			`[{"index":0,"delta":{"tool_calls":[{"id":"a"},{"id":"b"}]}}]`, "", "", false,
			`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"id":"b"}]}}]`},
		{"an empty call object", false, true,
			`[{"index":0,"delta":{"tool_calls":[{}]}}]`, "", "", false,
			`[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]`},
		{"both edits on one chunk", true, true, toolCall, usage, "null", true,
			`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions,
				IncludeUsage: tt.includeUsage, Tools: tt.tools}, 0)
			ev := eventParts{object: []byte(`"chat.completion.chunk"`), choices: nilIfEmpty(tt.choices), usage: nilIfEmpty(tt.usage)}
			azureAIEventEdits(s, &ev)
			if string(ev.newUsage) != tt.wantUsage || ev.usageChunk != tt.wantChunk {
				t.Errorf("newUsage %q usageChunk %v, want %q %v", ev.newUsage, ev.usageChunk, tt.wantUsage, tt.wantChunk)
			}
			if string(ev.newChoices) != tt.wantNewChoice {
				t.Errorf("newChoices %s\nwant       %s", ev.newChoices, tt.wantNewChoice)
			}
			if tt.wantNewChoice != "" && !gjson.Valid(string(ev.newChoices)) {
				t.Errorf("newChoices is not JSON: %s", ev.newChoices)
			}
			if ev.newObject != nil {
				t.Errorf("the object was edited: %s", ev.newObject)
			}
		})
	}
}

// TestAzureAIToolCallIndexAcrossEvents: one stream's indices follow the order in which call ids first
// appear; a delta without an id continues the latest call.
func TestAzureAIToolCallIndexAcrossEvents(t *testing.T) {
	s := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions, Tools: true}, 0)
	steps := []struct{ choices, want string }{
		{`[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f"}}]}}]`,
			`[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f"}}]}}]`},
		{`[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]`,
			`[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]`},
		{`[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g"}}]}}]`,
			`[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g"}}]}}]`},
		{`[{"delta":{"tool_calls":[{"function":{"arguments":"1"}}]}}]`,
			`[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"1"}}]}}]`},
		{`[{"delta":{"tool_calls":[{"id":"a","function":{"arguments":"2"}}]}}]`,
			`[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"2"}}]}}]`},
	}
	for i, step := range steps {
		ev := eventParts{choices: []byte(step.choices)}
		azureAIEventEdits(s, &ev)
		if string(ev.newChoices) != step.want {
			t.Errorf("event %d: newChoices %s\nwant              %s", i, ev.newChoices, step.want)
		}
	}
}

// TestAppendAzureCoreError: the Azure.Core envelope, its code from the status when the upstream gave none,
// target only with a param, and details kept or empty.
func TestAppendAzureCoreError(t *testing.T) {
	tests := []struct {
		name string
		f    errorFields
		want string
	}{
		{"code from the status", errorFields{status: 400, message: "m"},
			`{"error":{"code":"BadRequest","message":"m","status":400,"details":[]}}`},
		{"upstream code kept", errorFields{status: 429, message: "m", code: "rate_limit_exceeded"},
			`{"error":{"code":"rate_limit_exceeded","message":"m","status":429,"details":[]}}`},
		{"param as target", errorFields{status: 404, message: "m", code: "model_not_found", param: "model"},
			`{"error":{"code":"model_not_found","message":"m","status":404,"target":"model","details":[]}}`},
		{"details kept", errorFields{status: 422, message: "m", details: `[{"code":"x","message":"y"}]`},
			`{"error":{"code":"UnprocessableEntity","message":"m","status":422,"details":[{"code":"x","message":"y"}]}}`},
		{"an unnamed 4xx status as digits", errorFields{status: 418, message: "m"},
			`{"error":{"code":"418","message":"m","status":418,"details":[]}}`},
		{"an unnamed 5xx status", errorFields{status: 507, message: "m"},
			`{"error":{"code":"InternalServerError","message":"m","status":507,"details":[]}}`},
		{"message and target escaped", errorFields{status: 400, message: "a \"b\"\n", param: `x"y`},
			`{"error":{"code":"BadRequest","message":"a \"b\"\n","status":400,"target":"x\"y","details":[]}}`},
		{"type and innererror are not part of it", errorFields{status: 401, message: "m", typ: "t", inner: `{"code":"i"}`},
			`{"error":{"code":"Unauthorized","message":"m","status":401,"details":[]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendAzureCoreError(nil, &tt.f)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestRecognisesAzureCoreError: an "error" object is the Azure.Core envelope when its code is a string.
func TestRecognisesAzureCoreError(t *testing.T) {
	tests := []struct {
		error string
		want  bool
	}{
		{`{"code":"BadRequest","message":"m","status":400,"details":[]}`, true},
		{`{"code":"BadRequest","message":"m"}`, true},
		{`{"code":400,"message":"m"}`, false},
		{`{"code":null,"message":"m"}`, false},
		{`{"message":"m","status":400}`, false},
		{`{}`, false},
	}
	for _, tt := range tests {
		if got := recognisesAzureCoreError(gjson.Parse(tt.error)); got != tt.want {
			t.Errorf("recognisesAzureCoreError(%s) = %v, want %v", tt.error, got, tt.want)
		}
	}
	if azureAISpec.errors.unprocessableAs400 {
		t.Error("azure-ai clients must see the service's 422 as it is")
	}
}

// TestParseExtraParameters: the configuration values of extra_parameters.
func TestParseExtraParameters(t *testing.T) {
	tests := []struct {
		value string
		want  extraParametersPolicy
		ok    bool
	}{
		{"", extraDrop, true},
		{"drop", extraDrop, true},
		{"ignore", extraDrop, true},
		{"pass-through", extraPassThrough, true},
		{"error", extraError, true},
		{"allow", extraDrop, false},
		{"pass_through", extraDrop, false},
		{"DROP", extraDrop, false},
		{" drop", extraDrop, false},
	}
	for _, tt := range tests {
		got, ok := parseExtraParameters(tt.value)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseExtraParameters(%q) = (%s, %v), want (%s, %v)", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

// TestParseClientExtraParameters: an Azure AI client's extra-parameters header, in any era's names.
func TestParseClientExtraParameters(t *testing.T) {
	tests := []struct {
		value string
		want  extraParametersPolicy
		ok    bool
	}{
		{"pass-through", extraPassThrough, true},
		{"allow", extraPassThrough, true},
		{"drop", extraDrop, true},
		{"ignore", extraDrop, true},
		{"error", extraError, true},
		{"", extraDrop, false},
		{"Error", extraDrop, false},
		{"pass_through", extraDrop, false},
	}
	for _, tt := range tests {
		got, ok := parseClientExtraParameters(tt.value)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseClientExtraParameters(%q) = (%s, %v), want (%s, %v)", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

// TestExtraParametersHeaderValue: the header value per api-version (drop was "ignore" in
// 2024-04-01-preview), and String, which names the current values.
func TestExtraParametersHeaderValue(t *testing.T) {
	tests := []struct {
		policy  extraParametersPolicy
		version string
		want    string
	}{
		{extraDrop, "2024-04-01-preview", "ignore"},
		{extraDrop, "2024-05-01-preview", "drop"},
		{extraDrop, "2025-04-01", "drop"},
		{extraDrop, "", "drop"},
		{extraPassThrough, "2024-04-01-preview", "pass-through"},
		{extraPassThrough, "2024-05-01-preview", "pass-through"},
		{extraError, "2024-04-01-preview", "error"},
		{extraError, "2025-04-01", "error"},
	}
	for _, tt := range tests {
		if got := tt.policy.headerValue(tt.version); got != tt.want {
			t.Errorf("%d.headerValue(%q) = %q, want %q", tt.policy, tt.version, got, tt.want)
		}
	}
	for policy, want := range map[extraParametersPolicy]string{extraDrop: "drop", extraPassThrough: "pass-through", extraError: "error"} {
		if got := policy.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", policy, got, want)
		}
	}
}

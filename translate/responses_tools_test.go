//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The tools agent clients declare (responses_tools.go), as the Codex CLI 0.171.0 and the OpenAI Agents SDK
// 0.20.0 send them (docs/agent-clients.md).
const (
	namespaceTool = `{"type":"namespace","name":"crm","description":"CRM tools.","tools":[{"type":"function",` +
		`"name":"lookup_customer","description":"Look up a customer.","parameters":{"type":"object","properties":` +
		`{"customerId":{"type":"string"}},"required":["customerId"],"additionalProperties":false},"strict":true}]}`
	applyPatchTool = `{"type":"custom","name":"apply_patch","description":"Edit files.","format":{"type":"grammar",` +
		`"syntax":"lark","definition":"start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF"}}`
	toolSearchTool = `{"type":"tool_search","execution":"client","description":"Searches deferred tools.",` +
		`"parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}`
	webSearchTool = `{"type":"web_search","external_web_access":true}`
)

// The chat forms the bridge writes for them.
const (
	namespaceChatTool = `{"type":"function","function":{"name":"crm__lookup_customer","description":"Look up a customer.",` +
		`"parameters":{"type":"object","properties":{"customerId":{"type":"string"}},"required":["customerId"],` +
		`"additionalProperties":false},"strict":true}}`
	applyPatchAsFunction = `{"type":"function","function":{"name":"apply_patch","description":"Edit files.","parameters":` +
		`{"type":"object","properties":{"input":{"type":"string","description":"The tool's freeform input, as text. ` +
		`It must match this lark grammar:\nstart: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF."}},` +
		`"required":["input"],"additionalProperties":false}}}`
	applyPatchNative = `{"type":"custom","custom":{"name":"apply_patch","description":"Edit files.","format":{"type":` +
		`"grammar","grammar":{"syntax":"lark","definition":"start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF"}}}}`
	toolSearchChat = `{"type":"function","function":{"name":"tool_search","description":"Searches deferred tools.",` +
		`"parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}}`
)

func toolsRequest(tools string, items ...string) string {
	input := `{"role":"user","content":"go"}`
	if len(items) > 0 {
		input += "," + strings.Join(items, ",")
	}
	return `{"model":"m","input":[` + input + `],"tools":[` + tools + `]}`
}

// TestBridgeAgentTools: namespace, custom and client tool_search tools, and the history items their calls
// made, become chat tools and tool calls; hosted tools are refused, or left out when the target drops them.
func TestBridgeAgentTools(t *testing.T) {
	dropping := azureAILike
	dropping.dropHostedTools = true
	openAIDropping := openAILike
	openAIDropping.dropHostedTools = true
	user := `{"role":"user","content":"go"}`
	allowing := func(allowed string) string {
		return `{"model":"m","input":[` + user + `],"tools":[` + webSearchTool + `,{"type":"function","name":"f"}],` +
			`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[` + allowed + `]}}`
	}
	cases := []bridgeRequestCase{
		{name: "allowed_tools naming a dropped hosted tool: that entry left out too", opts: openAIDropping,
			in: allowing(`{"type":"web_search"},{"type":"function","name":"f"},{"type":"web_search_preview"}`),
			want: `{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f"}}],` +
				`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"f"}}]}}}`},
		{name: "allowed_tools allowing only dropped hosted tools", opts: openAIDropping,
			in: allowing(`{"type":"web_search"}`), wantParam: "tool_choice.tools", wantCode: ErrUnsupportedParameter},
		{name: "allowed_tools naming a hosted tool refused without drop", opts: openAILike,
			in: allowing(`{"type":"function","name":"f"},{"type":"web_search"}`), wantParam: "tools[0].type", wantCode: ErrUnsupportedParameter},
		{name: "namespace members flattened", opts: azureAILike, in: toolsRequest(namespaceTool),
			want: `{"model":"m","messages":[` + user + `],"tools":[` + namespaceChatTool + `]}`},
		{name: "custom tool as a function toward a chat API without custom tools", opts: azureAILike,
			in:   toolsRequest(applyPatchTool),
			want: `{"model":"m","messages":[` + user + `],"tools":[` + applyPatchAsFunction + `]}`},
		{name: "custom tool kept toward OpenAI's chat API", opts: openAILike, in: toolsRequest(applyPatchTool),
			want: `{"model":"m","messages":[` + user + `],"tools":[` + applyPatchNative + `]}`},
		{name: "client tool_search as a function", opts: azureAILike, in: toolsRequest(toolSearchTool),
			want: `{"model":"m","messages":[` + user + `],"tools":[` + toolSearchChat + `]}`},
		{name: "hosted tool dropped", opts: dropping, in: toolsRequest(webSearchTool + `,` + webSearchTool + `,{"type":"function","name":"f"}`),
			want: `{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f"}}]}`},
		{name: "only hosted tools dropped: no tools member", opts: dropping, in: toolsRequest(webSearchTool),
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "hosted tool refused by default", opts: azureAILike, in: toolsRequest(webSearchTool),
			wantParam: "tools[0].type", wantCode: ErrUnsupportedParameter},
		{name: "namespaced call and its output in the history", opts: azureAILike, in: toolsRequest(namespaceTool,
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup_customer","namespace":"crm","arguments":"{\"customerId\":\"42\"}","status":"completed"}`,
			`{"type":"function_call_output","call_id":"call_1","output":"Ada"}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",` +
				`"function":{"name":"crm__lookup_customer","arguments":"{\"customerId\":\"42\"}"}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"Ada"}],"tools":[` + namespaceChatTool + `]}`},
		{name: "custom call and output in the history, as a function call", opts: azureAILike, in: toolsRequest(applyPatchTool,
			`{"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"gAAAA"}`,
			`{"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"call_p","name":"apply_patch","input":"*** Begin Patch\n+hi \"x\"\n"}`,
			`{"type":"custom_tool_call_output","id":"ctco_1","call_id":"call_p","output":"Success."}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_p","type":"function",` +
				`"function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n+hi \\\"x\\\"\\n\"}"}}]},` +
				`{"role":"tool","tool_call_id":"call_p","content":"Success."}],"tools":[` + applyPatchAsFunction + `]}`},
		{name: "custom call in the history, native", opts: openAILike, in: toolsRequest(applyPatchTool,
			`{"type":"custom_tool_call","call_id":"call_p","name":"apply_patch","input":"patch"}`,
			`{"type":"custom_tool_call_output","call_id":"call_p","output":"ok"}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_p","type":"custom",` +
				`"custom":{"name":"apply_patch","input":"patch"}}]},{"role":"tool","tool_call_id":"call_p","content":"ok"}],` +
				`"tools":[` + applyPatchNative + `]}`},
		{name: "tool search and the tools it loaded", opts: azureAILike, in: toolsRequest(toolSearchTool,
			`{"type":"tool_search_call","id":"tsc_1","call_id":"call_ts","status":"completed","execution":"client","arguments":{"query":"calendar"}}`,
			`{"type":"tool_search_output","id":"tso_1","call_id":"call_ts","status":"completed","execution":"client","tools":[{"type":"namespace","name":"mcp__cal","description":"Cal.","tools":[{"type":"function","name":"create_event","defer_loading":true,"parameters":{"type":"object"}}]}]}`,
			`{"type":"tool_search_output","call_id":"call_ts2","execution":"client","tools":[{"type":"namespace","name":"mcp__cal","tools":[{"type":"function","name":"create_event"}]}]}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_ts","type":"function",` +
				`"function":{"name":"tool_search","arguments":"{\"query\":\"calendar\"}"}}]},{"role":"tool","tool_call_id":"call_ts",` +
				`"content":"Loaded tools: [{\"type\":\"namespace\",\"name\":\"mcp__cal\",\"description\":\"Cal.\",\"tools\":[{\"type\":\"function\",\"name\":\"create_event\",\"defer_loading\":true,\"parameters\":{\"type\":\"object\"}}]}]"},` +
				`{"role":"tool","tool_call_id":"call_ts2","content":"Loaded tools: [{\"type\":\"namespace\",\"name\":\"mcp__cal\",\"tools\":[{\"type\":\"function\",\"name\":\"create_event\"}]}]"}],` +
				`"tools":[` + toolSearchChat + `,{"type":"function","function":{"name":"mcp__cal__create_event","parameters":{"type":"object"}}}]}`},
		{name: "tools declared by an additional_tools item", opts: azureAILike,
			in: `{"model":"m","input":[{"type":"additional_tools","id":"at_1","role":"developer","tools":[` + namespaceTool +
				`,{"type":"namespace","name":"functions","description":"","tools":[{"type":"custom","name":"exec","description":"Run code."}]}]},` + user + `]}`,
			want: `{"model":"m","messages":[` + user + `],"tools":[` + namespaceChatTool + `,{"type":"function","function":{"name":` +
				`"functions__exec","description":"Run code.","parameters":{"type":"object","properties":{"input":{"type":"string",` +
				`"description":"The tool's freeform input, as text."}},"required":["input"],"additionalProperties":false}}}]}`},
		{name: "hosted calls in the history dropped", opts: dropping, in: toolsRequest(webSearchTool,
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`,
			`{"type":"web_search_call","id":"ws_2","status":"completed"}`, `{"role":"assistant","content":"found"}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"assistant","content":"found"}]}`},
		{name: "hosted call in the history refused by default", opts: azureAILike, in: toolsRequest(`{"type":"function","name":"f"}`,
			`{"type":"web_search_call","id":"ws_1","status":"completed"}`),
			wantParam: "input[1].type", wantCode: ErrUnsupportedParameter},
		{name: "tool_choice custom, native", opts: openAILike,
			in:   `{"model":"m","input":"hi","tools":[` + applyPatchTool + `],"tool_choice":{"type":"custom","name":"apply_patch"}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + applyPatchNative + `],"tool_choice":{"type":"custom","custom":{"name":"apply_patch"}}}`},
		{name: "tool_choice custom, as the function", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tools":[` + applyPatchTool + `],"tool_choice":{"type":"custom","name":"apply_patch"}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + applyPatchAsFunction + `],"tool_choice":{"type":"function","function":{"name":"apply_patch"}}}`},
		{name: "tool_choice tool_search, as the function", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tools":[` + toolSearchTool + `],"tool_choice":{"type":"tool_search"}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + toolSearchChat + `],"tool_choice":{"type":"function","function":{"name":"tool_search"}}}`},
		{name: "tool_choice tool_search without the tool", opts: azureAILike,
			in:        `{"model":"m","input":"hi","tools":[{"type":"function","name":"tool_search"}],"tool_choice":{"type":"tool_search"}}`,
			wantParam: "tool_choice", wantCode: ErrUnsupportedParameter},
		{name: "function tool with an empty name", opts: azureAILike, in: toolsRequest(`{"type":"function","name":""}`),
			wantParam: "tools[0].name", wantCode: ErrInvalidParameter},
		{name: "client_metadata left out", opts: azureAILike,
			in:   `{"model":"m","input":"hi","client_metadata":{"thread_id":"t"}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{name: "two tools with one chat name", opts: azureAILike,
			in:        toolsRequest(`{"type":"function","name":"crm__lookup_customer"},` + namespaceTool),
			wantParam: "tools[1].tools[0].name", wantCode: ErrInvalidParameter},
		{name: "a function named tool_search beside the tool", opts: azureAILike,
			in:        toolsRequest(`{"type":"function","name":"tool_search"},` + toolSearchTool),
			wantParam: "tools[1]", wantCode: ErrInvalidParameter},
		{name: "a tool search loaded again by a tool_search_output", opts: azureAILike, in: toolsRequest(toolSearchTool,
			`{"type":"tool_search_output","call_id":"call_ts","execution":"client","tools":[`+toolSearchTool+`]}`),
			want: `{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"call_ts","content":"Loaded tools: [` +
				strings.ReplaceAll(toolSearchTool, `"`, `\"`) + `]"}],"tools":[` + toolSearchChat + `]}`},
		{name: "namespace name chat cannot take", opts: azureAILike,
			in:        toolsRequest(`{"type":"namespace","name":"a.b","tools":[]}`),
			wantParam: "tools[0].name", wantCode: ErrInvalidParameter},
		{name: "namespace of a hosted tool", opts: azureAILike,
			in:        toolsRequest(`{"type":"namespace","name":"ns","tools":[{"type":"web_search"}]}`),
			wantParam: "tools[0].tools[0].type", wantCode: ErrInvalidParameter},
		{name: "custom tool with a format chat cannot take", opts: azureAILike,
			in:        toolsRequest(`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"lark"}}`),
			wantParam: "tools[0].format", wantCode: ErrInvalidParameter},
		{name: "server tool search in the history refused", opts: azureAILike,
			in:        toolsRequest(`{"type":"function","name":"f"}`, `{"type":"tool_search_call","id":"tsc_1","arguments":{}}`),
			wantParam: "input[1].execution", wantCode: ErrUnsupportedParameter},
		{name: "custom call without input", opts: azureAILike,
			in:        toolsRequest(applyPatchTool, `{"type":"custom_tool_call","call_id":"c","name":"apply_patch"}`),
			wantParam: "input[1].input", wantCode: ErrInvalidParameter},
	}
	runBridgeRequestCases(t, cases)
}

// TestBridgeAgentToolsLeftOut: what the bridge leaves out for these tools is named once for the
// dropped-params header: the grammar a function cannot enforce, each kind of hosted tool and item dropped,
// client_metadata.
func TestBridgeAgentToolsLeftOut(t *testing.T) {
	opts := azureAILike
	opts.dropHostedTools = true
	in := `{"model":"m","client_metadata":{"a":"b"},"input":[{"role":"user","content":"go"},` +
		`{"type":"web_search_call","id":"ws_1"},{"type":"web_search_call","id":"ws_2"}],"tools":[` +
		applyPatchTool + `,` + webSearchTool + `,` + webSearchTool + `,{"type":"file_search"}]}`
	var echo responsesEcho
	if _, e := bridgeRequest(nil, []byte(in), &opts, &echo); e != nil {
		t.Fatal(e.Message)
	}
	want := []string{"input.web_search_call", "tools.apply_patch.format", "tools.web_search", "tools.file_search", "client_metadata"}
	if strings.Join(echo.leftOut, " ") != strings.Join(want, " ") {
		t.Errorf("left out %q, want %q", echo.leftOut, want)
	}
}

// TestChatToolNames: a namespace member's chat name is namespace__name, shortened past 64 characters to one
// that stays the same for the same names and differs for others.
func TestChatToolNames(t *testing.T) {
	long := strings.Repeat("n", 40)
	a := string(appendChatToolName(nil, []byte(long), []byte(strings.Repeat("x", 30))))
	b := string(appendChatToolName(nil, []byte(long), []byte(strings.Repeat("x", 31))))
	again := string(appendChatToolName(nil, []byte(long), []byte(strings.Repeat("x", 30))))
	if got := string(appendChatToolName(nil, []byte("crm"), []byte("lookup"))); got != "crm__lookup" {
		t.Errorf("short name %q", got)
	}
	if len(a) != maxChatToolName || len(b) != maxChatToolName || a == b || a != again {
		t.Errorf("long names %q and %q (again %q)", a, b, again)
	}
	if !isPlainToolName([]byte(`"` + a + `"`)) {
		t.Errorf("%q is not a name chat takes", a)
	}
}

// agentToolsRequest declares every kind of client tool, toward a chat API without custom tools.
var agentToolsRequest = `{"model":"m","input":"go","tools":[` + namespaceTool + `,` + applyPatchTool + `,` +
	toolSearchTool + `,{"type":"function","name":"plain"}]}`

// agentCallsWant are the items the chat calls of agentToolsRequest's tools become, as members that must
// match (an item's id and call_id aside).
var agentCallsWant = []map[string]any{
	{"type": "function_call", "name": "lookup_customer", "namespace": "crm", "arguments": `{"customerId":"42"}`, "call_id": "call_a"},
	{"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n+hi \"x\"\n", "call_id": "call_b"},
	{"type": "tool_search_call", "execution": "client", "arguments": map[string]any{"query": "cal"}, "call_id": "call_c"},
	{"type": "function_call", "name": "plain", "arguments": `{}`, "call_id": "call_d"},
	{"type": "function_call", "name": "undeclared", "arguments": `{"a":1}`, "call_id": "call_e"},
	// A model that ignored the function's schema: its text is the input; a search without an object, {}.
	{"type": "custom_tool_call", "name": "apply_patch", "input": "raw patch", "call_id": "call_f"},
	{"type": "tool_search_call", "arguments": map[string]any{}, "call_id": "call_g"},
}

// agentChatCalls are the chat tool calls of agentCallsWant, in order.
var agentChatCalls = [][2]string{
	{"crm__lookup_customer", `{\"customerId\":\"42\"}`},
	{"apply_patch", `{\"input\":\"*** Begin Patch\\n+hi \\\"x\\\"\\n\"}`},
	{"tool_search", `{\"query\":\"cal\"}`},
	{"plain", ``},
	{"undeclared", `{\"a\":1}`},
	{"apply_patch", `raw patch`},
	{"tool_search", `not json`},
}

func checkAgentItems(t *testing.T, output []any) {
	t.Helper()
	if len(output) != len(agentCallsWant) {
		t.Fatalf("%d items, want %d: %v", len(output), len(agentCallsWant), output)
	}
	prefixes := map[string]string{"function_call": "fc_", "custom_tool_call": "ctc_", "tool_search_call": "tsc_"}
	for i, want := range agentCallsWant {
		got, _ := output[i].(map[string]any)
		for k, v := range want {
			gotJSON, _ := json.Marshal(got[k])
			wantJSON, _ := json.Marshal(v)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("item %d: %s is %s, want %s (item %v)", i, k, gotJSON, wantJSON, got)
			}
		}
		if _, has := got["namespace"]; has != (want["namespace"] != nil) {
			t.Errorf("item %d: namespace %v", i, got["namespace"])
		}
		if id, _ := got["id"].(string); !strings.HasPrefix(id, prefixes[want["type"].(string)]) {
			t.Errorf("item %d: id %q", i, id)
		}
	}
}

// TestBridgeAgentToolCallsAnswer: a JSON chat answer's calls become the items the client's tools make.
func TestBridgeAgentToolCallsAnswer(t *testing.T) {
	var echo responsesEcho
	if _, e := bridgeRequest(nil, []byte(agentToolsRequest), &azureAILike, &echo); e != nil {
		t.Fatal(e.Message)
	}
	var calls []string
	for i, c := range agentChatCalls {
		calls = append(calls, `{"id":"call_`+string(rune('a'+i))+`","type":"function","function":{"name":"`+c[0]+
			`","arguments":"`+c[1]+`"}}`)
	}
	chat := bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[`+strings.Join(calls, ",")+
		`]},"finish_reason":"tool_calls"`, "")
	out, err := bridgeAnswer(nil, []byte(chat), &echo, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := decodeBridgedResponse(t, out)
	output, _ := resp["output"].([]any)
	checkAgentItems(t, output)
}

// TestBridgeAgentToolCallsStream: the same calls streamed, in chunks of every size, become the same items,
// with the events the Responses API sends for each (replayed as openai-node reads them).
func TestBridgeAgentToolCallsStream(t *testing.T) {
	var echo responsesEcho
	if _, e := bridgeRequest(nil, []byte(agentToolsRequest), &azureAILike, &echo); e != nil {
		t.Fatal(e.Message)
	}
	events := []string{bridgeChatRole}
	for i, c := range agentChatCalls {
		id := `"call_` + string(rune('a'+i)) + `"`
		events = append(events, bridgeChatToolDelta(`[{"index":`+string(rune('0'+i))+`,"id":`+id+
			`,"type":"function","function":{"name":"`+c[0]+`","arguments":""}}]`))
		// The arguments in two fragments, cut where a multi-byte escape would not be.
		half := len(c[1]) / 2
		for half > 0 && c[1][half-1] == '\\' {
			half--
		}
		for _, part := range []string{c[1][:half], c[1][half:]} {
			if part != "" {
				events = append(events, bridgeChatToolDelta(`[{"index":`+string(rune('0'+i))+`,"function":{"arguments":"`+part+`"}}]`))
			}
		}
	}
	events = append(events, bridgeChatFinish("tool_calls"), bridgeChatUsage, "[DONE]")
	stream := bridgeChatEvents(events...)
	for _, cut := range []int{0, 1, 7, 64} {
		out := runBridgeStream(t, &echo, stream, cut)
		rp := replayResponsesStream(t, out)
		output, _ := rp.terminal["output"].([]any)
		checkAgentItems(t, output)
		text := string(out)
		for _, want := range []string{`"type":"response.custom_tool_call_input.done"`, `"input":"*** Begin Patch\n+hi \"x\"\n"`} {
			if !strings.Contains(text, want) {
				t.Errorf("cut %d: no %s in the stream", cut, want)
			}
		}
		if strings.Count(text, "response.function_call_arguments.delta") == 0 {
			t.Errorf("cut %d: no arguments deltas for the function calls", cut)
		}
	}
}

// TestBridgeNativeCustomToolCalls: OpenAI's chat custom tool calls (JSON and streamed) become
// custom_tool_call items, their input deltas passed on as they come.
func TestBridgeNativeCustomToolCalls(t *testing.T) {
	var echo responsesEcho
	req := `{"model":"m","input":"go","tools":[` + applyPatchTool + `]}`
	if _, e := bridgeRequest(nil, []byte(req), &openAILike, &echo); e != nil {
		t.Fatal(e.Message)
	}
	chat := bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_n","type":"custom",`+
		`"custom":{"name":"apply_patch","input":"*** Begin Patch\n"}}]},"finish_reason":"tool_calls"`, "")
	out, err := bridgeAnswer(nil, []byte(chat), &echo, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"custom_tool_call","status":"completed","input":"*** Begin Patch\n","call_id":"call_n","name":"apply_patch"}`
	if !strings.Contains(string(out), want[1:]) {
		t.Errorf("answer lacks %s:\n%s", want, out)
	}
	stream := bridgeChatEvents(bridgeChatRole,
		bridgeChatToolDelta(`[{"index":0,"id":"call_n","type":"custom","custom":{"name":"apply_patch","input":""}}]`),
		bridgeChatToolDelta(`[{"index":0,"custom":{"input":"*** Begin"}}]`),
		bridgeChatToolDelta(`[{"index":0,"custom":{"input":" Patch\n"}}]`),
		bridgeChatFinish("tool_calls"), "[DONE]")
	for _, cut := range []int{0, 3} {
		out := string(runBridgeStream(t, &echo, stream, cut))
		replayResponsesStream(t, []byte(out))
		if n := strings.Count(out, "event: response.custom_tool_call_input.delta"); n != 2 {
			t.Errorf("cut %d: %d input deltas, want 2:\n%s", cut, n, out)
		}
		if !strings.Contains(out, `"input":"*** Begin Patch\n"`) {
			t.Errorf("cut %d: the whole input is not in the stream:\n%s", cut, out)
		}
	}
}

// fuzzAgentToolsRequest declares every kind of client tool, a namespace member whose chat name is shortened
// among them, for the fuzzed answers below.
var fuzzAgentToolsRequest = `{"model":"m","input":"go","tools":[` + namespaceTool + `,` + applyPatchTool + `,` +
	toolSearchTool + `,{"type":"function","name":"plain"},{"type":"namespace","name":"` + strings.Repeat("n", 40) +
	`","tools":[{"type":"custom","name":"` + strings.Repeat("c", 30) + `"}]}]}`

// fuzzAgentToolsStreamSeeds are chat streams calling fuzzAgentToolsRequest's tools.
var fuzzAgentToolsStreamSeeds = []string{
	bridgeChatEvents(bridgeChatRole,
		bridgeChatToolDelta(`[{"index":0,"id":"a","type":"function","function":{"name":"crm__lookup_customer","arguments":"{\"customerId\""}}]`),
		bridgeChatToolDelta(`[{"index":0,"function":{"arguments":":\"42\"}"}},{"index":1,"id":"b","function":{"name":"apply_patch","arguments":"{\"input\":\"p\\n\"}"}}]`),
		bridgeChatToolDelta(`[{"index":2,"id":"c","function":{"name":"tool_search","arguments":"{\n\"query\": \"cal\"\r\n}"}}]`),
		bridgeChatToolDelta(`[{"index":3,"id":"d","type":"custom","custom":{"input":"x"}}]`),
		bridgeChatToolDelta(`[{"index":3,"function":{"name":"plain"}}]`),
		bridgeChatFinish("tool_calls"), bridgeChatUsage, "[DONE]"),
	bridgeChatEvents(bridgeChatRole,
		bridgeChatToolDelta(`[{"index":0,"id":"n","type":"custom","custom":{"name":"apply_patch","input":"*** Begin"}}]`),
		bridgeChatToolDelta(`[{"index":0,"custom":{"input":" Patch\n"}},{"index":1,"id":"m","type":"custom","custom":{"name":"crm__lookup_customer","input":"q"}}]`),
		bridgeChatCutError, "[DONE]"),
}

// FuzzBridgeAgentToolCalls: whatever an upstream streams or answers to a request that declared agent tools,
// toward a chat API with and without custom tools, the stream replays as the clients read it (one data line
// per event, each item's events of its type), cut anywhere the same, and the JSON answer is valid.
func FuzzBridgeAgentToolCalls(f *testing.F) {
	for _, s := range fuzzAgentToolsStreamSeeds {
		f.Add([]byte(s), uint8(7))
		f.Add([]byte(s), uint8(0x80))
	}
	f.Add([]byte(bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function",`+
		`"function":{"name":"tool_search","arguments":"{\n\"query\":\"x\"\n}"}},{"id":"b","type":"custom","custom":`+
		`{"name":"apply_patch","input":"p"}}]},"finish_reason":"tool_calls"`, "")), uint8(1))
	f.Fuzz(func(t *testing.T, input []byte, selector uint8) {
		opts := azureAILike
		if selector&0x80 != 0 {
			opts = openAILike
		}
		var echo responsesEcho
		if _, e := bridgeRequest(nil, []byte(fuzzAgentToolsRequest), &opts, &echo); e != nil {
			t.Fatal(e.Message)
		}
		whole := runBridgeStream(t, &echo, string(input), 0)
		replayResponsesStream(t, whole)
		if pieces := runBridgeStream(t, &echo, string(input), int(selector&0x7f)+1); !bytes.Equal(pieces, whole) {
			t.Fatalf("cut %d changed the output", int(selector&0x7f)+1)
		}
		if out, err := bridgeAnswer(nil, input, &echo, nil); err == nil {
			checkBridgedResponse(t, decodeBridgedResponse(t, out), gjson.GetBytes(out, "status").Str)
		}
	})
}

// TestBridgeAgentToolCallsUpstreamGames: what an upstream may send for the calls of agent tools (line breaks
// in a tool search's arguments, a custom call whose name comes late or names a function, calls without ids of
// different kinds) still makes a stream the clients read, each item's events of its type, and a Response
// whose items are what the stream announced.
func TestBridgeAgentToolCallsUpstreamGames(t *testing.T) {
	cases := []struct {
		name  string
		opts  bridgeOptions
		calls []string // the tool_calls of each chunk
		want  []map[string]any
	}{
		{name: "line breaks in a tool search's arguments", opts: azureAILike,
			calls: []string{`[{"index":0,"id":"c1","type":"function","function":{"name":"tool_search","arguments":"{\n\"query\":"}}]`,
				`[{"index":0,"function":{"arguments":" \"cal\"\r\n}"}}]`},
			want: []map[string]any{{"type": "tool_search_call", "call_id": "c1", "arguments": map[string]any{"query": "cal"}}}},
		{name: "a native custom call whose name comes late, naming a function", opts: openAILike,
			calls: []string{`[{"index":0,"id":"c1","type":"custom","custom":{"input":"x"}}]`,
				`[{"index":0,"function":{"name":"crm__lookup_customer"}}]`},
			want: []map[string]any{{"type": "custom_tool_call", "call_id": "c1", "input": "x", "name": "lookup_customer", "namespace": "crm"}}},
		{name: "a native custom call whose name comes late, naming a namespaced custom tool", opts: openAILike,
			calls: []string{`[{"index":0,"id":"c1","type":"custom","custom":{"input":"x"}}]`,
				`[{"index":0,"custom":{"name":"` + string(appendChatToolName(nil, []byte(strings.Repeat("n", 40)), []byte(strings.Repeat("c", 30)))) + `"}}]`},
			want: []map[string]any{{"type": "custom_tool_call", "call_id": "c1", "input": "x", "name": strings.Repeat("c", 30),
				"namespace": strings.Repeat("n", 40)}}},
		{name: "a native custom call of a function tool", opts: openAILike,
			calls: []string{`[{"index":0,"id":"c1","type":"custom","custom":{"name":"crm__lookup_customer","input":"x"}}]`,
				`[{"index":0,"custom":{"input":"y"}}]`},
			want: []map[string]any{{"type": "custom_tool_call", "call_id": "c1", "input": "xy", "name": "lookup_customer", "namespace": "crm"}}},
		{name: "a function call of a custom tool declared natively", opts: openAILike,
			calls: []string{`[{"index":0,"id":"c1","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"p\\n\"}"}}]`},
			want:  []map[string]any{{"type": "custom_tool_call", "call_id": "c1", "input": "p\n", "name": "apply_patch"}}},
		{name: "calls of different kinds without ids", opts: azureAILike,
			calls: []string{`[{"index":0,"function":{"name":"plain","arguments":"{}"}},{"index":1,"function":{"name":"apply_patch","arguments":"{\"input\":\"p\"}"}},{"index":2,"function":{"name":"tool_search","arguments":"{}"}}]`},
			want: []map[string]any{{"type": "function_call", "name": "plain"}, {"type": "custom_tool_call", "input": "p"},
				{"type": "tool_search_call", "arguments": map[string]any{}}}},
	}
	check := func(t *testing.T, output []any, want []map[string]any) {
		t.Helper()
		if len(output) != len(want) {
			t.Fatalf("%d items, want %d: %v", len(output), len(want), output)
		}
		callIDs := map[any]bool{}
		for i, w := range want {
			got := output[i].(map[string]any)
			for k, v := range w {
				gotJSON, _ := json.Marshal(got[k])
				wantJSON, _ := json.Marshal(v)
				if string(gotJSON) != string(wantJSON) {
					t.Errorf("item %d: %s is %s, want %s", i, k, gotJSON, wantJSON)
				}
			}
			if callIDs[got["call_id"]] {
				t.Errorf("item %d: call_id %v repeated", i, got["call_id"])
			}
			callIDs[got["call_id"]] = true
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var echo responsesEcho
			if _, e := bridgeRequest(nil, []byte(fuzzAgentToolsRequest), &c.opts, &echo); e != nil {
				t.Fatal(e.Message)
			}
			events := []string{bridgeChatRole}
			var whole []string // the calls of the JSON answer: each index's fragments joined
			for _, calls := range c.calls {
				events = append(events, bridgeChatToolDelta(calls))
			}
			events = append(events, bridgeChatFinish("tool_calls"), "[DONE]")
			for _, cut := range bridgeCuts {
				rp := replayResponsesStream(t, runBridgeStream(t, &echo, bridgeChatEvents(events...), cut))
				output, _ := rp.terminal["output"].([]any)
				check(t, output, c.want)
			}
			if len(c.calls) == 1 { // whole calls: the same as a JSON answer
				whole = append(whole, strings.ReplaceAll(strings.ReplaceAll(c.calls[0], `"index":0,`, ""), `"index":1,`, ""))
				whole[0] = strings.ReplaceAll(whole[0], `"index":2,`, "")
				chat := bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":`+whole[0]+
					`},"finish_reason":"tool_calls"`, "")
				out, err := bridgeAnswer(nil, []byte(chat), &echo, nil)
				if err != nil {
					t.Fatal(err)
				}
				output, _ := decodeBridgedResponse(t, out)["output"].([]any)
				check(t, output, c.want)
			}
		})
	}
}

// TestBridgeToolsAmplification: a request of many small tools makes a chat request within 4 times its size
// plus maxToolChatBytes a tool (FuzzBridgeRequest's bound), and at most maxBridgedItems tools are taken.
func TestBridgeToolsAmplification(t *testing.T) {
	member := func(i int) string { return `{"type":"custom","name":"c` + strconv.Itoa(i) + `"}` }
	for _, n := range []int{1, 100, maxBridgedItems, maxBridgedItems + 1} {
		var members []string
		for i := range n {
			members = append(members, member(i))
		}
		src := `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"` + strings.Repeat("n", 64) + `","tools":[` +
			strings.Join(members, ",") + `]}]}`
		var echo responsesEcho
		out, e := bridgeRequest(nil, []byte(src), &azureAILike, &echo)
		if n > maxBridgedItems {
			if e == nil || e.Param != "tools[0].tools["+strconv.Itoa(maxBridgedItems)+"]" {
				t.Fatalf("%d tools: refused with %v", n, e)
			}
			continue
		}
		if e != nil {
			t.Fatal(e.Message)
		}
		if bound := 4*len(src) + 1024 + maxToolChatBytes*n; len(out) > bound {
			t.Errorf("%d tools: %d bytes from %d, past %d", n, len(out), len(src), bound)
		}
	}
}

// TestBridgeForgedCallIDs: an upstream that names a call as the bridge names a call without an id,
// call_<h>_<n> (escaped or not), cannot give two calls one call_id: its id is replaced by a generated one.
func TestBridgeForgedCallIDs(t *testing.T) {
	var echo responsesEcho
	if _, e := bridgeRequest(nil, []byte(agentToolsRequest), &azureAILike, &echo); e != nil {
		t.Fatal(e.Message)
	}
	for _, forged := range []string{"call_" + bridgeAnswerHash + "_1", `call\u005f` + bridgeAnswerHash + "_1"} {
		chat := bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"`+forged+`","type":"function","function":{"name":"plain","arguments":"{}"}},`+
			`{"type":"function","function":{"name":"plain","arguments":"{}"}}]},"finish_reason":"tool_calls"`, "")
		out, err := bridgeAnswer(nil, []byte(chat), &echo, nil)
		if err != nil {
			t.Fatal(err)
		}
		output, _ := decodeBridgedResponse(t, out)["output"].([]any)
		seen := map[string]bool{}
		for _, item := range output {
			id, _ := item.(map[string]any)["call_id"].(string)
			if seen[id] {
				t.Errorf("%s: two calls with call_id %q:\n%s", forged, id, out)
			}
			seen[id] = true
		}
	}
	// The same in a stream, whose Response hash comes from the chunks' id.
	streamHash := fmtHash(bridgeHash([]byte("chatcmpl-bridge")))
	stream := bridgeChatEvents(bridgeChatRole,
		bridgeChatToolDelta(`[{"index":0,"id":"call_`+streamHash+`_1","type":"function","function":{"name":"plain","arguments":"{}"}}]`),
		bridgeChatToolDelta(`[{"index":1,"type":"function","function":{"name":"plain","arguments":"{}"}}]`),
		bridgeChatFinish("tool_calls"), "[DONE]")
	rp := replayResponsesStream(t, runBridgeStream(t, &echo, stream, 0))
	output, _ := rp.terminal["output"].([]any)
	if len(output) != 2 || output[0].(map[string]any)["call_id"] == output[1].(map[string]any)["call_id"] {
		t.Errorf("stream: call ids %v", output)
	}
}

func fmtHash(h uint64) string { return string(appendHashHex(nil, h)) }

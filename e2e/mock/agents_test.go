package mock

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The shapes of the agent clients (the Codex CLI, the OpenAI Agents SDK), as docs/agent-clients.md captured
// them, and the scripted calls (mock-call) that make their multi-turn runs real.

var (
	applyPatchTool = map[string]any{"type": "custom", "name": "apply_patch", "description": "Edit files.",
		"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch"}}
	crmNamespace = map[string]any{"type": "namespace", "name": "crm", "description": "CRM tools.",
		"tools": []any{map[string]any{"type": "function", "name": "lookup_customer", "strict": true,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"customerId": map[string]any{"type": "string"}}}},
			map[string]any{"type": "custom", "name": "note", "format": map[string]any{"type": "text"}}}}
	toolSearchTool = map[string]any{"type": "tool_search", "execution": "client", "description": "Searches deferred tools.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}
	webSearchTool = map[string]any{"type": "web_search", "external_web_access": true, "search_content_types": []any{"text", "image"}}
	execTool      = map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}}
	// codexTools is what Codex 0.171.0 offers a catalogued model (trimmed).
	codexTools = []any{execTool, applyPatchTool, toolSearchTool, webSearchTool}
)

// TestResponsesAgentShapes: what the agent clients send is accepted by the openai and azure-openai Responses
// mocks, on every surface.
func TestResponsesAgentShapes(t *testing.T) {
	user := map[string]any{"role": "user", "content": "go"}
	rows := []struct {
		name  string
		tools []any
		input []any
	}{
		{"namespace tool", []any{crmNamespace}, nil},
		{"custom tool with a lark grammar", []any{applyPatchTool}, nil},
		{"custom tool with a regex grammar", []any{map[string]any{"type": "custom", "name": "digits",
			"format": map[string]any{"type": "grammar", "syntax": "regex", "definition": "[0-9]+"}}}, nil},
		{"custom tool without format", []any{map[string]any{"type": "custom", "name": "free"}}, nil},
		{"client tool_search", []any{toolSearchTool}, nil},
		{"server tool_search", []any{map[string]any{"type": "tool_search"}}, nil},
		{"web_search with Codex's options", []any{webSearchTool}, nil},
		{"Codex's tools", codexTools, nil},
		{"custom tool call and its output", []any{applyPatchTool}, []any{user,
			map[string]any{"type": "reasoning", "id": "rs_001", "summary": []any{}, "content": nil, "encrypted_content": EncryptedReasoning("rs_001")},
			map[string]any{"type": "custom_tool_call", "id": "ctc_001", "status": "completed", "call_id": "call_patch1", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"},
			map[string]any{"type": "custom_tool_call_output", "id": "ctco_1", "call_id": "call_patch1", "output": "Exit code: 0"}}},
		{"namespaced function call and its output", []any{crmNamespace}, []any{user,
			map[string]any{"type": "function_call", "id": "fc_001", "status": "completed", "call_id": "call_fn1", "name": "lookup_customer", "namespace": "crm", "arguments": `{"customerId":"42"}`},
			map[string]any{"type": "function_call_output", "call_id": "call_fn1", "output": "{}", "status": "completed"}}},
		{"client tool search call and its output", []any{toolSearchTool}, []any{user,
			map[string]any{"type": "tool_search_call", "id": "tsc_1", "call_id": "call_ts1", "status": "completed", "execution": "client", "arguments": map[string]any{"query": "calendar", "limit": 2}},
			map[string]any{"type": "tool_search_output", "id": "tso_1", "call_id": "call_ts1", "status": "completed", "execution": "client",
				"tools": []any{map[string]any{"type": "namespace", "name": "mcp__cal", "description": "Tools in the mcp__cal namespace.",
					"tools": []any{map[string]any{"type": "function", "name": "create_event", "defer_loading": true, "parameters": map[string]any{"type": "object"}}}}}}}},
		{"web search call replayed", []any{webSearchTool}, []any{user,
			map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": map[string]any{"type": "search", "query": "weather paris"}},
			map[string]any{"role": "user", "content": "and then?"}}},
		{"reasoning replayed by the Agents SDK", nil, []any{user,
			map[string]any{"id": "rs_001", "type": "reasoning", "summary": []any{}, "encrypted_content": EncryptedReasoning("rs_001")},
			map[string]any{"role": "user", "content": "more"}}},
	}
	for _, sf := range respSurfaces {
		for _, r := range rows {
			t.Run(sf.name+"/"+r.name, func(t *testing.T) {
				s := respSpec(sf.d, sf.classic)
				s.set("store", false)
				if r.tools != nil {
					s.set("tools", r.tools)
					s.set("tool_choice", "none")
				}
				if r.input != nil {
					s.set("input", r.input)
				}
				rec := serve(New(sf.d, testOpts[sf.d]), s)
				if rec.status != 200 {
					t.Fatalf("status %d: %s", rec.status, rec.body())
				}
				checkResponse(t, sf.d, decode(t, rec.body()), "completed")
			})
		}
	}
}

// TestResponsesAgentRejects: what the real services refuse of the agent clients' fields.
func TestResponsesAgentRejects(t *testing.T) {
	user := map[string]any{"role": "user", "content": "go"}
	tools := func(ts ...any) func(s *spec) { return func(s *spec) { s.set("tools", ts) } }
	input := func(items ...any) func(s *spec) { return func(s *spec) { s.set("input", items) } }
	customCall := map[string]any{"type": "custom_tool_call", "call_id": "call_c", "name": "apply_patch", "input": "x"}
	rows := []struct {
		name  string
		d     string
		edit  func(s *spec)
		shape errShape
	}{
		{"client_metadata toward openai", OpenAI, func(s *spec) { s.set("client_metadata", map[string]any{"thread_id": "t"}) },
			openaiErr("unknown_parameter", "Unknown parameter: 'client_metadata'.")},
		{"client_metadata toward azure-openai", AzureOpenAI, func(s *spec) { s.set("client_metadata", map[string]any{"thread_id": "t"}) },
			openaiErr("unknown_parameter", "Unknown parameter: 'client_metadata'.")},
		{"namespace without description", OpenAI, tools(map[string]any{"type": "namespace", "name": "crm", "tools": []any{execTool}}),
			openaiErr("missing_required_parameter", "'tools[0].description'")},
		{"namespace without tools", OpenAI, tools(map[string]any{"type": "namespace", "name": "crm", "description": "d"}),
			openaiErr("missing_required_parameter", "'tools[0].tools'")},
		{"namespace holding a hosted tool", AzureOpenAI, tools(map[string]any{"type": "namespace", "name": "crm", "description": "d", "tools": []any{webSearchTool}}),
			openaiErr("invalid_value", "Invalid value: 'web_search'. Supported values are: 'function' and 'custom'.")},
		{"namespace member with a chat shape", OpenAI, tools(map[string]any{"type": "namespace", "name": "crm", "description": "d",
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}}),
			openaiErr("unknown_parameter", "tools[0].tools[0].function")},
		{"custom tool in the chat shape", OpenAI, tools(map[string]any{"type": "custom", "custom": map[string]any{"name": "apply_patch"}}),
			openaiErr("unknown_parameter", "'tools[0].custom'")},
		{"custom grammar in the chat shape", OpenAI, tools(map[string]any{"type": "custom", "name": "p",
			"format": map[string]any{"type": "grammar", "grammar": map[string]any{"syntax": "lark", "definition": "x"}}}),
			openaiErr("unknown_parameter", "tools[0].format.grammar")},
		{"custom grammar syntax", OpenAI, tools(map[string]any{"type": "custom", "name": "p",
			"format": map[string]any{"type": "grammar", "syntax": "ebnf", "definition": "x"}}),
			openaiErr("invalid_value", "Invalid value: 'ebnf'. Supported values are: 'lark' and 'regex'.")},
		{"tool_search execution", OpenAI, tools(map[string]any{"type": "tool_search", "execution": "local"}),
			openaiErr("invalid_value", "'local'")},
		{"duplicate name in a namespace", OpenAI, tools(map[string]any{"type": "namespace", "name": "crm", "description": "d", "tools": []any{execTool, execTool}}),
			openaiErr("invalid_value", "Duplicate tool name: 'exec_command'.")},
		{"tool_choice names no custom tool", OpenAI, func(s *spec) {
			s.set("tools", []any{applyPatchTool})
			s.set("tool_choice", map[string]any{"type": "custom", "name": "other"})
		}, openaiErr("invalid_value", "Tool choice 'custom' not found")},
		{"tool_search_call arguments as JSON text", OpenAI, input(user, map[string]any{"type": "tool_search_call", "call_id": "c", "execution": "client", "arguments": `{"query":"x"}`}),
			openaiErr("invalid_type", "'input[1].arguments'")},
		{"custom_tool_call without input", OpenAI, input(user, map[string]any{"type": "custom_tool_call", "call_id": "c", "name": "apply_patch"}),
			openaiErr("missing_required_parameter", "'input[1].input'")},
		{"reasoning content of the wrong type", OpenAI, input(user, map[string]any{"type": "reasoning", "summary": []any{}, "content": "x"}),
			openaiErr("invalid_type", "'input[1].content'")},
		{"custom call without its output", AzureOpenAI, input(user, customCall),
			openaiErr(nil, "No tool output found for custom tool call call_c.")},
		{"custom output without its call", OpenAI, input(user, map[string]any{"type": "custom_tool_call_output", "call_id": "call_c", "output": "r"}),
			openaiErr(nil, "No tool call found for custom tool call output with call_id call_c.")},
		{"custom call answered as a function", OpenAI, input(user, customCall, map[string]any{"type": "function_call_output", "call_id": "call_c", "output": "r"}),
			openaiErr(nil, "No tool call found for function call output with call_id call_c.")},
		{"client tool search call without its output", OpenAI, input(user, map[string]any{"type": "tool_search_call", "call_id": "call_ts", "execution": "client", "arguments": map[string]any{}}),
			openaiErr(nil, "No tool output found for tool search call call_ts.")},
	}
	for _, r := range rows {
		t.Run(r.d+"/"+r.name, func(t *testing.T) {
			s := respSpec(r.d, false)
			r.edit(&s)
			rec := serve(New(r.d, testOpts[r.d]), s)
			if rec.status != 400 {
				t.Fatalf("status %d, want 400: %s", rec.status, rec.body())
			}
			r.shape(t, decode(t, rec.body()))
		})
	}
}

// TestChatAgentTools: the custom tools of OpenAI's Chat Completions, refused by the other dialects in their
// own shapes, and the name rules every chat applies.
func TestChatAgentTools(t *testing.T) {
	custom := map[string]any{"type": "custom", "custom": map[string]any{"name": "apply_patch", "description": "Edit files.",
		"format": map[string]any{"type": "grammar", "grammar": map[string]any{"syntax": "lark", "definition": "start: x"}}}}
	fn := func(name string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}}
	}
	customHistory := []any{
		map[string]any{"role": "user", "content": "patch it"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "custom",
			"custom": map[string]any{"name": "apply_patch", "input": "*** Begin Patch"}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "done"},
	}
	typeRefused := map[string]errShape{
		AzureOpenAI: openaiErr("invalid_value", "Invalid value: 'custom'. Supported values are: 'function'."),
		AzureAI:     ai422("invalid_value", "tools[0].type"),
		EternalAI:   openaiErr("invalid_value", "Invalid value: 'custom'. Supported values are: 'function'."),
	}
	type row struct {
		name   string
		d      string
		edit   func(s *spec)
		status int
		shape  errShape // for a refusal
	}
	var rows []row
	for _, d := range Dialects {
		ok, refused := 200, 400
		if d == AzureAI {
			refused = 422
		}
		customShape, customStatus := typeRefused[d], refused
		if d == OpenAI {
			customShape, customStatus = nil, ok
		}
		historyShape := customShape
		if d == AzureAI {
			historyShape = ai422("invalid_value", "messages[1].tool_calls[0].type")
		}
		nameShape := openaiErr("string_above_max_length", "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64")
		patternShape := openaiErr("invalid_value", "string does not match pattern")
		typeShape := openaiErr("invalid_value", "Invalid value: 'web_search'.")
		if d == AzureAI {
			nameShape, patternShape, typeShape = ai422("invalid_value", "tools[0].function.name"), ai422("invalid_value", "tools[0].function.name"), ai422("invalid_value", "tools[0].type")
		}
		if d != AzureAI {
			nameShape = openaiErr("invalid_value", "string too long. Expected a string with maximum length 64, but got a string with length 65 instead.")
		}
		rows = append(rows,
			row{"function tool", d, func(s *spec) { s.set("tools", []any{fn("lookup")}) }, ok, nil},
			row{"flattened namespace member", d, func(s *spec) { s.set("tools", []any{fn("crm__lookup_customer")}) }, ok, nil},
			row{"custom tool", d, func(s *spec) { s.set("tools", []any{custom}) }, customStatus, customShape},
			row{"custom call in the history", d, func(s *spec) { s.set("messages", customHistory) }, customStatus, historyShape},
			row{"name of 65 characters", d, func(s *spec) { s.set("tools", []any{fn(strings.Repeat("n", 65))}) }, refused, nameShape},
			row{"name with a dot", d, func(s *spec) { s.set("tools", []any{fn("crm.lookup")}) }, refused, patternShape},
			row{"hosted tool type", d, func(s *spec) { s.set("tools", []any{map[string]any{"type": "web_search"}}) }, refused, typeShape},
		)
	}
	rows = append(rows,
		row{"custom tool_choice", OpenAI, func(s *spec) {
			s.set("tools", []any{custom})
			s.set("tool_choice", map[string]any{"type": "custom", "custom": map[string]any{"name": "apply_patch"}})
		}, 200, nil},
		row{"custom tool_choice naming no tool", OpenAI, func(s *spec) {
			s.set("tools", []any{custom})
			s.set("tool_choice", map[string]any{"type": "custom", "custom": map[string]any{"name": "other"}})
		}, 400, openaiErr("invalid_value", "no custom tool named 'other'")},
		row{"custom grammar in the Responses shape", OpenAI, func(s *spec) {
			s.set("tools", []any{map[string]any{"type": "custom", "custom": map[string]any{"name": "p",
				"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "x"}}}})
		}, 400, openaiErr("missing_required_parameter", "'tools[0].custom.format.grammar'")},
	)
	for _, r := range rows {
		t.Run(r.d+"/"+r.name, func(t *testing.T) {
			s := validSpec(r.d, chat)
			r.edit(&s)
			rec := serve(New(r.d, testOpts[r.d]), s)
			if rec.status != r.status {
				t.Fatalf("status %d, want %d: %s", rec.status, r.status, rec.body())
			}
			if r.shape != nil {
				r.shape(t, decode(t, rec.body()))
			}
		})
	}
}

func TestParseMockCall(t *testing.T) {
	rows := []struct {
		text          string
		name, payload string
		ok            bool
	}{
		{"mock-call exec_command {\"cmd\":\"echo hi\"}", "exec_command", `{"cmd":"echo hi"}`, true},
		{"Please.\n  mock-call apply_patch\n*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch\n", "apply_patch", "*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch\n", true},
		{"mock-call tool_search {\"query\":\"x\"}\nignored", "tool_search", `{"query":"x"}`, true},
		{"mock-call note free text  ", "note", "free text", true},
		{"mock-call \n", "", "", false},
		{"say mock-call x", "", "", false},
		{"no script", "", "", false},
	}
	for _, r := range rows {
		sc, ok := parseMockCall(r.text)
		if ok != r.ok || sc.name != r.name || sc.payload != r.payload {
			t.Errorf("%q: got %q %q %v, want %q %q %v", r.text, sc.name, sc.payload, ok, r.name, r.payload, r.ok)
		}
	}
}

// scriptedRow is one scripted call: the tools offered, the mock-call text, the call the answer must make.
type scriptedRow struct {
	name      string
	tools     []any
	script    string
	kind      string // function_call, custom_tool_call, tool_search_call (Responses); function, custom (chat)
	tool      string // the name the call carries
	namespace string
	payload   string // arguments (JSON text; compared as JSON), custom input, or tool_search arguments
}

// TestResponsesScriptedCalls: a mock-call line makes the Responses answer call the named tool, as JSON and as
// a stream with the events a real server sends, and the next turn echoes the tool's output.
func TestResponsesScriptedCalls(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hi ✓\n*** End Patch\n"
	rows := []scriptedRow{
		{"top-level function", codexTools, `mock-call exec_command {"cmd":"echo hi"}`, "function_call", "exec_command", "", `{"cmd":"echo hi"}`},
		{"custom tool", codexTools, "mock-call apply_patch\n" + patch, "custom_tool_call", "apply_patch", "", patch},
		{"client tool_search", codexTools, `mock-call tool_search {"query":"calendar","limit":2}`, "tool_search_call", "tool_search", "", `{"query":"calendar","limit":2}`},
		{"namespaced function", []any{lookupTool, crmNamespace}, `mock-call lookup_customer {"customerId":"42"}`, "function_call", "lookup_customer", "crm", `{"customerId":"42"}`},
		{"namespaced custom tool", []any{crmNamespace}, "mock-call note call back", "custom_tool_call", "note", "crm", "call back"},
	}
	outputType := map[string]string{"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output", "tool_search_call": "tool_search_output"}
	for _, sf := range respSurfaces {
		for _, r := range rows {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", sf.name, r.name, stream), func(t *testing.T) {
					p := New(sf.d, testOpts[sf.d])
					s := respSpec(sf.d, sf.classic)
					s.set("store", false)
					s.set("tools", r.tools)
					s.set("stream", stream)
					user := map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": r.script}}}
					s.set("input", []any{user})
					rec := serve(p, s)
					if rec.status != 200 {
						t.Fatalf("status %d: %s", rec.status, rec.body())
					}
					var item map[string]any
					if stream {
						item = checkScriptedEvents(t, rec.body(), r)
					} else {
						out := checkResponse(t, sf.d, decode(t, rec.body()), "completed")
						if len(out) != 1 {
							t.Fatalf("output %v", out)
						}
						item, _ = out[0].(map[string]any)
					}
					checkScriptedItem(t, item, r)

					// the next turn: the call replayed, its output after it
					output := map[string]any{"type": outputType[r.kind], "call_id": item["call_id"], "output": "tool said hi"}
					if r.kind == "tool_search_call" {
						output = map[string]any{"type": "tool_search_output", "call_id": item["call_id"], "execution": "client", "status": "completed", "tools": []any{}}
					}
					s.set("stream", false)
					s.set("input", []any{user, item, output})
					rec = serve(p, s)
					if rec.status != 200 {
						t.Fatalf("second turn: status %d: %s", rec.status, rec.body())
					}
					out := checkResponse(t, sf.d, decode(t, rec.body()), "completed")
					want := "echo: tool said hi"
					if r.kind == "tool_search_call" {
						want = "echo: []"
					}
					if len(out) != 1 || checkMessage(t, out[0], "completed") != want {
						t.Errorf("second turn output %v, want the text %q", out, want)
					}
				})
			}
		}
	}
}

// checkScriptedItem checks a scripted call's output item.
func checkScriptedItem(t *testing.T, item map[string]any, r scriptedRow) {
	t.Helper()
	prefix := map[string]string{"function_call": "fc_", "custom_tool_call": "ctc_", "tool_search_call": "tsc_"}[r.kind]
	id, _ := item["id"].(string)
	callID, _ := item["call_id"].(string)
	if item["type"] != r.kind || !strings.HasPrefix(id, prefix) || !strings.HasPrefix(callID, "call_") || item["status"] != "completed" {
		t.Errorf("item %v, want a completed %s", item, r.kind)
	}
	ns, hasNS := item["namespace"]
	if (r.namespace != "") != hasNS || (hasNS && ns != r.namespace) {
		t.Errorf("namespace %v, want %q", ns, r.namespace)
	}
	switch r.kind {
	case "function_call":
		args, _ := item["arguments"].(string)
		if item["name"] != r.tool || !sameJSON(args, r.payload) {
			t.Errorf("call %v %q, want %s %s", item["name"], args, r.tool, r.payload)
		}
	case "custom_tool_call":
		if item["name"] != r.tool || item["input"] != r.payload {
			t.Errorf("call %v %q, want %s %q", item["name"], item["input"], r.tool, r.payload)
		}
	case "tool_search_call":
		args, _ := json.Marshal(item["arguments"])
		if _, isObject := item["arguments"].(map[string]any); !isObject || item["execution"] != "client" || !sameJSON(string(args), r.payload) {
			t.Errorf("tool search call %v, want the object arguments %s", item, r.payload)
		}
	}
}

// checkScriptedEvents checks the stream of a scripted Responses call and returns the item of its
// output_item.done: added, the deltas that rebuild the payload, their done event, the item done, completed.
func checkScriptedEvents(t *testing.T, body []byte, r scriptedRow) map[string]any {
	t.Helper()
	events, _ := respEvents(t, body)
	delta, done := map[string]string{"function_call": "response.function_call_arguments.delta", "custom_tool_call": "response.custom_tool_call_input.delta"}[r.kind],
		map[string]string{"function_call": "response.function_call_arguments.done", "custom_tool_call": "response.custom_tool_call_input.done"}[r.kind]
	var names []string
	var rebuilt strings.Builder
	var item map[string]any
	for _, e := range events {
		if n := len(names); n == 0 || names[n-1] != e.name || e.name != delta {
			names = append(names, e.name)
		}
		switch e.name {
		case delta:
			rebuilt.WriteString(e.data["delta"].(string))
		case done:
			field := map[string]string{"function_call": "arguments", "custom_tool_call": "input"}[r.kind]
			if e.data[field] != rebuilt.String() {
				t.Errorf("%s carries %q, the deltas %q", e.name, e.data[field], rebuilt.String())
			}
		case "response.output_item.added":
			if get(e.data, "item.type") != r.kind || get(e.data, "item.status") != "in_progress" {
				t.Errorf("added %v", e.data["item"])
			}
		case "response.output_item.done":
			item, _ = e.data["item"].(map[string]any)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", delta, done,
		"response.output_item.done", "response.completed"}
	if r.kind == "tool_search_call" {
		want = []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.output_item.done", "response.completed"}
	} else if payload := map[string]string{"function_call": "arguments", "custom_tool_call": "input"}[r.kind]; item[payload] != rebuilt.String() {
		t.Errorf("the deltas rebuild %q, the item carries %q", rebuilt.String(), item[payload])
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", names, want)
	}
	final := get(events[len(events)-1].data, "response.output.0")
	if fmt.Sprint(final) != fmt.Sprint(item) {
		t.Errorf("completed carries %v, output_item.done %v", final, item)
	}
	return item
}

// sameJSON compares two JSON texts by value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TestChatScriptedCalls: a mock-call line makes the chat answer call the named tool in every dialect, as JSON
// and as a stream; a custom tool toward OpenAI, a flattened namespace member, a bridged custom tool taking
// {"input": ...}.
func TestChatScriptedCalls(t *testing.T) {
	fn := func(name string) map[string]any {
		return map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{"type": "object"}}}
	}
	custom := map[string]any{"type": "custom", "custom": map[string]any{"name": "apply_patch"}}
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hi ✓\n*** End Patch\n"
	type chatRow struct {
		scriptedRow
		dialects []string
	}
	rows := []chatRow{
		{scriptedRow{"function", []any{fn("lookup"), fn("exec_command")}, `mock-call exec_command {"cmd":"echo hi"}`, "function", "exec_command", "", `{"cmd":"echo hi"}`}, Dialects},
		{scriptedRow{"flattened namespace member", []any{fn("lookup"), fn("crm__lookup_customer")}, `mock-call lookup_customer {"customerId":"42"}`, "function", "crm__lookup_customer", "", `{"customerId":"42"}`}, Dialects},
		{scriptedRow{"bridged custom tool", []any{fn("apply_patch")}, "mock-call apply_patch\n" + patch, "function", "apply_patch", "", string(mustJSON(map[string]any{"input": patch}))}, Dialects},
		{scriptedRow{"custom tool", []any{fn("lookup"), custom}, "mock-call apply_patch\n" + patch, "custom", "apply_patch", "", patch}, []string{OpenAI}},
	}
	for _, r := range rows {
		for _, d := range r.dialects {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", d, r.name, stream), func(t *testing.T) {
					s := validSpec(d, chat)
					s.set("tools", r.tools)
					s.set("stream", stream)
					s.set("messages", []any{map[string]any{"role": "user", "content": r.script}})
					rec := serve(New(d, testOpts[d]), s)
					if rec.status != 200 {
						t.Fatalf("status %d: %s", rec.status, rec.body())
					}
					var id, typ, name, payload string
					if stream {
						events, _ := sseEvents(t, rec.body())
						var b strings.Builder
						for _, e := range events[:len(events)-1] {
							tc := get(decode(t, []byte(e)), "choices.0.delta.tool_calls.0")
							if tc == nil {
								continue
							}
							if v, ok := get(tc, "id").(string); ok {
								id = v
							}
							if v, ok := get(tc, "type").(string); ok {
								typ = v
							}
							if v, ok := get(tc, r.kind+".name").(string); ok {
								name = v
							}
							field := map[string]string{"function": "function.arguments", "custom": "custom.input"}[r.kind]
							if v, ok := get(tc, field).(string); ok {
								b.WriteString(v)
							}
						}
						payload = b.String()
					} else {
						tc := get(decode(t, rec.body()), "choices.0.message.tool_calls.0")
						id, _ = get(tc, "id").(string)
						typ, _ = get(tc, "type").(string)
						name, _ = get(tc, r.kind+".name").(string)
						field := map[string]string{"function": "function.arguments", "custom": "custom.input"}[r.kind]
						payload, _ = get(tc, field).(string)
					}
					match := payload == r.payload
					if r.kind == "function" {
						match = sameJSON(payload, r.payload)
					}
					if !strings.HasPrefix(id, "call_") || typ != r.kind || name != r.tool || !match {
						t.Errorf("call %q %q %q %q, want %s %s %q", id, typ, name, payload, r.kind, r.tool, r.payload)
					}
				})
			}
		}
	}
}

// TestScriptedCallErrors: a mock-call the request's tools cannot follow is the mock's 400, naming the tools.
func TestScriptedCallErrors(t *testing.T) {
	t.Run("responses, unknown tool", func(t *testing.T) {
		s := respSpec(OpenAI, false)
		s.set("tools", codexTools)
		s.set("input", "mock-call nothing {}")
		rec := serve(New(OpenAI, testOpts[OpenAI]), s)
		if rec.status != 400 {
			t.Fatalf("status %d", rec.status)
		}
		openaiErr(nil, `mock-call names tool "nothing", which the request does not offer (offered: exec_command, apply_patch, tool_search)`)(t, decode(t, rec.body()))
	})
	t.Run("responses, function payload not an object", func(t *testing.T) {
		s := respSpec(AzureOpenAI, false)
		s.set("tools", codexTools)
		s.set("input", "mock-call exec_command echo hi")
		rec := serve(New(AzureOpenAI, testOpts[AzureOpenAI]), s)
		if rec.status != 400 {
			t.Fatalf("status %d", rec.status)
		}
		openaiErr(nil, "needs a JSON object")(t, decode(t, rec.body()))
	})
	t.Run("chat, unknown tool", func(t *testing.T) {
		s := validSpec(AzureAI, chat)
		s.set("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}})
		s.set("messages", []any{map[string]any{"role": "user", "content": "mock-call other {}"}})
		rec := serve(New(AzureAI, testOpts[AzureAI]), s)
		if rec.status != 400 {
			t.Fatalf("status %d", rec.status)
		}
		aiErr("BadRequest", `mock-call names tool "other"`)(t, decode(t, rec.body()))
	})
}

// TestScriptedAnswers: a mock-answer line is the answer's whole text (no "echo: "), in chat and Responses, even
// with tools offered; after a tool's output the answer echoes it as usual.
func TestScriptedAnswers(t *testing.T) {
	const answer = `{"city":"Paris","temperature":21}`
	for _, text := range []string{"mock-answer " + answer, "Answer in JSON.\nmock-answer\n" + answer} {
		if got, ok := parseMockAnswer(text); !ok || got != answer {
			t.Errorf("parseMockAnswer(%q) = %q, %v", text, got, ok)
		}
	}
	fn := map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}
	for _, d := range Dialects {
		t.Run("chat/"+d, func(t *testing.T) {
			s := validSpec(d, chat)
			s.set("tools", []any{fn})
			s.set("messages", []any{map[string]any{"role": "user", "content": "mock-answer " + answer}})
			rec := serve(New(d, testOpts[d]), s)
			if got := get(decode(t, rec.body()), "choices.0.message.content"); got != answer {
				t.Errorf("status %d, content %v, want %s", rec.status, got, answer)
			}
		})
	}
	for _, sf := range respSurfaces {
		t.Run("responses/"+sf.name, func(t *testing.T) {
			s := respSpec(sf.d, sf.classic)
			s.set("tools", []any{lookupTool})
			s.set("input", "mock-answer "+answer)
			out := checkResponse(t, sf.d, decode(t, serve(New(sf.d, testOpts[sf.d]), s).body()), "completed")
			if len(out) != 1 || checkMessage(t, out[0], "completed") != answer {
				t.Errorf("output %v, want the text %s", out, answer)
			}
		})
	}
}

// TestScriptedReasoning: "mock-reasoning TEXT" makes a Responses answer start with a reasoning item (with
// encrypted_content when include asks for it, in JSON and in its stream's events), and a chat answer of the
// providers that send reasoning carry reasoning_content (message, or deltas before the answer's).
func TestScriptedReasoning(t *testing.T) {
	script := "think first\nmock-reasoning weighing the options\nmock-call exec_command {\"cmd\":\"echo hi\"}"
	for _, sf := range respSurfaces {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("responses/%s/stream=%v", sf.name, stream), func(t *testing.T) {
				p := New(sf.d, testOpts[sf.d])
				s := respSpec(sf.d, sf.classic)
				s.set("store", false)
				s.set("include", []any{"reasoning.encrypted_content"})
				s.set("tools", codexTools)
				s.set("stream", stream)
				s.set("input", []any{map[string]any{"role": "user", "content": script}})
				rec := serve(p, s)
				if rec.status != 200 {
					t.Fatalf("status %d: %s", rec.status, rec.body())
				}
				var resp map[string]any
				if stream {
					events, _ := respEvents(t, rec.body())
					last := events[len(events)-1]
					resp, _ = last.data["response"].(map[string]any)
					var types []string
					for _, e := range events {
						types = append(types, e.name)
					}
					want := "response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta"
					if !strings.Contains(strings.Join(types, " "), want) {
						t.Errorf("events %v lack %s", types, want)
					}
				} else {
					resp = decode(t, rec.body())
				}
				out, _ := resp["output"].([]any)
				if len(out) != 2 {
					t.Fatalf("output %v", out)
				}
				rs, _ := out[0].(map[string]any)
				if rs["type"] != "reasoning" || rs["encrypted_content"] != EncryptedReasoning(rs["id"].(string)) ||
					get(rs, "summary.0.text") != "weighing the options" {
					t.Errorf("reasoning item %v", rs)
				}
				if call, _ := out[1].(map[string]any); call["type"] != "function_call" || call["name"] != "exec_command" {
					t.Errorf("call %v", call)
				}
			})
		}
	}
	for _, d := range Dialects {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("chat/%s/stream=%v", d, stream), func(t *testing.T) {
				p := New(d, testOpts[d])
				s := validSpec(d, chat)
				s.set("messages", []any{map[string]any{"role": "user", "content": script}})
				s.set("stream", stream)
				s.set("tools", []any{map[string]any{"type": "function", "function": map[string]any{"name": "exec_command",
					"parameters": map[string]any{"type": "object"}}}})
				rec := serve(p, s)
				if rec.status != 200 {
					t.Fatalf("status %d: %s", rec.status, rec.body())
				}
				body := string(rec.body())
				reasons := d == AzureAI || d == EternalAI
				if strings.Contains(body, `"reasoning_content"`) != reasons {
					t.Errorf("reasoning_content present %v, want %v:\n%s", !reasons, reasons, body)
				}
				if reasons && !stream && !strings.Contains(body, `"reasoning_content":"weighing the options"`) {
					t.Errorf("no reasoning text:\n%s", body)
				}
				if !strings.Contains(body, "exec_command") {
					t.Errorf("no call of exec_command:\n%s", body)
				}
			})
		}
	}
}

// TestReasoningReplay: a client sends a reasoning answer back (the reasoning item as it came, with Codex's
// "content": null, then the call and its output), in JSON or from the stream's output_item.done events; the
// mock takes it, and refuses as the service does an encrypted_content it did not issue for that item.
func TestReasoningReplay(t *testing.T) {
	script := "mock-reasoning weighing the options\nmock-call exec_command {\"cmd\":\"echo hi\"}"
	for _, sf := range respSurfaces {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", sf.name, stream), func(t *testing.T) {
				p := New(sf.d, testOpts[sf.d])
				ask := func(input []any, stream bool) *chunkRecorder {
					s := respSpec(sf.d, sf.classic)
					s.set("store", false)
					s.set("include", []any{"reasoning.encrypted_content"})
					s.set("tools", codexTools)
					s.set("stream", stream)
					s.set("input", input)
					return serve(p, s)
				}
				user := map[string]any{"role": "user", "content": script}
				rec := ask([]any{user}, stream)
				if rec.status != 200 {
					t.Fatalf("status %d: %s", rec.status, rec.body())
				}
				var out []any
				if stream {
					events, _ := respEvents(t, rec.body())
					added := map[string]float64{}
					for _, e := range events {
						switch e.name {
						case "response.output_item.added":
							added[get(e.data, "item.id").(string)] = e.data["output_index"].(float64)
						case "response.output_item.done":
							item := e.data["item"].(map[string]any)
							if at, ok := added[item["id"].(string)]; !ok || at != e.data["output_index"] || int(at) != len(out) {
								t.Errorf("item %v done at output_index %v, added at %v, %d items before it", item["id"],
									e.data["output_index"], at, len(out))
							}
							out = append(out, item)
						case "response.reasoning_summary_text.delta", "response.function_call_arguments.delta":
							if at, ok := added[e.data["item_id"].(string)]; !ok || at != e.data["output_index"] {
								t.Errorf("%s of item %v at output_index %v, added at %v", e.name, e.data["item_id"],
									e.data["output_index"], at)
							}
						}
					}
				} else {
					out, _ = decode(t, rec.body())["output"].([]any)
				}
				if len(out) != 2 || get(out[0], "type") != "reasoning" || get(out[1], "type") != "function_call" {
					t.Fatalf("output %v, want a reasoning item and a function call", out)
				}
				rs, call := out[0].(map[string]any), out[1].(map[string]any)
				if rs["encrypted_content"] != EncryptedReasoning(rs["id"].(string)) {
					t.Fatalf("reasoning item %v lacks the mock's encrypted_content", rs)
				}
				replay := func(rs map[string]any) *chunkRecorder {
					echoed := map[string]any{"content": nil}
					for k, v := range rs {
						echoed[k] = v
					}
					return ask([]any{user, echoed, call, map[string]any{"type": "function_call_output",
						"call_id": call["call_id"], "output": "hi"}}, false)
				}
				if rec := replay(rs); rec.status != 200 {
					t.Errorf("the answer sent back: status %d: %s", rec.status, rec.body())
				}
				for _, tc := range []struct {
					name string
					edit func(map[string]any)
				}{
					{"altered", func(m map[string]any) { m["encrypted_content"] = m["encrypted_content"].(string) + "x" }},
					{"another item's", func(m map[string]any) { m["id"] = m["id"].(string)[:len(m["id"].(string))-1] + "z" }},
					{"another service's", func(m map[string]any) { m["encrypted_content"] = "gAAAAB-not-the-mock" }},
				} {
					edited := map[string]any{}
					for k, v := range rs {
						edited[k] = v
					}
					tc.edit(edited)
					rec := replay(edited)
					body := decode(t, rec.body())
					if rec.status != 400 || get(body, "error.code") != "invalid_encrypted_content" ||
						!strings.Contains(get(body, "error.message").(string), edited["id"].(string)) {
						t.Errorf("%s encrypted_content: status %d: %s, want 400 invalid_encrypted_content naming the item",
							tc.name, rec.status, rec.body())
					}
				}
			})
		}
	}
}

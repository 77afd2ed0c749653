//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// What the chat-only targets take of a bridged request: Azure AI (max_tokens, nothing of OpenAI's own),
// EternalAI (max_tokens, stream usage) and OpenAI's chat (everything), as their dialect tables say.
var (
	azureAILike = bridgeOptions{maxTokensField: "max_tokens"}
	eternalLike = bridgeOptions{maxTokensField: "max_tokens", streamUsage: true}
	openAILike  = openAIChatBridge
)

// bridgeRequestCase is one Responses body and the chat body it becomes, or the refusal it gets.
type bridgeRequestCase struct {
	name string
	opts bridgeOptions
	in   string
	// want is the chat request, compared as JSON values (member order aside).
	want string
	// wantParam and wantCode are the refusal's; wantCode empty means no refusal.
	wantParam string
	wantCode  ErrorCode
}

func runBridgeRequestCases(t *testing.T, cases []bridgeRequestCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var echo responsesEcho
			out, e := bridgeRequest(nil, []byte(tc.in), &tc.opts, &echo)
			if tc.wantCode != "" {
				if e == nil {
					t.Fatalf("no refusal; wrote %s", out)
				}
				if e.Code != tc.wantCode || e.Param != tc.wantParam {
					t.Fatalf("refused with %s at %q (%s), want %s at %q", e.Code, e.Param, e.Message, tc.wantCode, tc.wantParam)
				}
				if e.Status() != 400 {
					t.Errorf("status %d, want 400", e.Status())
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %s at %q: %s", e.Code, e.Param, e.Message)
			}
			assertSameJSON(t, out, tc.want)
			var parsed RequestBody
			if e := parsed.Parse(out); e != nil {
				t.Errorf("the chat request does not parse: %v", e)
			}
		})
	}
}

// assertSameJSON fails unless got and want are the same JSON value.
func assertSameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	if !jsonscan.Valid(got) {
		t.Fatalf("not valid JSON: %s", got)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestBridgeRequestTopLevelFields(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	runBridgeRequestCases(t, []bridgeRequestCase{
		{name: "input string is one user message", opts: azureAILike,
			in:   `{"model":"gpt-4o","input":"hi"}`,
			want: `{"model":"gpt-4o","messages":[` + user + `]}`},
		{name: "instructions come first as system, wherever they are in the body", opts: openAILike,
			in:   `{"input":"hi","instructions":"Be terse.","model":"m"}`,
			want: `{"model":"m","messages":[{"role":"system","content":"Be terse."},` + user + `]}`},
		{name: "instructions null", opts: azureAILike,
			in:   `{"model":"m","instructions":null,"input":"hi"}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "stream true asks for usage where the target takes it", opts: eternalLike,
			in:   `{"model":"m","input":"hi","stream":true}`,
			want: `{"model":"m","messages":[` + user + `],"stream":true,"stream_options":{"include_usage":true}}`},
		{name: "stream true without stream usage", opts: azureAILike,
			in:   `{"model":"m","input":"hi","stream":true}`,
			want: `{"model":"m","messages":[` + user + `],"stream":true}`},
		{name: "stream false copied, null left out", opts: openAILike,
			in:   `{"model":"m","input":"hi","stream":false,"stream_options":null}`,
			want: `{"model":"m","messages":[` + user + `],"stream":false}`},
		{name: "stream_options (include_obfuscation) ignored", opts: openAILike,
			in:   `{"model":"m","input":"hi","stream":true,"stream_options":{"include_obfuscation":false}}`,
			want: `{"model":"m","messages":[` + user + `],"stream":true,"stream_options":{"include_usage":true}}`},
		{name: "max_output_tokens as max_tokens", opts: azureAILike,
			in:   `{"model":"m","input":"hi","max_output_tokens":64}`,
			want: `{"model":"m","messages":[` + user + `],"max_tokens":64}`},
		{name: "max_output_tokens as max_completion_tokens", opts: openAILike,
			in:   `{"model":"m","input":"hi","max_output_tokens":64}`,
			want: `{"model":"m","messages":[` + user + `],"max_completion_tokens":64}`},
		{name: "max_output_tokens null left out", opts: openAILike,
			in:   `{"model":"m","input":"hi","max_output_tokens":null}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "temperature and top_p copied, null left out", opts: azureAILike,
			in:   `{"model":"m","input":"hi","temperature":0.2,"top_p":null}`,
			want: `{"model":"m","messages":[` + user + `],"temperature":0.2}`},
		{name: "top_p copied", opts: azureAILike,
			in:   `{"model":"m","input":"hi","top_p":0.9}`,
			want: `{"model":"m","messages":[` + user + `],"top_p":0.9}`},
		{name: "reasoning effort to an OpenAI target, summary dropped", opts: openAILike,
			in:   `{"model":"m","input":"hi","reasoning":{"effort":"low","summary":"detailed"}}`,
			want: `{"model":"m","messages":[` + user + `],"reasoning_effort":"low"}`},
		{name: "reasoning left out where the target takes no effort", opts: azureAILike,
			in:   `{"model":"m","input":"hi","reasoning":{"effort":"high","summary":"auto"}}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "reasoning null, effort null", opts: openAILike,
			in:   `{"model":"m","input":"hi","reasoning":{"effort":null}}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "OpenAI's chat parameters to an OpenAI target", opts: openAILike,
			in: `{"model":"m","input":"hi","parallel_tool_calls":false,"user":"u-1","safety_identifier":"s-1",` +
				`"prompt_cache_key":"k-1","service_tier":"flex"}`,
			want: `{"model":"m","messages":[` + user + `],"parallel_tool_calls":false,"user":"u-1",` +
				`"safety_identifier":"s-1","prompt_cache_key":"k-1","service_tier":"flex"}`},
		{name: "OpenAI's chat parameters left out elsewhere", opts: azureAILike,
			in: `{"model":"m","input":"hi","parallel_tool_calls":false,"user":"u-1","safety_identifier":"s-1",` +
				`"prompt_cache_key":"k-1","service_tier":"flex"}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "metadata and store left out", opts: openAILike,
			in:   `{"model":"m","input":"hi","metadata":{"a":"b"},"store":true}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "the ignored fields", opts: openAILike,
			in: `{"model":"m","input":"hi","include":["reasoning.encrypted_content"],"truncation":"auto",` +
				`"max_tool_calls":3,"top_logprobs":2,"prompt_cache_retention":"24h",` +
				`"context_management":[{"type":"compaction","compact_threshold":1000}]}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "stateful fields accepted when null or false", opts: azureAILike,
			in: `{"model":"m","input":"hi","previous_response_id":null,"conversation":null,"prompt":null,` +
				`"background":false}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "background null", opts: azureAILike,
			in:   `{"model":"m","input":"hi","background":null}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "escaped key names a field", opts: azureAILike,
			in:   `{"mod\u0065l":"m","input":"hi"}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "text format text is chat's default", opts: openAILike,
			in:   `{"model":"m","input":"hi","text":{"format":{"type":"text"}}}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "text format json_object", opts: azureAILike,
			in:   `{"model":"m","input":"hi","text":{"format":{"type":"json_object"}}}`,
			want: `{"model":"m","messages":[` + user + `],"response_format":{"type":"json_object"}}`},
		{name: "text format json_schema is nested", opts: azureAILike,
			in: `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"answer",` +
				`"schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true,"description":"d"}}}`,
			want: `{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":` +
				`{"name":"answer","schema":{"type":"object","properties":{"a":{"type":"string"}}},"strict":true,"description":"d"}}}`},
		{name: "text format json_schema, only the keys present", opts: azureAILike,
			in:   `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"r","schema":{},"description":null}}}`,
			want: `{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{}}}}`},
		{name: "text verbosity to an OpenAI target", opts: openAILike,
			in:   `{"model":"m","input":"hi","text":{"verbosity":"low"}}`,
			want: `{"model":"m","messages":[` + user + `],"verbosity":"low"}`},
		{name: "text verbosity left out elsewhere", opts: eternalLike,
			in:   `{"model":"m","input":"hi","text":{"format":{"type":"text"},"verbosity":"low"}}`,
			want: `{"model":"m","messages":[` + user + `]}`},
		{name: "text null", opts: eternalLike,
			in:   `{"model":"m","input":"hi","text":null}`,
			want: `{"model":"m","messages":[` + user + `]}`},
	})
}

func TestBridgeRequestInputItems(t *testing.T) {
	runBridgeRequestCases(t, []bridgeRequestCase{
		{name: "message roles with string content", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"system","content":"s"},{"role":"user","content":"u"},` +
				`{"type":"message","role":"assistant","content":"a"},{"role":"user","content":"u2"}]}`,
			want: `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},` +
				`{"role":"assistant","content":"a"},{"role":"user","content":"u2"}]}`},
		{name: "developer becomes system where the target has no developer role", opts: azureAILike,
			in:   `{"model":"m","input":[{"role":"developer","content":"d"},{"role":"user","content":"u"}]}`,
			want: `{"model":"m","messages":[{"role":"system","content":"d"},{"role":"user","content":"u"}]}`},
		{name: "developer kept where the target has it", opts: openAILike,
			in:   `{"model":"m","instructions":"i","input":[{"role":"developer","content":"d"},{"role":"user","content":"u"}]}`,
			want: `{"model":"m","messages":[{"role":"system","content":"i"},{"role":"developer","content":"d"},{"role":"user","content":"u"}]}`},
		{name: "user parts keep the array form", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"look"},` +
				`{"type":"input_image","image_url":"https://x/a.png","detail":"low"},` +
				`{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"original"},` +
				`{"type":"input_image","image_url":"https://x/b.png"}]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"look"},` +
				`{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},` +
				`{"type":"image_url","image_url":{"url":"https://x/b.png"}}]}]}`},
		{name: "image-only user message", opts: azureAILike,
			in:   `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png","detail":"auto","file_id":null}]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"auto"}}]}]}`},
		{name: "file data to an OpenAI target", opts: openAILike,
			in: `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf",` +
				`"file_data":"data:application/pdf;base64,JVBE"},{"type":"input_file","file_data":"data:text/plain;base64,aGk="}]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":` +
				`"data:application/pdf;base64,JVBE","filename":"a.pdf"}},{"type":"file","file":{"file_data":"data:text/plain;base64,aGk="}}]}]}`},
		{name: "system parts are joined into a string", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"system","content":[{"type":"input_text","text":"one. "},` +
				`{"type":"input_text","text":"two \"quoted\"\n"}]},{"role":"user","content":"u"}]}`,
			want: `{"model":"m","messages":[{"role":"system","content":"one. two \"quoted\"\n"},{"role":"user","content":"u"}]}`},
		{name: "developer parts are joined too", opts: openAILike,
			in:   `{"model":"m","input":[{"role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},{"role":"user","content":"u"}]}`,
			want: `{"model":"m","messages":[{"role":"developer","content":"ab"},{"role":"user","content":"u"}]}`},
		{name: "assistant history parts are text: output_text, lenient input_text, refusal", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"user","content":"u"},{"type":"message","id":"msg_1","status":"completed",` +
				`"phase":"final_answer","role":"assistant","content":[{"type":"output_text","text":"Hello ","annotations":[],"logprobs":[]},` +
				`{"type":"input_text","text":"th\u00e9re. "},{"type":"refusal","refusal":"No."}]},{"role":"user","content":"u2"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"Hello thére. No."},` +
				`{"role":"user","content":"u2"}]}`},
		{name: "escapes are copied as written", opts: azureAILike,
			in:   `{"model":"m","input":"a \"b\" \u00e9 \ud83d\ude00 \n \\"}`,
			want: `{"model":"m","messages":[{"role":"user","content":"a \"b\" é 😀 \n \\"}]}`},
		{name: "a function call alone is an assistant message of tool calls", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"user","content":"u"},{"type":"function_call","id":"fc_1","call_id":"call_1",` +
				`"name":"f","arguments":"{\"a\":1}","status":"completed"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}]}`},
		{name: "assistant text and the calls after it are one message", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"user","content":"u"},{"role":"assistant","content":"Let me check."},` +
				`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
				`{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"x\":2}"},` +
				`{"type":"function_call_output","call_id":"c1","output":"one"},` +
				`{"type":"function_call_output","call_id":"c2","output":"two"},` +
				`{"role":"assistant","content":[{"type":"output_text","text":"Done."}]},{"role":"user","content":"thanks"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"Let me check.",` +
				`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},` +
				`{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"x\":2}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"one"},{"role":"tool","tool_call_id":"c2","content":"two"},` +
				`{"role":"assistant","content":"Done."},{"role":"user","content":"thanks"}]}`},
		{name: "two assistant messages stay two; calls after a tool message start a new turn", opts: azureAILike,
			in: `{"model":"m","input":[{"role":"user","content":"u"},{"role":"assistant","content":"a"},` +
				`{"role":"assistant","content":"b"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c1","output":"r"},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c2","output":"r2"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a"},` +
				`{"role":"assistant","content":"b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"r"},` +
				`{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c2","content":"r2"}]}`},
		{name: "reasoning items are dropped and do not split a turn", opts: openAILike,
			in: `{"model":"m","input":[{"role":"user","content":"u"},{"type":"reasoning","id":"rs_1","summary":[` +
				`{"type":"summary_text","text":"thinking"}],"encrypted_content":"gAAA"},{"role":"assistant","content":"a"},` +
				`{"type":"reasoning","id":"rs_2","summary":[]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
				`{"type":"reasoning","id":"rs_3","summary":[]},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c1","output":"r"},{"type":"function_call_output","call_id":"c2","output":"r"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a","tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},` +
				`{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"tool","tool_call_id":"c2","content":"r"}]}`},
		{name: "function_call_output text parts are joined", opts: azureAILike,
			in: `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},` +
				`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"line 1\n"},` +
				`{"type":"input_text","text":"line 2"}]}]}`,
			want: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function",` +
				`"function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"line 1\nline 2"}]}`},
		{name: "an assistant message last is closed", opts: azureAILike,
			in:   `{"model":"m","input":[{"role":"user","content":"u"},{"role":"assistant","content":"a"}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"u"},{"role":"assistant","content":"a"}]}`},
		{name: "empty user parts array", opts: azureAILike,
			in:   `{"model":"m","input":[{"role":"user","content":[]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":[]}]}`},
	})
}

func TestBridgeRequestTools(t *testing.T) {
	const head = `{"model":"m","messages":[{"role":"user","content":"hi"}]`
	runBridgeRequestCases(t, []bridgeRequestCase{
		{name: "function tools are nested, only the keys present", opts: azureAILike,
			in: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","description":"does f",` +
				`"parameters":{"type":"object","properties":{}},"strict":true},{"type":"function","name":"g","strict":null}]}`,
			want: head + `,"tools":[{"type":"function","function":{"name":"f","description":"does f",` +
				`"parameters":{"type":"object","properties":{}},"strict":true}},{"type":"function","function":{"name":"g"}}]}`},
		{name: "an empty tools array is left out", opts: azureAILike,
			in:   `{"model":"m","tools":[],"input":"hi"}`,
			want: head + `}`},
		{name: "tools null", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tools":null}`,
			want: head + `}`},
		{name: "tool_choice auto", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tool_choice":"auto"}`,
			want: head + `,"tool_choice":"auto"}`},
		{name: "tool_choice none", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tool_choice":"none"}`,
			want: head + `,"tool_choice":"none"}`},
		{name: "tool_choice required", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tool_choice":"required"}`,
			want: head + `,"tool_choice":"required"}`},
		{name: "tool_choice function", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tool_choice":{"type":"function","name":"f"}}`,
			want: head + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`},
		{name: "tool_choice allowed_tools to an OpenAI target", opts: openAILike,
			in: `{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"required",` +
				`"tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]}}`,
			want: head + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[` +
				`{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}]}}}`},
		{name: "tool_choice null", opts: azureAILike,
			in:   `{"model":"m","input":"hi","tool_choice":null}`,
			want: head + `}`},
	})
}

func TestBridgeRequestRefusals(t *testing.T) {
	hi := func(extra string) string { return `{"model":"m","input":"hi",` + extra + `}` }
	item := func(item string) string { return `{"model":"m","input":[` + item + `]}` }
	userPart := func(part string) string { return item(`{"role":"user","content":[` + part + `]}`) }
	cases := []bridgeRequestCase{
		{name: "unknown field", in: hi(`"seed":1`), wantParam: "seed", wantCode: ErrUnsupportedParameter},
		{name: "unknown field with an escaped name", in: hi(`"s\u0065ed":1`), wantParam: "seed", wantCode: ErrUnsupportedParameter},
		{name: "chat's messages field", in: `{"model":"m","messages":[]}`, wantParam: "messages", wantCode: ErrUnsupportedParameter},
		{name: "repeated field", in: `{"model":"m","input":"a","input":"b"}`, wantParam: "input", wantCode: ErrInvalidJSON},
		{name: "repeated field, one escaped", in: `{"model":"m","input":"a","inp\u0075t":"b"}`, wantParam: "input", wantCode: ErrInvalidJSON},
		{name: "previous_response_id", in: hi(`"previous_response_id":"resp_1"`), wantParam: "previous_response_id", wantCode: ErrUnsupportedParameter},
		{name: "conversation id", in: hi(`"conversation":"conv_1"`), wantParam: "conversation", wantCode: ErrUnsupportedParameter},
		{name: "conversation object", in: hi(`"conversation":{"id":"conv_1"}`), wantParam: "conversation", wantCode: ErrUnsupportedParameter},
		{name: "background true", in: hi(`"background":true`), wantParam: "background", wantCode: ErrUnsupportedParameter},
		{name: "background not a boolean", in: hi(`"background":"yes"`), wantParam: "background", wantCode: ErrInvalidParameter},
		{name: "stored prompt", in: hi(`"prompt":{"id":"pmpt_1","version":"2"}`), wantParam: "prompt", wantCode: ErrUnsupportedParameter},
		{name: "store not a boolean", in: hi(`"store":1`), wantParam: "store", wantCode: ErrInvalidParameter},
		{name: "model not a string", in: `{"model":1,"input":"hi"}`, wantParam: "model", wantCode: ErrInvalidParameter},
		{name: "stream not a boolean", in: hi(`"stream":"yes"`), wantParam: "stream", wantCode: ErrInvalidParameter},
		{name: "max_output_tokens fraction", in: hi(`"max_output_tokens":1.5`), wantParam: "max_output_tokens", wantCode: ErrInvalidParameter},
		{name: "max_output_tokens string", in: hi(`"max_output_tokens":"10"`), wantParam: "max_output_tokens", wantCode: ErrInvalidParameter},
		{name: "instructions not a string", in: `{"model":"m","instructions":["a"],"input":"hi"}`, wantParam: "instructions", wantCode: ErrInvalidParameter},
		{name: "no input", in: `{"model":"m","instructions":"i"}`, wantParam: "input", wantCode: ErrInvalidParameter},
		{name: "input null", in: `{"model":"m","input":null}`, wantParam: "input", wantCode: ErrInvalidParameter},
		{name: "empty input", in: `{"model":"m","instructions":"i","input":[]}`, wantParam: "input", wantCode: ErrInvalidParameter},
		{name: "input of reasoning only", in: item(`{"type":"reasoning","id":"rs_1","summary":[]}`), wantParam: "input", wantCode: ErrInvalidParameter},
		{name: "input a number", in: `{"model":"m","input":3}`, wantParam: "input", wantCode: ErrInvalidParameter},
		{name: "item not an object", in: item(`"hi"`), wantParam: "input[0]", wantCode: ErrInvalidParameter},
		{name: "item with too many fields", in: item(`{"role":"user","content":"u"` + strings.Repeat(`,"x":1`, 64) + `}`),
			wantParam: "input[0]", wantCode: ErrInvalidParameter},
		{name: "item_reference", in: item(`{"role":"user","content":"u"},{"type":"item_reference","id":"msg_1"}`),
			wantParam: "input", wantCode: ErrUnsupportedParameter},
		{name: "an item that is only an id", in: item(`{"role":"user","content":"u"},{"id":"msg_1"}`),
			wantParam: "input", wantCode: ErrUnsupportedParameter},
		{name: "item with neither type nor role", in: item(`{"content":"u"}`), wantParam: "input[0].type", wantCode: ErrInvalidParameter},
		{name: "item type not a string", in: item(`{"type":1}`), wantParam: "input[0].type", wantCode: ErrInvalidParameter},
		{name: "message role tool", in: item(`{"role":"tool","content":"u"}`), wantParam: "input[0].role", wantCode: ErrInvalidParameter},
		{name: "message without content", in: item(`{"role":"user"}`), wantParam: "input[0].content", wantCode: ErrInvalidParameter},
		{name: "message content a number", in: item(`{"role":"user","content":1}`), wantParam: "input[0].content", wantCode: ErrInvalidParameter},
		{name: "image by file_id", in: userPart(`{"type":"input_text","text":"t"},{"type":"input_image","file_id":"file-1"}`),
			wantParam: "input[0].content[1]", wantCode: ErrUnsupportedParameter},
		{name: "image without a URL", in: userPart(`{"type":"input_image","detail":"low"}`),
			wantParam: "input[0].content[0].image_url", wantCode: ErrInvalidParameter},
		{name: "file data where the target takes no files", opts: azureAILike,
			in:        userPart(`{"type":"input_file","file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}`),
			wantParam: "input[0].content[0]", wantCode: ErrUnsupportedParameter},
		{name: "file by file_id", opts: openAILike, in: userPart(`{"type":"input_file","file_id":"file-1"}`),
			wantParam: "input[0].content[0]", wantCode: ErrUnsupportedParameter},
		{name: "file by file_url", opts: openAILike, in: userPart(`{"type":"input_file","file_url":"https://x/a.pdf"}`),
			wantParam: "input[0].content[0]", wantCode: ErrUnsupportedParameter},
		{name: "input_text without text", in: userPart(`{"type":"input_text","text":1}`),
			wantParam: "input[0].content[0].text", wantCode: ErrInvalidParameter},
		{name: "assistant part in a user message", in: userPart(`{"type":"output_text","text":"t"}`),
			wantParam: "input[0].content[0].type", wantCode: ErrInvalidParameter},
		{name: "part without type", in: userPart(`{"text":"t"}`), wantParam: "input[0].content[0].type", wantCode: ErrInvalidParameter},
		{name: "audio part", in: userPart(`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`),
			wantParam: "input[0].content[0].type", wantCode: ErrUnsupportedParameter},
		{name: "part not an object", in: userPart(`"t"`), wantParam: "input[0].content[0]", wantCode: ErrInvalidParameter},
		{name: "image in a system message", in: item(`{"role":"system","content":[{"type":"input_image","image_url":"https://x/a.png"}]},{"role":"user","content":"u"}`),
			wantParam: "input[0].content[0].type", wantCode: ErrUnsupportedParameter},
		{name: "image in assistant history", in: item(`{"role":"user","content":"u"},{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/a.png"}]}`),
			wantParam: "input[1].content[0].type", wantCode: ErrUnsupportedParameter},
		{name: "refusal part in a system message", in: item(`{"role":"system","content":[{"type":"refusal","refusal":"no"}]}`),
			wantParam: "input[0].content[0].type", wantCode: ErrUnsupportedParameter},
		{name: "function_call without call_id", in: item(`{"type":"function_call","name":"f","arguments":"{}"}`),
			wantParam: "input[0].call_id", wantCode: ErrInvalidParameter},
		{name: "function_call without name", in: item(`{"type":"function_call","call_id":"c","arguments":"{}"}`),
			wantParam: "input[0].name", wantCode: ErrInvalidParameter},
		{name: "function_call arguments an object", in: item(`{"type":"function_call","call_id":"c","name":"f","arguments":{}}`),
			wantParam: "input[0].arguments", wantCode: ErrInvalidParameter},
		{name: "function_call_output without call_id", in: item(`{"type":"function_call_output","output":"r"}`),
			wantParam: "input[0].call_id", wantCode: ErrInvalidParameter},
		{name: "function_call_output without output", in: item(`{"type":"function_call_output","call_id":"c"}`),
			wantParam: "input[0].output", wantCode: ErrInvalidParameter},
		{name: "function_call_output with an image", in: item(`{"type":"function_call_output","call_id":"c","output":[` +
			`{"type":"input_text","text":"see"},{"type":"input_image","image_url":"https://x/a.png"}]}`),
			wantParam: "input[0].output[1].type", wantCode: ErrUnsupportedParameter},
		{name: "tools not an array", in: hi(`"tools":{}`), wantParam: "tools", wantCode: ErrInvalidParameter},
		{name: "tool not an object", in: hi(`"tools":[1]`), wantParam: "tools[0]", wantCode: ErrInvalidParameter},
		{name: "tool without type", in: hi(`"tools":[{"name":"f"}]`), wantParam: "tools[0].type", wantCode: ErrInvalidParameter},
		{name: "function tool without name", in: hi(`"tools":[{"type":"function"}]`), wantParam: "tools[0].name", wantCode: ErrInvalidParameter},
		{name: "tool_choice string unknown", in: hi(`"tool_choice":"any"`), wantParam: "tool_choice", wantCode: ErrInvalidParameter},
		{name: "tool_choice function without name", in: hi(`"tool_choice":{"type":"function"}`), wantParam: "tool_choice.name", wantCode: ErrInvalidParameter},
		{name: "tool_choice allowed_tools where chat has no form for it", opts: azureAILike,
			in: hi(`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}`), wantParam: "tool_choice", wantCode: ErrUnsupportedParameter},
		{name: "tool_choice allowed_tools with a hosted tool", opts: openAILike,
			in:        hi(`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`),
			wantParam: "tool_choice.tools[1].type", wantCode: ErrUnsupportedParameter},
		{name: "tool_choice allowed_tools without tools", opts: openAILike,
			in: hi(`"tool_choice":{"type":"allowed_tools","mode":"auto"}`), wantParam: "tool_choice.tools", wantCode: ErrInvalidParameter},
		{name: "tool_choice mcp", in: hi(`"tool_choice":{"type":"mcp","server_label":"s"}`), wantParam: "tool_choice", wantCode: ErrUnsupportedParameter},
		{name: "tool_choice hosted", in: hi(`"tool_choice":{"type":"web_search_preview"}`), wantParam: "tool_choice", wantCode: ErrUnsupportedParameter},
		{name: "text format unknown", in: hi(`"text":{"format":{"type":"xml"}}`), wantParam: "text.format.type", wantCode: ErrInvalidParameter},
		{name: "text not an object", in: hi(`"text":"json"`), wantParam: "text", wantCode: ErrInvalidParameter},
		{name: "reasoning not an object", in: hi(`"reasoning":"high"`), wantParam: "reasoning", wantCode: ErrInvalidParameter},
		{name: "body not an object", in: `[1]`, wantParam: "", wantCode: ErrInvalidJSON},
	}
	for _, typ := range []string{"computer_call", "computer_call_output",
		"web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call", "local_shell_call",
		"local_shell_call_output", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call",
		"shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output", "compaction"} {
		cases = append(cases, bridgeRequestCase{name: typ + " item",
			in:        item(`{"role":"user","content":"u"},{"type":"` + typ + `","id":"x_1","call_id":"c"}`),
			wantParam: "input[1].type", wantCode: ErrUnsupportedParameter})
	}
	for _, typ := range []string{"web_search", "web_search_preview", "file_search", "code_interpreter",
		"computer_use_preview", "image_generation", "mcp", "local_shell", "shell", "apply_patch", "unknown_kind"} {
		cases = append(cases, bridgeRequestCase{name: typ + " tool",
			in:        hi(`"tools":[{"type":"function","name":"f"},{"type":"` + typ + `"}]`),
			wantParam: "tools[1].type", wantCode: ErrUnsupportedParameter})
	}
	for _, execution := range []string{``, `,"execution":"server"`} {
		cases = append(cases, bridgeRequestCase{name: "tool_search tool run by the server" + execution,
			in:        hi(`"tools":[{"type":"function","name":"f"},{"type":"tool_search"` + execution + `}]`),
			wantParam: "tools[1].execution", wantCode: ErrUnsupportedParameter})
	}
	for i := range cases {
		if cases[i].opts == (bridgeOptions{}) {
			cases[i].opts = azureAILike
		}
	}
	runBridgeRequestCases(t, cases)
}

// TestBridgeRequestRefusalMessages: the refusals of stateful features name the field and the fix, and
// render in the OpenAI envelope with the field as param.
func TestBridgeRequestRefusalMessages(t *testing.T) {
	tests := []struct{ in, wantParam, wantInMessage string }{
		{`{"model":"m","input":"hi","previous_response_id":"resp_1"}`, "previous_response_id",
			"previous_response_id needs the gateway to keep earlier responses, which it does not for providers that " +
				"have only Chat Completions: send store: false and the whole conversation in input (AI SDK: " +
				"providerOptions.openai.store = false; LangChain: use_previous_response_id=False)"},
		{`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input",
			"the gateway keeps no stored items: send store: false with the full history in input (AI SDK: providerOptions.openai.store = false; LangChain: use_previous_response_id=False)"},
		{`{"model":"m","input":"hi","conversation":"conv_1"}`, "conversation", storeFalseFix},
		{`{"model":"m","input":"hi","background":true}`, "background", "leave background out"},
		{`{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, "prompt", "send the template's text as instructions"},
		{`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type",
			`tools[0] is a "web_search" tool, a hosted tool that runs on the servers of the Responses API (OpenAI's ` +
				"or Azure OpenAI's), and this model's provider has only Chat Completions: remove it from the request, " +
				`have the operator set hosted_tools to "drop" for this model (it is then left out), or route to an ` +
				"openai or azure-openai model"},
		{`{"model":"m","input":"hi","tools":[{"type":"tool_search"}]}`, "tools[0].execution",
			`send execution "client" and run the search in the client, remove it from the request`},
		{`{"model":"m","input":"hi","tools":[{"type":"local_shell"}]}`, "tools[0].type",
			"a built-in tool whose calls only OpenAI's own models write"},
		{`{"model":"m","input":[{"role":"user","content":"u"},{"type":"web_search_call","id":"ws_1"}]}`, "input[1].type",
			`input[1] is a "web_search_call" item, made by a hosted tool`},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "input[0].content[0]",
			"send the image as image_url, an https or data: URL"},
		{`{"model":"m","input":"hi","frequency_penalty":1}`, "frequency_penalty", `"frequency_penalty" is not a Responses API field`},
		{`{"model":"m","input":[{"role":"user","content":"u"},{"type":"computer_call"}]}`, "input[1].type",
			`input[1] is a "computer_call" item`},
	}
	for _, tt := range tests {
		var echo responsesEcho
		_, e := bridgeRequest(nil, []byte(tt.in), &azureAILike, &echo)
		if e == nil {
			t.Errorf("%s: not refused", tt.in)
			continue
		}
		if e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantInMessage) {
			t.Errorf("%s: refused at %q with %q, want %q containing %q", tt.in, e.Param, e.Message, tt.wantParam, tt.wantInMessage)
		}
		body := e.Body(OpenAI)
		var envelope struct {
			Error struct{ Message, Type, Param, Code string }
		}
		if err := json.Unmarshal(body, &envelope); err != nil || envelope.Error.Param != tt.wantParam ||
			envelope.Error.Message != e.Message || envelope.Error.Code != string(e.Code) {
			t.Errorf("%s: envelope %s", tt.in, body)
		}
	}
}

// TestBridgeRequestClients: what the Vercel AI SDK, openai-go, openai-node and Codex send.
func TestBridgeRequestClients(t *testing.T) {
	runBridgeRequestCases(t, []bridgeRequestCase{
		{name: "openai-go New, simple", opts: azureAILike,
			// openai-go writes its fields in the params struct's order and only those set.
			in:   `{"input":"Say hi","model":"gpt-4o-mini","instructions":"Be terse.","max_output_tokens":100,"temperature":0.7}`,
			want: `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Say hi"}],"max_tokens":100,"temperature":0.7}`},
		{name: "openai-go NewStreaming", opts: eternalLike,
			in:   `{"input":"Say hi","model":"gpt-4o-mini","stream":true}`,
			want: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
		// The bodies below marked "captured" are what the npm clients of e2e/node (openai 6.49.0, ai 6.0.297 with
		// @ai-sdk/openai 3.0.120) sent to a recording server.
		{name: "openai-node responses.create, captured", opts: azureAILike,
			in:   `{"model":"gpt-4o","input":"Say hi"}`,
			want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hi"}]}`},
		{name: "openai-node responses.create with instructions and messages, captured", opts: openAILike,
			in:   `{"model":"gpt-4o","instructions":"Be terse.","input":[{"role":"user","content":"Hello"}],"max_output_tokens":50}`,
			want: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hello"}],"max_completion_tokens":50}`},
		{name: "openai-node responses.stream", opts: azureAILike,
			in:   `{"model":"gpt-4o","input":"Say hi","stream":true}`,
			want: `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hi"}],"stream":true}`},
		{name: "Vercel AI SDK, tool result turn with store false, captured", opts: azureAILike,
			in: `{"model":"gpt-4o","input":[{"role":"system","content":"You are terse."},{"role":"user","content":[` +
				`{"type":"input_text","text":"Look up hi"}]},{"type":"function_call","call_id":"call_3","name":"lookup",` +
				`"arguments":"{\"text\":\"hi\"}"},{"type":"function_call_output","call_id":"call_3","output":"{\"chars\":2}"}],` +
				`"store":false,"tools":[{"type":"function","name":"lookup","description":"Looks up","parameters":{"type":"object",` +
				`"properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}}],"tool_choice":"auto"}`,
			want: `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},` +
				`{"role":"user","content":[{"type":"text","text":"Look up hi"}]},` +
				`{"role":"assistant","tool_calls":[{"id":"call_3","type":"function","function":{"name":"lookup","arguments":"{\"text\":\"hi\"}"}}]},` +
				`{"role":"tool","tool_call_id":"call_3","content":"{\"chars\":2}"}],` +
				`"tools":[{"type":"function","function":{"name":"lookup","description":"Looks up","parameters":{"type":"object",` +
				`"properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}}}],"tool_choice":"auto"}`},
		{name: "Vercel AI SDK, next turn with store false replays the answer text, captured", opts: eternalLike,
			in: `{"model":"gpt-4o","input":[{"role":"system","content":"You are terse."},{"role":"user","content":[` +
				`{"type":"input_text","text":"Look up hi"}]},{"type":"function_call","call_id":"call_3","name":"lookup",` +
				`"arguments":"{\"text\":\"hi\"}"},{"type":"function_call_output","call_id":"call_3","output":"{\"chars\":2}"},` +
				`{"role":"assistant","content":[{"type":"output_text","text":"hello 4"}],"id":"msg_4"},` +
				`{"role":"user","content":[{"type":"input_text","text":"Thanks"}]}],"store":false}`,
			want: `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},` +
				`{"role":"user","content":[{"type":"text","text":"Look up hi"}]},` +
				`{"role":"assistant","tool_calls":[{"id":"call_3","type":"function","function":{"name":"lookup","arguments":"{\"text\":\"hi\"}"}}]},` +
				`{"role":"tool","tool_call_id":"call_3","content":"{\"chars\":2}"},{"role":"assistant","content":"hello 4"},` +
				`{"role":"user","content":[{"type":"text","text":"Thanks"}]}]}`},
		{name: "Vercel AI SDK, parallel calls streamed, structured output", opts: azureAILike,
			in: `{"model":"gpt-4o","input":[{"role":"user","content":[{"type":"input_text","text":"Weather in Paris and Rome?"}]},` +
				`{"type":"function_call","call_id":"call_a","name":"weather","arguments":"{\"city\":\"Paris\"}"},` +
				`{"type":"function_call","call_id":"call_b","name":"weather","arguments":"{\"city\":\"Rome\"}"},` +
				`{"type":"function_call_output","call_id":"call_a","output":"{\"temp\":21}"},` +
				`{"type":"function_call_output","call_id":"call_b","output":"{\"temp\":25}"}],"temperature":0,"max_output_tokens":200,` +
				`"text":{"format":{"type":"json_schema","strict":true,"name":"response","schema":{"type":"object"}}},"store":false,"stream":true}`,
			want: `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},` +
				`{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},` +
				`{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},` +
				`{"role":"tool","tool_call_id":"call_a","content":"{\"temp\":21}"},{"role":"tool","tool_call_id":"call_b","content":"{\"temp\":25}"}],` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object"},"strict":true}},` +
				`"max_tokens":200,"temperature":0,"stream":true}`},
		{name: "Codex turn with reasoning history", opts: openAILike,
			in: `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[` +
				`{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},` +
				`{"type":"reasoning","id":"rs_1","summary":[],"content":null,"encrypted_content":"gAAAA"},` +
				`{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"},` +
				`{"type":"function_call_output","call_id":"call_1","output":"a.go\nb.go"}],` +
				`"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,` +
				`"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}}],` +
				`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},` +
				`"store":false,"stream":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"conv-1",` +
				`"text":{"verbosity":"medium"}}`,
			want: `{"model":"gpt-5-codex","messages":[{"role":"system","content":"You are Codex."},` +
				`{"role":"user","content":[{"type":"text","text":"list files"}]},` +
				`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"ls\"]}"}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"a.go\nb.go"}],` +
				`"tools":[{"type":"function","function":{"name":"shell","description":"Runs a command",` +
				`"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]},"strict":false}}],` +
				`"tool_choice":"auto","parallel_tool_calls":false,"verbosity":"medium","reasoning_effort":"medium",` +
				`"prompt_cache_key":"conv-1","stream":true,"stream_options":{"include_usage":true}}`},
	})
}

// TestBridgeRequestAISDKDefaultStoreIsRefused: the AI SDK with store left at its default replays earlier
// assistant text as item_reference ids, which the gateway cannot resolve; the refusal says to set store.
func TestBridgeRequestAISDKDefaultStoreIsRefused(t *testing.T) {
	// Captured from @ai-sdk/openai 3.0.120 (see TestBridgeRequestClients): the third turn, store unset.
	in := `{"model":"gpt-4o","input":[{"role":"system","content":"You are terse."},{"role":"user","content":[` +
		`{"type":"input_text","text":"Look up hi"}]},{"type":"function_call","call_id":"call_6","name":"lookup",` +
		`"arguments":"{\"text\":\"hi\"}"},{"type":"function_call_output","call_id":"call_6","output":"{\"chars\":2}"},` +
		`{"type":"item_reference","id":"msg_7"},{"role":"user","content":[{"type":"input_text","text":"Thanks"}]}]}`
	var echo responsesEcho
	_, e := bridgeRequest(nil, []byte(in), &azureAILike, &echo)
	if e == nil || e.Param != "input" || e.Code != ErrUnsupportedParameter ||
		!strings.Contains(e.Message, "providerOptions.openai.store = false") {
		t.Fatalf("refusal %+v", e)
	}
}

func TestBridgeRequestEcho(t *testing.T) {
	src := []byte(`{"model":"gpt-4o","instructions":"Be terse.","input":"hi","tools":[{"type":"function","name":"f"}],` +
		`"tool_choice":"auto","parallel_tool_calls":false,"temperature":0.5,"top_p":null,"max_output_tokens":64,` +
		`"text":{"format":{"type":"json_object"}},"reasoning":{"effort":"low"},"metadata":{"k":"v"},"user":"u",` +
		`"safety_identifier":"s","prompt_cache_key":"p","service_tier":"auto","truncation":"auto","top_logprobs":0,` +
		`"max_tool_calls":2,"stream":true,"store":false,"include":[]}`)
	var echo responsesEcho
	if _, e := bridgeRequest(nil, src, &azureAILike, &echo); e != nil {
		t.Fatal(e)
	}
	// The request body is gone when the answer arrives: the echo must not share its memory.
	clear(src)
	want := map[string]string{
		"model": `"gpt-4o"`, "instructions": `"Be terse."`, "tools": `[{"type":"function","name":"f"}]`,
		"tool_choice": `"auto"`, "parallel_tool_calls": "false", "temperature": "0.5", "top_p": "null",
		"max_output_tokens": "64", "text": `{"format":{"type":"json_object"}}`, "reasoning": `{"effort":"low"}`,
		"metadata": `{"k":"v"}`, "user": `"u"`, "safety_identifier": `"s"`, "prompt_cache_key": `"p"`,
		"service_tier": `"auto"`, "truncation": `"auto"`, "top_logprobs": "0", "max_tool_calls": "2",
	}
	got := map[string][]byte{
		"model": echo.model, "instructions": echo.instructions, "tools": echo.tools, "tool_choice": echo.toolChoice,
		"parallel_tool_calls": echo.parallelToolCalls, "temperature": echo.temperature, "top_p": echo.topP,
		"max_output_tokens": echo.maxOutputTokens, "text": echo.text, "reasoning": echo.reasoning,
		"metadata": echo.metadata, "user": echo.user, "safety_identifier": echo.safetyIdentifier,
		"prompt_cache_key": echo.promptCacheKey, "service_tier": echo.serviceTier, "truncation": echo.truncation,
		"top_logprobs": echo.topLogprobs, "max_tool_calls": echo.maxToolCalls,
	}
	for name, w := range want {
		if string(got[name]) != w {
			t.Errorf("echo %s = %q, want %q", name, got[name], w)
		}
	}
	if !echo.stream || echo.storeAsked {
		t.Errorf("echo stream %v storeAsked %v, want true false", echo.stream, echo.storeAsked)
	}
	if len(echo.buf) != cap(echo.buf) {
		t.Errorf("echo.buf sized %d for %d bytes: one allocation of the size needed", cap(echo.buf), len(echo.buf))
	}

	// The next request resets the echo: what it lacks is nil, store's default is true.
	bufBefore := &echo.buf[:1][0]
	if _, e := bridgeRequest(nil, []byte(`{"model":"m","input":"hi"}`), &azureAILike, &echo); e != nil {
		t.Fatal(e)
	}
	if string(echo.model) != `"m"` || echo.instructions != nil || echo.tools != nil || echo.metadata != nil ||
		echo.stream || !echo.storeAsked {
		t.Errorf("echo not reset: %+v", echo)
	}
	if &echo.buf[:1][0] != bufBefore {
		t.Errorf("echo.buf not reused")
	}
	for _, store := range []string{`"store":true,`, `"store":null,`, ``} {
		if _, e := bridgeRequest(nil, []byte(`{`+store+`"model":"m","input":"hi"}`), &azureAILike, &echo); e != nil || !echo.storeAsked {
			t.Errorf("%s: storeAsked %v (%v)", store, echo.storeAsked, e)
		}
	}

	// A refused request leaves no view of its body behind.
	if _, e := bridgeRequest(nil, []byte(`{"model":"m","input":"hi","background":true}`), &azureAILike, &echo); e == nil {
		t.Fatal("background: true accepted")
	}
	if echo.model != nil {
		t.Errorf("echo kept %q after a refusal", echo.model)
	}
}

// TestBridgeRequestReusesDst: the chat request is written into dst's memory when it is big enough.
func TestBridgeRequestReusesDst(t *testing.T) {
	src := []byte(`{"model":"m","input":"hi"}`)
	dst := make([]byte, 5, 4096)
	var echo responsesEcho
	out, e := bridgeRequest(dst, src, &azureAILike, &echo)
	if e != nil {
		t.Fatal(e)
	}
	if &out[0] != &dst[:1][0] {
		t.Error("dst not reused")
	}
	assertSameJSON(t, out, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
}

// TestBridgeRequestDeepNestingInAPart: a million levels of nesting inside a content part (or a tool's
// schema, or an ignored field) is neither recursed into nor trapped on: it is refused where a value of
// another type is wanted, and passed over where it is ignored.
func TestBridgeRequestDeepNestingInAPart(t *testing.T) {
	const depth = 1_000_000
	deep := string(nested("[", "", "]", depth))
	tests := []struct {
		name, in, wantParam string
	}{
		{"as text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":` + deep + `}]}]}`,
			"input[0].content[0].text"},
		{"as an image URL", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":` + deep + `}]}]}`,
			"input[0].content[0].image_url"},
		{"as a part", `{"model":"m","input":[{"role":"user","content":[` + deep + `]}]}`, "input[0].content[0]"},
		{"as an assistant part", `{"model":"m","input":[{"role":"assistant","content":[` + deep + `]}]}`, "input[0].content[0]"},
		{"as a tool output part", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[` + deep + `]}]}`,
			"input[0].output[0]"},
		{"as an item", `{"model":"m","input":[` + deep + `]}`, "input[0]"},
		{"as a tool schema", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":` + deep + `}]}`,
			"tools[0].parameters"},
		{"unclosed", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":` +
			strings.Repeat("[", depth) + `}]}]}`, ""},
		{"in an ignored member of a part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text",` +
			`"text":"t","annotations":` + deep + `}]}]}`, ""},
		{"in an ignored field", `{"model":"m","input":"hi","include":` + deep + `}`, ""},
	}
	withStackLimit(1<<20, func() {
		for _, tt := range tests {
			var echo responsesEcho
			out, e := bridgeRequest(nil, []byte(tt.in), &openAILike, &echo)
			switch {
			case tt.wantParam != "" && (e == nil || e.Param != tt.wantParam):
				t.Errorf("%s: %v, want a refusal at %s", tt.name, e, tt.wantParam)
			case tt.wantParam == "" && e == nil && !jsonscan.Valid(out):
				t.Errorf("%s: wrote invalid JSON", tt.name)
			}
		}
	})
}

// TestBridgeRequestSchemaDepthBound: a tool schema nested as deep as Parse allows in the request sits one
// level deeper in the chat request; it is refused rather than written as a chat request Parse refuses.
func TestBridgeRequestSchemaDepthBound(t *testing.T) {
	refused, bridged := 0, 0
	for depth := jsonscan.MaxDepth - 8; depth <= jsonscan.MaxDepth; depth++ {
		in := []byte(`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":` +
			string(nested(`{"a":`, "1", "}", depth)) + `}]}`)
		var body RequestBody
		if body.Parse(in) != nil {
			continue
		}
		var echo responsesEcho
		out, e := bridgeRequest(nil, in, &openAILike, &echo)
		if e != nil {
			if e.Param != "tools[0].parameters" || depth <= maxSchemaDepth {
				t.Errorf("depth %d: refused %v", depth, e)
			}
			refused++
			continue
		}
		bridged++
		var chat RequestBody
		if err := chat.Parse(out); err != nil {
			t.Errorf("depth %d: the chat request does not parse: %v", depth, err)
		}
	}
	if refused == 0 || bridged == 0 {
		t.Errorf("%d schemas refused, %d bridged: the bound was not reached from both sides", refused, bridged)
	}
}

// TestBridgeRequestSteadyStateAllocs: with dst and the echo's buffer kept from the last request, a bridged
// request allocates nothing.
func TestBridgeRequestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	src := responsesConversation(4 << 10)
	var echo responsesEcho
	dst, e := bridgeRequest(nil, src, &openAILike, &echo)
	if e != nil {
		t.Fatal(e)
	}
	allocs := testing.AllocsPerRun(20, func() {
		dst, _ = bridgeRequest(dst, src, &openAILike, &echo)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}

// responsesConversation is the benchmarks' chat conversation (benchdata.ChatRequest) as a Responses body of
// about size bytes: instructions, then many short user messages with quotes and non-ASCII text, with a
// tool-call round and an assistant answer among them, and the sampling fields.
func responsesConversation(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"gpt-4o","instructions":"You are terse.","input":[`)
	b.WriteString(`{"type":"function_call","call_id":"call_1","name":"lookup","arguments":"{\"q\":\"fox\"}"},`)
	b.WriteString(`{"type":"function_call_output","call_id":"call_1","output":"The fox is quick."},`)
	b.WriteString(`{"role":"assistant","content":[{"type":"output_text","text":"Noted.","annotations":[]}]}`)
	for i := 0; b.Len() < size-400; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"Message %d: the quick brown fox jumps over the lazy dog, \"quoted\" and ünïcödé text."}`, i)
	}
	b.WriteString(`],"tools":[{"type":"function","name":"lookup","description":"Looks a word up",` +
		`"parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}],"tool_choice":"auto",` +
		`"temperature":0.2,"max_output_tokens":256,"stream":false,"user":"user-42","store":false}`)
	return b.Bytes()
}

// BenchmarkBridgeRequest: a 4 KiB Responses conversation (the benchmarks' chat request, as a Responses
// client sends it) bridged to chat, beside the floor of one validating scan and one copy.
func BenchmarkBridgeRequest(b *testing.B) {
	src := responsesConversation(4 << 10)
	b.Run("bridge", func(b *testing.B) {
		var echo responsesEcho
		dst := make([]byte, 0, 2*len(src))
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			out, e := bridgeRequest(dst, src, &openAILike, &echo)
			if e != nil {
				b.Fatal(e)
			}
			sinkBytes = out
		}
	})
	b.Run("floor", func(b *testing.B) { benchScanCopyFloor(b, src) })
}

// TestBridgeRequestBrokenBodies: bodies that never passed Parse (cut short, or with a byte changed to one
// that ends or opens a value) are refused or bridged, never a panic; those Parse accepts bridge to valid JSON.
func TestBridgeRequestBrokenBodies(t *testing.T) {
	bodies := [][]byte{responsesConversation(1 << 10),
		[]byte(`{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"t"},` +
			`{"type":"input_image","image_url":"u"}]},{"role":"system","content":[{"type":"input_text","text":"s"}]},` +
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}],` +
			`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]},` +
			`"text":{"format":{"type":"json_schema","name":"n","schema":{"a":[1,{"b":"]"}]}}},"reasoning":{"effort":"low"}}`)}
	for _, body := range bodies {
		variants := make([][]byte, 0, 8*len(body))
		for i := range body {
			variants = append(variants, body[:i])
			for _, c := range []byte(`"]},\[{ `) {
				v := bytes.Clone(body)
				v[i] = c
				variants = append(variants, v)
			}
		}
		for _, v := range variants {
			var echo responsesEcho
			out, e := bridgeRequest(nil, v, &openAILike, &echo)
			var parsed RequestBody
			if e == nil && parsed.Parse(v) == nil && !jsonscan.Valid(out) {
				t.Fatalf("invalid chat request %q from %q", out, v)
			}
		}
	}
}

// maxToolChatBytes bounds what a declared tool adds to the chat request beyond 4 times its own bytes.
const maxToolChatBytes = 320

// FuzzBridgeRequest: for any body, the bridge never panics; for a body Parse accepts, it either refuses with
// a 400 or writes a chat request that is valid JSON, that Parse accepts, and at most 4 times the input's size
// plus 1 KiB.
func FuzzBridgeRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"t"},` +
			`{"type":"input_image","image_url":"https://x","detail":"original"},{"type":"input_file","file_data":"d","filename":"f"}]},` +
			`{"role":"assistant","content":[{"type":"output_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]},{"type":"reasoning","summary":[]}]}`,
		`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","parameters":{}}],"tool_choice":{"type":"allowed_tools",` +
			`"mode":"auto","tools":[{"type":"function","name":"f"}]},"text":{"format":{"type":"json_schema","name":"n","schema":{}},` +
			`"verbosity":"low"},"reasoning":{"effort":"low"},"max_output_tokens":5,"stream":true,"store":false,"metadata":{}}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"a","name":"b","arguments":"c"},{"type":"function_call","call_id":"","name":"","arguments":""}]}`,
		`{"model":"m","input":[{"role":"system","content":[]},{"id":"x"}]}`,
		`{"model":"m","input":"hi","previous_response_id":"r"}`,
		"{ \"model\" : \"m\" ,\n \"input\" : [ {\"role\":\"user\",\"content\":[ {\"type\":\"input_text\",\"text\":\"a\"} ,\n\t{ } ] } , { } ] }",
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},{"type":"function_call","call_id":"c","name":"n","arguments":"{}"}],"stream":true}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
	}
	f.Add(responsesConversation(1<<10), uint8(2))
	var members []string // many small custom tools in a namespace of a long name: the most a tool adds
	for i := range 300 {
		members = append(members, `{"type":"custom","name":"c`+strconv.Itoa(i)+`"}`)
	}
	f.Add([]byte(`{"model":"m","input":"hi","tools":[{"type":"namespace","name":"`+strings.Repeat("n", 64)+`","tools":[`+
		strings.Join(members, ",")+`]}]}`), uint8(0))
	optsOf := []bridgeOptions{azureAILike, eternalLike, openAILike}
	f.Fuzz(func(t *testing.T, src []byte, selector uint8) {
		opts := optsOf[int(selector)%len(optsOf)]
		var echo responsesEcho
		var body RequestBody
		parsed := body.Parse(src) == nil
		out, e := bridgeRequest(nil, src, &opts, &echo)
		if !parsed || e != nil {
			if e != nil && e.Status() != 400 {
				t.Fatalf("refused with status %d: %v", e.Status(), e)
			}
			return
		}
		if !jsonscan.Valid(out) {
			t.Fatalf("invalid chat request %q from %q", out, src)
		}
		// Each declared tool may add a fixed amount (a custom tool's function schema, a namespace's name on each
		// member: ~270 bytes from a 28-byte member), and there are at most maxBridgedItems of them.
		// Each declared tool may add a fixed amount (a custom tool's function schema, a namespace's name on each
		// member: ~270 bytes from a 28-byte member), and there are at most maxBridgedItems of them.
		if len(out) > 4*len(src)+1024+maxToolChatBytes*len(echo.toolCalls.tools) {
			t.Fatalf("chat request of %d bytes from %d", len(out), len(src))
		}
		var chat RequestBody
		if e := chat.Parse(out); e != nil {
			t.Fatalf("chat request refused by Parse: %v\n%s\nfrom %s", e, out, src)
		}
	})
}

// TestObjectKeys: objectKeyOf finds every name of objectKeyNames as its key, and nothing else.
func TestObjectKeys(t *testing.T) {
	for k, name := range objectKeyNames {
		if got, ok := objectKeyOf([]byte(`"`+name+`"`), false); !ok || got != objectKey(k) {
			t.Errorf("%s: key %d, %v; want %d", name, got, ok, k)
		}
	}
	for _, unknown := range []string{"", "x", "types", "Type", "input_", "namespac"} {
		if k, ok := objectKeyOf([]byte(`"`+unknown+`"`), false); ok {
			t.Errorf("%q found as key %d", unknown, k)
		}
	}
}

// TestResponsesFieldRows: every field of the table is found by its name, at its row, and nothing else is.
func TestResponsesFieldRows(t *testing.T) {
	for row, f := range responsesFields {
		if got, ok := responsesFieldRow(f.name); !ok || got != row {
			t.Errorf("%s: row %d, %v; want %d", f.name, got, ok, row)
		}
	}
	for _, unknown := range []string{"", "x", "Model", "models", "input_", "previous_response"} {
		if row, ok := responsesFieldRow(unknown); ok {
			t.Errorf("%q found at row %d", unknown, row)
		}
	}
}

// TestBridgeRequestTextMessagesCopiedWhole: text messages written the way SDKs write them are copied whole
// (copyTextMessages); the same items with a space after each colon are read member by member, and must
// become the same chat request, or the same refusal.
func TestBridgeRequestTextMessagesCopiedWhole(t *testing.T) {
	conversations := [][]string{
		{`{"role":"user","content":"hi"}`},
		{`{"role":"system","content":"s"}`, `{"role":"user","content":"a \"quoted\" \\ word\\"}`,
			`{"role":"assistant","content":"ünïcödé \u00e9"}`, `{"role":"user","content":""}`},
		{`{"role":"user","content":"q"}`, `{"role":"assistant","content":"let me look"}`,
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
			`{"type":"function_call_output","call_id":"c","output":"r"}`, `{"role":"assistant","content":"done"}`},
		{`{"role":"developer","content":"d"}`, `{"role":"user","content":"u"}`,
			`{"type":"reasoning","id":"rs_1","summary":[]}`, `{"role":"assistant","content":"a"}`},
		{`{"role":"user","content":[{"type":"input_text","text":"part"}]}`, `{"role":"user","content":"x"}`,
			`{"role":"assistant","content":"y"}`},
		{`{"role":"user","content":"u"}`, `{"role":"users","content":"u"}`},
		{`{"role":"user","content":"u"}`, `{"role":"user","content":"u","content":"v"}`},
		{`{"role":"user","content":"u"}`, `{"role":"assistant","content":"a"}`, `{"type":"item_reference","id":"m"}`},
	}
	for _, items := range conversations {
		compact := `{"model":"m","input":[` + strings.Join(items, ",") + `]}`
		spaced := strings.ReplaceAll(compact, `":`, `": `)
		for _, opts := range []*bridgeOptions{&azureAILike, &openAILike} {
			var echo responsesEcho
			want, wantErr := bridgeRequest(nil, []byte(spaced), opts, &echo)
			got, gotErr := bridgeRequest(nil, []byte(compact), opts, &echo)
			if !reflect.DeepEqual(gotErr, wantErr) || !bytes.Equal(got, want) {
				t.Errorf("%s:\ngot  %s %v\nwant %s %v", compact, got, gotErr, want, wantErr)
			}
		}
	}
}

// TestEchoSlots: each echo slot names its own member of the echo.
func TestEchoSlots(t *testing.T) {
	var echo responsesEcho
	seen := map[*[]byte]echoSlot{}
	for s := echoSlot(1); s <= echoMaxToolCalls; s++ {
		p := echo.slot(s)
		if other, ok := seen[p]; ok || p == &echo.buf || p == nil {
			t.Errorf("slot %d: the member of slot %d", s, other)
		}
		seen[p] = s
	}
	if echo.slot(echoModel) != &echo.model || echo.slot(echoMaxToolCalls) != &echo.maxToolCalls ||
		echo.slot(echoServiceTier) != &echo.serviceTier || echo.slot(echoNothing) != nil {
		t.Error("slots and members disagree")
	}
}

// TestBridgeEchoBudget: the values a bridged Response repeats are kept whole while they fit in
// maxEchoBytes together, in the table's order; one that does not is left out (the Response states the API's
// value for an absent member) and named in EchoOmitted. A Response, and each of a stream's response.created,
// .in_progress and terminal events, then repeats at most maxEchoBytes of the request, whatever its size.
func TestBridgeEchoBudget(t *testing.T) {
	huge := `"` + strings.Repeat("i", maxEchoBytes) + `"`
	fits := `"` + strings.Repeat("i", maxEchoBytes-1024) + `"`
	tools := `[{"type":"function","name":"f","parameters":{"type":"object","description":"` + strings.Repeat("d", 2048) + `"}}]`
	for _, tc := range []struct {
		name         string
		instructions string
		omitted      []string
		// echoed: the Response's instructions and tools.
		wantInstructions, wantTools string
	}{
		{"small values are all kept", `"Be terse."`, nil, `"Be terse."`, tools},
		{"instructions past the budget are left out, tools kept", huge, []string{"instructions"}, "null", tools},
		{"instructions fill the budget, tools past it are left out", fits, []string{"tools"}, fits, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"model":"m","instructions":` + tc.instructions + `,"input":"hi","tools":` + tools + `,"temperature":0.5}`
			b := &Bridge{}
			if _, e := bridgeRequest(nil, []byte(src), &azureAILike, &b.echo); e != nil {
				t.Fatal(e)
			}
			if got := b.echoOmitted(); !reflect.DeepEqual(got, tc.omitted) {
				t.Fatalf("EchoOmitted() = %q, want %q", got, tc.omitted)
			}
			if len(b.echo.buf) > maxEchoBytes {
				t.Errorf("the echo holds %d bytes, over %d", len(b.echo.buf), maxEchoBytes)
			}
			answer, err := bridgeAnswer(nil, []byte(bridgeChatAnswer(`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"`, "")), &b.echo, nil)
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]string{"instructions": tc.wantInstructions, "tools": tc.wantTools, "temperature": "0.5"} {
				if got := gjson.GetBytes(answer, path).Raw; got != want {
					t.Errorf("%s = %.60s, want %.60s", path, got, want)
				}
			}
			if len(answer) > maxEchoBytes+4096 {
				t.Errorf("a Response of %d bytes for a 2-byte answer, over the echo budget %d + 4096", len(answer), maxEchoBytes)
			}
			stream := runBridgeStream(t, &b.echo, bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"ok"}`),
				bridgeChatFinish("stop"), "[DONE]"), 0)
			rp := replayResponsesStream(t, stream)
			if got := gjson.Get(rp.data[len(rp.data)-1], "response.instructions").Raw; got != tc.wantInstructions {
				t.Errorf("the terminal event's instructions = %.60s, want %.60s", got, tc.wantInstructions)
			}
			if len(stream) > 3*maxEchoBytes+8192 {
				t.Errorf("a stream of %d bytes for a 2-byte answer, over 3 x the echo budget %d + 8192", len(stream), maxEchoBytes)
			}
		})
	}
}

// TestJSONStringIs: escaped literals of a name are read as the name; a literal too long to be the name is
// judged without decoding it (a member compared with several names cost its length and an allocation each
// time: 6x a 240 KB body in allocations for one escaped role).
func TestJSONStringIs(t *testing.T) {
	long := []byte(`"` + strings.Repeat(`\u0061`, 40000) + `"`)
	for _, c := range []struct {
		raw  string
		name string
		want bool
	}{
		{`"user"`, "user", true},
		{`"us\u0065r"`, "user", true},
		{`"\u0075\u0073\u0065\u0072"`, "user", true},
		{`"users"`, "user", false},
		{`"us\u0065rs"`, "user", false},
		{`user`, "user", false},
		{string(long), "user", false},
	} {
		if got := jsonStringIs([]byte(c.raw), c.name); got != c.want {
			t.Errorf("jsonStringIs(%.40s, %q) = %v", c.raw, c.name, got)
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { jsonStringIs(long, "assistant") }); allocs != 0 {
		t.Errorf("a 240 KB escaped literal compared with a name allocated %v times", allocs)
	}
}

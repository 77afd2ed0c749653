//go:build !aidialect_no_bridge

package translate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// bridgeChatAnswer is a chat.completion with the given choice members (message, finish_reason, ...) and top-level
// extras.
func bridgeChatAnswer(choice, extra string) string {
	return `{"id":"chatcmpl-answer","object":"chat.completion","created":1741570283,"model":"gpt-4o-2024-08-06",` +
		`"choices":[{"index":0,` + choice + `,"logprobs":null}],"usage":{"prompt_tokens":20,"completion_tokens":11,` +
		`"total_tokens":31,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0}},"system_fingerprint":"fp_a"` + extra + `}`
}

// decodeBridgedResponse decodes a Response JSON, numbers kept as written, failing the test on anything else.
func decodeBridgedResponse(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var resp map[string]any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&resp); err != nil || d.More() {
		t.Fatalf("not one JSON object (%v):\n%s", err, raw)
	}
	return resp
}

// bridgeAnswerHash is the hex hash every id of the answers below carries.
var bridgeAnswerHash = fmt.Sprintf("%016x", bridgeHash([]byte("chatcmpl-answer")))

const bridgeAnswerGolden = `{"id":"resp_%[1]s","object":"response","created_at":1741570283,"status":"completed",` +
	`"background":false,"completed_at":1741570283,"error":null,"incomplete_details":null,"instructions":null,` +
	`"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-2024-08-06","output":[{"id":"msg_%[1]s",` +
	`"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],` +
	`"logprobs":[],"text":"Hello! How can I help?\n"}]}],"parallel_tool_calls":true,"previous_response_id":null,` +
	`"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,` +
	`"service_tier":"default","store":false,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto",` +
	`"tools":[],"top_logprobs":0,"top_p":1,"truncation":"disabled","usage":{"input_tokens":20,` +
	`"input_tokens_details":{"cached_tokens":8},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":2},` +
	`"total_tokens":31},"user":null,"metadata":{},"output_text":"Hello! How can I help?\n"}`

func TestBridgeAnswerTextGolden(t *testing.T) {
	chat := bridgeChatAnswer(`"message":{"role":"assistant","content":"Hello! How can I help?\n","refusal":null,`+
		`"annotations":[]},"finish_reason":"stop"`, "")
	got, err := bridgeAnswer(make([]byte, 0, 8), []byte(chat), &responsesEcho{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(bridgeAnswerGolden, bridgeAnswerHash); string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	checkBridgedResponse(t, decodeBridgedResponse(t, got), responseStatusCompleted)
}

func TestBridgeAnswerConversions(t *testing.T) {
	h := bridgeAnswerHash
	tests := []struct {
		name   string
		chat   string
		status string
		// want maps gjson paths into the Response to their raw JSON values.
		want map[string]string
	}{
		{
			name: "one tool call",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc","type":"function",`+
				`"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"`, ""),
			status: responseStatusCompleted,
			want: map[string]string{
				"output.#": `1`,
				"output.0": `{"id":"fc_` + h + `_0","type":"function_call","status":"completed",` +
					`"arguments":"{\"city\":\"Paris\"}","call_id":"call_abc","name":"get_weather"}`,
				"output_text": `""`,
			},
		},
		{
			name: "parallel tool calls: empty arguments, a missing and a repeated id",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","content":null,"tool_calls":[`+
				`{"id":"call_1","type":"function","function":{"name":"a","arguments":""}},`+
				`{"type":"function","function":{"name":"b","arguments":"{}"}},`+
				`{"id":"call_1","type":"function","function":{"name":"c","arguments":"{\"x\":1}"}}]},"finish_reason":"tool_calls"`, ""),
			status: responseStatusCompleted,
			want: map[string]string{
				"output.#":           `3`,
				"output.0.arguments": `"{}"`,
				"output.0.call_id":   `"call_1"`,
				"output.1.id":        `"fc_` + h + `_1"`,
				"output.1.call_id":   `"call_` + h + `_1"`,
				"output.2.call_id":   `"call_` + h + `_2"`,
				"output.2.name":      `"c"`,
			},
		},
		{
			name: "text and tool calls",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call_w",`+
				`"type":"function","function":{"name":"w","arguments":"{}"}}]},"finish_reason":"tool_calls"`, ""),
			status: responseStatusCompleted,
			want: map[string]string{
				"output.#":                `2`,
				"output.0.type":           `"message"`,
				"output.0.content.0.text": `"Checking."`,
				"output.1.type":           `"function_call"`,
				"output_text":             `"Checking."`,
			},
		},
		{
			name: "reasoning_content first",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","reasoning_content":"Think \"hard\".","content":"42"},`+
				`"finish_reason":"stop"`, ""),
			status: responseStatusCompleted,
			want: map[string]string{
				"output.0":                `{"id":"rs_` + h + `","type":"reasoning","summary":[{"type":"summary_text","text":"Think \"hard\"."}]}`,
				"output.1.id":             `"msg_` + h + `"`,
				"output.1.content.0.text": `"42"`,
				"usage.output_tokens_details.reasoning_tokens": `2`,
			},
		},
		{
			name: "refusal",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},`+
				`"finish_reason":"stop"`, ""),
			status: responseStatusCompleted,
			want: map[string]string{
				"output.0.content": `[{"type":"refusal","refusal":"I can't help with that."}]`,
				"output_text":      `""`,
			},
		},
		{
			name:   "length: incomplete, the message too",
			chat:   bridgeChatAnswer(`"message":{"role":"assistant","content":"The first ten"},"finish_reason":"length"`, ""),
			status: responseStatusIncomplete,
			want: map[string]string{
				"incomplete_details": `{"reason":"max_output_tokens"}`,
				"output.0.status":    `"incomplete"`,
				"completed_at":       `null`,
			},
		},
		{
			name: "content_filter with Azure's annotations: incomplete",
			chat: bridgeChatAnswer(`"message":{"role":"assistant","content":null},"finish_reason":"content_filter",`+
				`"content_filter_results":{"hate":{"filtered":true,"severity":"high"}}`,
				`,"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]`),
			status: responseStatusIncomplete,
			want: map[string]string{
				"incomplete_details":      `{"reason":"content_filter"}`,
				"output.#":                `1`,
				"output.0.content.0.text": `""`,
				"output.0.status":         `"incomplete"`,
			},
		},
		{
			name:   "no finish_reason: completed",
			chat:   bridgeChatAnswer(`"message":{"role":"assistant","content":"ok"},"finish_reason":null`, ""),
			status: responseStatusCompleted,
			want:   map[string]string{"incomplete_details": `null`, "completed_at": `1741570283`},
		},
		{
			name: "no usage, no id, no created: zeros, an id from the body",
			chat: `{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant",` +
				`"content":"hi"},"finish_reason":"stop"}]}`,
			status: responseStatusCompleted,
			want: map[string]string{
				"id": `"resp_` + fmt.Sprintf("%016x", bridgeHash([]byte(`{"object":"chat.completion","model":"m",`+
					`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))) + `"`,
				"usage": `{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,` +
					`"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`,
				"created_at": `0`,
			},
		},
		{
			name:   "no choices: an empty message",
			chat:   `{"id":"chatcmpl-answer","object":"chat.completion","created":1,"model":"m","choices":[]}`,
			status: responseStatusCompleted,
			want:   map[string]string{"output.#": `1`, "output.0.content.0.text": `""`},
		},
		{
			name: "content as parts; service tier reported; usage without total",
			chat: `{"id":"chatcmpl-answer","object":"chat.completion","created":1,"model":"m","service_tier":"flex",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a"},` +
				`{"type":"text","text":"b\n"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			status: responseStatusCompleted,
			want: map[string]string{
				"output.0.content.0.text": `"ab\n"`,
				"output_text":             `"ab\n"`,
				"service_tier":            `"flex"`,
				"usage.total_tokens":      `7`,
			},
		},
		{
			name:   "escaped keys are read as clients read them",
			chat:   `{"id":"chatcmpl-answer","created":1,"model":"m","ch\u006fices":[{"message":{"c\u006fntent":"x"},"finish_reason":"stop"}]}`,
			status: responseStatusCompleted,
			want:   map[string]string{"output.0.content.0.text": `"x"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bridgeAnswer(nil, []byte(tc.chat), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkBridgedResponse(t, decodeBridgedResponse(t, got), tc.status)
			for path, want := range tc.want {
				if v := gjson.GetBytes(got, path).Raw; v != want {
					t.Errorf("%s = %s, want %s\n%s", path, v, want, got)
				}
			}
			// output_text is the output's text, as openai-go's OutputText() and openai-node would make it.
			var text strings.Builder
			for _, item := range gjson.GetBytes(got, "output").Array() {
				for _, part := range item.Get("content").Array() {
					if part.Get("type").Str == "output_text" {
						text.WriteString(part.Get("text").Str)
					}
				}
			}
			if gjson.GetBytes(got, "output_text").Str != text.String() {
				t.Errorf("output_text %s, the output's text %q", gjson.GetBytes(got, "output_text").Raw, text.String())
			}
		})
	}
}

// TestBridgeAnswerEcho: the Response repeats the request, a value written over lines kept on one.
func TestBridgeAnswerEcho(t *testing.T) {
	echo := &responsesEcho{
		model:             []byte(`"my-deployment"`),
		instructions:      []byte(`"Answer in French."`),
		tools:             []byte("[{\"type\":\"function\",\n\"name\":\"f\"}]"),
		toolChoice:        []byte(`{"type":"function","name":"f"}`),
		temperature:       []byte("0.5"),
		topP:              []byte("0.9"),
		maxOutputTokens:   []byte("100"),
		metadata:          []byte(`{"a":"b"}`),
		text:              []byte(`{"format":{"type":"json_schema","name":"r","schema":{},"strict":true}}`),
		serviceTier:       []byte(`"auto"`),
		parallelToolCalls: []byte("null"),
	}
	chat := `{"id":"x","created":5,"model":"","choices":[{"message":{"content":"Bonjour"},"finish_reason":"stop"}]}`
	got, err := bridgeAnswer(nil, []byte(chat), echo, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBridgedResponse(t, decodeBridgedResponse(t, got), responseStatusCompleted)
	for path, want := range map[string]string{
		"model":               `"my-deployment"`, // the upstream named none
		"instructions":        `"Answer in French."`,
		"tools":               `[{"type":"function", "name":"f"}]`,
		"tool_choice":         `{"type":"function","name":"f"}`,
		"temperature":         `0.5`,
		"top_p":               `0.9`,
		"max_output_tokens":   `100`,
		"metadata":            `{"a":"b"}`,
		"text":                `{"format":{"type":"json_schema","name":"r","schema":{},"strict":true}}`,
		"service_tier":        `"auto"`,
		"parallel_tool_calls": `true`,
		"store":               `false`,
	} {
		if v := gjson.GetBytes(got, path).Raw; v != want {
			t.Errorf("%s = %s, want %s", path, v, want)
		}
	}
}

func TestBridgeAnswerRejectsNonObjects(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"id":"x"`, `{"id":"x"} trailing`, `"text"`, `{"id":"x",}`} {
		if out, err := bridgeAnswer(nil, []byte(body), nil, nil); err == nil {
			t.Errorf("%q: no error, got %s", body, out)
		}
	}
}

// TestBridgeIDsAgree: a JSON answer and a stream of the same chat completion name the Response and its
// items alike, and differ from another completion's.
func TestBridgeIDsAgree(t *testing.T) {
	chat := `{"id":"chatcmpl-bridge","created":1741569952,"model":"gpt-4o-2024-08-06","choices":[{"message":` +
		`{"content":"Hi","tool_calls":[{"id":"call_w","type":"function","function":{"name":"w","arguments":"{}"}}]},` +
		`"finish_reason":"tool_calls"}]}`
	answer, err := bridgeAnswer(nil, []byte(chat), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stream := runBridgeStream(t, nil, bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"Hi"}`),
		bridgeChatToolDelta(`[{"index":0,"id":"call_w","type":"function","function":{"name":"w","arguments":"{}"}}]`),
		bridgeChatFinish("tool_calls"), "[DONE]"), 0)
	rp := replayResponsesStream(t, stream)
	terminal := rp.data[len(rp.data)-1]
	for _, path := range []string{"id", "output.0.id", "output.1.id", "output.1.call_id", "created_at", "model"} {
		if a, s := gjson.GetBytes(answer, path).Raw, gjson.Get(terminal, "response."+path).Raw; a != s {
			t.Errorf("%s: answer %s, stream %s", path, a, s)
		}
	}
	other, _ := bridgeAnswer(nil, []byte(strings.Replace(chat, "chatcmpl-bridge", "chatcmpl-other", 1)), nil, nil)
	if gjson.GetBytes(other, "id").Str == gjson.GetBytes(answer, "id").Str {
		t.Error("two chat completions got the same Response id")
	}
}

func BenchmarkBridgeAnswer(b *testing.B) {
	chat := []byte(bridgeChatAnswer(`"message":{"role":"assistant","content":"`+strings.Repeat("Some answer text. ", 40)+
		`","tool_calls":[{"id":"call_w","type":"function","function":{"name":"get_weather",`+
		`"arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"`, ""))
	echo := &responsesEcho{tools: []byte(`[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`)}
	var out []byte
	b.SetBytes(int64(len(chat)))
	b.ReportAllocs()
	for b.Loop() {
		out, _ = bridgeAnswer(out[:0], chat, echo, nil)
	}
}

// FuzzBridgeAnswer: whatever an upstream answers, the Response is valid JSON, or the answer is refused.
func FuzzBridgeAnswer(f *testing.F) {
	f.Add([]byte(bridgeChatAnswer(`"message":{"role":"assistant","reasoning_content":"r","content":"a",`+
		`"refusal":"b","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}},{}]},"finish_reason":"length"`, "")))
	f.Add([]byte(`{"choices":[{"message":{"content":[{"text":"x"},1,{"text":2}]}}],"usage":{"prompt_tokens":"1"}}`))
	f.Fuzz(func(t *testing.T, chat []byte) {
		out, err := bridgeAnswer(nil, chat, nil, nil)
		if err != nil {
			return
		}
		status := gjson.GetBytes(out, "status").Str
		checkBridgedResponse(t, decodeBridgedResponse(t, out), status)
	})
}

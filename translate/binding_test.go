package translate

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var (
	testBindingKey = NewBindingKey("sk-provider-key")
	bindingA       = ResponseBinding{Key: testBindingKey, Consumer: "team-a"}
	bindingB       = ResponseBinding{Key: testBindingKey, Consumer: "team-b"}
)

// TestBoundIDs: an id bound for a consumer is that consumer's only, under that key only, for that id only;
// nothing else passes for a bound id, and the provider's id cannot be read in it (a client that could read
// it could have a provider that names responses after the client's request_id make one under another's id).
func TestBoundIDs(t *testing.T) {
	const id = "resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b"
	bound := bindingA.bind(id)
	if !regexp.MustCompile(`^resp_[0-9a-f]+$`).MatchString(bound) || len(bound) != len("resp_")+2*(16+len(id)) {
		t.Fatalf("bound id %q: want resp_ and the hex of a 16-byte tag and the %d-byte id encrypted", bound, len(id))
	}
	if strings.Contains(bound, id[len("resp_"):len("resp_")+8]) || strings.Contains(bindingA.bind("resp_A1"), "A1") {
		t.Fatalf("the provider's id can be read in the bound id %q", bound)
	}
	if got, ok := bindingA.unbind(bound); !ok || got != id {
		t.Fatalf("unbind(%q) = %q, %v; want %q, true", bound, got, ok, id)
	}
	if bindingA.bind(id) != bound {
		t.Errorf("binding is not deterministic: every replica must give the same id")
	}
	if bindingB.bind(id) == bound || bindingA.bind(id + "x")[:len(bound)] == bound {
		t.Errorf("another consumer, or another id, gets the same bound id")
	}
	longest := strings.Repeat("r", maxBindableID)
	if got, ok := bindingA.unbind(bindingA.bind(longest)); !ok || got != longest {
		t.Errorf("an id of %d bytes does not come back", maxBindableID)
	}
	if got := bindingA.bind(longest + "r"); got != "" {
		t.Errorf("an id over %d bytes is bound to %d bytes, want none (the client gets an empty id)", maxBindableID, len(got))
	}
	otherKey := ResponseBinding{Key: NewBindingKey("sk-rotated-key"), Consumer: "team-a"}
	flip := func(i int) string {
		b := []byte(bound)
		b[i] ^= 1
		return string(b)
	}
	for _, tt := range []struct {
		name    string
		binding ResponseBinding
		id      string
	}{
		{"another consumer's id", bindingB, bound},
		{"the provider's id, unbound", bindingA, id},
		{"the id bound under another key (rotation)", otherKey, bound},
		{"a forged tag", bindingA, "resp_" + strings.Repeat("0", 32) + bound[len("resp_")+32:]},
		{"a bit of the tag changed", bindingA, flip(len("resp_"))},
		{"a bit of the encrypted id changed", bindingA, flip(len(bound) - 1)},
		{"the tag of another id", bindingA, bindingA.bind("resp_other")[:len("resp_")+32] + bound[len("resp_")+32:]},
		{"in upper case", bindingA, "resp_" + strings.ToUpper(bound[len("resp_"):])},
		{"cut short by a digit", bindingA, bound[:len(bound)-1]},
		{"cut short by a byte", bindingA, bound[:len(bound)-2]},
		{"without its prefix", bindingA, bound[len("resp_"):]},
		{"a tag alone", bindingA, bound[:len("resp_")+31]},
		{"too long to be bound", bindingA, "resp_" + strings.Repeat("00", 16+maxBindableID+1)},
		{"not hex", bindingA, "resp_" + strings.Repeat("g", len(bound)-len("resp_"))},
		{"empty", bindingA, ""},
		// Without the name's length in the MAC, "team-a" + "resp_…" and "team-ar" + "esp_…" would be one message.
		{"the name and the id cut elsewhere", ResponseBinding{Key: testBindingKey, Consumer: "team-ar"}, recut(bound, id, 1)},
		// Two providers sharing a binding key (response_binding_key_env): an id goes back only to its own.
		{"the id bound for another provider", ResponseBinding{Key: testBindingKey, Consumer: "team-a", Provider: "azure"}, bound},
	} {
		if got, ok := tt.binding.unbind(tt.id); ok {
			t.Errorf("%s: %q passed for %s as %q", tt.name, tt.id, tt.binding.Consumer, got)
		}
	}
}

// recut is bound (the id bound for bindingA) with its ciphertext made to decrypt to id without its first cut
// bytes, its tag kept: what a consumer whose name ends in those bytes would need to pass.
func recut(bound, id string, cut int) string {
	raw := make([]byte, 0, len(bound))
	for i := len("resp_"); i+1 < len(bound); i += 2 {
		raw = append(raw, hexValue(bound[i])<<4|hexValue(bound[i+1]))
	}
	var tag [bindingTagBytes]byte
	copy(tag[:], raw)
	out := []byte(bound[:len("resp_")+2*bindingTagBytes])
	for i, c := range []byte(id[cut:]) {
		ks := bindingA.keystream(&tag, i/keystreamBlock)
		c ^= ks[i%keystreamBlock]
		out = append(out, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

// renderBound renders a Responses request on path toward an openai provider with the binding.
func renderBound(t *testing.T, path, body string, binding ResponseBinding) (UpstreamBody, *Error) {
	t.Helper()
	req, e := Detect("POST", path, "")
	if e != nil {
		t.Fatal(e)
	}
	var parsed RequestBody
	if e := parsed.Parse([]byte(body)); e != nil {
		return UpstreamBody{}, e
	}
	target := Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4.1", Binding: binding}
	return RenderBody(nil, &req, &parsed, &target)
}

// TestRenderBindsStoredState: with consumers, previous_response_id must be the sender's and reaches the
// provider untagged, on create, input_tokens and compact alike; conversation and items that name stored
// items by id alone are refused; without consumers every body goes as it came.
func TestRenderBindsStoredState(t *testing.T) {
	const id = "resp_abc123"
	mine, theirs := bindingA.bind(id), bindingB.bind(id)
	escaped := strings.Replace(mine, "_", `\u005f`, 1)
	tests := []struct {
		name, body string
		// wantPrevious is the previous_response_id the provider gets; wantCode and wantParam a refusal.
		wantPrevious        string
		wantCode            ErrorCode
		wantParam           string
		sameWithoutBinding  bool // the same body passes unchanged without consumers
		refusedWithoutBinds bool
		escapedKey          bool // the renderer writes an escaped key plainly, consumers or not
	}{
		{name: "own id", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":"` + mine + `"}`, wantPrevious: id},
		{name: "own id written with escapes", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":"` + escaped + `"}`, wantPrevious: id},
		{name: "own id under an escaped key", body: `{"model":"gpt-4.1","input":"hi","previous\u005fresponse_id":"` + mine + `"}`,
			wantPrevious: id, escapedKey: true},
		{name: "another consumer's id", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":"` + theirs + `"}`,
			wantCode: ErrPreviousResponseNotFound, wantParam: "previous_response_id"},
		{name: "the provider's raw id", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":"` + id + `"}`,
			wantCode: ErrPreviousResponseNotFound, wantParam: "previous_response_id"},
		{name: "a forged tag", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":"` + id + "_" + strings.Repeat("a", 32) + `"}`,
			wantCode: ErrPreviousResponseNotFound, wantParam: "previous_response_id"},
		{name: "a number", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":7}`,
			wantCode: ErrInvalidParameter, wantParam: "previous_response_id"},
		{name: "null", body: `{"model":"gpt-4.1","input":"hi","previous_response_id":null}`},
		{name: "in another letter case", body: `{"model":"gpt-4.1","input":"hi","Previous_Response_Id":"` + theirs + `"}`,
			wantCode: ErrInvalidJSON, wantParam: "Previous_Response_Id", refusedWithoutBinds: true},
		{name: "a conversation", body: `{"model":"gpt-4.1","input":"hi","conversation":"conv_1"}`,
			wantCode: ErrUnsupportedParameter, wantParam: "conversation"},
		{name: "a conversation object", body: `{"model":"gpt-4.1","input":"hi","conversation":{"id":"conv_1"}}`,
			wantCode: ErrUnsupportedParameter, wantParam: "conversation"},
		{name: "conversation null", body: `{"model":"gpt-4.1","input":"hi","conversation":null}`},
		{name: "an item_reference", body: `{"model":"gpt-4.1","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[1]"},
		{name: "an item that is only an id", body: `{"model":"gpt-4.1","input":[{"id":"msg_1"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0]"},
		{name: "a reasoning item without encrypted_content", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_1","summary":[]},{"role":"user","content":"go on"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].encrypted_content"},
		{name: "a reasoning item with encrypted_content null", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":null}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].encrypted_content"},
		{name: "a reasoning item carrying its encrypted_content", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"role":"user","content":"go on"}]}`,
			sameWithoutBinding: true},
		{name: "items replayed with their ids and content", body: `{"model":"gpt-4.1","input":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"hi"}]},{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
			sameWithoutBinding: true},
		{name: "the Codex CLI's items replayed with their ids and content", body: `{"model":"gpt-4.1","input":[` +
			`{"type":"custom_tool_call","id":"ctc_1","status":"completed","call_id":"p","name":"apply_patch","input":"*** Begin Patch"},` +
			`{"type":"custom_tool_call_output","id":"ctco_1","call_id":"p","output":"ok"},` +
			`{"type":"tool_search_call","id":"tsc_1","call_id":"s","status":"completed","execution":"client","arguments":{"query":"q"}},` +
			`{"type":"tool_search_output","id":"tso_1","call_id":"s","status":"completed","execution":"client","tools":[]},` +
			`{"type":"additional_tools","id":"at_1","role":"developer","tools":[]}]}`,
			sameWithoutBinding: true},
		{name: "a tool search output without its tools", body: `{"model":"gpt-4.1","input":[{"type":"tool_search_output","id":"tso_1","call_id":"s"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].tools"},
		{name: "a type in another letter case", body: `{"model":"gpt-4.1","input":[{"Type":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrInvalidJSON, wantParam: "input[0].type"},
		{name: "a type twice", body: `{"model":"gpt-4.1","input":[{"type":"message","type":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrInvalidJSON, wantParam: "input[0].type"},
		{name: "an escaped type", body: `{"model":"gpt-4.1","input":[{"typ\u0065":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0]"},
		{name: "a string input", body: `{"model":"gpt-4.1","input":"hi"}`, sameWithoutBinding: true},
		// request_id names the response a provider (vLLM) makes: a consumer could have one made under an id
		// bound for another.
		{name: "a request_id", body: `{"model":"gpt-4.1","input":"hi","store":false,"request_id":"resp_A1"}`,
			wantCode: ErrUnsupportedParameter, wantParam: "request_id"},
		{name: "request_id null", body: `{"model":"gpt-4.1","input":"hi","request_id":null}`, sameWithoutBinding: true},
		{name: "a request_id in another letter case", body: `{"model":"gpt-4.1","input":"hi","Request_Id":"resp_A1"}`,
			wantCode: ErrInvalidJSON, wantParam: "Request_Id", refusedWithoutBinds: true},
		// Items that carry an id without the content that spares the provider its store.
		{name: "a reasoning item with an empty encrypted_content", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_A1","summary":[],"encrypted_content":""},{"role":"user","content":"go on"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].encrypted_content"},
		{name: "a reasoning item with an object for encrypted_content", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_A1","summary":[],"encrypted_content":{}}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].encrypted_content"},
		{name: "a reasoning item with a number for encrypted_content", body: `{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_A1","summary":[],"encrypted_content":0}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].encrypted_content"},
		{name: "a message with an id and no content", body: `{"model":"gpt-4.1","input":[{"type":"message","id":"msg_A1"},{"role":"user","content":"go on"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].content"},
		{name: "a message without its type, with an id and no content", body: `{"model":"gpt-4.1","input":[{"id":"msg_A1","role":"assistant"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].content"},
		{name: "a message with an id and content null", body: `{"model":"gpt-4.1","input":[{"type":"message","id":"msg_A1","role":"assistant","content":null}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].content"},
		{name: "a message with an id and Content in another case", body: `{"model":"gpt-4.1","input":[{"type":"message","id":"msg_A1","role":"assistant","Content":"x"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].content"},
		{name: "a function_call with an id and no arguments", body: `{"model":"gpt-4.1","input":[{"type":"function_call","id":"fc_A1","call_id":"c","name":"f"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].arguments"},
		{name: "a function_call_output with an id and no output", body: `{"model":"gpt-4.1","input":[{"type":"function_call_output","id":"fco_A1","call_id":"c"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].output"},
		{name: "an item of another type with an id", body: `{"model":"gpt-4.1","input":[{"type":"file_search_call","id":"fs_A1"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0].id"},
		{name: "a message without an id", body: `{"model":"gpt-4.1","input":[{"type":"message","role":"user"}]}`, sameWithoutBinding: true},
	}
	for _, path := range []string{"/v1/responses", "/v1/responses/input_tokens", "/v1/responses/compact"} {
		for _, tt := range tests {
			t.Run(path+"/"+tt.name, func(t *testing.T) {
				out, e := renderBound(t, path, tt.body, bindingA)
				if tt.wantCode != "" {
					if e == nil {
						t.Fatalf("not refused: the provider would get %s", out.Body)
					}
					if e.Code != tt.wantCode || e.Param != tt.wantParam || e.Status() != 400 {
						t.Fatalf("refused %d %s at %q (%s), want 400 %s at %q", e.Status(), e.Code, e.Param, e.Message, tt.wantCode, tt.wantParam)
					}
				} else if e != nil {
					t.Fatalf("refused: %s at %q: %s", e.Code, e.Param, e.Message)
				} else {
					got := gjson.GetBytes(out.Body, "previous_response_id")
					if tt.wantPrevious != "" && (got.String() != tt.wantPrevious || strings.Contains(string(out.Body), `previous\u005f`)) {
						t.Errorf("the provider gets previous_response_id %s: %s", got.Raw, out.Body)
					}
					if tt.sameWithoutBinding && string(out.Body) != tt.body {
						t.Errorf("changed:\n%s\nwant\n%s", out.Body, tt.body)
					}
				}
				// Without consumers: nothing is bound or refused, and the body goes as it came.
				plain, e := renderBound(t, path, tt.body, ResponseBinding{})
				if tt.refusedWithoutBinds {
					if e == nil {
						t.Errorf("a case variant of a field the filter reads passed without consumers")
					}
					return
				}
				if e != nil {
					t.Fatalf("refused without consumers: %s at %q: %s", e.Code, e.Param, e.Message)
				}
				if !tt.escapedKey && (plain.Changed || string(plain.Body) != tt.body) {
					t.Errorf("changed without consumers:\n%s", plain.Body)
				}
			})
		}
	}
}

// TestRenderPreviousResponseRefusalSaysWhatToDo: the refusal names the field and the way out.
func TestRenderPreviousResponseRefusalSaysWhatToDo(t *testing.T) {
	_, e := renderBound(t, "/v1/responses", `{"model":"gpt-4.1","input":"hi","previous_response_id":"resp_1"}`, bindingA)
	if e == nil || !strings.Contains(e.Message, "not issued to your key") || !strings.Contains(e.Message, "leave previous_response_id out") {
		t.Fatalf("refusal %v", e)
	}
	body := e.Body(OpenAI)
	if gjson.GetBytes(body, "error.type").String() != "invalid_request_error" || gjson.GetBytes(body, "error.param").String() != "previous_response_id" ||
		gjson.GetBytes(body, "error.code").String() != "previous_response_not_found" {
		t.Errorf("OpenAI envelope %s", body)
	}
}

const nativeResponse = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1",` +
	`"output":[{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"hi \"id\":\"x\""}]}],` +
	`"previous_response_id":"resp_0","usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`

// TestAnswerBindsResponseIDs: a native Response (and a compacted one) reaches a consumer with its id and
// previous_response_id bound and nothing else changed; a bridged answer, another operation, or a gateway
// without consumers is not touched.
func TestAnswerBindsResponseIDs(t *testing.T) {
	want := strings.Replace(strings.Replace(nativeResponse, `"resp_1"`, `"`+bindingA.bind("resp_1")+`"`, 1),
		`"resp_0"`, `"`+bindingA.bind("resp_0")+`"`, 1)
	for _, op := range []Operation{OpResponses, OpResponsesCompact} {
		x := Exchange{Client: OpenAI, Provider: OpenAI, Op: op, Binding: bindingA}
		out, _, usage, err := Answer(nil, &x, []byte(nativeResponse))
		if err != nil || string(out) != want {
			t.Fatalf("%s: %v\n%s\nwant\n%s", op, err, out, want)
		}
		if usage.PromptTokens != 5 || usage.CompletionTokens != 2 {
			t.Errorf("%s: usage %+v", op, usage)
		}
	}
	escaped := strings.Replace(nativeResponse, `"resp_1"`, `"resp\u005f1"`, 1)
	x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}
	out, _, _, _ := Answer(nil, &x, []byte(escaped))
	if id := gjson.GetBytes(out, "id").String(); id != bindingA.bind("resp_1") {
		t.Errorf("an escaped id became %q, want %q", id, bindingA.bind("resp_1"))
	}
	for _, x := range []Exchange{
		{Client: OpenAI, Provider: OpenAI, Op: OpResponses},
		{Client: OpenAI, Provider: OpenAI, Op: OpResponsesInputTokens, Binding: bindingA},
		{Client: AzureOpenAI, Provider: AzureOpenAI, Op: OpChatCompletions, Binding: bindingA},
	} {
		body := []byte(nativeResponse)
		out, _, _, err := Answer(nil, &x, body)
		if err != nil || &out[0] != &body[0] {
			t.Errorf("%s with consumer %q: the answer was rewritten: %s", x.Op, x.Binding.Consumer, out)
		}
	}
}

// nativeStream is a native Responses stream: every lifecycle event carries the response object.
var nativeStream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"previous_response_id\":\"resp_0\"}}\n\n" +
	"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n" +
	"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\"}}\n\n" +
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"delta\":\"event: response.completed\\n\"}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}],\"previous_response_id\":\"resp_0\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7}}}\n\n"

// boundNativeStream is nativeStream as the consumer of binding gets it: the ids of each response object bound.
func boundNativeStream(binding ResponseBinding, stream string) string {
	stream = strings.ReplaceAll(stream, `"resp_1"`, `"`+binding.bind("resp_1")+`"`)
	return strings.ReplaceAll(stream, `"resp_0"`, `"`+binding.bind("resp_0")+`"`)
}

// streamThrough feeds the stream to a translator in chunks of size bytes (all at once when size is 0).
func streamThrough(x Exchange, stream string, size int) string {
	s := NewStream(x, 0)
	var out bytes.Buffer
	for rest := []byte(stream); len(rest) > 0; {
		n := len(rest)
		if size > 0 {
			n = min(size, n)
		}
		chunk, err := s.Write(bytes.Clone(rest[:n]))
		if err != nil {
			return "error: " + err.Error()
		}
		out.Write(chunk)
		rest = rest[n:]
	}
	out.Write(s.Close())
	return out.String()
}

// TestStreamBindsLifecycleEvents: each event that carries the response object reaches the consumer with its
// ids bound, and every other byte as it came, however the stream is cut into chunks, on the fast path (LF)
// and the framer's (CRLF, or a stream ending without its blank line); without consumers nothing changes.
func TestStreamBindsLifecycleEvents(t *testing.T) {
	crlf := strings.ReplaceAll(nativeStream, "\n", "\r\n")
	unended := strings.TrimSuffix(nativeStream, "\n\n")
	for _, tt := range []struct{ name, stream, want string }{
		{"LF", nativeStream, boundNativeStream(bindingA, nativeStream)},
		{"CRLF", crlf, boundNativeStream(bindingA, crlf)},
		{"the last event without its blank line", unended, boundNativeStream(bindingA, nativeStream)},
	} {
		x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}
		for size := 0; size <= len(tt.stream); size++ {
			if got := streamThrough(x, tt.stream, size); got != tt.want {
				t.Fatalf("%s in chunks of %d:\n%s\nwant\n%s", tt.name, size, got, tt.want)
			}
		}
		plain := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses}
		want := tt.stream
		if tt.name == "the last event without its blank line" {
			want = nativeStream
		}
		if got := streamThrough(plain, tt.stream, 7); got != want {
			t.Errorf("%s without consumers changed:\n%s", tt.name, got)
		}
	}
	if got := strings.Count(boundNativeStream(bindingA, nativeStream), bindingA.bind("resp_1")); got != 3 {
		t.Fatalf("the expected stream binds %d ids, want 3 (created, in_progress, completed)", got)
	}
}

// TestStreamBindsLifecycleShapes: an event that carries the response object is bound whatever its shape: a
// data-only event, one whose event: line is not first, a response key written with escapes, the name
// response.done; in LF (fast path) and CRLF (the framer's), however the stream is cut.
func TestStreamBindsLifecycleShapes(t *testing.T) {
	const created = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}`
	const delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"delta\":\"hi\"}\n\n"
	const completed = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n"
	bound := `"` + bindingA.bind("resp_1") + `"`
	for _, tt := range []struct{ name, event string }{
		{"data only", "data: " + created + "\n\n"},
		{"data only, the type first", "data: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"resp_1\"}}\n\n"},
		{"an id: line first", "id: 1\nevent: response.created\ndata: " + created + "\n\n"},
		{"data before the event: line", "data: " + created + "\nevent: response.created\n\n"},
		{"the response key escaped", "event: response.created\ndata: {\"type\":\"response.created\",\"respons\\u0065\":{\"id\":\"resp_1\"}}\n\n"},
		{"response.done", "event: response.done\ndata: {\"type\":\"response.done\",\"response\":{\"id\":\"resp_1\"}}\n\n"},
	} {
		for _, crlf := range []bool{false, true} {
			stream := tt.event + delta + completed
			if crlf {
				stream = strings.ReplaceAll(stream, "\n", "\r\n")
			}
			x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}
			plain := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses}
			for size := 0; size <= len(stream); size++ {
				want := strings.ReplaceAll(streamThrough(plain, stream, size), `"resp_1"`, bound)
				if got := streamThrough(x, stream, size); got != want {
					t.Fatalf("%s (CRLF %v) in chunks of %d:\n%q\nwant\n%q", tt.name, crlf, size, got, want)
				}
			}
		}
	}
}

// TestStreamBindingKeepsUsage: the terminal event's usage is still counted from a bound stream.
func TestStreamBindingKeepsUsage(t *testing.T) {
	s := NewStream(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}, 0)
	s.Write([]byte(nativeStream))
	s.Close()
	if u := s.Usage(); u.PromptTokens != 5 || u.CompletionTokens != 2 || s.Truncated() {
		t.Errorf("usage %+v, truncated %v", u, s.Truncated())
	}
}

// responsesStreamChunks is a native Responses stream of n text deltas, its lifecycle events carrying the
// response, cut into network-sized chunks.
func responsesStreamChunks(n int) [][]byte {
	var b strings.Builder
	b.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4.1\",\"output\":[],\"previous_response_id\":null}}\n\n")
	b.WriteString("event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4.1\",\"output\":[],\"previous_response_id\":null}}\n\n")
	text := strings.Repeat("word ", n)
	for i := range n {
		b.WriteString("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":")
		b.WriteString(strings.Repeat("1", 1+i%3))
		b.WriteString(",\"item_id\":\"msg_68af4031\",\"output_index\":0,\"content_index\":0,\"delta\":\"word \",\"logprobs\":[]}\n\n")
	}
	b.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-4.1\",\"output\":[{\"id\":\"msg_68af4031\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + text + "\"}]}],\"previous_response_id\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7}}}\n\n")
	var chunks [][]byte
	for rest := []byte(b.String()); len(rest) > 0; {
		k := min(len(rest), 1400)
		chunks = append(chunks, rest[:k])
		rest = rest[k:]
	}
	return chunks
}

// BenchmarkNativeResponsesStream: a native Responses stream of 200 deltas, one tenant (every event on the
// zero-copy path) and with consumers (the three lifecycle events rewritten with bound ids).
func BenchmarkNativeResponsesStream(b *testing.B) {
	chunks := responsesStreamChunks(200)
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	for _, bench := range []struct {
		name    string
		binding ResponseBinding
	}{{"one tenant", ResponseBinding{}}, {"consumers", bindingA}} {
		b.Run(bench.name, func(b *testing.B) {
			x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bench.binding}
			s := NewStream(x, 0)
			b.SetBytes(int64(total))
			b.ReportAllocs()
			for b.Loop() {
				s.Reset(x, 0)
				for _, c := range chunks {
					out, err := s.Write(c)
					if err != nil {
						b.Fatal(err)
					}
					sinkBytes = out
				}
				sinkBytes = s.Close()
			}
		})
	}
}

// TestBindingAllocatesNothing: once its buffers have grown, a bound stream allocates no more than the same
// stream for one tenant (whose end-of-stream check allocates once), nor a bound JSON answer beyond its output.
func TestBindingAllocatesNothing(t *testing.T) {
	chunks := responsesStreamChunks(50)
	allocs := func(binding ResponseBinding) float64 {
		x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: binding}
		s := NewStream(x, 0)
		run := func() {
			s.Reset(x, 0)
			for _, c := range chunks {
				if _, err := s.Write(c); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
		}
		run()
		return testing.AllocsPerRun(20, run)
	}
	if bound, plain := allocs(bindingA), allocs(ResponseBinding{}); bound != plain {
		t.Errorf("%v allocations per bound stream, %v per stream of one tenant", bound, plain)
	}
	body, dst := []byte(nativeResponse), make([]byte, 0, 4096)
	answerAllocs := func(binding ResponseBinding) float64 {
		x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: binding}
		return testing.AllocsPerRun(20, func() { Answer(dst, &x, body) })
	}
	if bound, plain := answerAllocs(bindingA), answerAllocs(ResponseBinding{}); bound != plain {
		t.Errorf("%v allocations per bound answer, %v per answer to one tenant", bound, plain)
	}
}

var boundLiteral = regexp.MustCompile(`"resp_[0-9a-f]{32,}"`)

// unbindAll is s with every id bound for binding replaced by the provider's id, quoted as it is (as an id
// written without escapes came).
func unbindAll(s string, binding ResponseBinding) string {
	return boundLiteral.ReplaceAllStringFunc(s, func(lit string) string {
		if id, ok := binding.unbind(lit[1 : len(lit)-1]); ok {
			return `"` + id + `"`
		}
		return lit
	})
}

// FuzzBoundStream: whatever an upstream sends on a bound native Responses stream, the translator neither
// panics nor changes anything but the ids of lifecycle events, however the stream is cut.
func FuzzBoundStream(f *testing.F) {
	f.Add([]byte(nativeStream), 7)
	f.Add([]byte(strings.ReplaceAll(nativeStream, "\n", "\r\n")), 3)
	f.Add([]byte("event: response.created\ndata: {\"response\":{\"id\":\"x\",\"id\":\"y\"}}\n\nevent: response.completed\ndata: {\"response\":\n\n"), 1)
	f.Add([]byte("event: response.failed\ndata: {\"response\":{\"id\":\"\\u0078\"\n\n"), 2)
	f.Fuzz(func(t *testing.T, stream []byte, size int) {
		if size <= 0 || size > len(stream) {
			size = len(stream)
		}
		x := Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}
		out := streamThrough(x, string(stream), size)
		plain := streamThrough(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses}, string(stream), size)
		// Binding only replaces ids: with every bound id replaced by the provider's, the streams are the same
		// (but for an id the upstream wrote with escapes, which is bound as it decodes).
		if unbindAll(out, bindingA) != plain && !bytes.Contains(stream, []byte{'\\'}) {
			t.Fatalf("the bound stream differs in more than ids:\n%q\n%q", out, plain)
		}
	})
}

// FuzzBoundRender: whatever body a consumer sends, binding's checks neither panic nor let a stored-state
// reference through unbound: a previous_response_id the provider gets was this consumer's.
func FuzzBoundRender(f *testing.F) {
	f.Add(`{"model":"m","input":[{"type":"item_reference","id":"x"},{"id":"y"}],"previous_response_id":"` + bindingA.bind("resp_1") + `"}`)
	f.Add(`{"model":"m","input":[{"type":"reasoning","id":"rs","encrypted_content":null},{"ID":1}],"conversation":null}`)
	f.Add(`{"model":"m","input":[ {"typ\u0065" : "message" , "role":"user","content":"x"} ,7,[],"s"]}`)
	f.Fuzz(func(t *testing.T, body string) {
		out, e := renderBound(t, "/v1/responses", body, bindingA)
		if e != nil {
			return
		}
		if prev := gjson.GetBytes(out.Body, "previous_response_id"); prev.Type == gjson.String {
			var parsed RequestBody
			if parsed.Parse([]byte(body)) == nil {
				sent := gjson.Get(body, "previous_response_id").String()
				if id, ok := bindingA.unbind(sent); !ok || id != prev.String() {
					t.Fatalf("the provider gets previous_response_id %q from %q", prev.String(), sent)
				}
			}
		}
	})
}

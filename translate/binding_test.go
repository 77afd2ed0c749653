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

// TestBindingTags: an id bound for a consumer is that consumer's only, under that key only, for that id only;
// nothing else passes for a bound id.
func TestBindingTags(t *testing.T) {
	const id = "resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b"
	bound := bindingA.bind(id)
	if !regexp.MustCompile(`^resp_[0-9a-f]+_[0-9a-f]{32}$`).MatchString(bound) || !strings.HasPrefix(bound, id+"_") {
		t.Fatalf("bound id %q: want the provider's id, '_' and 32 hex digits", bound)
	}
	if got, ok := bindingA.unbind(bound); !ok || got != id {
		t.Fatalf("unbind(%q) = %q, %v; want %q, true", bound, got, ok, id)
	}
	if bindingA.bind(id) != bound {
		t.Errorf("binding is not deterministic: every replica must give the same id")
	}
	otherKey := ResponseBinding{Key: NewBindingKey("sk-rotated-key"), Consumer: "team-a"}
	flipped := []byte(bound)
	flipped[len(flipped)-1] ^= 1
	for _, tt := range []struct {
		name    string
		binding ResponseBinding
		id      string
	}{
		{"another consumer's id", bindingB, bound},
		{"the provider's id, untagged", bindingA, id},
		{"the id bound under another key (rotation)", otherKey, bound},
		{"a forged tag", bindingA, id + "_" + strings.Repeat("0", 32)},
		{"a tag with one bit changed", bindingA, string(flipped)},
		{"the tag of another id", bindingA, "resp_other" + bound[len(id):]},
		{"the tag in upper case", bindingA, id + strings.ToUpper(bound[len(id):])},
		{"a tag cut short", bindingA, bound[:len(bound)-1]},
		{"a tag alone", bindingA, bound[len(id):]},
		{"a tag without its separator", bindingA, id + bound[len(id)+1:]},
		{"empty", bindingA, ""},
		// Without the name's length in the MAC, "team-a" + "resp_…" and "team-ar" + "esp_…" would be one message.
		{"the name and the id cut elsewhere", ResponseBinding{Key: testBindingKey, Consumer: "team-ar"}, bound[len("r"):]},
	} {
		if _, ok := tt.binding.unbind(tt.id); ok {
			t.Errorf("%s: %q passed for %s", tt.name, tt.id, tt.binding.Consumer)
		}
	}
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
		{name: "a type in another letter case", body: `{"model":"gpt-4.1","input":[{"Type":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrInvalidJSON, wantParam: "input[0].type"},
		{name: "a type twice", body: `{"model":"gpt-4.1","input":[{"type":"message","type":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrInvalidJSON, wantParam: "input[0].type"},
		{name: "an escaped type", body: `{"model":"gpt-4.1","input":[{"typ\u0065":"item_reference","id":"msg_1"}]}`,
			wantCode: ErrUnsupportedParameter, wantParam: "input[0]"},
		{name: "a string input", body: `{"model":"gpt-4.1","input":"hi"}`, sameWithoutBinding: true},
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

var tagSuffix = regexp.MustCompile(`_[0-9a-f]{32}"`)

func stripTags(s string) string {
	for {
		t := tagSuffix.ReplaceAllString(s, `"`)
		if t == s {
			return s
		}
		s = t
	}
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
		// Binding only adds tags at the end of strings: with every such suffix taken out of both, the streams
		// are the same.
		if stripTags(out) != stripTags(plain) {
			t.Fatalf("the bound stream differs in more than tags:\n%q\n%q", out, plain)
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

package translate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A stream cut inside an event must not hand the client the fragment: SDKs parse every data event as JSON
// and would fail there instead of reporting the error event. Both paths are covered: the zero-edit fast path
// (same dialect) and the framer (edits needed), whole and cut into small chunks.
func TestStreamFragmentAtCloseIsDropped(t *testing.T) {
	chunk := `{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"he"},"finish_reason":null}]}`
	stop := `{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	exchanges := map[string]Exchange{
		"fast path": {Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions},
		"framer":    {Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions},
	}
	tests := []struct {
		name   string
		stream string
		cut    bool // an error event precedes [DONE]
		kept   int  // data events before it (and the error event)
	}{
		{"fragment after an unfinished chunk", sseStream(chunk) + `data: {"id":"a","cho`, true, 1},
		{"fragment that names a finish_reason", sseStream(chunk) + `data: {"choices":[{"finish_reason":"stop"`, true, 1},
		{"fragment after the finish", sseStream(chunk, stop) + `data: {"id":"a","usage":{"prompt`, false, 2},
		{"cut inside [DONE]", sseStream(chunk, stop) + `data: [DO`, false, 2},
		{"bare data: prefix", sseStream(chunk) + `data: `, true, 1},
		{"complete last event without its blank line", sseStream(chunk) + "data: " + stop, false, 2},
		{"complete last event with one newline", sseStream(chunk) + "data: " + stop + "\n", false, 2},
	}
	for name, x := range exchanges {
		for _, tt := range tests {
			for _, size := range []int{len(tt.stream), 1, 3, 16} {
				s := NewStream(x, 0)
				var out []byte
				for _, piece := range chunks(tt.stream, size) {
					b, err := s.Write([]byte(piece))
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, b...)
				}
				out = append(out, s.Close()...)
				data := dataEvents(t, out)
				want := tt.kept + 1
				if tt.cut {
					want++
				}
				if len(data) != want || data[len(data)-1] != "[DONE]" || s.Truncated() != tt.cut {
					t.Fatalf("%s, %s, %d-byte chunks: truncated=%v %q", name, tt.name, size, s.Truncated(), data)
				}
				for _, d := range data[:len(data)-1] {
					if !gjson.Valid(d) {
						t.Errorf("%s, %s, %d-byte chunks: the client got a fragment %q", name, tt.name, size, d)
					}
				}
				if tt.cut && gjson.Get(data[len(data)-2], "error.code").String() != string(ErrUpstreamStream) {
					t.Errorf("%s, %s: no error event: %q", name, tt.name, data)
				}
			}
		}
	}
}

func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func dataEvents(t *testing.T, stream []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(stream, doneEvent) {
		t.Fatalf("the stream does not end with [DONE]: %q", stream)
	}
	var data []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(stream), "\n\n"), "\n\n") {
		if d, ok := strings.CutPrefix(ev, "data: "); ok {
			data = append(data, strings.TrimRight(d, "\n"))
		}
	}
	return data
}

// TestUpstreamMemberTablesAreCapped: an upstream answer or stream event with more top-level keys than any
// real one is not split into an unbounded member table; the answer is reported unreadable (the caller
// forwards it as it came) and the event is forwarded untouched.
func TestUpstreamMemberTablesAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"object":"chat.completion"`)
	for i := 0; i <= maxTopLevelMembers; i++ {
		fmt.Fprintf(&b, `,"k%d":1`, i)
	}
	b.WriteString(`}`)
	wide := b.String()
	x := Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}
	if _, _, _, err := Answer(nil, &x, []byte(wide)); err == nil {
		t.Error("an answer with more than maxTopLevelMembers keys was translated")
	}
	s := NewStream(x, 0)
	event := "data: " + wide + "\n\n"
	out, err := s.Write([]byte(event))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != event {
		t.Errorf("the over-wide event was not forwarded untouched: %.80q", out)
	}
	if cap(s.members) > maxTopLevelMembers {
		t.Errorf("the member table grew to %d", cap(s.members))
	}
}

// TestKeysFoldingToReadFields: a key that differs only in letter case (or by Unicode folding) from a field the
// filter reads is refused: a case-insensitive upstream parser would read it as that field, past the routing
// and the allow-list. Other keys differing in case are the provider's business.
func TestKeysFoldingToReadFields(t *testing.T) {
	for _, tt := range []struct {
		body   string
		refuse string // the field it folds to; "" accepted
	}{
		{`{"model":"gpt-4o-mini","Model":"o1-pro"}`, "model"},
		{`{"model":"gpt-4o-mini","MODEL":"o1-pro"}`, "model"},
		{`{"model":"m","\u004dodel":"o1-pro"}`, "model"},
		{`{"model":"m","ſtream":true}`, "stream"},
		{`{"model":"m","Stream_Options":{"include_usage":false}}`, "stream_options"},
		{`{"model":"m","Chain_ID":"1"}`, "chain_id"},
		{`{"model":"m","\u0043\u0048\u0041\u0049\u004e\u005f\u0049\u0044":"999"}`, "chain_id"},
		{`{"model":"m","\u004d\u0061\u0078\u005f\u0043\u006f\u006d\u0070\u006c\u0065\u0074\u0069\u006f\u006e\u005f\u0054\u006f\u006b\u0065\u006e\u0073":1}`, "max_completion_tokens"},
		{`{"model":"m","Temperature":1,"temperature":1}`, ""},
		{`{"model":"m","stream_options":{"Include_Usage":false}}`, "include_usage"},
		{`{"model":"m","Models":"x"}`, ""},
		{`{"model":"m","naïve":1}`, ""},
	} {
		var b RequestBody
		err := b.Parse([]byte(tt.body))
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.body, err)
		case tt.refuse != "" && err == nil:
			t.Errorf("%s: accepted", tt.body)
		case tt.refuse != "" && !strings.Contains(err.Message, `reads as "`+tt.refuse+`"`) && !strings.Contains(err.Message, "another letter case"):
			t.Errorf("%s: %v", tt.body, err)
		}
	}
}

// TestForcedUsageReplacesEscapedKey: usage "force" replaces include_usage however the client spelled the key,
// so the provider never gets two copies to choose from.
func TestForcedUsageReplacesEscapedKey(t *testing.T) {
	for _, options := range []string{`{"include_usage":false}`, `{"include\u005fusage":false}`, `{"include\u005fusage":false,"x":1}`} {
		got := string(withIncludeUsage([]byte(options)))
		if strings.Count(got, "include") != 1 || !strings.Contains(got, `"include_usage":true`) {
			t.Errorf("%s -> %s", options, got)
		}
	}
}

package translate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/sse"
	"github.com/tidwall/gjson"
)

// streamEvents runs a stream through a translator in one chunk and returns the data payloads it emitted.
func streamEvents(t *testing.T, x Exchange, stream string) []string {
	t.Helper()
	s := NewStream(x, 0)
	out, err := s.Write([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]byte(nil), out...), s.Close()...)
	var f sse.Framer
	if err := f.Feed(all); err != nil {
		t.Fatal(err)
	}
	var data []string
	for {
		ev, ok := f.Next()
		if !ok {
			break
		}
		if ev.HasData {
			data = append(data, string(ev.Data))
		}
	}
	if ev, ok := f.Flush(); ok && ev.HasData {
		data = append(data, string(ev.Data))
	}
	return data
}

func sseStream(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

func TestStreamTranslation(t *testing.T) {
	chatOpenAI := Exchange{Client: OpenAI, Op: OpChatCompletions}
	withProvider := func(x Exchange, p Dialect) Exchange { x.Provider = p; return x }
	tests := []struct {
		name   string
		x      Exchange
		stream string
		check  func(t *testing.T, data []string)
	}{
		{"azure annotation chunks dropped for openai clients", withProvider(chatOpenAI, AzureOpenAI), sseStream(
			`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0}]}`,
			`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}`,
			`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"choices":[{"content_filter_offsets":{},"index":0}],"created":0,"id":"","model":"","object":""}`,
			`[DONE]`), func(t *testing.T, data []string) {
			if len(data) != 3 || data[2] != "[DONE]" || !strings.Contains(data[0], `"Hi"`) {
				t.Fatalf("%q", data)
			}
		}},
		{"azure annotation chunks kept for azure openai clients", Exchange{Client: AzureOpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}, sseStream(
			`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}`,
			`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, `[DONE]`), func(t *testing.T, data []string) {
			if len(data) != 3 {
				t.Fatalf("%q", data)
			}
		}},
		{"azure-ai object normalised", withProvider(chatOpenAI, AzureAI), sseStream(
			`{"id":"a","object":"chat.completion","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`, `[DONE]`),
			func(t *testing.T, data []string) {
				if gjson.Get(data[0], "object").String() != "chat.completion.chunk" {
					t.Fatalf("%q", data)
				}
			}},
		{"azure-ai tool calls get an index", func() Exchange {
			x := withProvider(chatOpenAI, AzureAI)
			x.Tools = true
			return x
		}(), sseStream(
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}`,
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_2","function":{"name":"g","arguments":"{}"}}]}}]}`,
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			`[DONE]`), func(t *testing.T, data []string) {
			for i, want := range []string{"0", "0", "1"} {
				if got := gjson.Get(data[i], "choices.0.delta.tool_calls.0.index").Raw; got != want {
					t.Errorf("event %d index %q, want %s: %s", i, got, want, data[i])
				}
			}
		}},
		{"azure-ai tool call ids read as the client reads them", func() Exchange {
			x := withProvider(chatOpenAI, AzureAI)
			x.Tools = true
			return x
		}(), sseStream(
			// Two ids to encoding/json ("c\uFFFDA", "c\uFFFDB"); gjson read both as "c\uFFFD", one call.
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c\ud800\u0041","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c\ud800\u0042","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
			`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c\ud800A","function":{"arguments":""}}]}}]}`,
			`[DONE]`), func(t *testing.T, data []string) {
			for i, want := range []string{"0", "1", "0"} {
				if got := gjson.Get(data[i], "choices.0.delta.tool_calls.0.index").Raw; got != want {
					t.Errorf("event %d index %q, want %s: %s", i, got, want, data[i])
				}
			}
		}},
		{"azure-ai usage split into OpenAI's usage chunk when asked", func() Exchange {
			x := withProvider(chatOpenAI, AzureAI)
			x.IncludeUsage = true
			return x
		}(), sseStream(`{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, `[DONE]`),
			func(t *testing.T, data []string) {
				if len(data) != 3 || gjson.Get(data[0], "usage").Type != gjson.Null ||
					gjson.Get(data[1], "choices.#").Int() != 0 || gjson.Get(data[1], "usage.total_tokens").Int() != 5 ||
					gjson.Get(data[1], "id").String() != "a" {
					t.Fatalf("%q", data)
				}
			}},
		{"eternalai onchain_data stripped", withProvider(chatOpenAI, EternalAI), sseStream(
			`{"id":"e","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"onchain_data":{"infer_id":1}}`, `[DONE]`),
			func(t *testing.T, data []string) {
				if strings.Contains(data[0], "onchain") {
					t.Fatalf("%q", data)
				}
			}},
		{"duplicate [DONE] and events after it dropped", Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions},
			sseStream(`{"choices":[{"finish_reason":"stop"}]}`, `[DONE]`, `{"late":true}`, `[DONE]`), func(t *testing.T, data []string) {
				if len(data) != 2 || data[1] != "[DONE]" {
					t.Fatalf("%q", data)
				}
			}},
		{"finished stream without [DONE] gets one", Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions},
			sseStream(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`), func(t *testing.T, data []string) {
				if len(data) != 2 || data[1] != "[DONE]" {
					t.Fatalf("%q", data)
				}
			}},
		{"stream cut mid-answer ends with an error event", Exchange{Client: AzureAI, Provider: OpenAI, Op: OpChatCompletions},
			sseStream(`{"choices":[{"delta":{"content":"Hel"},"finish_reason":null}]}`) + `data: {"choices":[{"del`, func(t *testing.T, data []string) {
				// The fragment is not sent: SDKs would fail parsing it before reaching the error event.
				if len(data) != 3 || gjson.Get(data[1], "error.code").String() != string(ErrUpstreamStream) ||
					gjson.Get(data[1], "error.status").Int() != 502 || data[2] != "[DONE]" {
					t.Fatalf("%q", data)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, streamEvents(t, tt.x, tt.stream)) })
	}
}

func TestStreamEventTooLarge(t *testing.T) {
	s := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 1024)
	_, err := s.Write([]byte("data: {\"x\":\"" + strings.Repeat("a", 4096)))
	if !errors.Is(err, sse.ErrEventTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamZeroEditReturnsInput(t *testing.T) {
	s := NewStream(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
	chunk := []byte(sseStream(`{"a":1}`, `{"b":2}`) + "data: {\"c\"")
	out, err := s.Write(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if &out[0] != &chunk[0] || !bytes.Equal(out, chunk[:len(chunk)-len("data: {\"c\"")]) {
		t.Fatalf("zero-edit path copied or changed the chunk: %q", out)
	}
}

// TestZeroEditBoundaryAcrossChunks: found by FuzzStreamChunking. A blank line split between two chunks ("\n" |
// "\ndata:[DONE]") must still let the [DONE] be seen, so the client gets exactly the upstream's stream.
func TestZeroEditBoundaryAcrossChunks(t *testing.T) {
	s := NewStream(Exchange{Client: AzureOpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}, 0)
	var out []byte
	for _, chunk := range []string{"data: {\"choices\":[{\"finish_reason\":\"stop\"}]", "}\n", "\ndata:[DONE]\n\n"} {
		b, err := s.Write([]byte(chunk))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	out = append(out, s.Close()...)
	if want := "data: {\"choices\":[{\"finish_reason\":\"stop\"}]}\n\ndata:[DONE]\n\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

// TestEditedEventSplice: an edited event is the upstream's event with its changes spliced in, exactly: a member
// left out takes one comma with it wherever it stands, the rest keeps its bytes (whitespace too), and data
// that came on several data lines goes out on as many.
func TestEditedEventSplice(t *testing.T) {
	fromEternal := Exchange{Client: OpenAI, Provider: EternalAI, Op: OpChatCompletions}
	fromAzureAI := Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}
	fromAzure := Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}
	tests := []struct {
		name     string
		x        Exchange
		in, want string
	}{
		{"dropped first", fromEternal,
			`data: {"onchain_data":{"a":1},"id":"e","choices":[]}` + "\n\n",
			`data: {"id":"e","choices":[]}` + "\n\n"},
		{"dropped in the middle", fromEternal,
			`data: {"id":"e", "onchain_data" : {"a":[1,2]} , "choices":[]}` + "\n\n",
			`data: {"id":"e" , "choices":[]}` + "\n\n"},
		{"dropped last", fromEternal,
			`data: {"id":"e","choices":[],"onchain_data":null}` + "\n\n",
			`data: {"id":"e","choices":[]}` + "\n\n"},
		{"dropped alone", fromEternal,
			`data: { "onchain_data":1 }` + "\n\n",
			`data: {  }` + "\n\n"},
		{"two dropped around a kept one", fromAzure,
			`data: {"prompt_annotations":[],"id":"c","prompt_filter_results":[],"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n",
			`data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"},
		{"replaced value keeps its neighbours' spacing", fromAzureAI,
			`data: {"id":"a",  "object" :  "chat.completion" ,"choices":[]}` + "\n\n",
			`data: {"id":"a",  "object" :  "chat.completion.chunk" ,"choices":[]}` + "\n\n"},
		{"data on several lines stays on several lines", fromAzureAI,
			"data: {\"id\":\"a\",\ndata: \"object\":\"chat.completion\",\"choices\":[\ndata: {\"index\":0}]}\n\n",
			"data: {\"id\":\"a\",\ndata: \"object\":\"chat.completion.chunk\",\"choices\":[\ndata: {\"index\":0}]}\n\n"},
		{"two dropped after a kept one", fromAzure,
			`data: {"id":"c","prompt_filter_results":[],"prompt_annotations":[],"choices":[{"index":0}]}` + "\n\n",
			`data: {"id":"c","choices":[{"index":0}]}` + "\n\n"},
		{"dropped twice at the end", fromEternal,
			`data: {"id":"e","onchain_data":1, "onchain_data":2}` + "\n\n",
			`data: {"id":"e"}` + "\n\n"},
		{"dropped, kept, dropped, kept", fromAzure,
			`data: {"prompt_annotations":[],"id":"c","prompt_filter_results":[],"choices":[{"index":0}]}` + "\n\n",
			`data: {"id":"c","choices":[{"index":0}]}` + "\n\n"},
		{"a plain event, then one on several lines: the first keeps its bytes", fromAzureAI,
			`data: {"id":"a","object":"chat.completion.chunk","choices":[]}` + "\n\n" +
				"data: {\"id\":\"a\",\ndata: \"object\":\"chat.completion\"}\n\n",
			`data: {"id":"a","object":"chat.completion.chunk","choices":[]}` + "\n\n" +
				"data: {\"id\":\"a\",\ndata: \"object\":\"chat.completion.chunk\"}\n\n"},
		{"the usage chunk of data on several lines", func() Exchange { x := fromAzureAI; x.IncludeUsage = true; return x }(),
			"data: {\"id\":\ndata: \"b\",\"choices\":[{\"finish_reason\":\"stop\"}],\"usage\":{\ndata: \"total_tokens\":3}}\n\n",
			"data: {\"id\":\ndata: \"b\",\"choices\":[{\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
				"data: {\"id\":\ndata: \"b\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\ndata: \"total_tokens\":3}}\n\n"},
		{"several lines, a member dropped across them", fromEternal,
			"data: {\"id\":\"e\",\ndata: \"onchain_data\":\ndata: {\"a\":1},\"choices\":[]}\n\n",
			"data: {\"id\":\"e\",\"choices\":[]}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunkSize := range []int{len(tt.in), 1, 7} {
				s := NewStream(tt.x, 0)
				var got []byte
				for rest := []byte(tt.in); len(rest) > 0; {
					n := min(chunkSize, len(rest))
					out, err := s.Write(rest[:n])
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, out...)
					rest = rest[n:]
				}
				if string(got) != tt.want {
					t.Fatalf("in %d-byte chunks:\n got %q\nwant %q", chunkSize, got, tt.want)
				}
				if !bytes.Contains([]byte(tt.want), []byte("\ndata: ")) {
					continue
				}
				// What a client reads back is the JSON the upstream meant, changes made.
				var f sse.Framer
				_ = f.Feed(got)
				for ev, ok := f.Next(); ok; ev, ok = f.Next() {
					if !gjson.ValidBytes(ev.Data) {
						t.Fatalf("the client reads %q", ev.Data)
					}
				}
			}
		})
	}
}

// TestSplitEventCostIsLinear: many edited events of several data lines in one chunk cost in proportion to
// their number (the lines of each event are split again, not the whole output so far each time).
func TestSplitEventCostIsLinear(t *testing.T) {
	x := Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}
	const event = "data: {\"object\":\"x\",\ndata: \"id\":\"a\"}\n\n"
	for _, n := range []int{100, 2000} {
		out, err := NewStream(x, 0).Write([]byte(strings.Repeat(event, n)))
		if err != nil {
			t.Fatal(err)
		}
		want := "data: {\"object\":\"chat.completion.chunk\",\ndata: \"id\":\"a\"}\n\n"
		if string(out) != strings.Repeat(want, n) {
			t.Fatalf("%d events: %d bytes out, want %d", n, len(out), n*len(want))
		}
	}
}

// TestResetForgetsAnInterruptedChunk: a chunk whose translation never returned (a panic, recovered by the
// filter) leaves nothing behind for the next stream the pooled translator serves.
func TestResetForgetsAnInterruptedChunk(t *testing.T) {
	var s Stream
	s.Reset(Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}, 0)
	s.pending = []byte(`data: {"id":"A-SECRET"}` + "\n\n") // as a Write cut short would leave it
	s.Release()
	s.Reset(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpChatCompletions}, 0)
	var out []byte
	for _, c := range []string{`data: {"id":"B","choices":[]}` + "\n\n" + `data: {"id":"B2"`,
		`,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + "data: [DONE]\n\ndata: [DONE]\n\n"} {
		o, err := s.Write([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
	}
	out = append(out, s.Close()...)
	if bytes.Contains(out, []byte("A-SECRET")) {
		t.Fatalf("the next stream got the interrupted one's bytes: %q", out)
	}
}

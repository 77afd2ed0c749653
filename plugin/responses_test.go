package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestStreamFailureEndsTheStreamOnce: an event over max_event_bytes ends the client's stream with one
// failure, in both modes, whatever follows upstream: here the upstream's trailers, whose callback once ended
// the stream a second time (a second error event after [DONE], or after a Responses stream's failure).
func TestStreamFailureEndsTheStreamOnce(t *testing.T) {
	config := withSetting(testConfig, `"max_event_bytes": 1024`)
	huge := strings.Repeat("x", 2000)
	chatEvents := events(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+huge+`"}}]}`)
	nativeEvents := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"" + huge + "\"}\n\n"
	for _, tt := range []struct {
		name, path, body, upstream, ending string
	}{
		{"chat", "/v1/chat/completions", `{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}],"stream":true}`,
			chatEvents, "data: [DONE]"},
		{"native Responses", "/v1/responses", `{"model":"gpt-4.1","input":"hi","stream":true}`, nativeEvents, "event: error"},
		{"bridged Responses", "/v1/responses", `{"model":"llama-3-70b","input":"hi","stream":true}`, chatEvents, "event: response.failed"},
	} {
		for _, md := range modes {
			t.Run(tt.name+"/"+md.name, func(t *testing.T) {
				ex := exchange{config: config, method: "POST", path: tt.path,
					headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer k"}},
					body:    []string{tt.body}}
				ex = withTrailers(answer(ex, 200, eventHeaders, split([]byte(tt.upstream), 300)...))
				o := run(t, md, ex)
				o.assertRules(t)
				body := string(o.clientBody)
				if n := strings.Count(body, tt.ending); n != 1 {
					t.Fatalf("%q %d times, want once:\n%s", tt.ending, n, body)
				}
				if end := strings.LastIndex(body, tt.ending); strings.Contains(body[end:], "\n\nevent:") ||
					strings.Contains(body[end:], "\n\ndata:") {
					t.Errorf("events after the failure:\n%s", body[end:])
				}
			})
		}
	}
}

// hostileCallIDs are 1,024 tool-call ids of 2 KiB, of one length and alike but for their last bytes: telling
// them apart by comparing each with every earlier one cost seconds in the compiled module.
func hostileCallIDs() []string {
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "call_" + strings.Repeat("x", 2048) + fmt.Sprintf("%04d", i)
	}
	return ids
}

// bridgedRow is one exchange of a Responses client with a chat-only provider (llama, azure-ai), and what the
// client must get.
type bridgedRow struct {
	name   string
	ex     exchange
	status int
	check  func(t *testing.T, o *outcome)
}

// bridgedExchange is a Responses request for llama-3-70b (bridged to chat completions) with body's extra
// members, answered by the upstream with chunks.
func bridgedExchange(config, extra string, stream bool, chunks ...string) exchange {
	head := jsonHeaders
	if stream {
		extra += `,"stream":true`
		head = eventHeaders
	}
	ex := exchange{config: config, method: "POST", path: "/v1/responses",
		headers: [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer k"}},
		body:    []string{`{"model":"llama-3-70b","input":"hi"` + extra + `}`}}
	return answer(ex, 200, head, chunks...)
}

// checkCallIDs asserts that resp (a Response) holds one function_call per id, with that id as its call_id.
func checkCallIDs(t *testing.T, resp gjson.Result, ids []string) {
	t.Helper()
	if resp.Get("object").String() != "response" {
		t.Fatalf("not a Response: %.300s", resp.Raw)
	}
	got := resp.Get(`output.#(type=="function_call")#.call_id`).Array()
	if len(got) != len(ids) {
		t.Fatalf("%d function calls, want %d", len(got), len(ids))
	}
	for i, id := range got {
		if id.String() != ids[i] {
			t.Fatalf("call %d has call_id %.40q..., want the upstream's %.40q...", i, id.String(), ids[i])
		}
	}
}

// responsesEventData splits a Responses stream into its events' data, failing the test when an event is not
// JSON.
func responsesEventData(t *testing.T, body []byte) []gjson.Result {
	t.Helper()
	var data []gjson.Result
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		_, d, ok := strings.Cut(ev, "\ndata: ")
		if !ok || !gjson.Valid(d) {
			t.Fatalf("not a Responses event: %.300q", ev)
		}
		data = append(data, gjson.Parse(d))
	}
	return data
}

// terminalResponse is the Response of a Responses stream's terminal event, failing the test unless it is
// response.completed.
func terminalResponse(t *testing.T, body []byte) gjson.Result {
	t.Helper()
	data := responsesEventData(t, body)
	last := data[len(data)-1]
	if typ := last.Get("type").String(); typ != "response.completed" {
		t.Fatalf("the stream ends with %q, want response.completed: %.300s", typ, last.Raw)
	}
	return last.Get("response")
}

// TestBridgedResponsesStayBounded: a Responses client of a chat-only provider gets a well-formed Response, in
// the compiled module as natively, whatever the upstream's answer holds, and what the Response repeats of the
// request is bounded (issue 21).
func TestBridgedResponsesStayBounded(t *testing.T) {
	ids := hostileCallIDs()
	var calls, fragments []string
	for i, id := range ids {
		calls = append(calls, `{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
		fragments = append(fragments, `{"index":`+strconv.Itoa(i)+`,"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}`)
	}
	callsAnswer := `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",` +
		`"message":{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}}]}`
	callsStream := events(`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[`+
		strings.Join(fragments, ",")+`]},"finish_reason":null}]}`,
		`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		"[DONE]")
	bigEvents := withSetting(testConfig, `"max_event_bytes": 4194304`)
	rows := []bridgedRow{
		{name: "JSON answer with 1,024 calls whose long ids differ at the end",
			ex: bridgedExchange(testConfig, "", false, split([]byte(callsAnswer), 64<<10)...), status: 200,
			check: func(t *testing.T, o *outcome) {
				if !gjson.ValidBytes(o.clientBody) {
					t.Fatalf("not JSON: %.300s", o.clientBody)
				}
				checkCallIDs(t, gjson.ParseBytes(o.clientBody), ids)
			}},
		{name: "stream with 1,024 calls whose long ids differ at the end",
			ex: bridgedExchange(bigEvents, "", true, split([]byte(callsStream), 64<<10)...), status: 200,
			check: func(t *testing.T, o *outcome) { checkCallIDs(t, terminalResponse(t, o.clientBody), ids) }},
	}
	// Instructions past the 256 KiB a Response repeats of its request: left out of the echo, and said so.
	instructions := strings.Repeat("i", 300<<10)
	bigRequests := strings.Replace(testConfig, `"max_request_bytes": 4096`, `"max_request_bytes": 1048576`, 1)
	okAnswer := `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`
	okEvents := events(`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}`,
		`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
	echoOmitted := func(t *testing.T, o *outcome, resp gjson.Result) {
		t.Helper()
		if got := o.clientHead["x-aidialect-echo-omitted"]; got != "instructions" {
			t.Errorf("x-aidialect-echo-omitted: %q, want instructions", got)
		}
		if resp.Get("instructions").Raw != "null" || resp.Get("temperature").Raw != "0.5" || resp.Get("output_text").String() != "ok" &&
			resp.Get("output.0.content.0.text").String() != "ok" {
			t.Errorf("instructions %.40s, temperature %s: %.300s", resp.Get("instructions").Raw, resp.Get("temperature").Raw, resp.Raw)
		}
	}
	rows = append(rows,
		bridgedRow{name: "JSON answer to a request with 300 KiB of instructions",
			ex: bridgedExchange(bigRequests, `,"temperature":0.5,"instructions":"`+instructions+`"`, false, okAnswer), status: 200,
			check: func(t *testing.T, o *outcome) {
				if len(o.clientBody) > 16<<10 {
					t.Errorf("a Response of %d bytes for the answer \"ok\"", len(o.clientBody))
				}
				echoOmitted(t, o, gjson.ParseBytes(o.clientBody))
			}},
		bridgedRow{name: "stream answering a request with 300 KiB of instructions",
			ex: bridgedExchange(bigRequests, `,"temperature":0.5,"instructions":"`+instructions+`"`, true, okEvents), status: 200,
			check: func(t *testing.T, o *outcome) {
				if len(o.clientBody) > 16<<10 {
					t.Errorf("a stream of %d bytes for the answer \"ok\"", len(o.clientBody))
				}
				echoOmitted(t, o, terminalResponse(t, o.clientBody))
			}},
	)
	// One event of 1,024 tool-call fragments that carry nothing (no id, no name, no arguments): 14 KB that
	// became 907 KB of events for 1,024 empty calls.
	bare := make([]string, 1024)
	for i := range bare {
		bare[i] = `{"index":` + strconv.Itoa(i) + `}`
	}
	bareStream := events(`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[`+
		strings.Join(bare, ",")+`]},"finish_reason":null}]}`,
		`{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		"[DONE]")
	rows = append(rows, bridgedRow{name: "stream of 1,024 tool-call fragments with nothing in them",
		ex: bridgedExchange(testConfig, "", true, bareStream), status: 200,
		check: func(t *testing.T, o *outcome) {
			resp := terminalResponse(t, o.clientBody)
			if n := len(resp.Get(`output.#(type=="function_call")#`).Array()); n != 0 || len(o.clientBody) > 8<<10 {
				t.Errorf("%d bytes in, %d bytes of events with %d function calls, want no call and at most 8 KiB",
					len(bareStream), len(o.clientBody), n)
			}
		}})
	for _, md := range modes {
		for _, row := range rows {
			t.Run(row.name+"/"+md.name, func(t *testing.T) {
				o := run(t, md, row.ex)
				o.assertRules(t)
				if o.local != nil {
					t.Fatalf("answered locally: %d %.300s", o.local.Status, o.local.Body)
				}
				if o.status != row.status {
					t.Fatalf("status %d, want %d: %.300s", o.status, row.status, o.clientBody)
				}
				row.check(t, o)
			})
		}
	}
}

//go:build !aidialect_no_bridge

package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/sse"
	"github.com/tidwall/gjson"
)

// Chat stream events as the chat Stream hands them to the bridge (OpenAI's shape).
const bridgeChunkHead = `{"id":"chatcmpl-bridge","object":"chat.completion.chunk","created":1741569952,` +
	`"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1","choices":[{"index":0,"delta":`

func bridgeChatDelta(delta string) string {
	return bridgeChunkHead + delta + `,"logprobs":null,"finish_reason":null}]}`
}

func bridgeChatFinish(reason string) string {
	return bridgeChunkHead + `{},"logprobs":null,"finish_reason":"` + reason + `"}]}`
}

func bridgeChatToolDelta(calls string) string { return bridgeChatDelta(`{"tool_calls":` + calls + `}`) }

const (
	bridgeChatRole = bridgeChunkHead + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`
	// The usage chunk include_usage asks for: after the finish chunk, before [DONE].
	bridgeChatUsage = `{"id":"chatcmpl-bridge","object":"chat.completion.chunk","created":1741569952,` +
		`"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,` +
		`"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":4}}}`
	// Azure OpenAI's prompt annotation chunk, first in its streams.
	bridgeAzurePromptAnnotations = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":` +
		`[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`
	// The error event the chat Stream writes when the upstream was cut.
	bridgeChatCutError = `{"error":{"message":"the upstream stream ended before the answer was complete; retry the request",` +
		`"type":"server_error","param":null,"code":"upstream_stream_error"}}`
)

// bridgeChatEvents frames chat events as an SSE stream.
func bridgeChatEvents(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

// runBridgeStream converts a chat stream fed in chunks of cut bytes (0: all at once), then closed.
func runBridgeStream(t testing.TB, echo *responsesEcho, input string, cut int) []byte {
	t.Helper()
	var r responsesEvents
	r.reset(echo, 0)
	return feedBridgeStream(t, &r, input, cut)
}

func feedBridgeStream(t testing.TB, r *responsesEvents, input string, cut int) []byte {
	t.Helper()
	var out []byte
	in := []byte(input)
	if cut <= 0 {
		cut = len(in)
	}
	for len(in) > 0 {
		n := min(cut, len(in))
		// A fresh copy per chunk, then scribbled over: the converter must not keep views of a chunk.
		chunk := append([]byte(nil), in[:n]...)
		var err error
		if out, err = r.write(out, chunk); err != nil {
			t.Fatalf("write: %v", err)
		}
		for i := range chunk {
			chunk[i] = '#'
		}
		in = in[n:]
	}
	return r.close(out)
}

// bridgeCuts are the chunk sizes every stream test is run at: a byte at a time, 7 bytes (cuts inside
// "data:", inside escapes and between the two newlines), and the whole stream at once.
var bridgeCuts = []int{1, 7, 0}

// responsesReplay is what replayResponsesStream saw of a stream.
type responsesReplay struct {
	types []string
	// data is each event's data, in order.
	data         []string
	created      map[string]any
	terminal     map[string]any // the terminal event's response
	terminalType string
}

// replayResponsesStream replays a Responses stream the way openai-node's strict accumulator does (its
// response-accumulator.ts), plus what the other clients need (responses.md §6), and fails the test on
// anything they would reject: framing, sequence numbers, the first event, where items and parts are added,
// which item each event names, ids kept by output_item.done, the terminal output and its usage.
func replayResponsesStream(t testing.TB, out []byte) responsesReplay {
	t.Helper()
	var rp responsesReplay
	var output []any
	doneItems := map[int]bool{}
	identities := map[string]bool{}
	// Accumulated as the deltas come, to check the .done events against.
	texts := map[[2]int]string{}
	arguments := map[int]string{}
	summaries := map[int]string{}
	fatal := func(i int, format string, args ...any) {
		t.Helper()
		t.Fatalf("event %d: %s\nstream:\n%s", i, fmt.Sprintf(format, args...), out)
	}
	rest := out
	for i := 0; len(rest) > 0; i++ {
		end := bytes.Index(rest, []byte("\n\n"))
		if end < 0 {
			fatal(i, "not ended by a blank line: %q", rest)
		}
		block := string(rest[:end])
		rest = rest[end+2:]
		lines := strings.Split(block, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			fatal(i, "want an event line and a data line, got %q", block)
		}
		typ, data := strings.TrimPrefix(lines[0], "event: "), strings.TrimPrefix(lines[1], "data: ")
		if rp.terminal != nil {
			fatal(i, "%s after the terminal event", typ)
		}
		var ev map[string]any
		d := json.NewDecoder(strings.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil || d.More() {
			fatal(i, "data is not one JSON object (%v): %s", err, data)
		}
		if ev["type"] != typ {
			fatal(i, "data type %v under event %s", ev["type"], typ)
		}
		if _, has := ev["error"]; has && typ != "error" {
			// Only the error event that precedes response.failed may have one: it is how openai-go learns of
			// the failure (it aborts the stream there).
			fatal(i, "a top-level error member (openai-go aborts the stream on it)")
		}
		if typ == "error" && !bytes.HasPrefix(rest, []byte("event: response.failed\n")) {
			fatal(i, "an error event not followed by response.failed")
		}
		if n, ok := ev["sequence_number"].(json.Number); !ok || n.String() != fmt.Sprint(i) {
			fatal(i, "sequence_number %v, want %d", ev["sequence_number"], i)
		}
		rp.types = append(rp.types, typ)
		rp.data = append(rp.data, data)
		if i == 0 && typ != responsesEventCreated {
			fatal(i, "the first event must be response.created, got %s", typ)
		}
		// item resolves the item an event names, checking item_id and the item's type.
		item := func(wantType string) (map[string]any, int) {
			t.Helper()
			index := bridgeInt(t, ev["output_index"])
			if index < 0 || index >= len(output) {
				fatal(i, "output_index %d out of %d items", index, len(output))
			}
			it := output[index].(map[string]any)
			id, _ := ev["item_id"].(string)
			if id == "" || id != it["id"] {
				fatal(i, "item_id %q, want %v", id, it["id"])
			}
			if it["type"] != wantType {
				fatal(i, "%s on a %v item", typ, it["type"])
			}
			return it, index
		}
		part := func(it map[string]any, listName, indexName, wantType string) (map[string]any, int) {
			t.Helper()
			list, _ := it[listName].([]any)
			index := bridgeInt(t, ev[indexName])
			if index < 0 || index >= len(list) {
				fatal(i, "%s %d out of %d", indexName, index, len(list))
			}
			p := list[index].(map[string]any)
			if p["type"] != wantType {
				fatal(i, "%s on a %v part", typ, p["type"])
			}
			return p, index
		}
		switch typ {
		case responsesEventCreated, responsesEventInProgress:
			resp, _ := ev["response"].(map[string]any)
			checkBridgedResponse(t, resp, responseStatusInProgress)
			if typ == responsesEventCreated {
				if i != 0 {
					fatal(i, "a second response.created")
				}
				rp.created = resp
			} else if i != 1 || resp["id"] != rp.created["id"] {
				fatal(i, "response.in_progress must follow response.created with its id")
			}
			if out, _ := resp["output"].([]any); len(out) != 0 {
				fatal(i, "output %v before any item", out)
			}
			output = nil // a lifecycle event replaces the snapshot
		case responsesEventItemAdded:
			index := bridgeInt(t, ev["output_index"])
			if index != len(output) {
				fatal(i, "output_item.added at %d, want %d (append only)", index, len(output))
			}
			it, _ := ev["item"].(map[string]any)
			id, _ := it["id"].(string)
			if id == "" || identities["id:"+id] {
				fatal(i, "item id %q empty or repeated", id)
			}
			identities["id:"+id] = true
			switch it["type"] {
			case "message":
				if it["status"] != responseStatusInProgress || it["role"] != "assistant" || len(it["content"].([]any)) != 0 {
					fatal(i, "message announced as %v", it)
				}
			case "function_call":
				call, _ := it["call_id"].(string)
				if call == "" || identities["call:"+call] || it["arguments"] != "" || it["status"] != responseStatusInProgress {
					fatal(i, "function_call announced as %v", it)
				}
				identities["call:"+call] = true
				if _, ok := it["name"].(string); !ok {
					fatal(i, "function_call without a name string")
				}
			case "custom_tool_call", "tool_search_call":
				// As openai-node's accumulator reads them; Codex acts on output_item.done only.
				call, _ := it["call_id"].(string)
				if call == "" || identities["call:"+call] || it["status"] != responseStatusInProgress {
					fatal(i, "%v announced as %v", it["type"], it)
				}
				identities["call:"+call] = true
				if it["type"] == "custom_tool_call" && it["input"] != "" {
					fatal(i, "custom_tool_call announced with input %v", it["input"])
				}
			case "reasoning":
				if len(it["summary"].([]any)) != 0 {
					fatal(i, "reasoning announced with a summary")
				}
			default:
				fatal(i, "unexpected item type %v", it["type"])
			}
			output = append(output, it)
		case responsesEventItemDone:
			index := bridgeInt(t, ev["output_index"])
			if index < 0 || index >= len(output) {
				fatal(i, "output_item.done for a missing item %d", index)
			}
			old := output[index].(map[string]any)
			it, _ := ev["item"].(map[string]any)
			if it["id"] != old["id"] || it["type"] != old["type"] || it["call_id"] != old["call_id"] {
				fatal(i, "output_item.done changed the item's identity: %v -> %v", old, it)
			}
			if doneItems[index] {
				fatal(i, "a second output_item.done for %d", index)
			}
			doneItems[index] = true
			if _, ok := it["status"].(string); !ok && it["type"] != "reasoning" {
				fatal(i, "a done item without status (the AI SDK needs it): %v", it)
			}
			output[index] = it
		case responsesEventPartAdded:
			it, index := item("message")
			content := it["content"].([]any)
			if bridgeInt(t, ev["content_index"]) != len(content) {
				fatal(i, "content_part.added at %v, want %d", ev["content_index"], len(content))
			}
			p, _ := ev["part"].(map[string]any)
			if p["type"] == "output_text" && p["text"] != "" || p["type"] == "refusal" && p["refusal"] != "" {
				fatal(i, "a part announced with content: %v", p)
			}
			it["content"] = append(content, p)
			texts[[2]int{index, len(content)}] = ""
		case responsesEventPartDone:
			it, index := item("message")
			_, ci := part(it, "content", "content_index", ev["part"].(map[string]any)["type"].(string))
			want := texts[[2]int{index, ci}]
			done := ev["part"].(map[string]any)
			if v := bridgeFirstString(done, "text", "refusal"); v != want {
				fatal(i, "content_part.done holds %q, the deltas made %q", v, want)
			}
			it["content"].([]any)[ci] = done
		case responsesEventTextDelta, responsesEventRefusalDelta:
			kind := "output_text"
			if typ == responsesEventRefusalDelta {
				kind = "refusal"
			}
			it, index := item("message")
			p, ci := part(it, "content", "content_index", kind)
			delta, ok := ev["delta"].(string)
			if !ok {
				fatal(i, "delta not a string")
			}
			if kind == "output_text" {
				if _, ok := ev["logprobs"].([]any); !ok {
					fatal(i, "output_text.delta without logprobs")
				}
				p["text"] = p["text"].(string) + delta
			} else {
				p["refusal"] = p["refusal"].(string) + delta
			}
			texts[[2]int{index, ci}] += delta
		case responsesEventTextDone, responsesEventRefusalDone:
			kind, field := "output_text", "text"
			if typ == responsesEventRefusalDone {
				kind, field = "refusal", "refusal"
			}
			it, index := item("message")
			p, ci := part(it, "content", "content_index", kind)
			if ev[field] != texts[[2]int{index, ci}] {
				fatal(i, "%s %q, the deltas made %q", typ, ev[field], texts[[2]int{index, ci}])
			}
			p[field] = ev[field]
		case responsesEventArgumentsDelta:
			it, index := item("function_call")
			delta, _ := ev["delta"].(string)
			it["arguments"] = it["arguments"].(string) + delta
			arguments[index] += delta
		case responsesEventArgumentsDone:
			it, index := item("function_call")
			got, _ := ev["arguments"].(string)
			if want := arguments[index]; got != want && !(want == "" && got == "{}") {
				fatal(i, "arguments.done %q, the deltas made %q", got, want)
			}
			if _, ok := ev["name"].(string); !ok {
				fatal(i, "arguments.done without a name")
			}
			it["arguments"] = got
		case responsesEventCustomInputDelta:
			it, index := item("custom_tool_call")
			delta, _ := ev["delta"].(string)
			it["input"] = it["input"].(string) + delta
			arguments[index] += delta
		case responsesEventCustomInputDone:
			it, index := item("custom_tool_call")
			if got, _ := ev["input"].(string); got != arguments[index] {
				fatal(i, "custom_tool_call_input.done %q, the deltas made %q", got, arguments[index])
			}
			it["input"] = ev["input"]
		case responsesEventSummaryPartAdded:
			it, index := item("reasoning")
			summary := it["summary"].([]any)
			if bridgeInt(t, ev["summary_index"]) != len(summary) {
				fatal(i, "summary part added at %v, want %d", ev["summary_index"], len(summary))
			}
			it["summary"] = append(summary, ev["part"])
			summaries[index] = ""
		case responsesEventSummaryTextDelta:
			it, index := item("reasoning")
			p, _ := part(it, "summary", "summary_index", "summary_text")
			delta, _ := ev["delta"].(string)
			p["text"] = p["text"].(string) + delta
			summaries[index] += delta
		case responsesEventSummaryTextDone, responsesEventSummaryPartDone:
			it, index := item("reasoning")
			p, si := part(it, "summary", "summary_index", "summary_text")
			text := ev["text"]
			if typ == responsesEventSummaryPartDone {
				text = ev["part"].(map[string]any)["text"]
			}
			if text != summaries[index] {
				fatal(i, "%s %q, the deltas made %q", typ, text, summaries[index])
			}
			if typ == responsesEventSummaryPartDone {
				it["summary"].([]any)[si] = ev["part"]
			} else {
				p["text"] = text
			}
		case responsesEventCompleted, responsesEventIncomplete, responsesEventFailed:
			resp, _ := ev["response"].(map[string]any)
			wantStatus := map[string]string{responsesEventCompleted: responseStatusCompleted, responsesEventIncomplete: responseStatusIncomplete,
				responsesEventFailed: responseStatusFailed}[typ]
			checkBridgedResponse(t, resp, wantStatus)
			if resp["id"] != rp.created["id"] {
				fatal(i, "the terminal response's id %v differs from the created one %v", resp["id"], rp.created["id"])
			}
			final, _ := resp["output"].([]any)
			if typ == responsesEventFailed {
				// The items so far, unfinished: same items, in the same order.
				if len(final) != len(output) {
					fatal(i, "failed output has %d items, the stream announced %d", len(final), len(output))
				}
				for k := range final {
					if final[k].(map[string]any)["id"] != output[k].(map[string]any)["id"] {
						fatal(i, "failed output item %d is not the announced one", k)
					}
				}
			} else {
				for k := range output {
					if !doneItems[k] {
						fatal(i, "item %d never got output_item.done (Codex builds its history from those)", k)
					}
				}
				if !reflect.DeepEqual(final, output) && !(len(final) == 0 && len(output) == 0) {
					fatal(i, "terminal output differs from the accumulated items:\n got %v\nwant %v", final, output)
				}
			}
			rp.terminal, rp.terminalType = resp, typ
		case "error":
			// Checked above: it precedes response.failed, which carries the same message.
			if code, _ := ev["code"].(string); code == "" {
				fatal(i, "an error event without a code")
			}
		default:
			fatal(i, "unexpected event type %s", typ)
		}
	}
	if rp.terminal == nil {
		t.Fatalf("no terminal event:\n%s", out)
	}
	return rp
}

func bridgeFirstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}

func bridgeInt(t testing.TB, v any) int {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		return -1
	}
	i, err := n.Int64()
	if err != nil {
		return -1
	}
	return int(i)
}

// checkBridgedResponse checks a Response object for what the spec requires and the clients read.
func checkBridgedResponse(t testing.TB, resp map[string]any, wantStatus string) {
	t.Helper()
	if resp == nil {
		t.Fatal("no response object")
	}
	for _, key := range []string{"id", "object", "created_at", "error", "incomplete_details", "instructions", "model",
		"tools", "output", "parallel_tool_calls", "metadata", "tool_choice", "temperature", "top_p", "status", "usage"} {
		if _, ok := resp[key]; !ok {
			t.Fatalf("response without %s: %v", key, resp)
		}
	}
	if id, _ := resp["id"].(string); !strings.HasPrefix(id, "resp_") || resp["object"] != "response" {
		t.Fatalf("response id %v, object %v", resp["id"], resp["object"])
	}
	if _, ok := resp["created_at"].(json.Number); !ok {
		t.Fatalf("created_at %v is not a number", resp["created_at"])
	}
	if _, ok := resp["model"].(string); !ok {
		t.Fatalf("model %v is not a string", resp["model"])
	}
	if resp["status"] != wantStatus {
		t.Fatalf("status %v, want %s", resp["status"], wantStatus)
	}
	if _, ok := resp["output"].([]any); !ok {
		t.Fatalf("output %v is not an array", resp["output"])
	}
	switch wantStatus {
	case responseStatusFailed:
		e, _ := resp["error"].(map[string]any)
		if msg, _ := e["message"].(string); e["code"] != "server_error" || msg == "" {
			t.Fatalf("failed response's error %v", resp["error"])
		}
	default:
		if resp["error"] != nil {
			t.Fatalf("error %v, want null", resp["error"])
		}
	}
	if wantStatus == responseStatusCompleted {
		if _, ok := resp["completed_at"].(json.Number); !ok {
			t.Fatalf("completed response without completed_at: %v", resp["completed_at"])
		}
	} else if resp["completed_at"] != nil {
		t.Fatalf("completed_at %v on a %s response", resp["completed_at"], wantStatus)
	}
	if wantStatus == responseStatusIncomplete {
		if d, _ := resp["incomplete_details"].(map[string]any); d["reason"] == nil {
			t.Fatalf("incomplete response without a reason: %v", resp["incomplete_details"])
		}
	} else if resp["incomplete_details"] != nil {
		t.Fatalf("incomplete_details %v on a %s response", resp["incomplete_details"], wantStatus)
	}
	if wantStatus == responseStatusInProgress {
		if resp["usage"] != nil {
			t.Fatalf("usage %v before the end", resp["usage"])
		}
		return
	}
	u, _ := resp["usage"].(map[string]any)
	for _, path := range [][]string{{"input_tokens"}, {"output_tokens"}, {"total_tokens"},
		{"input_tokens_details", "cached_tokens"}, {"output_tokens_details", "reasoning_tokens"}} {
		var v any = u
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if _, ok := v.(json.Number); !ok {
			t.Fatalf("usage.%s is %v, not a number", strings.Join(path, "."), v)
		}
	}
}

// Event type sequences of the cases below.
var (
	bridgeStartTypes    = []string{responsesEventCreated, responsesEventInProgress}
	bridgeMessageOpen   = []string{responsesEventItemAdded, responsesEventPartAdded}
	bridgeMessageClose  = []string{responsesEventTextDone, responsesEventPartDone, responsesEventItemDone}
	bridgeCallClose     = []string{responsesEventArgumentsDone, responsesEventItemDone}
	bridgeReasoningOpen = []string{responsesEventItemAdded, responsesEventSummaryPartAdded}
	bridgeReasoningEnd  = []string{responsesEventSummaryTextDone, responsesEventSummaryPartDone, responsesEventItemDone}
)

// bridgeFailedTypes is how a failed stream ends: the error event its SDKs raise, then response.failed.
var bridgeFailedTypes = []string{"error", responsesEventFailed}

func bridgeSeq(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			out = append(out, v)
		case []string:
			out = append(out, v...)
		}
	}
	return out
}

func bridgeRepeat(typ string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = typ
	}
	return out
}

// bridgeTextGolden is the whole conversion of a two-delta text answer.
const bridgeTextGolden = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_13fc80222c24420f","object":"response","created_at":1741569952,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":"Be brief.","max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-2024-08-06","output":[],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,"temperature":0.2,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_13fc80222c24420f","object":"response","created_at":1741569952,"status":"in_progress","background":false,"completed_at":null,"error":null,"incomplete_details":null,"instructions":"Be brief.","max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-2024-08-06","output":[],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,"temperature":0.2,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_13fc80222c24420f","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_13fc80222c24420f","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_13fc80222c24420f","output_index":0,"content_index":0,"delta":"Hello","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_13fc80222c24420f","output_index":0,"content_index":0,"delta":", \"world\"\n","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_13fc80222c24420f","output_index":0,"content_index":0,"text":"Hello, \"world\"\n","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_13fc80222c24420f","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello, \"world\"\n"}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_13fc80222c24420f","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello, \"world\"\n"}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_13fc80222c24420f","object":"response","created_at":1741569952,"status":"completed","background":false,"completed_at":1741569952,"error":null,"incomplete_details":null,"instructions":"Be brief.","max_output_tokens":null,"max_tool_calls":null,"model":"gpt-4o-2024-08-06","output":[{"id":"msg_13fc80222c24420f","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello, \"world\"\n"}]}],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},"safety_identifier":null,"service_tier":"default","store":false,"temperature":0.2,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_logprobs":0,"top_p":1,"truncation":"disabled","usage":{"input_tokens":19,"input_tokens_details":{"cached_tokens":3},"output_tokens":10,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":29},"user":null,"metadata":{}}}

`

func TestBridgeStreamTextGolden(t *testing.T) {
	echo := &responsesEcho{instructions: []byte(`"Be brief."`), temperature: []byte("0.2")}
	input := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"Hello"}`), bridgeChatDelta(`{"content":", \"world\"\n"}`),
		bridgeChatFinish("stop"), bridgeChatUsage, "[DONE]")
	for _, cut := range bridgeCuts {
		out := runBridgeStream(t, echo, input, cut)
		if string(out) != bridgeTextGolden {
			t.Fatalf("cut %d: got\n%s\nwant\n%s", cut, out, bridgeTextGolden)
		}
		replayResponsesStream(t, out)
	}
}

func TestBridgeStreamConversions(t *testing.T) {
	call0 := `[{"index":0,"id":"call_w","type":"function","function":{"name":"get_weather","arguments":""}}]`
	call1 := `[{"index":1,"id":"call_t","type":"function","function":{"name":"get_time","arguments":""}}]`
	args := func(index int, s string) string {
		return fmt.Sprintf(`[{"index":%d,"function":{"arguments":%q}}]`, index, s)
	}
	tests := []struct {
		name  string
		input string
		types []string
		// want maps gjson paths into the terminal event's data to their raw JSON values.
		want map[string]string
	}{
		{
			name: "one tool call",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatToolDelta(call0), bridgeChatToolDelta(args(0, `{"city":`)),
				bridgeChatToolDelta(args(0, `"Paris"}`)), bridgeChatFinish("tool_calls"), bridgeChatUsage, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, bridgeRepeat(responsesEventArgumentsDelta, 2), bridgeCallClose, responsesEventCompleted),
			want: map[string]string{
				"response.status":             `"completed"`,
				"response.output.#":           `1`,
				"response.output.0.type":      `"function_call"`,
				"response.output.0.id":        `"fc_13fc80222c24420f_0"`,
				"response.output.0.call_id":   `"call_w"`,
				"response.output.0.name":      `"get_weather"`,
				"response.output.0.arguments": `"{\"city\":\"Paris\"}"`,
				"response.output.0.status":    `"completed"`,
				"response.usage.input_tokens": `19`,
			},
		},
		{
			name: "parallel tool calls, interleaved",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatToolDelta(call0), bridgeChatToolDelta(call1), bridgeChatToolDelta(args(1, `{}`)),
				bridgeChatToolDelta(args(0, `{"city":"Oslo"}`)), bridgeChatFinish("tool_calls"), bridgeChatUsage, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, responsesEventItemAdded, bridgeRepeat(responsesEventArgumentsDelta, 2), bridgeCallClose, bridgeCallClose,
				responsesEventCompleted),
			want: map[string]string{
				"response.output.#":           `2`,
				"response.output.0.call_id":   `"call_w"`,
				"response.output.0.arguments": `"{\"city\":\"Oslo\"}"`,
				"response.output.1.id":        `"fc_13fc80222c24420f_1"`,
				"response.output.1.call_id":   `"call_t"`,
				"response.output.1.arguments": `"{}"`,
			},
		},
		{
			name: "parallel tool calls in one chunk",
			input: bridgeChatEvents(bridgeChatRole,
				bridgeChatToolDelta(`[{"index":0,"id":"call_a","type":"function","function":{"name":"a","arguments":"{}"}},`+
					`{"index":1,"id":"call_b","type":"function","function":{"name":"b","arguments":"{}"}}]`),
				bridgeChatFinish("tool_calls"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, responsesEventArgumentsDelta, responsesEventItemAdded, responsesEventArgumentsDelta, bridgeCallClose,
				bridgeCallClose, responsesEventCompleted),
			want: map[string]string{"response.output.0.name": `"a"`, "response.output.1.name": `"b"`,
				"response.usage.total_tokens": `0`},
		},
		{
			name: "text then a tool call",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"Let me check."}`), bridgeChatToolDelta(call0),
				bridgeChatToolDelta(args(0, `{"city":"Rome"}`)), bridgeChatFinish("tool_calls"), bridgeChatUsage, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, responsesEventItemAdded, responsesEventArgumentsDelta, bridgeMessageClose,
				bridgeCallClose, responsesEventCompleted),
			want: map[string]string{
				"response.output.0.type":                  `"message"`,
				"response.output.0.content.0.text":        `"Let me check."`,
				"response.output.1.type":                  `"function_call"`,
				"response.output.1.arguments":             `"{\"city\":\"Rome\"}"`,
				"response.status":                         `"completed"`,
				"response.output.0.status":                `"completed"`,
				"response.output.1.status":                `"completed"`,
				"response.incomplete_details":             `null`,
				"response.output.0.content.0.type":        `"output_text"`,
				"response.output.0.content.#":             `1`,
				"response.usage.output_tokens":            `10`,
				"response.usage.total_tokens":             `29`,
				"response.output.1.call_id":               `"call_w"`,
				"response.output.0.role":                  `"assistant"`,
				"response.output.0.id":                    `"msg_13fc80222c24420f"`,
				"response.output.1.id":                    `"fc_13fc80222c24420f_0"`,
				"response.completed_at":                   `1741569952`,
				"response.model":                          `"gpt-4o-2024-08-06"`,
				"response.output.0.content.0.annotations": `[]`,
			},
		},
		{
			name: "reasoning_content, then the answer",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"reasoning_content":"The user "}`),
				bridgeChatDelta(`{"reasoning_content":"greets."}`), bridgeChatDelta(`{"content":"Hi!"}`), bridgeChatFinish("stop"),
				bridgeChatUsage, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeReasoningOpen, bridgeRepeat(responsesEventSummaryTextDelta, 2), bridgeReasoningEnd, bridgeMessageOpen,
				responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want: map[string]string{
				"response.output.0.type":                                `"reasoning"`,
				"response.output.0.id":                                  `"rs_13fc80222c24420f"`,
				"response.output.0.summary.0.text":                      `"The user greets."`,
				"response.output.1.content.0.text":                      `"Hi!"`,
				"response.usage.output_tokens_details.reasoning_tokens": `4`,
			},
		},
		{
			name: "reasoning, then a tool call",
			input: bridgeChatEvents(bridgeChatDelta(`{"role":"assistant","reasoning_content":"Need weather."}`),
				bridgeChatToolDelta(call0), bridgeChatFinish("tool_calls"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeReasoningOpen, responsesEventSummaryTextDelta, bridgeReasoningEnd, responsesEventItemAdded, bridgeCallClose,
				responsesEventCompleted),
			want: map[string]string{"response.output.1.arguments": `"{}"`, "response.output.#": `2`},
		},
		{
			name: "refusal",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"refusal":"I can't "}`), bridgeChatDelta(`{"refusal":"help."}`),
				bridgeChatFinish("stop"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, bridgeRepeat(responsesEventRefusalDelta, 2), responsesEventRefusalDone, responsesEventPartDone,
				responsesEventItemDone, responsesEventCompleted),
			want: map[string]string{
				"response.output.0.content.0.type":    `"refusal"`,
				"response.output.0.content.0.refusal": `"I can't help."`,
			},
		},
		{
			name: "length: incomplete, the message too",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"The answer is"}`), bridgeChatFinish("length"),
				bridgeChatUsage, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventIncomplete),
			want: map[string]string{
				"response.status":             `"incomplete"`,
				"response.incomplete_details": `{"reason":"max_output_tokens"}`,
				"response.output.0.status":    `"incomplete"`,
				"response.completed_at":       `null`,
			},
		},
		{
			name:  "content_filter: incomplete",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"Once"}`), bridgeChatFinish("content_filter"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventIncomplete),
			want: map[string]string{
				"response.incomplete_details": `{"reason":"content_filter"}`,
				"response.output.0.status":    `"incomplete"`,
			},
		},
		{
			name:  "no finish_reason, then [DONE]: completed, items closed",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"ok"}`), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.status": `"completed"`, "response.output.0.content.0.text": `"ok"`},
		},
		{
			name:  "finish_reason, then the end without [DONE]: completed",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"ok"}`), bridgeChatFinish("stop")),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.status": `"completed"`},
		},
		{
			name:  "an empty answer still gets its message",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatFinish("stop"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.output.0.content.0.text": `""`},
		},
		{
			name: "azure annotation chunks are passed over",
			input: bridgeChatEvents(bridgeAzurePromptAnnotations,
				`{"choices":[{"content_filter_results":{},"delta":{"content":"","refusal":null,"role":"assistant"},`+
					`"finish_reason":null,"index":0,"logprobs":null}],"created":1741569999,"id":"chatcmpl-az",`+
					`"model":"gpt-4o-2024-11-20","object":"chat.completion.chunk","system_fingerprint":"fp_az"}`,
				`{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}},`+
					`"delta":{"content":"Hi"},"finish_reason":null,"index":0,"logprobs":null}],"created":1741569999,`+
					`"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
				`{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],`+
					`"created":1741569999,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20","object":"chat.completion.chunk"}`,
				`{"choices":[{"content_filter_offsets":{"check_offset":0,"start_offset":0,"end_offset":2},`+
					`"content_filter_results":{"protected_material_text":{"detected":false,"filtered":false}},`+
					`"finish_reason":null,"index":0}],"created":0,"id":"","model":"","object":""}`,
				`{"choices":[],"created":1741569999,"id":"chatcmpl-az","model":"gpt-4o-2024-11-20",`+
					`"object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":8,"total_tokens":9}}`,
				"[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want: map[string]string{
				"response.id":                      `"resp_` + fmt.Sprintf("%016x", bridgeHash([]byte("chatcmpl-az"))) + `"`,
				"response.created_at":              `1741569999`,
				"response.model":                   `"gpt-4o-2024-11-20"`,
				"response.output.0.content.0.text": `"Hi"`,
				"response.usage.input_tokens":      `8`,
				"response.usage.total_tokens":      `9`,
			},
		},
		{
			name: "usage after the finish chunk, service tier reported",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"x"}`), bridgeChatFinish("stop"),
				strings.Replace(bridgeChatUsage, `"choices":[]`, `"service_tier":"priority","choices":[]`, 1), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want: map[string]string{
				"response.usage": `{"input_tokens":19,"input_tokens_details":{"cached_tokens":3},"output_tokens":10,` +
					`"output_tokens_details":{"reasoning_tokens":4},"total_tokens":29}`,
				"response.service_tier": `"priority"`,
			},
		},
		{
			name:  "an error chunk fails the response with the items so far",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"Half an ans"}`), bridgeChatCutError, "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeFailedTypes),
			want: map[string]string{
				"response.status":                  `"failed"`,
				"response.error.code":              `"server_error"`,
				"response.error.message":           `"the upstream stream ended before the answer was complete; retry the request"`,
				"response.output.0.status":         `"incomplete"`,
				"response.output.0.content.0.text": `"Half an ans"`,
			},
		},
		{
			name:  "an error chunk before anything",
			input: bridgeChatEvents(`{"error":{"message":"Rate limit reached","type":"requests","code":"429"}}`),
			types: bridgeSeq(bridgeStartTypes, bridgeFailedTypes),
			want:  map[string]string{"response.error.message": `"Rate limit reached"`, "response.output": `[]`},
		},
		{
			name:  "cut at EOF without a finish: failed",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatToolDelta(call0), bridgeChatToolDelta(args(0, `{"ci`))),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, responsesEventArgumentsDelta, bridgeFailedTypes),
			want: map[string]string{
				"response.error.message":      `"` + bridgeStreamEndedMessage + `"`,
				"response.output.0.arguments": `"{\"ci"`,
				"response.output.0.status":    `"incomplete"`,
			},
		},
		{
			name:  "cut mid-event at EOF: the fragment is dropped, the stream failed",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"a"}`)) + `data: {"id":"chatcmpl-bridge","choi`,
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeFailedTypes),
			want:  map[string]string{"response.output.0.content.0.text": `"a"`},
		},
		{
			name:  "nothing at all: failed",
			input: "",
			types: bridgeSeq(bridgeStartTypes, bridgeFailedTypes),
			want:  map[string]string{"response.output": `[]`},
		},
		{
			name: "tool calls without ids, and a repeated id, get generated call ids",
			input: bridgeChatEvents(bridgeChatRole,
				bridgeChatToolDelta(`[{"index":0,"type":"function","function":{"name":"a","arguments":"{}"}}]`),
				bridgeChatToolDelta(`[{"index":1,"id":"dup","type":"function","function":{"name":"b","arguments":"{}"}}]`),
				bridgeChatToolDelta(`[{"index":2,"id":"dup","type":"function","function":{"name":"c","arguments":"{}"}}]`),
				bridgeChatFinish("tool_calls"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, responsesEventArgumentsDelta, responsesEventItemAdded, responsesEventArgumentsDelta,
				responsesEventItemAdded, responsesEventArgumentsDelta, bridgeCallClose, bridgeCallClose, bridgeCallClose, responsesEventCompleted),
			want: map[string]string{
				"response.output.0.call_id": `"call_13fc80222c24420f_0"`,
				"response.output.1.call_id": `"dup"`,
				"response.output.2.call_id": `"call_13fc80222c24420f_2"`,
			},
		},
		{
			name: "tool calls without an index: a new id opens a call, fragments continue the latest",
			input: bridgeChatEvents(bridgeChatRole,
				bridgeChatToolDelta(`[{"id":"c1","type":"function","function":{"name":"a","arguments":"{\"x\":"}}]`),
				bridgeChatToolDelta(`[{"function":{"arguments":"1}"}}]`),
				bridgeChatToolDelta(`[{"id":"c2","type":"function","function":{"name":"b","arguments":"{}"}}]`),
				bridgeChatFinish("tool_calls"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, responsesEventItemAdded, bridgeRepeat(responsesEventArgumentsDelta, 2), responsesEventItemAdded, responsesEventArgumentsDelta,
				bridgeCallClose, bridgeCallClose, responsesEventCompleted),
			want: map[string]string{
				"response.output.0.arguments": `"{\"x\":1}"`,
				"response.output.1.call_id":   `"c2"`,
			},
		},
		{
			name: "non-JSON data and comments are passed over",
			input: ": keepalive\n\n" + bridgeChatEvents(bridgeChatRole, "not json", bridgeChatDelta(`{"content":"ok"}`),
				bridgeChatFinish("stop"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
		},
		{
			name: "CRLF framing and a [DONE] with spaces",
			input: strings.ReplaceAll(bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"crlf"}`), bridgeChatFinish("stop")),
				"\n", "\r\n") + "data:  [DONE] \r\n\r\n",
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.output.0.content.0.text": `"crlf"`},
		},
		{
			name: "nothing after [DONE]",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"a"}`), "[DONE]", bridgeChatDelta(`{"content":"b"}`),
				bridgeChatCutError),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.output.0.content.0.text": `"a"`},
		},
		{
			name: "escapes are kept as the upstream wrote them",
			input: bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"\u00e9"}`), bridgeChatDelta(`{"content":"\ud83d\ude00 \u2028<\/b>"}`),
				bridgeChatFinish("stop"), "[DONE]"),
			types: bridgeSeq(bridgeStartTypes, bridgeMessageOpen, bridgeRepeat(responsesEventTextDelta, 2), bridgeMessageClose, responsesEventCompleted),
			want:  map[string]string{"response.output.0.content.0.text": `"\u00e9\ud83d\ude00 \u2028<\/b>"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var first []byte
			for _, cut := range bridgeCuts {
				out := runBridgeStream(t, nil, tc.input, cut)
				if first == nil {
					first = out
				} else if !bytes.Equal(out, first) {
					t.Fatalf("cut %d changed the output:\n%s\nvs\n%s", cut, out, first)
				}
				rp := replayResponsesStream(t, out)
				if !reflect.DeepEqual(rp.types, tc.types) {
					t.Fatalf("cut %d: events\n got %v\nwant %v", cut, rp.types, tc.types)
				}
				last := rp.data[len(rp.data)-1]
				for path, want := range tc.want {
					if got := gjson.Get(last, path).Raw; got != want {
						t.Errorf("cut %d: %s = %s, want %s", cut, path, got, want)
					}
				}
			}
		})
	}
}

// TestBridgeStreamEchoDefaults: the created and terminal responses repeat the request, with defaults for
// what it did not say, and values written over several lines stay on the event's one data line.
func TestBridgeStreamEchoDefaults(t *testing.T) {
	echo := &responsesEcho{
		tools:             []byte("[\n  {\"type\":\"function\",\"name\":\"f\",\"parameters\":{}}\r\n]"),
		toolChoice:        []byte(`"required"`),
		parallelToolCalls: []byte("false"),
		maxOutputTokens:   []byte("256"),
		metadata:          []byte(`{"k":"v"}`),
		reasoning:         []byte(`{"effort":"low","summary":"auto"}`),
		text:              []byte(`{"format":{"type":"json_object"},"verbosity":"low"}`),
		user:              []byte(`"u-1"`),
		serviceTier:       []byte(`"flex"`),
		topLogprobs:       []byte("2"),
		truncation:        []byte(`"auto"`),
		promptCacheKey:    []byte(`"pck"`),
		safetyIdentifier:  []byte(`"sid"`),
		maxToolCalls:      []byte("3"),
		topP:              []byte("null"), // null: the default
		storeAsked:        true,
	}
	input := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"{}"}`), bridgeChatFinish("stop"), "[DONE]")
	for _, cut := range bridgeCuts {
		checkBridgedEcho(t, replayResponsesStream(t, runBridgeStream(t, echo, input, cut)))
	}
}

// checkBridgedEcho checks the echo of TestBridgeStreamEchoDefaults in the created and terminal responses.
func checkBridgedEcho(t *testing.T, rp responsesReplay) {
	t.Helper()
	want := map[string]string{
		"tools":                `[   {"type":"function","name":"f","parameters":{}}  ]`,
		"tool_choice":          `"required"`,
		"parallel_tool_calls":  `false`,
		"max_output_tokens":    `256`,
		"metadata":             `{"k":"v"}`,
		"reasoning":            `{"effort":"low","summary":"auto"}`,
		"text":                 `{"format":{"type":"json_object"},"verbosity":"low"}`,
		"user":                 `"u-1"`,
		"service_tier":         `"flex"`,
		"top_logprobs":         `2`,
		"truncation":           `"auto"`,
		"prompt_cache_key":     `"pck"`,
		"safety_identifier":    `"sid"`,
		"max_tool_calls":       `3`,
		"top_p":                `1`,
		"temperature":          `1`,
		"store":                `false`,
		"background":           `false`,
		"previous_response_id": `null`,
		"instructions":         `null`,
	}
	for _, data := range []string{rp.data[0], rp.data[len(rp.data)-1]} {
		for key, v := range want {
			if got := gjson.Get(data, "response."+key).Raw; got != v {
				t.Errorf("%s = %s, want %s", key, got, v)
			}
		}
	}
}

// TestBridgeStreamFailurePaths: the ways the gateway ends a bridged stream itself.
func TestBridgeStreamFailurePaths(t *testing.T) {
	start := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"partial"}`))

	t.Run("fail mid-stream", func(t *testing.T) {
		var r responsesEvents
		r.reset(nil, 0)
		out, err := r.write(nil, []byte(start))
		if err != nil {
			t.Fatal(err)
		}
		out = r.fail(out, `the provider sent a "huge" event`)
		if !r.finished() {
			t.Fatal("not finished after fail")
		}
		rp := replayResponsesStream(t, out)
		if rp.terminalType != responsesEventFailed || rp.terminal["error"].(map[string]any)["message"] != `the provider sent a "huge" event` {
			t.Fatalf("terminal %s %v", rp.terminalType, rp.terminal["error"])
		}
		if more := r.close(nil); len(more) != 0 {
			t.Fatalf("close after fail wrote %s", more)
		}
		if more := r.fail(nil, "again"); len(more) != 0 {
			t.Fatalf("a second fail wrote %s", more)
		}
		if more, err := r.write(nil, []byte(bridgeChatEvents(bridgeChatDelta(`{"content":"late"}`), "[DONE]"))); len(more) != 0 || err != nil {
			t.Fatalf("write after fail: %s %v", more, err)
		}
	})

	t.Run("fail before anything", func(t *testing.T) {
		var r responsesEvents
		r.reset(nil, 0)
		rp := replayResponsesStream(t, r.fail(nil, "stopped"))
		if !reflect.DeepEqual(rp.types, bridgeSeq(bridgeStartTypes, bridgeFailedTypes)) {
			t.Fatalf("events %v", rp.types)
		}
	})

	t.Run("an event past maxEventBytes: write refuses it whole, fail continues the sequence", func(t *testing.T) {
		for _, cut := range bridgeCuts {
			var r responsesEvents
			r.reset(nil, 512)
			out, err := r.write(nil, []byte(start))
			if err != nil {
				t.Fatal(err)
			}
			// Framers bound the event still waiting for its end: this one never ends within the bound.
			oversized := "data: " + bridgeChunkHead + `{"content":"` + strings.Repeat("x", 600)
			var failed error
			for in := []byte(oversized); len(in) > 0 && failed == nil; {
				n := len(in)
				if cut > 0 {
					n = min(cut, n)
				}
				before := len(out)
				var err error
				out, err = r.write(out, in[:n])
				if err != nil {
					if !errors.Is(err, sse.ErrEventTooLarge) || len(out) != before {
						t.Fatalf("cut %d: err %v, %d bytes written with it", cut, err, len(out)-before)
					}
					failed = err
				}
				in = in[n:]
			}
			if failed == nil {
				t.Fatalf("cut %d: the oversized event was taken", cut)
			}
			out = r.fail(out, "the provider sent a stream event larger than this gateway accepts (max_event_bytes)")
			rp := replayResponsesStream(t, out)
			if !reflect.DeepEqual(rp.types, bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeFailedTypes)) {
				t.Fatalf("cut %d: events %v", cut, rp.types)
			}
		}
	})

	t.Run("text past maxBridgedOutputBytes", func(t *testing.T) {
		piece := strings.Repeat("y", 1<<20)
		input := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"content":"`+piece+`"}`), bridgeChatDelta(`{"content":"`+piece+`"}`),
			bridgeChatDelta(`{"content":"`+piece+`"}`), bridgeChatDelta(`{"content":"`+piece+`"}`), bridgeChatDelta(`{"content":"z"}`),
			bridgeChatFinish("stop"), "[DONE]")
		for _, cut := range []int{64 << 10, 0} {
			var r responsesEvents
			r.reset(nil, 2<<20)
			out := feedBridgeStream(t, &r, input, cut)
			rp := replayResponsesStream(t, out)
			if !reflect.DeepEqual(rp.types, bridgeSeq(bridgeStartTypes, bridgeMessageOpen, bridgeRepeat(responsesEventTextDelta, 4), bridgeFailedTypes)) {
				t.Fatalf("cut %d: events %v", cut, rp.types)
			}
			if msg := rp.terminal["error"].(map[string]any)["message"]; msg != bridgedOutputLimitMessage {
				t.Fatalf("message %v", msg)
			}
		}
	})

	t.Run("arguments past maxBridgedOutputBytes", func(t *testing.T) {
		piece := strings.Repeat("a", 3<<20)
		input := bridgeChatEvents(bridgeChatRole,
			bridgeChatToolDelta(`[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"`+piece+`"}}]`),
			bridgeChatToolDelta(`[{"index":1,"id":"d","type":"function","function":{"name":"g","arguments":"`+piece+`"}}]`),
			bridgeChatFinish("tool_calls"), "[DONE]")
		var r responsesEvents
		r.reset(nil, 4<<20)
		rp := replayResponsesStream(t, feedBridgeStream(t, &r, input, 0))
		if !reflect.DeepEqual(rp.types, bridgeSeq(bridgeStartTypes, responsesEventItemAdded, responsesEventArgumentsDelta, responsesEventItemAdded, bridgeFailedTypes)) {
			t.Fatalf("events %v", rp.types)
		}
	})

	t.Run("the limit messages name the limits", func(t *testing.T) {
		if !strings.Contains(bridgedOutputLimitMessage, fmt.Sprintf(" %d MiB ", maxBridgedOutputBytes>>20)) ||
			!strings.Contains(bridgedItemsLimitMessage, fmt.Sprintf(" %d ", maxBridgedItems)) ||
			!strings.Contains(bridgedToolIndexMessage, fmt.Sprintf(" 0 to %d,", maxBridgedItems-1)) {
			t.Fatal("a limit changed without its message")
		}
	})

	t.Run("a tool call index out of range", func(t *testing.T) {
		input := bridgeChatEvents(bridgeChatRole,
			bridgeChatToolDelta(`[{"index":5000,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]`),
			bridgeChatFinish("tool_calls"), "[DONE]")
		for _, cut := range bridgeCuts {
			rp := replayResponsesStream(t, runBridgeStream(t, nil, input, cut))
			if !reflect.DeepEqual(rp.types, bridgeSeq(bridgeStartTypes, bridgeFailedTypes)) ||
				rp.terminal["error"].(map[string]any)["message"] != bridgedToolIndexMessage {
				t.Fatalf("cut %d: events %v, error %v", cut, rp.types, rp.terminal["error"])
			}
		}
	})

	t.Run("too many tool calls", func(t *testing.T) {
		var events []string
		for i := range maxBridgedItems + 1 {
			events = append(events, bridgeChatToolDelta(fmt.Sprintf(
				`[{"id":"c%d","type":"function","function":{"name":"f","arguments":"{}"}}]`, i)))
		}
		rp := replayResponsesStream(t, runBridgeStream(t, nil, bridgeChatEvents(events...), 0))
		if rp.terminalType != responsesEventFailed || rp.terminal["error"].(map[string]any)["message"] != bridgedItemsLimitMessage {
			t.Fatalf("terminal %s %v", rp.terminalType, rp.terminal["error"])
		}
	})
}

// TestBridgeStreamReuse: a converter reset for a new stream converts it as a fresh one would, whatever the
// previous stream left in its buffers.
func TestBridgeStreamReuse(t *testing.T) {
	long := bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"reasoning_content":"think think"}`),
		bridgeChatDelta(`{"content":"`+strings.Repeat("long ", 20000)+`"}`),
		bridgeChatToolDelta(`[{"index":0,"id":"c","type":"function","function":{"name":"first","arguments":"{\"a\":1}"}}]`),
		bridgeChatFinish("length"), bridgeChatUsage, "[DONE]")
	short := bridgeChatEvents(strings.ReplaceAll(bridgeChatRole, "chatcmpl-bridge", "chatcmpl-2"),
		bridgeChatToolDelta(`[{"index":0,"type":"function","function":{"name":"g","arguments":""}}]`), bridgeChatFinish("tool_calls"))
	for _, cut := range bridgeCuts {
		var r responsesEvents
		r.reset(nil, 0)
		feedBridgeStream(t, &r, long, cut)
		r.reset(nil, 0)
		got := feedBridgeStream(t, &r, short, cut)
		want := runBridgeStream(t, nil, short, cut)
		if !bytes.Equal(got, want) {
			t.Fatalf("cut %d: reused converter:\n%s\nfresh:\n%s", cut, got, want)
		}
		replayResponsesStream(t, got)
	}
}

// bridgeBenchStream is a chat stream of n events: role, n-4 content deltas, finish, usage and [DONE].
func bridgeBenchStream(n int) []byte {
	var b []byte
	b = append(b, "data: "+bridgeChatRole+"\n\n"...)
	for i := range n - 4 {
		b = fmt.Appendf(b, "data: %s\n\n", bridgeChatDelta(fmt.Sprintf(`{"content":" token%d"}`, i)))
	}
	return append(b, "data: "+bridgeChatFinish("stop")+"\n\ndata: "+bridgeChatUsage+"\n\ndata: [DONE]\n\n"...)
}

// bridgeMixedStream is a chat stream of about n events of every kind: reasoning, text, refusal and two
// parallel tool calls.
func bridgeMixedStream(n int) []byte {
	var b []byte
	b = append(b, "data: "+bridgeChatRole+"\n\n"...)
	quarter := max(n/4, 1)
	for i := range quarter {
		b = fmt.Appendf(b, "data: %s\n\n", bridgeChatDelta(fmt.Sprintf(`{"reasoning_content":"step %d "}`, i)))
	}
	for i := range quarter {
		b = fmt.Appendf(b, "data: %s\n\n", bridgeChatDelta(fmt.Sprintf(`{"content":"word%d "}`, i)))
	}
	b = fmt.Appendf(b, "data: %s\n\n", bridgeChatDelta(`{"refusal":"no"}`))
	for k, name := range []string{"a", "b"} {
		b = fmt.Appendf(b, "data: %s\n\n", bridgeChatToolDelta(fmt.Sprintf(
			`[{"index":%d,"id":"call_%s","type":"function","function":{"name":"%s","arguments":""}}]`, k, name, name)))
	}
	for i := range quarter {
		b = fmt.Appendf(b, "data: %s\n\n", bridgeChatToolDelta(fmt.Sprintf(
			`[{"index":%d,"function":{"arguments":"x%d"}}]`, i%2, i)))
	}
	return append(b, "data: "+bridgeChatFinish("tool_calls")+"\n\ndata: "+bridgeChatUsage+"\n\ndata: [DONE]\n\n"...)
}

// TestBridgeStreamAllocations: once its buffers have grown, the converter allocates nothing per event: a
// stream of a thousand events costs what one of ten does, for text alone and for every kind of delta.
func TestBridgeStreamAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, kind := range []struct {
		name   string
		stream func(int) []byte
	}{{"text", bridgeBenchStream}, {"mixed", bridgeMixedStream}} {
		measure := func(events int) float64 {
			return bridgeStreamAllocs(t, kind.stream(events))
		}
		small, large := measure(10), measure(1000)
		t.Logf("%s: allocations per stream: %v (10 events), %v (1000 events)", kind.name, small, large)
		if large > small {
			t.Fatalf("%s: allocations grow with the events: %v for 10, %v for 1000", kind.name, small, large)
		}
	}
}

// bridgeStreamAllocs is the allocations of converting stream once the converter's buffers have grown.
func bridgeStreamAllocs(t *testing.T, stream []byte) float64 {
	t.Helper()
	var r responsesEvents
	var out []byte
	run := func() {
		r.reset(nil, 0)
		out, _ = r.write(out[:0], stream)
		out = r.close(out)
	}
	run()
	replayResponsesStream(t, out)
	return testing.AllocsPerRun(20, run)
}

func BenchmarkBridgeStream(b *testing.B) {
	stream := bridgeBenchStream(100)
	var r responsesEvents
	var out []byte
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.reset(nil, 0)
		out, _ = r.write(out[:0], stream)
		out = r.close(out)
	}
}

// TestBridgeStreamThroughStream: a bridged exchange's Stream feeds the converter the chat stream as edited
// for the client, and its Close ends a cut stream with response.failed.
func TestBridgeStreamThroughStream(t *testing.T) {
	x := Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpResponses, surface: &Bridge{chat: &RequestBody{}}}
	complete := bridgeChatEvents(bridgeAzurePromptAnnotations, bridgeChatRole, bridgeChatDelta(`{"content":"Hi"}`),
		bridgeChatFinish("stop"), bridgeChatUsage, "[DONE]")
	cut := bridgeChatEvents(bridgeAzurePromptAnnotations, bridgeChatRole, bridgeChatDelta(`{"content":"Hi"}`))
	for _, tc := range []struct {
		name      string
		input     string
		types     []string
		truncated bool
	}{
		{"complete", complete, bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta,
			bridgeMessageClose, responsesEventCompleted), false},
		{"cut", cut, bridgeSeq(bridgeStartTypes, bridgeMessageOpen, responsesEventTextDelta, bridgeFailedTypes), true},
	} {
		for _, size := range bridgeCuts {
			s := NewStream(x, 0)
			var out []byte
			in := []byte(tc.input)
			if size == 0 {
				size = len(in)
			}
			for len(in) > 0 {
				n := min(size, len(in))
				got, err := s.Write(in[:n])
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				out = append(out, got...)
				in = in[n:]
			}
			out = append(out, s.Close()...)
			rp := replayResponsesStream(t, out)
			if !reflect.DeepEqual(rp.types, tc.types) {
				t.Fatalf("%s, cut %d: events %v, want %v", tc.name, size, rp.types, tc.types)
			}
			if s.Truncated() != tc.truncated {
				t.Fatalf("%s: Truncated() = %v", tc.name, s.Truncated())
			}
			if !tc.truncated {
				if u := gjson.Get(rp.data[len(rp.data)-1], "response.usage.input_tokens").Raw; u != "19" {
					t.Fatalf("%s: usage %s", tc.name, u)
				}
			}
		}
	}
}

// FuzzBridgeStream: whatever an upstream streams, and however it is cut, the converter writes a stream the
// strict replay accepts, the same at every cut.
func FuzzBridgeStream(f *testing.F) {
	f.Add([]byte(bridgeChatEvents(bridgeChatRole, bridgeChatDelta(`{"reasoning_content":"r"}`),
		bridgeChatDelta(`{"content":"a"}`), bridgeChatDelta(`{"refusal":"no"}`),
		bridgeChatToolDelta(`[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]`),
		bridgeChatFinish("length"), bridgeChatUsage, "[DONE]")), uint8(7))
	f.Add([]byte(bridgeChatEvents(bridgeAzurePromptAnnotations, bridgeChatCutError, "[DONE]")), uint8(1))
	f.Add([]byte(bridgeChatEvents(bridgeChatToolDelta(`[{"id":"x","function":{"arguments":"1"}},{"index":3}]`))), uint8(3))
	f.Fuzz(func(t *testing.T, input []byte, cut uint8) {
		whole := runBridgeStream(t, nil, string(input), 0)
		replayResponsesStream(t, whole)
		if pieces := runBridgeStream(t, nil, string(input), int(cut)+1); !bytes.Equal(pieces, whole) {
			t.Fatalf("cut %d changed the output", int(cut)+1)
		}
	})
}

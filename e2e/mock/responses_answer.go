package mock

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"
)

// The answer to a valid Responses request: a Response object, or the event stream that builds it. The text
// follows the chat rule of answer.go: "echo: <last user text>", or "echo: <function output>" when the input
// ends with a function_call_output; with function tools offered (and tool_choice not "none") and no output to
// answer, the answer is one function_call of the named or first function with the arguments {"text": <last
// user text>}.

// respAnswer is a Response under construction.
type respAnswer struct {
	id         string
	created    int64
	status     string // completed or incomplete
	incomplete any    // incomplete_details
	output     []obj  // the finished output items
	usage      obj
	// stream: the ids of the items, and what they carry
	msgID, fcID, rsID string
	call              obj // the tool call item, in progress (stream: output_item.added)
}

// EncryptedReasoning is the encrypted_content the mock gives the reasoning item id: opaque to clients, as the
// service's is, and recognisable by tests when a client sends the item back.
func EncryptedReasoning(id string) string { return "gAAAAB-mock-reasoning-of-" + id }

// respID is a Responses identifier: a prefix and 50 hex digits (resp_, msg_, fc_).
func (c *call) respID(prefix string, salt uint64) string {
	return prefix + c.hexID(salt) + c.hexID(salt + 1)[:18]
}

// answerResponses serves a valid Responses request.
func (c *call) answerResponses() {
	o, req := c.body, c.resp
	w := want{n: 1, obfuscation: true, model: c.reportedModel(), stream: o.boolean("stream")}
	if so := o.sub("stream_options"); so != nil && so.kind("include_obfuscation") == "boolean" {
		w.obfuscation = so.boolean("include_obfuscation")
	}
	if n, ok := o.integer("max_output_tokens"); ok {
		w.maxTokens = n
	}
	if s := o.str("instructions"); s != "" {
		w.promptTokens += 3 + words(s)
	}
	for _, it := range req.history {
		w.promptTokens += 3 + words(itemText(it))
	}
	last := ""
	if n := len(req.history); n > 0 {
		it, _ := parseObject(req.history[n-1])
		last = it.str("type")
	}
	switch last {
	case "function_call_output", "custom_tool_call_output", "tool_search_output":
		w.text = itemText(req.history[len(req.history)-1])
	default:
		for i := len(req.history) - 1; i >= 0; i-- {
			it, _ := parseObject(req.history[i])
			if it.str("type") == "message" && it.str("role") == "user" {
				w.text = itemText(req.history[i])
				break
			}
		}
		w.tool = c.responsesTool()
		if sc, ok := parseMockCall(w.text); ok {
			if err := c.scriptedResponses(sc, &w); err != nil {
				c.invalid("", "", err.Error())
				return
			}
		} else if _, ok := parseMockAnswer(w.text); ok {
			w.tool = "" // the scripted text, even with tools offered
		}
		w.reasoning, _ = parseMockReasoning(w.text)
	}
	r := c.makeReply(w)
	a := c.buildResponse(w, r)
	if o.kind("store") != "boolean" || o.boolean("store") {
		c.p.store(a.id, req.history, a.output)
	}
	if w.stream {
		c.sendStream(c.responseEvents(a, w, r))
		return
	}
	c.sendJSON(c.responseObject(a, a.status, a.output, a.usage))
}

// responsesTool names the function the answer calls: tool_choice's function, else the first function tool,
// unless tool_choice is "none" or no function is offered.
func (c *call) responsesTool() string {
	o, fns := c.body, c.resp.functions
	if len(fns) == 0 || o.str("tool_choice") == "none" {
		return ""
	}
	if tc := o.sub("tool_choice"); tc != nil && tc.str("type") == "function" {
		return tc.str("name")
	}
	return fns[0]
}

func (c *call) buildResponse(w want, r reply) *respAnswer {
	a := &respAnswer{
		id: c.respID("resp_", 30), created: time.Now().Unix(), status: "completed",
		msgID: c.respID("msg_", 32), fcID: c.respID("fc_", 34),
	}
	if w.tool != "" {
		a.call = c.callItem(w, r, a)
		done := slices.Clone(a.call)
		done = set(done, "status", "completed")
		switch w.toolKind {
		case "custom":
			done = set(done, "input", r.args)
		case "tool_search":
		default:
			done = set(done, "arguments", r.args)
		}
		a.output = []obj{done}
	} else {
		status := "completed"
		if r.finish == "length" {
			status, a.status = "incomplete", "incomplete"
			a.incomplete = obj{{"reason", "max_output_tokens"}}
		}
		a.output = []obj{{{"id", a.msgID}, {"type", "message"}, {"status", status},
			{"content", []obj{textPart(r.text())}}, {"role", "assistant"}}}
	}
	if w.reasoning != "" {
		// A reasoning model's item comes first (openai-node ResponseReasoningItem). encrypted_content, asked for
		// with include (Codex does, with store false), is opaque to the client, which sends the item back
		// verbatim on its next turn: the mock's token names the item, so a test can tell it came back intact.
		a.rsID = c.respID("rs_", 36)
		item := obj{{"id", a.rsID}, {"type", "reasoning"},
			{"summary", []obj{{{"type", "summary_text"}, {"text", w.reasoning}}}}}
		if slices.ContainsFunc(c.body.array("include"), func(v json.RawMessage) bool {
			return string(v) == `"reasoning.encrypted_content"`
		}) {
			item = append(item, kv{"encrypted_content", EncryptedReasoning(a.rsID)})
		}
		a.output = append([]obj{item}, a.output...)
	}
	out := r.completionTokens(w)
	a.usage = obj{{"input_tokens", w.promptTokens}, {"input_tokens_details", obj{{"cached_tokens", 0}}},
		{"output_tokens", out}, {"output_tokens_details", obj{{"reasoning_tokens", 0}}},
		{"total_tokens", w.promptTokens + out}}
	return a
}

// callItem is the output item of a tool call, in progress: a function_call (with the namespace of a namespace
// member), a custom_tool_call, or a client tool_search_call (docs/agent-clients.md A2-A4; openai-node
// ResponseFunctionToolCall, ResponseCustomToolCall, ResponseToolSearchCall).
func (c *call) callItem(w want, r reply, a *respAnswer) obj {
	switch w.toolKind {
	case "custom":
		a.fcID = c.respID("ctc_", 34)
		it := obj{{"id", a.fcID}, {"type", "custom_tool_call"}, {"status", "in_progress"}, {"call_id", r.callID},
			{"name", w.tool}, {"input", ""}}
		if w.namespace != "" {
			it = append(it, kv{"namespace", w.namespace})
		}
		return it
	case "tool_search":
		// The arguments are an object, whole from the start: no delta events are known for them (mock).
		a.fcID = c.respID("tsc_", 34)
		return obj{{"id", a.fcID}, {"type", "tool_search_call"}, {"status", "in_progress"}, {"call_id", r.callID},
			{"execution", "client"}, {"arguments", rawJSON(r.args)}}
	}
	it := obj{{"id", a.fcID}, {"type", "function_call"}, {"status", "in_progress"}, {"arguments", ""},
		{"call_id", r.callID}, {"name", w.tool}}
	if w.namespace != "" {
		it = append(it, kv{"namespace", w.namespace})
	}
	return it
}

// pieces cuts s into pieces of about n bytes, never inside a UTF-8 character (each piece is a JSON string).
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(len(s), n)
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func textPart(text string) obj {
	return obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
}

// echo is a request member as sent, or def when it is absent or null.
func (c *call) echo(k string, def any) any {
	if k := c.body.kind(k); k == "" || k == "null" {
		return def
	}
	return json.RawMessage(c.body.m[k])
}

// responseObject is the Response in status, with the request's settings echoed, defaults filled in.
func (c *call) responseObject(a *respAnswer, status string, output, usage any) obj {
	var completedAt, incomplete any
	if status != "in_progress" {
		incomplete = a.incomplete
		if status == "completed" {
			completedAt = time.Now().Unix()
		}
	}
	tier := c.echo("service_tier", "default")
	if c.body.str("service_tier") == "auto" {
		tier = "default"
	}
	store := true
	if c.body.kind("store") == "boolean" {
		store = c.body.boolean("store")
	}
	reasoning := obj{{"effort", nil}, {"summary", nil}}
	text := c.echo("text", obj{{"format", obj{{"type", "text"}}}, {"verbosity", "medium"}})
	return obj{
		{"id", a.id}, {"object", "response"}, {"created_at", a.created}, {"status", status},
		{"background", false}, {"completed_at", completedAt}, {"error", nil}, {"incomplete_details", incomplete},
		{"instructions", c.echo("instructions", nil)}, {"max_output_tokens", c.echo("max_output_tokens", nil)},
		{"max_tool_calls", c.echo("max_tool_calls", nil)}, {"model", c.reportedModel()}, {"output", output},
		{"parallel_tool_calls", c.echo("parallel_tool_calls", true)},
		{"previous_response_id", c.echo("previous_response_id", nil)},
		{"prompt_cache_key", c.echo("prompt_cache_key", nil)},
		{"reasoning", c.echo("reasoning", reasoning)}, {"safety_identifier", c.echo("safety_identifier", nil)},
		{"service_tier", tier}, {"store", store}, {"temperature", c.echo("temperature", 1.0)}, {"text", text},
		{"tool_choice", c.echo("tool_choice", "auto")}, {"tools", c.echo("tools", []any{})},
		{"top_logprobs", c.echo("top_logprobs", 0)}, {"top_p", c.echo("top_p", 1.0)},
		{"truncation", c.echo("truncation", "disabled")}, {"usage", usage}, {"user", c.echo("user", nil)},
		{"metadata", c.echo("metadata", obj{})},
	}
}

// responseEvents is the Responses event stream of an answer: created and in_progress, the output items
// (added, their parts or arguments in pieces, done), then completed or incomplete; sequence_number counts
// from 0 over every event. sseBytes writes each with its event: line and no [DONE].
func (c *call) responseEvents(a *respAnswer, w want, r reply) []obj {
	var events []obj
	ev := func(typ string, rest ...kv) {
		events = append(events, append(obj{{"type", typ}, {"sequence_number", len(events)}}, rest...))
	}
	obfuscation := func(e *[]kv) {
		if w.obfuscation {
			c.chunks++
			*e = append(*e, kv{"obfuscation", c.token(1000+c.chunks, 10)})
		}
	}
	ev("response.created", kv{"response", c.responseObject(a, "in_progress", []any{}, nil)})
	ev("response.in_progress", kv{"response", c.responseObject(a, "in_progress", []any{}, nil)})
	for i, item := range a.output {
		switch {
		case item[1].v == "reasoning":
			// The summary's part and text events (openai-node responses.ts ResponseReasoningSummary*Event).
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", obj{{"id", a.rsID}, {"type", "reasoning"},
				{"summary", []any{}}}})
			at := func(more ...kv) []kv {
				return append([]kv{{"item_id", a.rsID}, {"output_index", i}, {"summary_index", 0}}, more...)
			}
			part := func(text string) obj { return obj{{"type", "summary_text"}, {"text", text}} }
			ev("response.reasoning_summary_part.added", at(kv{"part", part("")})...)
			for _, p := range pieces(w.reasoning, 7) {
				ev("response.reasoning_summary_text.delta", at(kv{"delta", p})...)
			}
			ev("response.reasoning_summary_text.done", at(kv{"text", w.reasoning})...)
			ev("response.reasoning_summary_part.done", at(kv{"part", part(w.reasoning)})...)
		case w.toolKind == "custom":
			// response.custom_tool_call_input.delta and .done (openai-node responses.ts l.2633, l.2663)
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", a.call})
			for _, p := range pieces(r.args, 7) {
				rest := []kv{{"item_id", a.fcID}, {"output_index", i}, {"delta", p}}
				obfuscation(&rest)
				ev("response.custom_tool_call_input.delta", rest...)
			}
			ev("response.custom_tool_call_input.done", kv{"item_id", a.fcID}, kv{"output_index", i}, kv{"input", r.args})
		case w.toolKind == "tool_search":
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", a.call})
		case w.tool != "":
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", a.call})
			for _, p := range pieces(r.args, 7) {
				rest := []kv{{"item_id", a.fcID}, {"output_index", i}, {"delta", p}}
				obfuscation(&rest)
				ev("response.function_call_arguments.delta", rest...)
			}
			ev("response.function_call_arguments.done", kv{"item_id", a.fcID}, kv{"output_index", i},
				kv{"name", w.tool}, kv{"arguments", r.args})
		default:
			ev("response.output_item.added", kv{"output_index", i}, kv{"item", obj{{"id", a.msgID},
				{"type", "message"}, {"status", "in_progress"}, {"content", []any{}}, {"role", "assistant"}}})
			at := func(more ...kv) []kv {
				return append([]kv{{"item_id", a.msgID}, {"output_index", i}, {"content_index", 0}}, more...)
			}
			ev("response.content_part.added", at(kv{"part", textPart("")})...)
			for _, p := range r.pieces {
				rest := at(kv{"delta", p}, kv{"logprobs", []any{}})
				obfuscation(&rest)
				ev("response.output_text.delta", rest...)
			}
			ev("response.output_text.done", at(kv{"text", r.text()}, kv{"logprobs", []any{}})...)
			ev("response.content_part.done", at(kv{"part", textPart(r.text())})...)
		}
		ev("response.output_item.done", kv{"output_index", i}, kv{"item", item})
	}
	terminal := "response.completed"
	if a.status == "incomplete" {
		terminal = "response.incomplete"
	}
	ev(terminal, kv{"response", c.responseObject(a, a.status, a.output, a.usage)})
	return events
}

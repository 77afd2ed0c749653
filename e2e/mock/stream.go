package mock

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"time"
	"unicode/utf8"
)

// writePause separates the stream's writes so that they reach the client (or Envoy) as separate chunks.
const writePause = time.Millisecond

// streamEvents builds the data payloads of a stream (without the final [DONE]).
func (c *call) streamEvents(w want, r reply) []obj {
	if c.op == opCompletions {
		return c.completionChunks(w, r)
	}
	return c.chatChunks(w, r)
}

// chunkHead is the fields every chunk of a chat or completions stream starts with, in the dialect's order.
type chunkHead struct {
	id      string
	created int64
	model   string
	object  string
}

func (c *call) chunk(h chunkHead, w want, choices []obj) obj {
	switch c.dialect() {
	case OpenAI:
		ch := obj{{"id", h.id}, {"object", h.object}, {"created", h.created}, {"model", h.model}}
		if h.object == "chat.completion.chunk" {
			ch = append(ch, kv{"service_tier", "default"})
		}
		ch = append(ch, kv{"system_fingerprint", c.fingerprint()}, kv{"choices", choices})
		if w.includeUsage {
			ch = append(ch, kv{"usage", nil})
		}
		if w.obfuscation && h.object == "chat.completion.chunk" {
			c.chunks++
			ch = append(ch, kv{"obfuscation", c.token(1000+c.chunks, 6)})
		}
		return ch
	case AzureOpenAI:
		ch := obj{{"choices", choices}, {"created", h.created}, {"id", h.id}, {"model", h.model},
			{"object", h.object}, {"system_fingerprint", c.fingerprint()}}
		if w.includeUsage {
			ch = append(ch, kv{"usage", nil})
		}
		return ch
	case AzureAI:
		return obj{{"id", h.id}, {"object", h.object}, {"created", h.created}, {"model", h.model}, {"choices", choices}}
	}
	ch := obj{{"id", h.id}, {"object", h.object}, {"created", h.created}, {"model", h.model}, {"choices", choices}}
	if w.includeUsage {
		ch = append(ch, kv{"usage", nil})
	}
	return ch
}

// set replaces (or appends) a member of a chunk.
func set(o obj, k string, v any) obj {
	for i := range o {
		if o[i].k == k {
			o[i].v = v
			return o
		}
	}
	return append(o, kv{k, v})
}

// chatChoice is one choice of a chat chunk in the dialect's order.
func (c *call) chatChoice(i int, delta obj, finish any) obj {
	switch c.dialect() {
	case AzureOpenAI:
		ch := obj{{"delta", delta}, {"finish_reason", finish}, {"index", i}, {"logprobs", nil}}
		if finish == nil && len(delta) == 1 && delta[0].k == "content" {
			return append(obj{{"content_filter_results", obj{{"hate", safe}, {"self_harm", safe}, {"sexual", safe}, {"violence", safe}}}}, ch...)
		}
		return append(obj{{"content_filter_results", obj{}}}, ch...)
	case AzureAI:
		return obj{{"index", i}, {"delta", delta}, {"finish_reason", finish}}
	case EternalAI:
		return obj{{"index", i}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}, {"stop_reason", nil}}
	}
	return obj{{"index", i}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}
}

// perChoice builds one chunk's choices, the same for each of the n choices.
func (c *call) perChoice(w want, delta obj, finish any) []obj {
	out := make([]obj, w.n)
	for i := range out {
		out[i] = c.chatChoice(i, delta, finish)
	}
	return out
}

func (c *call) chatChunks(w want, r reply) []obj {
	d := c.dialect()
	object := "chat.completion.chunk"
	if d == AzureAI {
		object = "chat.completion" // the spec's streaming enum (docs/dialects.md section 3); clients see it normalised
	}
	h := chunkHead{id: c.responseID(), created: time.Now().Unix(), model: w.model, object: object}
	usage := c.usage(w.promptTokens, r.completionTokens(w))
	var events []obj
	if d == AzureOpenAI {
		events = append(events, obj{{"choices", []any{}}, {"created", 0}, {"id", ""}, {"model", ""}, {"object", ""},
			{"prompt_filter_results", promptFilterResults()}})
	}

	// first chunk: the role
	var role obj
	switch d {
	case AzureOpenAI:
		role = obj{{"content", ""}, {"refusal", nil}, {"role", "assistant"}}
	case AzureAI, EternalAI:
		role = obj{{"role", "assistant"}, {"content", ""}}
	default:
		role = obj{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}
	}
	if w.tool != "" && d != AzureAI {
		// OpenAI style: the call's id and name with the role, then the arguments in pieces, with index.
		role = set(role, "content", nil)
		first := obj{{"index", 0}, {"id", r.callID}, {"type", "function"}, {"function", obj{{"name", w.tool}, {"arguments", ""}}}}
		if w.toolKind == "custom" {
			first = obj{{"index", 0}, {"id", r.callID}, {"type", "custom"}, {"custom", obj{{"name", w.tool}, {"input", ""}}}}
		}
		role = append(role, kv{"tool_calls", []obj{first}})
	}
	if w.reasoning == "" {
		events = append(events, c.chunk(h, w, c.perChoice(w, role, nil)))
	} else {
		// The thinking streams first, with the role, in deltas of its own; a call's first fragment follows it.
		var call obj
		for i := 0; i < len(role); i++ {
			if role[i].k == "tool_calls" {
				call = obj{role[i]}
				role = append(role[:i:i], role[i+1:]...)
			}
		}
		for i, p := range pieces(w.reasoning, 7) {
			delta := obj{{"reasoning_content", p}}
			if i == 0 {
				delta = append(role, delta...)
			}
			events = append(events, c.chunk(h, w, c.perChoice(w, delta, nil)))
		}
		if call != nil {
			events = append(events, c.chunk(h, w, c.perChoice(w, call, nil)))
		}
	}

	switch {
	case w.tool != "" && d == AzureAI:
		// Azure AI's streaming tool-call delta has id and function but no index (docs/dialects.md section 3).
		tc := []obj{{{"id", r.callID}, {"type", "function"}, {"function", obj{{"name", w.tool}, {"arguments", r.args}}}}}
		events = append(events, c.chunk(h, w, c.perChoice(w, obj{{"tool_calls", tc}}, nil)))
	case w.tool != "":
		for _, p := range pieces(r.args, 7) {
			tc := []obj{{{"index", 0}, {"function", obj{{"arguments", p}}}}}
			if w.toolKind == "custom" {
				tc = []obj{{{"index", 0}, {"custom", obj{{"input", p}}}}}
			}
			events = append(events, c.chunk(h, w, c.perChoice(w, obj{{"tool_calls", tc}}, nil)))
		}
	default:
		for _, p := range r.pieces {
			events = append(events, c.chunk(h, w, c.perChoice(w, obj{{"content", p}}, nil)))
		}
	}

	// the finish chunk
	var finishDelta obj
	if d == AzureAI {
		finishDelta = obj{{"content", ""}}
	}
	finish := c.chunk(h, w, c.perChoice(w, finishDelta, r.finish))
	if d == AzureAI {
		finish = append(finish, kv{"usage", usage}) // usage arrives with finish_reason, no opt-in
	}
	events = append(events, finish)
	if w.includeUsage && d != AzureAI {
		u := c.chunk(h, w, []obj{})
		u = set(u, "usage", usage)
		if d == OpenAI && w.obfuscation {
			u = set(u, "obfuscation", c.token(99, 6))
		}
		events = append(events, u)
	}
	if d == AzureOpenAI {
		events = append(events, c.asyncFilterAnnotation(len(r.text())))
	}
	if d == EternalAI {
		events[len(events)-1] = append(events[len(events)-1], kv{"onchain_data", c.onchainData()})
	}
	return events
}

// asyncFilterAnnotation is the annotation chunk the asynchronous content filter sends after the last token.
func (c *call) asyncFilterAnnotation(end int) obj {
	return obj{{"choices", []obj{{
		{"content_filter_offsets", obj{{"check_offset", 0}, {"start_offset", 0}, {"end_offset", end}}},
		{"content_filter_results", obj{{"hate", safe}, {"self_harm", safe}, {"sexual", safe}, {"violence", safe}}},
		{"finish_reason", nil}, {"index", 0},
	}}}, {"created", 0}, {"id", ""}, {"model", ""}, {"object", ""}}
}

func (c *call) completionChoice(i int, text string, finish any) obj {
	switch c.dialect() {
	case AzureOpenAI:
		cfr := obj{}
		if text != "" {
			cfr = obj{{"hate", safe}, {"self_harm", safe}, {"sexual", safe}, {"violence", safe}}
		}
		return obj{{"content_filter_results", cfr}, {"finish_reason", finish}, {"index", i}, {"logprobs", nil}, {"text", text}}
	case AzureAI:
		return obj{{"index", i}, {"text", text}, {"finish_reason", finish}}
	case EternalAI:
		return obj{{"text", text}, {"index", i}, {"logprobs", nil}, {"finish_reason", finish}, {"stop_reason", nil}}
	}
	return obj{{"text", text}, {"index", i}, {"logprobs", nil}, {"finish_reason", finish}}
}

func (c *call) completionChunks(w want, r reply) []obj {
	d := c.dialect()
	h := chunkHead{id: c.responseID(), created: time.Now().Unix(), model: w.model, object: "text_completion"}
	choices := func(text string, finish any) []obj {
		out := make([]obj, w.n)
		for i := range out {
			out[i] = c.completionChoice(i, text, finish)
		}
		return out
	}
	usage := c.usage(w.promptTokens, r.completionTokens(w))
	var events []obj
	if d == AzureOpenAI {
		events = append(events, obj{{"choices", []any{}}, {"created", 0}, {"id", ""}, {"model", ""}, {"object", ""},
			{"prompt_filter_results", promptFilterResults()}})
	}
	for _, p := range r.pieces {
		events = append(events, c.chunk(h, w, choices(p, nil)))
	}
	finish := c.chunk(h, w, choices("", r.finish))
	if d == AzureAI {
		finish = append(finish, kv{"usage", usage})
	}
	events = append(events, finish)
	if w.includeUsage && d != AzureAI {
		events = append(events, set(c.chunk(h, w, []obj{}), "usage", usage))
	}
	if d == AzureOpenAI {
		events = append(events, c.asyncFilterAnnotation(len(r.text())))
	}
	if d == EternalAI {
		events[len(events)-1] = append(events[len(events)-1], kv{"onchain_data", c.onchainData()})
	}
	return events
}

// sseBytes renders the events as data-only SSE, with [DONE] unless x-mock-fail is no-done, and returns the
// offsets where each event starts. A Responses stream names each event in an event: line (its type) and
// ends without [DONE].
func (c *call) sseBytes(events []obj) ([]byte, []int) {
	var b bytes.Buffer
	var starts []int
	for _, e := range events {
		starts = append(starts, b.Len())
		if c.op == opResponses {
			b.WriteString("event: " + e[0].v.(string) + "\n")
		}
		b.WriteString("data: ")
		b.Write(marshal(e))
		b.WriteString("\n\n")
	}
	if c.fail != "no-done" && c.op != opResponses {
		starts = append(starts, b.Len())
		b.WriteString("data: [DONE]\n\n")
	}
	return b.Bytes(), starts
}

// cutPoints chooses where the stream's writes end: inside the "data:" prefix, between the two newlines that
// end an event, inside a multi-byte UTF-8 character (or mid-JSON), and sometimes not at all so that one
// write carries several events.
func cutPoints(stream []byte, starts []int) []int {
	var cuts []int
	for i, s := range starts {
		end := len(stream)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		ev := stream[s:end]
		switch i % 4 {
		case 0:
			cuts = append(cuts, s+3) // "dat|a: "
		case 1:
			cuts = append(cuts, end-1) // "}\n|\n"
		case 2:
			at := len(ev) / 2
			for j := 0; j < len(ev); j++ {
				if ev[j] >= utf8.RuneSelf { // split a multi-byte character after its first byte
					at = j + 1
					break
				}
			}
			cuts = append(cuts, s+at)
		case 3:
			// no cut: this event and the next share a write
		}
	}
	return append(cuts, len(stream))
}

// sendStream writes the events as an SSE stream in several flushed writes, damaged as x-mock-fail asks:
// cut-stream (stops halfway through an event in the middle of the stream), no-done (no [DONE]; a Responses
// stream has none anyway),
// gzip (the stream is gzip-compressed, Content-Encoding: gzip).
func (c *call) sendStream(events []obj) {
	stream, starts := c.sseBytes(events)
	cuts := cutPoints(stream, starts)
	if c.fail == "cut-stream" {
		k := len(events) / 2
		stop := starts[k] + (starts[k+1]-starts[k])/2
		kept := cuts[:0]
		for _, x := range cuts {
			if x < stop {
				kept = append(kept, x)
			}
		}
		cuts = append(kept, stop)
	}

	h := c.w.Header()
	c.commonHeaders()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	var out io.Writer = c.w
	var gz *gzip.Writer
	if c.fail == "gzip" {
		h.Set("Content-Encoding", "gzip")
		gz = gzip.NewWriter(c.w)
		out = gz
	}
	rc := http.NewResponseController(c.w)
	c.w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	prev := 0
	for _, x := range cuts {
		if x <= prev {
			continue
		}
		if _, err := out.Write(stream[prev:x]); err != nil {
			return
		}
		if gz != nil {
			_ = gz.Flush()
		}
		_ = rc.Flush()
		prev = x
		time.Sleep(writePause)
	}
	if gz != nil && c.fail != "cut-stream" {
		_ = gz.Close()
		_ = rc.Flush()
	}
}

package mock

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hugeSize is the size of the content x-mock-fail: huge-event adds (one SSE event of about 2 MiB).
const hugeSize = 2 << 20

// defaultDimensions is the embedding length when the request sets no dimensions (text-embedding-3-small).
const defaultDimensions = 1536

// want is what a valid request asks for, read once from its body.
type want struct {
	model        string // reported in the answer
	stream       bool
	includeUsage bool
	obfuscation  bool
	n            int
	maxTokens    int // 0: no limit
	text         string
	tool         string // tool to call; "" answers with text
	toolKind     string // the tool's kind: function ("" too), custom, tool_search (Responses, client execution)
	namespace    string // Responses: the namespace holding the tool
	args         string // a scripted call's arguments (JSON text) or custom input; "" makes {"text": text}
	scriptErr    error  // a mock-call line the request's tools cannot follow
	reasoning    string // a mock-reasoning line's text: the answer's reasoning
	promptTokens int
	inputs       []string // embeddings
	dimensions   int
	encoding     string
}

// splitmix64 gives deterministic, random-looking identifiers.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// token is an n-character alphanumeric string derived from the request's sequence number, the dialect and a
// salt: the first answers of two providers get different ids, as from real services (a filter deriving its
// own ids from the upstream's relies on that).
func (c *call) token(salt uint64, n int) string {
	b := make([]byte, n)
	x := splitmix64(c.seq*1_000_003 + salt + c.p.idSalt)
	for i := range b {
		if i%8 == 0 {
			x = splitmix64(x)
		}
		b[i] = alnum[x%uint64(len(alnum))]
		x /= uint64(len(alnum))
	}
	return string(b)
}

// hexID is a bare 32-digit hex identifier (Azure AI's ids, UUID material).
func (c *call) hexID(salt uint64) string {
	salt += c.p.idSalt
	return fmt.Sprintf("%016x%016x", splitmix64(c.seq*7919+salt), splitmix64(c.seq*104729+salt))
}

func (c *call) uuid(salt uint64) string {
	h := c.hexID(salt)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// responseID is the answer's id in the dialect's style.
func (c *call) responseID() string {
	switch {
	case c.dialect() == AzureAI:
		return c.hexID(1)
	case c.op == opCompletions:
		return "cmpl-" + c.token(1, 29)
	}
	return "chatcmpl-" + c.token(1, 29)
}

func (c *call) fingerprint() string {
	if c.dialect() == AzureOpenAI {
		return "fp_ee1d74bde0"
	}
	return "fp_f33640a400"
}

// commonHeaders sets the response headers each service sends on every answer.
func (c *call) commonHeaders() {
	h := c.w.Header()
	switch c.dialect() {
	case OpenAI:
		h.Set("x-request-id", "req_"+c.hexID(2))
		h.Set("openai-version", "2020-10-01")
		h.Set("openai-processing-ms", "42")
		org := c.r.Header.Get("OpenAI-Organization")
		if org == "" {
			org = "user-mock"
		}
		h.Set("openai-organization", org)
		h.Set("x-ratelimit-limit-requests", "10000")
		h.Set("x-ratelimit-remaining-requests", "9999")
		h.Set("x-ratelimit-reset-requests", "6ms")
		h.Set("x-ratelimit-limit-tokens", "30000000")
		h.Set("x-ratelimit-remaining-tokens", "29999990")
		h.Set("x-ratelimit-reset-tokens", "0s")
	case AzureOpenAI:
		h.Set("apim-request-id", c.uuid(3))
		h.Set("x-request-id", c.uuid(4))
		h.Set("x-ms-region", "East US")
		h.Set("x-ratelimit-remaining-requests", "99")
		h.Set("x-ratelimit-remaining-tokens", "99000")
	case AzureAI:
		h.Set("apim-request-id", c.uuid(3))
		h.Set("x-request-id", c.uuid(4))
	}
	if c.dialect() == AzureOpenAI || c.dialect() == AzureAI {
		if id := c.r.Header.Get("x-ms-client-request-id"); id != "" {
			h.Set("x-ms-client-request-id", id)
		}
	}
}

// words counts whitespace-separated words, at least one.
func words(s string) int { return max(1, len(strings.Fields(s))) }

// contentText reads a message content: a string, or the text parts of an array.
func contentText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(v, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// want reads the answer-relevant parts of a validated body.
func (c *call) want() want {
	o, d := c.body, c.dialect()
	w := want{n: 1, obfuscation: true, dimensions: defaultDimensions, encoding: "float"}
	w.stream = o.boolean("stream")
	if so := o.sub("stream_options"); so != nil {
		w.includeUsage = so.boolean("include_usage")
		if so.kind("include_obfuscation") == "boolean" {
			w.obfuscation = so.boolean("include_obfuscation")
		}
	}
	if d != AzureAI {
		if n, ok := o.integer("n"); ok && n > 1 {
			w.n = n
		}
	}
	w.model = c.reportedModel()

	switch c.op {
	case opChat:
		for _, k := range []string{"max_tokens", "max_completion_tokens"} {
			if n, ok := o.integer(k); ok && n > 0 && (d != AzureAI || k == "max_tokens") {
				w.maxTokens = n
			}
		}
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(o.m["messages"], &msgs)
		for _, m := range msgs {
			w.promptTokens += 3 + words(contentText(m.Content))
		}
		if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
			w.text = contentText(msgs[len(msgs)-1].Content)
		} else {
			for i := len(msgs) - 1; i >= 0; i-- {
				if msgs[i].Role == "user" {
					w.text = contentText(msgs[i].Content)
					break
				}
			}
			w.tool, w.toolKind = toolToCall(o)
			if w.toolKind == "custom" {
				w.args = w.text // a custom tool takes free text
			}
			if sc, ok := parseMockCall(w.text); ok {
				w.scriptErr = c.scriptedChat(sc, &w)
			} else if _, ok := parseMockAnswer(w.text); ok {
				w.tool, w.toolKind, w.args = "", "", "" // the scripted text, even with tools offered
			}
			if text, ok := parseMockReasoning(w.text); ok && sendsReasoningContent(d) {
				w.reasoning = text
			}
		}
	case opCompletions:
		w.maxTokens = 16 // OpenAI, Azure OpenAI (and EternalAI, OpenAI-like) default
		if d == AzureAI {
			w.maxTokens = 256
		}
		if n, ok := o.integer("max_tokens"); ok {
			w.maxTokens = n
		}
		var prompt any
		_ = json.Unmarshal(o.m["prompt"], &prompt)
		switch p := prompt.(type) {
		case string:
			w.text = p
		case []any:
			if len(p) > 0 {
				if s, ok := p[0].(string); ok {
					w.text = s
				} else {
					w.text = "[tokens]"
				}
			}
		}
		w.promptTokens = words(w.text)
	case opEmbeddings:
		var input any
		_ = json.Unmarshal(o.m["input"], &input)
		switch in := input.(type) {
		case string:
			w.inputs = []string{in}
		case []any:
			if len(in) > 0 {
				if _, tokens := in[0].(float64); tokens {
					w.inputs = []string{fmt.Sprint(in)}
					break
				}
			}
			for _, e := range in {
				s, ok := e.(string)
				if !ok {
					s = fmt.Sprint(e)
				}
				w.inputs = append(w.inputs, s)
			}
		}
		for _, s := range w.inputs {
			w.promptTokens += words(s)
		}
		if n, ok := o.integer("dimensions"); ok {
			w.dimensions = n
		}
		if f := o.str("encoding_format"); f != "" {
			w.encoding = f
		}
	}
	return w
}

// toolToCall names the tool a chat answer calls, and its type (function or custom): the named tool_choice,
// else the first tool, unless tool_choice is "none" or there are no tools.
func toolToCall(o *object) (name, kind string) {
	tools := o.array("tools")
	if len(tools) == 0 || o.str("tool_choice") == "none" {
		return "", ""
	}
	if tc := o.sub("tool_choice"); tc != nil {
		for _, k := range []string{"function", "custom"} {
			if f := tc.sub(k); f != nil && f.str("name") != "" {
				return f.str("name"), k
			}
		}
	}
	t, err := parseObject(tools[0])
	if err != nil {
		return "", ""
	}
	for _, k := range []string{"function", "custom"} {
		if f := t.sub(k); f != nil && f.str("name") != "" {
			return f.str("name"), k
		}
	}
	return "tool", "function"
}

// reportedModel is the model an answer names: Azure OpenAI names the underlying model, never the
// deployment; Azure AI its own (canonical) model name; the others echo the request.
func (c *call) reportedModel() string {
	model := c.body.str("model")
	switch c.dialect() {
	case AzureOpenAI:
		switch c.op {
		case opCompletions:
			return "gpt-35-turbo-instruct"
		case opEmbeddings:
			return "text-embedding-3-small"
		}
		return "gpt-4o-2024-08-06"
	case AzureAI:
		for _, m := range c.p.opts.Models {
			if strings.EqualFold(m, model) {
				return m
			}
		}
		if model != "" {
			return model
		}
		if len(c.p.opts.Models) > 0 {
			return c.p.opts.Models[0]
		}
		if c.op == opEmbeddings {
			return "Cohere-embed-v3-english"
		}
		return "Meta-Llama-3-70B-Instruct"
	}
	return model
}

// reply is the generated answer content.
type reply struct {
	pieces []string // text pieces, one per stream chunk
	finish string
	args   string // tool-call arguments (JSON text) when w.tool != ""
	callID string
}

func (r reply) text() string { return strings.Join(r.pieces, "") }

// makeReply echoes the request's text: "echo: <text>", cut at maxTokens (one piece is one token).
func (c *call) makeReply(w want) reply {
	r := reply{finish: "stop"}
	if w.tool != "" {
		r.finish = "tool_calls"
		r.args = string(marshal(obj{{"text", w.text}}))
		if w.args != "" {
			r.args = w.args
		}
		r.callID = "call_" + c.token(5, 24)
		return r
	}
	text := "echo: " + w.text
	if answer, ok := parseMockAnswer(w.text); ok {
		text = answer
	}
	for _, p := range strings.SplitAfter(text, " ") {
		if p != "" {
			r.pieces = append(r.pieces, p)
		}
	}
	if w.maxTokens > 0 && len(r.pieces) > w.maxTokens {
		r.pieces = r.pieces[:w.maxTokens]
		r.finish = "length"
	}
	if c.fail == "huge-event" {
		r.pieces = slices.Insert(r.pieces, min(1, len(r.pieces)), strings.Repeat("x", hugeSize))
	}
	return r
}

func (r reply) completionTokens(w want) int {
	if w.tool != "" {
		return w.n * words(r.args)
	}
	return w.n * max(1, len(r.pieces))
}

// usage is the usage object in the dialect's style.
func (c *call) usage(prompt, completion int) obj {
	switch c.dialect() {
	case AzureAI:
		return obj{{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}
	case EternalAI:
		return obj{{"prompt_tokens", prompt}, {"total_tokens", prompt + completion}, {"completion_tokens", completion},
			{"prompt_tokens_details", nil}}
	case AzureOpenAI:
		return obj{{"completion_tokens", completion},
			{"completion_tokens_details", obj{{"accepted_prediction_tokens", 0}, {"audio_tokens", 0}, {"reasoning_tokens", 0}, {"rejected_prediction_tokens", 0}}},
			{"prompt_tokens", prompt},
			{"prompt_tokens_details", obj{{"audio_tokens", 0}, {"cached_tokens", 0}}},
			{"total_tokens", prompt + completion}}
	}
	return obj{{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion},
		{"prompt_tokens_details", obj{{"cached_tokens", 0}, {"audio_tokens", 0}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", 0}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}}}
}

// Azure OpenAI content-filter annotations (docs/dialects.md section 2).
var (
	safe     = obj{{"filtered", false}, {"severity", "safe"}}
	detected = obj{{"filtered", false}, {"detected", false}}
)

func promptFilterResults() []obj {
	return []obj{{{"prompt_index", 0}, {"content_filter_results", obj{
		{"hate", safe}, {"jailbreak", detected}, {"self_harm", safe}, {"sexual", safe}, {"violence", safe},
	}}}}
}

func completionFilterResults() obj {
	return obj{{"hate", safe}, {"protected_material_code", detected}, {"protected_material_text", detected},
		{"self_harm", safe}, {"sexual", safe}, {"violence", safe}}
}

// onchainData is EternalAI's on-chain record of the inference (fields from EternalAI's own Go structs).
func (c *call) onchainData() obj {
	addr := func(salt uint64) string { return "0x" + c.hexID(salt)[:32] + c.hexID(salt + 1)[:8] }
	return obj{
		{"infer_id", 100000 + c.seq},
		{"pbft_committee", []string{addr(10), addr(12), addr(14)}},
		{"proposer", addr(12)},
		{"infer_tx", "0x" + c.hexID(20) + c.hexID(21)},
		{"propose_tx", "0x" + c.hexID(22) + c.hexID(23)},
	}
}

// sendsReasoningContent reports whether the dialect's chat answers carry a reasoning model's thinking as
// reasoning_content: Azure AI's (DeepSeek-R1 and its kin in the model catalog) and EternalAI's (it serves
// DeepSeek models behind an OpenAI-like API: mock). OpenAI's and Azure OpenAI's chat APIs return no reasoning
// text.
func sendsReasoningContent(d string) bool { return d == AzureAI || d == EternalAI }

// answer serves a valid request.
func (c *call) answer() {
	if c.op == opResponses {
		c.answerResponses()
		return
	}
	w := c.want()
	if w.scriptErr != nil {
		c.invalid("", "", w.scriptErr.Error())
		return
	}
	if c.op == opEmbeddings {
		c.sendJSON(c.embeddings(w))
		return
	}
	r := c.makeReply(w)
	if w.stream {
		c.sendStream(c.streamEvents(w, r))
		return
	}
	if c.op == opCompletions {
		c.sendJSON(c.completion(w, r))
		return
	}
	c.sendJSON(c.chatCompletion(w, r))
}

func (c *call) toolCalls(w want, r reply) []obj {
	if w.toolKind == "custom" {
		// OpenAI's ChatCompletionMessageCustomToolCall (openai-node chat/completions.ts l.1691)
		return []obj{{{"id", r.callID}, {"type", "custom"}, {"custom", obj{{"name", w.tool}, {"input", r.args}}}}}
	}
	return []obj{{{"id", r.callID}, {"type", "function"}, {"function", obj{{"name", w.tool}, {"arguments", r.args}}}}}
}

func (c *call) chatCompletion(w want, r reply) obj {
	created := time.Now().Unix()
	id := c.responseID()
	usage := c.usage(w.promptTokens, r.completionTokens(w))
	var content any = r.text()
	if w.tool != "" {
		content = nil
	}
	choices := make([]obj, w.n)
	for i := range choices {
		switch c.dialect() {
		case OpenAI:
			msg := obj{{"role", "assistant"}, {"content", content}, {"refusal", nil}, {"annotations", []any{}}}
			if w.tool != "" {
				msg = append(msg, kv{"tool_calls", c.toolCalls(w, r)})
			}
			choices[i] = obj{{"index", i}, {"message", msg}, {"logprobs", nil}, {"finish_reason", r.finish}}
		case AzureOpenAI:
			msg := obj{{"content", content}, {"refusal", nil}, {"role", "assistant"}}
			if w.tool != "" {
				msg = append(msg, kv{"tool_calls", c.toolCalls(w, r)})
			}
			choices[i] = obj{{"content_filter_results", completionFilterResults()}, {"finish_reason", r.finish},
				{"index", i}, {"logprobs", nil}, {"message", msg}}
		case AzureAI:
			msg := obj{{"role", "assistant"}, {"content", content}, {"tool_calls", nil}}
			if w.tool != "" {
				msg[2].v = c.toolCalls(w, r)
			}
			if w.reasoning != "" {
				msg = append(msg, kv{"reasoning_content", w.reasoning})
			}
			choices[i] = obj{{"index", i}, {"finish_reason", r.finish}, {"message", msg}}
		case EternalAI:
			msg := obj{{"role", "assistant"}, {"content", content}, {"tool_calls", []any{}}}
			if w.tool != "" {
				msg[2].v = c.toolCalls(w, r)
			}
			if w.reasoning != "" {
				msg = append(msg, kv{"reasoning_content", w.reasoning})
			}
			choices[i] = obj{{"index", i}, {"message", msg}, {"logprobs", nil}, {"finish_reason", r.finish},
				{"stop_reason", nil}}
		}
	}
	switch c.dialect() {
	case OpenAI:
		return obj{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", w.model},
			{"choices", choices}, {"usage", usage}, {"service_tier", "default"}, {"system_fingerprint", c.fingerprint()}}
	case AzureOpenAI:
		return obj{{"choices", choices}, {"created", created}, {"id", id}, {"model", w.model},
			{"object", "chat.completion"}, {"prompt_filter_results", promptFilterResults()},
			{"system_fingerprint", c.fingerprint()}, {"usage", usage}}
	case AzureAI:
		return obj{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", w.model},
			{"choices", choices}, {"usage", usage}}
	}
	return obj{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", w.model},
		{"choices", choices}, {"usage", usage}, {"prompt_logprobs", nil}, {"onchain_data", c.onchainData()}}
}

func (c *call) completion(w want, r reply) obj {
	created := time.Now().Unix()
	id := c.responseID()
	usage := c.usage(w.promptTokens, r.completionTokens(w))
	choices := make([]obj, w.n)
	for i := range choices {
		switch c.dialect() {
		case AzureOpenAI:
			choices[i] = obj{{"content_filter_results", completionFilterResults()}, {"finish_reason", r.finish},
				{"index", i}, {"logprobs", nil}, {"text", r.text()}}
		case AzureAI:
			choices[i] = obj{{"index", i}, {"text", r.text()}, {"finish_reason", r.finish}}
		default:
			choices[i] = obj{{"text", r.text()}, {"index", i}, {"logprobs", nil}, {"finish_reason", r.finish}}
			if c.dialect() == EternalAI {
				choices[i] = append(choices[i], kv{"stop_reason", nil})
			}
		}
	}
	switch c.dialect() {
	case OpenAI:
		return obj{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", w.model},
			{"choices", choices}, {"usage", usage}, {"system_fingerprint", c.fingerprint()}}
	case AzureOpenAI:
		return obj{{"choices", choices}, {"created", created}, {"id", id}, {"model", w.model},
			{"object", "text_completion"}, {"prompt_filter_results", promptFilterResults()},
			{"system_fingerprint", c.fingerprint()}, {"usage", usage}}
	case AzureAI:
		return obj{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", w.model},
			{"choices", choices}, {"usage", usage}}
	}
	return obj{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", w.model},
		{"choices", choices}, {"usage", usage}, {"onchain_data", c.onchainData()}}
}

// vector is a deterministic unit vector for an input.
func vector(input string, index, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(input))
	x := h.Sum64() + uint64(index)
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x = splitmix64(x)
		f := float64(int64(x>>11))/float64(1<<52) - 1
		v[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// encode renders a vector in an encoding_format.
func encode(v []float32, format string) any {
	switch format {
	case "base64":
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return base64.StdEncoding.EncodeToString(b)
	case "int8", "uint8":
		out := make([]int, len(v))
		for i, f := range v {
			out[i] = int(math.Round(float64(f) * 127))
			if format == "uint8" {
				out[i] += 128
			}
		}
		return out
	case "binary", "ubinary":
		out := make([]int, (len(v)+7)/8)
		for i, f := range v {
			if f > 0 {
				out[i/8] |= 1 << (7 - i%8)
			}
		}
		if format == "binary" {
			for i := range out {
				out[i] -= 128
			}
		}
		return out
	}
	return v
}

func (c *call) embeddings(w want) obj {
	data := make([]obj, len(w.inputs))
	for i, in := range w.inputs {
		data[i] = obj{{"object", "embedding"}, {"index", i}, {"embedding", encode(vector(in, i, w.dimensions), w.encoding)}}
	}
	usage := obj{{"prompt_tokens", w.promptTokens}, {"total_tokens", w.promptTokens}}
	if c.dialect() == AzureAI {
		return obj{{"id", c.hexID(1)}, {"object", "list"}, {"data", data}, {"model", w.model}, {"usage", usage}}
	}
	return obj{{"object", "list"}, {"data", data}, {"model", w.model}, {"usage", usage}}
}

// answerModels answers GET {base}/models (openai).
func (c *call) answerModels() {
	models := c.p.opts.Models
	if len(models) == 0 {
		models = []string{"gpt-4o", "gpt-4o-mini", "text-embedding-3-small"}
	}
	data := make([]obj, len(models))
	for i, m := range models {
		data[i] = obj{{"id", m}, {"object", "model"}, {"created", 1715367049}, {"owned_by", "system"}}
	}
	c.sendJSON(obj{{"object", "list"}, {"data", data}})
}

// answerInfo answers GET {base}/info (azure-ai).
func (c *call) answerInfo() {
	name := "Meta-Llama-3-70B-Instruct"
	if len(c.p.opts.Models) > 0 {
		name = c.p.opts.Models[0]
	}
	c.sendJSON(obj{{"model_name", name}, {"model_type", "chat-completion"}, {"model_provider_name", "Meta"}})
}

// sendJSON writes a 200 JSON answer, damaged as x-mock-fail asks: gzip (compressed, Content-Encoding: gzip)
// or cut-stream (half the body, then the connection ends short of the declared Content-Length).
func (c *call) sendJSON(v any) {
	b := marshal(v)
	h := c.w.Header()
	c.commonHeaders()
	h.Set("Content-Type", "application/json")
	if c.fail == "gzip" {
		var z bytes.Buffer
		gz := gzip.NewWriter(&z)
		_, _ = gz.Write(b)
		_ = gz.Close()
		b = z.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if c.fail == "cut-stream" {
		b = b[:len(b)/2]
	}
	c.w.WriteHeader(http.StatusOK)
	_, _ = c.w.Write(b)
}

package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// parseBody requires a JSON object (valid UTF-8, no repeated top-level key).
func (c *call) parseBody() bool {
	if !utf8.Valid(c.raw) {
		c.invalid("", "", "We could not parse the JSON body of your request. (mock: the body is not valid UTF-8)")
		return false
	}
	o, err := parseObject(c.raw)
	if err != nil {
		msg := "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
		if errors.Is(err, errDuplicateKey) {
			// Real services take one of the two; the filter must never produce a repeated key: mock 400.
			msg = "mock: the JSON body repeats a top-level key " + strings.TrimPrefix(err.Error(), errDuplicateKey.Error()+" ")
		}
		if c.dialect() == AzureAI {
			c.aiErr(http.StatusBadRequest, "BadRequest", msg)
		} else {
			c.invalid("", "", msg)
		}
		return false
	}
	c.body = o
	return true
}

// OpenAI's embeddings request has additionalProperties: false (docs/dialects.md section 1).
var openAIEmbeddingFields = []string{"model", "input", "encoding_format", "dimensions", "user"}

// azureAIKnown returns Azure AI's known parameters for an operation and api-version (docs/dialects.md section 3,
// "Known parameters"); anything else is an extra parameter.
func azureAIKnown(op operation, apiVersion string) []string {
	switch op {
	case opChat:
		known := []string{"messages", "frequency_penalty", "presence_penalty", "temperature", "top_p",
			"max_tokens", "response_format", "stop", "stream", "tools", "tool_choice", "seed", "model"}
		if apiVersion[:10] >= "2025-04-01" {
			known = append(known, "modalities") // added in 2025-04-01
		}
		return known
	case opEmbeddings:
		return []string{"input", "dimensions", "encoding_format", "input_type", "model"}
	case opCompletions:
		return []string{"prompt", "frequency_penalty", "max_tokens", "presence_penalty", "seed", "stop",
			"stream", "temperature", "top_p", "model"}
	}
	return nil
}

// validate applies the dialect's body rules.
func (c *call) validate() bool {
	if c.op == opResponses {
		return c.validateResponses()
	}
	o, d := c.body, c.dialect()

	// chain_id belongs to EternalAI (a string); anyone else answers as OpenAI does for an unknown argument.
	if o.has("chain_id") {
		if d != EternalAI {
			return c.unrecognized("chain_id")
		}
		if k := o.kind("chain_id"); k != "string" {
			return c.typeErr("chain_id", "a string", k)
		}
	}
	if d == OpenAI {
		// Azure OpenAI's own request fields: OpenAI rejects unknown arguments.
		for _, f := range []string{"data_sources", "user_security_context"} {
			if o.has(f) {
				return c.unrecognized(f)
			}
		}
		if c.op == opEmbeddings {
			for _, k := range o.keys {
				if !slices.Contains(openAIEmbeddingFields, k) {
					return c.unrecognized(k)
				}
			}
		}
	}
	if d == AzureAI && !c.checkExtraParameters() {
		return false
	}

	// model
	if k := o.kind("model"); k != "" && k != "string" {
		return c.typeErr("model", "a string", k)
	}
	model := o.str("model")
	needModel := d == OpenAI || d == EternalAI || (d == AzureOpenAI && c.v1)
	if needModel && model == "" {
		c.invalid("", "", "you must provide a model parameter")
		return false
	}

	if k := o.kind("stream"); k != "" && k != "boolean" && k != "null" {
		return c.typeErr("stream", "a boolean", k)
	}
	if d == OpenAI && o.has("stream_options") && o.kind("stream_options") != "null" && !o.boolean("stream") {
		c.invalid("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		return false
	}

	if !c.checkOperationFields() {
		return false
	}

	// the model or deployment must exist
	switch d {
	case OpenAI, EternalAI:
		if len(c.p.opts.Models) > 0 && !slices.Contains(c.p.opts.Models, model) {
			c.errModelNotFound(model)
			return false
		}
	case AzureOpenAI:
		if c.v1 && len(c.p.opts.Deployments) > 0 && !slices.Contains(c.p.opts.Deployments, model) {
			c.errDeploymentNotFound()
			return false
		}
	case AzureAI:
		if model != "" && len(c.p.opts.Models) > 0 &&
			!slices.ContainsFunc(c.p.opts.Models, func(m string) bool { return strings.EqualFold(m, model) }) {
			// Services endpoints choose the deployment by body model; mock wording.
			c.aiErr(http.StatusBadRequest, "unknown_model", "Unknown model: "+model)
			return false
		}
	}
	return true
}

// checkExtraParameters applies Azure AI's extra-parameters header to the fields outside the known set.
func (c *call) checkExtraParameters() bool {
	vals := c.r.Header.Values("Extra-Parameters")
	if len(vals) > 1 {
		c.aiErr(http.StatusBadRequest, "BadRequest", "mock: extra-parameters is given more than once")
		return false
	}
	mode := "error"
	if len(vals) == 1 {
		mode = vals[0]
	}
	switch mode {
	case "error", "drop", "pass-through":
	case "ignore":
		if c.apiVersion != "2024-04-01-preview" {
			c.aiErr(http.StatusBadRequest, "BadRequest", "Invalid value for header extra-parameters: 'ignore'. Allowed values are 'pass-through', 'drop' and 'error'.")
			return false
		}
	default:
		c.aiErr(http.StatusBadRequest, "BadRequest", fmt.Sprintf("Invalid value for header extra-parameters: '%s'. Allowed values are 'pass-through', 'drop' and 'error'.", mode))
		return false
	}
	known := azureAIKnown(c.op, c.apiVersion)
	var extra []string
	for _, k := range c.body.keys {
		if !slices.Contains(known, k) {
			extra = append(extra, "'"+k+"'")
		}
	}
	if len(extra) > 0 && mode == "error" {
		c.aiErr(http.StatusBadRequest, "BadRequest", fmt.Sprintf("Extra parameters [%s] are not allowed when extra-parameters is not set or set to be 'error'. Set extra-parameters to 'pass-through' to pass to the model.", strings.Join(extra, ", ")))
		return false
	}
	if mode == "drop" || mode == "ignore" {
		for _, k := range extra {
			delete(c.body.m, strings.Trim(k, "'"))
		}
		c.body.keys = slices.DeleteFunc(c.body.keys, func(k string) bool { return !slices.Contains(known, k) })
	}
	return true
}

// checkOperationFields checks the operation's required fields and the dialect's type rules.
func (c *call) checkOperationFields() bool {
	o, d := c.body, c.dialect()
	switch c.op {
	case opChat:
		msgs := o.array("messages")
		if !o.has("messages") {
			return c.missing("messages")
		}
		if o.kind("messages") != "array" {
			return c.typeErr("messages", "an array", o.kind("messages"))
		}
		if len(msgs) == 0 {
			return c.badValue("messages", json.RawMessage("[]"), "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
		}
		for i, m := range msgs {
			mo, err := parseObject(m)
			if err != nil || mo.kind("role") != "string" {
				return c.badValue("messages", m, fmt.Sprintf("Invalid 'messages[%d]': each message must be an object with a string 'role'.", i))
			}
			if !c.checkHistoryToolCalls(i, mo) {
				return false
			}
		}
		if !c.checkChatTools() {
			return false
		}
	case opCompletions:
		if !o.has("prompt") || o.kind("prompt") == "null" {
			return c.missing("prompt")
		}
	case opEmbeddings:
		if !o.has("input") || o.kind("input") == "null" {
			return c.missing("input")
		}
		if d == AzureAI {
			in := o.array("input")
			ok := len(in) > 0
			for _, e := range in {
				ok = ok && kindOf(e) == "string"
			}
			if !ok {
				// the spec's input is an array of strings (docs/dialects.md section 3)
				return c.badValue("input", json.RawMessage(o.m["input"]), "")
			}
		}
		formats := []string{"float", "base64"}
		if d == AzureAI {
			formats = []string{"base64", "binary", "float", "int8", "ubinary", "uint8"}
		}
		if o.has("encoding_format") && !slices.Contains(formats, o.str("encoding_format")) {
			return c.badValue("encoding_format", json.RawMessage(o.m["encoding_format"]),
				fmt.Sprintf("Invalid value for 'encoding_format': expected one of %s.", strings.Join(formats, ", ")))
		}
		if o.has("dimensions") {
			if n, ok := o.integer("dimensions"); !ok || n < 1 || n > 4096 {
				return c.badValue("dimensions", json.RawMessage(o.m["dimensions"]), "Invalid value for 'dimensions': expected an integer between 1 and 4096 (mock bound).")
			}
		}
	}
	if d != AzureAI && (c.op == opChat || c.op == opCompletions) && o.has("n") && o.kind("n") != "null" {
		if n, ok := o.integer("n"); !ok || n < 1 || n > 128 {
			return c.badValue("n", json.RawMessage(o.m["n"]), "Invalid 'n': expected an integer between 1 and 128.")
		}
	}
	if d == AzureAI && o.has("stop") && o.kind("stop") != "null" {
		stop := o.array("stop")
		ok := len(stop) > 0
		for _, e := range stop {
			ok = ok && kindOf(e) == "string"
		}
		if !ok {
			// stop is an array of strings only (minItems 1) in Azure AI (docs/dialects.md section 3)
			return c.badValue("stop", json.RawMessage(o.m["stop"]), "")
		}
	}
	return true
}

// missing reports a required field that is absent.
func (c *call) missing(field string) bool {
	if c.dialect() == AzureAI {
		// Not documented; Azure AI validates bodies FastAPI-style with 422 (docs/dialects.md section 3): mock code.
		c.aiUnprocessable("missing", []string{"body", field}, nil)
		return false
	}
	c.invalid(field, "missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", field))
	return false
}

// typeErr reports a field of the wrong JSON type.
func (c *call) typeErr(field, want, got string) bool {
	if c.dialect() == AzureAI {
		c.aiUnprocessable("invalid_type", []string{"body", field}, json.RawMessage(c.body.m[field]))
		return false
	}
	c.invalid(field, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", field, want, an(got)))
	return false
}

// badValue reports a field whose value is not allowed.
func (c *call) badValue(field string, input any, message string) bool {
	if c.dialect() == AzureAI {
		c.aiUnprocessable("invalid_value", []string{"body", field}, input)
		return false
	}
	c.invalid(field, "invalid_value", message)
	return false
}

// chatToolTypes are the tool types a dialect's Chat Completions takes. OpenAI's takes function and custom tools
// (openai-node chat/completions.ts ChatCompletionFunctionTool and ChatCompletionCustomTool l.1420: {type:
// "custom", custom: {name, description?, format?: {type: "text"} | {type: "grammar", grammar: {definition,
// syntax}}}}). Azure OpenAI's chat: function only (mock: not verified; no Azure page on custom tools was
// found). Azure AI's spec and EternalAI's (OpenAI's older shapes) have function tools only.
func (c *call) chatToolTypes() []string {
	if c.dialect() == OpenAI {
		return []string{"function", "custom"}
	}
	return []string{"function"}
}

// chatToolName is the shape of a chat tool's name: at most 64 characters of [a-zA-Z0-9_-] (OpenAI's
// FunctionObject.name; Azure OpenAI and Azure AI copy it, EternalAI is OpenAI-like).
func (c *call) checkChatToolName(p, name string) bool {
	if len(name) > 64 {
		return c.badValue(p, name, fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", p, len(name)))
	}
	if !functionName.MatchString(name) {
		return c.badValue(p, name, fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", p))
	}
	return true
}

// checkChatTools: each tool is {type: function, function: {name, ...}} or, toward OpenAI, {type: custom,
// custom: {name, description?, format?}}; tool_choice names an offered tool of its type.
func (c *call) checkChatTools() bool {
	o := c.body
	if !o.has("tools") || o.kind("tools") == "null" {
		return true
	}
	if o.kind("tools") != "array" {
		return c.typeErr("tools", "an array", o.kind("tools"))
	}
	types := c.chatToolTypes()
	names := map[string]string{} // name -> type
	for i, raw := range o.array("tools") {
		p := fmt.Sprintf("tools[%d]", i)
		t, err := parseObject(raw)
		if err != nil {
			return c.badValue("tools", json.RawMessage(raw), fmt.Sprintf("Invalid '%s': expected an object.", p))
		}
		typ := t.str("type")
		if !slices.Contains(types, typ) {
			return c.badValue(p+".type", typ, fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", typ, supported(types)))
		}
		def := t.sub(typ)
		if def == nil || def.kind("name") != "string" {
			return c.missing(p + "." + typ + ".name")
		}
		if !c.checkChatToolName(p+"."+typ+".name", def.str("name")) {
			return false
		}
		if typ == "custom" && !c.checkChatCustomFormat(p, def) {
			return false
		}
		names[def.str("name")] = typ
	}
	if tc := o.sub("tool_choice"); tc != nil {
		typ := tc.str("type")
		if typ == "custom" || typ == "function" {
			if !slices.Contains(types, typ) {
				return c.badValue("tool_choice.type", typ, fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", typ, supported(types)))
			}
			name := ""
			if def := tc.sub(typ); def != nil {
				name = def.str("name")
			}
			if names[name] != typ {
				return c.badValue("tool_choice", json.RawMessage(o.m["tool_choice"]), fmt.Sprintf("Invalid value for 'tool_choice': no %s tool named '%s' is in 'tools'.", typ, name))
			}
		}
	}
	return true
}

// checkChatCustomFormat: custom.format is absent, {type: text}, or {type: grammar, grammar: {definition,
// syntax: lark | regex}}: the grammar sits one level deeper than in the Responses API.
func (c *call) checkChatCustomFormat(p string, def *object) bool {
	if !def.has("format") || def.kind("format") == "null" {
		return true
	}
	f := def.sub("format")
	if f == nil {
		return c.typeErr(p+".custom.format", "an object", def.kind("format"))
	}
	switch typ := f.str("type"); typ {
	case "text":
	case "grammar":
		g := f.sub("grammar")
		if g == nil {
			return c.missing(p + ".custom.format.grammar")
		}
		if syntax := g.str("syntax"); syntax != "lark" && syntax != "regex" {
			return c.badValue(p+".custom.format.grammar.syntax", syntax, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'lark' and 'regex'.", syntax))
		}
		if g.kind("definition") != "string" {
			return c.missing(p + ".custom.format.grammar.definition")
		}
	default:
		return c.badValue(p+".custom.format.type", typ, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text' and 'grammar'.", typ))
	}
	return true
}

// checkHistoryToolCalls: an assistant message's tool_calls are {id, type: function, function: {name,
// arguments}} or, toward OpenAI, {id, type: custom, custom: {name, input}} (openai-node chat/completions.ts
// ChatCompletionMessageCustomToolCall l.1691).
func (c *call) checkHistoryToolCalls(i int, m *object) bool {
	if m.str("role") != "assistant" || !m.has("tool_calls") || m.kind("tool_calls") == "null" {
		return true
	}
	types := c.chatToolTypes()
	for j, raw := range m.array("tool_calls") {
		p := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
		tc, err := parseObject(raw)
		if err != nil {
			return c.badValue("messages", json.RawMessage(raw), fmt.Sprintf("Invalid '%s': expected an object.", p))
		}
		typ := tc.str("type")
		if !slices.Contains(types, typ) {
			return c.badValue(p+".type", typ, fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", typ, supported(types)))
		}
		if tc.sub(typ) == nil {
			return c.missing(p + "." + typ)
		}
	}
	return true
}

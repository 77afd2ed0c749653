package mock

// The Responses API (POST /v1/responses) of openai and of azure-openai (v1 surface /openai/v1/responses,
// classic surface /openai/responses?api-version=2025-03-01-preview or later, the body model naming the
// deployment on both): the request rules and the small store that previous_response_id and item_reference
// resolve against. responses_answer.go builds the Response and its event stream. Facts come from the OpenAI
// API reference (openapi.yaml: CreateResponse, InputItem, Tool) and the Azure OpenAI Responses how-to; every
// choice not found there is marked "mock".

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// responsesFields are CreateResponse's members; the service refuses any other top-level field with 400
// unknown_parameter. That includes client_metadata, which the Codex CLI sends on every turn: it is not in the
// public schema (openai-node ResponseCreateParams), and the services answer "Unknown parameter:
// 'client_metadata'." (SEMOSS/Semoss PR #2532, https://github.com/SEMOSS/Semoss/pull/2532, for OpenAI;
// 9router issue #1157 quoting OpenAI's 400; for Azure OpenAI, LiteLLM's "AzureException BadRequestError -
// Unknown parameter: 'client_metadata'" reported with gpt-5.6-sol).
var responsesFields = []string{
	"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "max_output_tokens",
	"temperature", "top_p", "top_logprobs", "stream", "stream_options", "store", "previous_response_id",
	"conversation", "reasoning", "include", "background", "truncation", "metadata", "user", "safety_identifier",
	"prompt_cache_key", "prompt_cache_retention", "service_tier", "max_tool_calls", "prompt",
	"context_management", "moderation", "prompt_cache_options",
}

// movedInResponses are Chat Completions fields the Responses API names differently.
var movedInResponses = map[string]string{
	"messages":              "input",
	"max_tokens":            "max_output_tokens",
	"max_completion_tokens": "max_output_tokens",
	"response_format":       "text.format",
	"reasoning_effort":      "reasoning.effort",
	"verbosity":             "text.verbosity",
}

// Enumerations of the request (OpenAI API reference).
var (
	responsesIncludes = []string{"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
		"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
		"reasoning.encrypted_content", "message.output_text.logprobs"}
	responsesToolTypes = []string{"function", "custom", "file_search", "web_search", "web_search_2025_08_26",
		"web_search_preview", "web_search_preview_2025_03_11", "computer_use_preview", "computer", "code_interpreter",
		"image_generation", "mcp", "local_shell", "shell", "apply_patch", "tool_search", "namespace"}
	responsesToolChoiceTypes = []string{"function", "allowed_tools", "custom", "mcp", "file_search", "web_search",
		"web_search_preview", "web_search_preview_2025_03_11", "computer_use_preview", "computer", "code_interpreter",
		"image_generation", "apply_patch", "shell"}
	responsesItemTypes = []string{"message", "function_call", "function_call_output", "reasoning", "item_reference",
		"custom_tool_call", "custom_tool_call_output", "computer_call", "computer_call_output", "web_search_call",
		"file_search_call", "image_generation_call", "code_interpreter_call", "local_shell_call",
		"local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
		"mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "mcp_call", "compaction",
		"tool_search_call", "tool_search_output", "additional_tools"}
	responsesRoles       = []string{"user", "assistant", "system", "developer"}
	inputPartTypes       = []string{"input_text", "input_image", "input_file"}
	assistantPartTypes   = []string{"output_text", "refusal"}
	responsesServiceTier = []string{"auto", "default", "flex", "scale", "priority"}
)

// functionName is the shape of a function tool's name.
var functionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// supported renders an enumeration the way the service lists it: 'a', 'b', and 'c'.
func supported(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	switch len(q) {
	case 1:
		return q[0]
	case 2:
		return q[0] + " and " + q[1]
	}
	return strings.Join(q[:len(q)-1], ", ") + ", and " + q[len(q)-1]
}

// respRequest is a valid Responses request, read once.
type respRequest struct {
	// history is the conversation the answer continues: the previous response's (its input and output), then
	// this request's input items, item references resolved. Each is a JSON object.
	history []json.RawMessage
	// input is this request's input items (resolved), which a stored response keeps after the previous ones.
	input []json.RawMessage
	// functions are the names of the top-level function tools offered.
	functions []string
	// tools are the tools the model may call, namespace members included.
	tools []offeredTool
}

// respErr writes a Responses body-validation error (OpenAI's envelope; Azure OpenAI validates Responses
// bodies the same way) and returns false.
func (c *call) respErr(param, code, message string) bool {
	c.invalid(param, code, message)
	return false
}

func (c *call) respMissing(param string) bool {
	return c.respErr(param, "missing_required_parameter", fmt.Sprintf("Missing required parameter: '%s'.", param))
}

func (c *call) respType(param, want string, v json.RawMessage) bool {
	return c.respErr(param, "invalid_type", fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", param, want, an(kindOf(v))))
}

func (c *call) respEnum(param, got string, values []string) bool {
	return c.respErr(param, "invalid_value", fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", got, supported(values)))
}

// optional reports whether member k is absent or null, or of one of the kinds; otherwise it writes the
// type error.
func (c *call) optional(o *object, prefix, k, want string, kinds ...string) bool {
	kind := o.kind(k)
	if kind == "" || kind == "null" || slices.Contains(kinds, kind) || (kind == "integer" && slices.Contains(kinds, "number")) {
		return true
	}
	return c.respType(prefix+k, want, o.m[k])
}

// validateResponses applies CreateResponse's rules and resolves the conversation; c.resp holds the result.
func (c *call) validateResponses() bool {
	o := c.body
	for _, k := range o.keys {
		if slices.Contains(responsesFields, k) {
			continue
		}
		if to, ok := movedInResponses[k]; ok {
			return c.respErr(k, "unsupported_parameter", fmt.Sprintf("Unsupported parameter: '%s'. In the Responses API, this parameter has moved to '%s'. Try again with the new parameter. See the API documentation for more information: https://platform.openai.com/docs/api-reference/responses/create.", k, to))
		}
		return c.respErr(k, "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s'.", k))
	}

	// scalars
	if o.kind("model") == "" || o.kind("model") == "null" {
		return c.respMissing("model")
	}
	if o.kind("model") != "string" {
		return c.respType("model", "a string", o.m["model"])
	}
	for _, k := range []string{"stream", "store", "background", "parallel_tool_calls"} {
		if !c.optional(o, "", k, "a boolean", "boolean") {
			return false
		}
	}
	for _, k := range []string{"instructions", "previous_response_id", "user", "safety_identifier", "prompt_cache_key"} {
		if !c.optional(o, "", k, "a string", "string") {
			return false
		}
	}
	for _, k := range []string{"temperature", "top_p"} {
		if !c.optional(o, "", k, "a decimal", "number") {
			return false
		}
	}
	for _, k := range []string{"max_output_tokens", "top_logprobs", "max_tool_calls"} {
		if !c.optional(o, "", k, "an integer", "integer") {
			return false
		}
	}
	if !c.checkRange("temperature", 0, 2) || !c.checkRange("top_p", 0, 1) || !c.checkRange("top_logprobs", 0, 20) ||
		!c.checkRange("max_tool_calls", 1, 1<<30) {
		return false
	}
	if n, ok := o.integer("max_output_tokens"); ok && n < 16 {
		return c.respErr("max_output_tokens", "integer_below_min_value", fmt.Sprintf("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got %d instead.", n))
	}
	if v := o.str("truncation"); o.kind("truncation") != "" && o.kind("truncation") != "null" && v != "auto" && v != "disabled" {
		return c.respEnum("truncation", v, []string{"auto", "disabled"})
	}
	if v := o.str("service_tier"); o.kind("service_tier") != "" && o.kind("service_tier") != "null" && !slices.Contains(responsesServiceTier, v) {
		return c.respEnum("service_tier", v, responsesServiceTier)
	}
	if !c.checkStreamOptions() || !c.checkMetadata() || !c.checkInclude() || !c.checkText() || !c.checkReasoning() {
		return false
	}

	// features the mock has no state for
	if o.kind("previous_response_id") == "string" && o.has("conversation") && o.kind("conversation") != "null" {
		return c.respErr("", "mutually_exclusive_parameters", "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.")
	}
	if o.boolean("background") {
		return c.respErr("background", "", "mock: background responses are not served by the mock (it answers every request synchronously)")
	}
	if o.has("conversation") && o.kind("conversation") != "null" {
		// The mock serves no Conversations API: every conversation id is unknown (mock wording).
		c.openaiErr(http.StatusNotFound, "invalid_request_error", "Conversation not found (mock: the mock keeps no conversations).", "conversation", "")
		return false
	}
	if o.has("prompt") && o.kind("prompt") != "null" {
		c.openaiErr(http.StatusNotFound, "invalid_request_error", "Prompt not found (mock: the mock keeps no prompts).", "prompt", "")
		return false
	}

	req := &respRequest{}
	if !c.checkTools(req) || !c.checkToolChoice(req) || !c.checkInput(req) {
		return false
	}

	// the model or deployment must exist
	model := o.str("model")
	switch c.dialect() {
	case OpenAI:
		if len(c.p.opts.Models) > 0 && !slices.Contains(c.p.opts.Models, model) {
			return c.respErr("model", "model_not_found", fmt.Sprintf("The requested model '%s' does not exist.", model))
		}
	case AzureOpenAI:
		if len(c.p.opts.Deployments) > 0 && !slices.Contains(c.p.opts.Deployments, model) {
			c.errDeploymentNotFound()
			return false
		}
	}

	// Last, what needs the store (mock/golden_test.go relies on these coming after every other check): the
	// previous response, the referenced items, then the pairing of calls and outputs over the conversation.
	if id := o.str("previous_response_id"); id != "" {
		prev, ok := c.p.storedConversation(id)
		if !ok {
			return c.respErr("previous_response_id", "previous_response_not_found", fmt.Sprintf("Previous response with id '%s' not found.", id))
		}
		req.history = prev
	}
	for i, raw := range req.input {
		it, _ := parseObject(raw)
		if it.str("type") != "item_reference" {
			continue
		}
		id := it.str("id")
		item, ok := c.p.storedItem(id)
		if !ok {
			c.openaiErr(http.StatusNotFound, "invalid_request_error",
				fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id), "input", "")
			return false
		}
		req.input[i] = item
	}
	req.history = append(req.history, req.input...)
	if !c.checkPairs(req.history) {
		return false
	}
	c.resp = req
	return true
}

// checkRange bounds a numeric member.
func (c *call) checkRange(k string, lo, hi float64) bool {
	kind := c.body.kind(k)
	var f float64
	if (kind != "number" && kind != "integer") || json.Unmarshal(c.body.m[k], &f) != nil || (f >= lo && f <= hi) {
		return true
	}
	noun := "decimal"
	if kind == "integer" {
		noun = "integer"
	}
	if f < lo {
		return c.respErr(k, noun+"_below_min_value", fmt.Sprintf("Invalid '%s': %s below minimum value. Expected a value >= %g, but got %s instead.", k, noun, lo, c.body.m[k]))
	}
	return c.respErr(k, noun+"_above_max_value", fmt.Sprintf("Invalid '%s': %s above maximum value. Expected a value <= %g, but got %s instead.", k, noun, hi, c.body.m[k]))
}

// checkStreamOptions: stream_options takes include_obfuscation only, and only with stream: true.
func (c *call) checkStreamOptions() bool {
	o := c.body
	if !o.has("stream_options") || o.kind("stream_options") == "null" {
		return true
	}
	so := o.sub("stream_options")
	if so == nil {
		return c.respType("stream_options", "an object", o.m["stream_options"])
	}
	if !o.boolean("stream") {
		return c.respErr("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	for _, k := range so.keys {
		if k != "include_obfuscation" {
			// include_usage is Chat Completions': a Responses stream always ends with its usage.
			return c.respErr("stream_options."+k, "unknown_parameter", fmt.Sprintf("Unknown parameter: 'stream_options.%s'.", k))
		}
	}
	return c.optional(so, "stream_options.", "include_obfuscation", "a boolean", "boolean")
}

// checkMetadata: up to 16 string pairs, keys up to 64 characters, values up to 512.
func (c *call) checkMetadata() bool {
	o := c.body
	if !o.has("metadata") || o.kind("metadata") == "null" {
		return true
	}
	md := o.sub("metadata")
	if md == nil {
		return c.respType("metadata", "an object", o.m["metadata"])
	}
	if len(md.keys) > 16 {
		return c.respErr("metadata", "object_above_max_properties", fmt.Sprintf("Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but got an object with %d properties instead.", len(md.keys)))
	}
	for _, k := range md.keys {
		if md.kind(k) != "string" {
			return c.respType("metadata."+k, "a string", md.m[k])
		}
		if len(k) > 64 || len(md.str(k)) > 512 {
			return c.respErr("metadata."+k, "string_above_max_length", fmt.Sprintf("Invalid 'metadata.%s': string too long (keys up to 64 characters, values up to 512).", k))
		}
	}
	return true
}

func (c *call) checkInclude() bool {
	o := c.body
	if !o.has("include") || o.kind("include") == "null" {
		return true
	}
	if o.kind("include") != "array" {
		return c.respType("include", "an array", o.m["include"])
	}
	for i, e := range o.array("include") {
		var s string
		if json.Unmarshal(e, &s) != nil {
			return c.respType(fmt.Sprintf("include[%d]", i), "a string", e)
		}
		if !slices.Contains(responsesIncludes, s) {
			return c.respEnum(fmt.Sprintf("include[%d]", i), s, responsesIncludes)
		}
	}
	return true
}

// checkText: text.format is {type: text | json_object | json_schema (flat: name and schema beside type)}.
func (c *call) checkText() bool {
	o := c.body
	if !o.has("text") || o.kind("text") == "null" {
		return true
	}
	t := o.sub("text")
	if t == nil {
		return c.respType("text", "an object", o.m["text"])
	}
	for _, k := range t.keys {
		if k != "format" && k != "verbosity" {
			return c.respErr("text."+k, "unknown_parameter", fmt.Sprintf("Unknown parameter: 'text.%s'.", k))
		}
	}
	if v := t.str("verbosity"); t.kind("verbosity") != "" && t.kind("verbosity") != "null" && !slices.Contains([]string{"low", "medium", "high"}, v) {
		return c.respEnum("text.verbosity", v, []string{"low", "medium", "high"})
	}
	if !t.has("format") || t.kind("format") == "null" {
		return true
	}
	f := t.sub("format")
	if f == nil {
		return c.respType("text.format", "an object", t.m["format"])
	}
	switch typ := f.str("type"); typ {
	case "text", "json_object":
	case "json_schema":
		if f.has("json_schema") {
			// Chat Completions nests the schema under json_schema; the Responses form is flat.
			return c.respErr("text.format.json_schema", "unknown_parameter", "Unknown parameter: 'text.format.json_schema'.")
		}
		if f.kind("name") != "string" {
			return c.respMissing("text.format.name")
		}
		if f.kind("schema") != "object" {
			return c.respMissing("text.format.schema")
		}
	case "":
		return c.respMissing("text.format.type")
	default:
		return c.respEnum("text.format.type", typ, []string{"text", "json_schema", "json_object"})
	}
	return true
}

func (c *call) checkReasoning() bool {
	o := c.body
	if !o.has("reasoning") || o.kind("reasoning") == "null" {
		return true
	}
	r := o.sub("reasoning")
	if r == nil {
		return c.respType("reasoning", "an object", o.m["reasoning"])
	}
	efforts := []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	if v := r.str("effort"); r.kind("effort") != "" && r.kind("effort") != "null" && !slices.Contains(efforts, v) {
		return c.respEnum("reasoning.effort", v, efforts)
	}
	summaries := []string{"auto", "concise", "detailed"}
	if v := r.str("summary"); r.kind("summary") != "" && r.kind("summary") != "null" && !slices.Contains(summaries, v) {
		return c.respEnum("reasoning.summary", v, summaries)
	}
	return true
}

// offeredTool is a tool the model may call: a function or custom tool, at the top level or inside a namespace,
// or the client-run tool_search.
type offeredTool struct {
	kind      string // function, custom or tool_search
	name      string
	namespace string // the namespace holding it; "" at the top level
}

// checkTools: each tool is an object with a known type. A function tool is flat ({type, name, parameters,
// strict, description}), so a Chat Completions tool ({type, function: {...}}) lacks its name. The shapes of the
// agent clients' tools follow openai-node's src/resources/responses/responses.ts (NamespaceTool l.971,
// CustomTool l.658, ToolSearchTool l.9603; at 7b7d6ca, 2026-08-21) and shared.ts (CustomToolInputFormat l.162).
func (c *call) checkTools(req *respRequest) bool {
	o := c.body
	if !o.has("tools") || o.kind("tools") == "null" {
		return true
	}
	if o.kind("tools") != "array" {
		return c.respType("tools", "an array", o.m["tools"])
	}
	return c.checkToolList(req, "tools", o.array("tools"))
}

// checkToolList checks the tools of an array at place (the request's tools, or an additional_tools item's).
func (c *call) checkToolList(req *respRequest, place string, tools []json.RawMessage) bool {
	for i, raw := range tools {
		p := fmt.Sprintf("%s[%d]", place, i)
		t, err := parseObject(raw)
		if err != nil {
			return c.respType(p, "an object", raw)
		}
		typ := t.str("type")
		if typ == "" {
			return c.respMissing(p + ".type")
		}
		if !slices.Contains(responsesToolTypes, typ) {
			return c.respEnum(p+".type", typ, responsesToolTypes)
		}
		switch typ {
		case "function", "custom":
			if !c.checkNamedTool(req, p, t, "") {
				return false
			}
		case "namespace":
			if !c.checkNamespaceTool(req, p, t) {
				return false
			}
		case "tool_search":
			if !c.optional(t, p+".", "description", "a string", "string") || !c.optional(t, p+".", "parameters", "an object", "object") {
				return false
			}
			execution := t.str("execution")
			if t.kind("execution") != "" && t.kind("execution") != "null" && execution != "server" && execution != "client" {
				return c.respEnum(p+".execution", execution, []string{"server", "client"})
			}
			if execution == "client" {
				req.tools = append(req.tools, offeredTool{kind: "tool_search", name: "tool_search"})
			}
		case "web_search", "web_search_2025_08_26":
			// Codex sends {"type":"web_search","external_web_access":true} and, for a catalogued model,
			// "search_content_types":["text","image"] (docs/agent-clients.md A5).
			if !c.optional(t, p+".", "external_web_access", "a boolean", "boolean") ||
				!c.optional(t, p+".", "search_content_types", "an array", "array") {
				return false
			}
		}
	}
	return true
}

// checkNamespaceTool: {type: namespace, name, description, tools: [function or custom tools]}; a namespace only
// groups tools the client runs (the call carries the namespace beside the member's own name).
func (c *call) checkNamespaceTool(req *respRequest, p string, t *object) bool {
	if t.kind("name") != "string" {
		return c.respMissing(p + ".name")
	}
	if name := t.str("name"); !functionName.MatchString(name) {
		return c.respErr(p+".name", "invalid_value", fmt.Sprintf("Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", p))
	}
	if t.kind("description") != "string" {
		return c.respMissing(p + ".description")
	}
	if t.kind("tools") != "array" {
		if t.kind("tools") == "" {
			return c.respMissing(p + ".tools")
		}
		return c.respType(p+".tools", "an array", t.m["tools"])
	}
	members := t.array("tools")
	if len(members) == 0 {
		return c.respErr(p+".tools", "empty_array", fmt.Sprintf("Invalid '%s.tools': empty array. Expected an array with minimum length 1, but got an empty array instead.", p))
	}
	for j, raw := range members {
		mp := fmt.Sprintf("%s.tools[%d]", p, j)
		m, err := parseObject(raw)
		if err != nil {
			return c.respType(mp, "an object", raw)
		}
		switch typ := m.str("type"); typ {
		case "function", "custom":
			if !c.checkNamedTool(req, mp, m, t.str("name")) {
				return false
			}
		case "":
			return c.respMissing(mp + ".type")
		default:
			return c.respEnum(mp+".type", typ, []string{"function", "custom"})
		}
	}
	return true
}

// checkNamedTool checks a function tool ({type, name, parameters?, strict?, description?, defer_loading?}) or a
// custom tool ({type, name, description?, format?: {type: text} | {type: grammar, syntax: lark|regex,
// definition}}) and records it.
func (c *call) checkNamedTool(req *respRequest, p string, t *object, namespace string) bool {
	typ := t.str("type")
	if typ == "function" && t.has("function") {
		return c.respErr(p+".function", "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s.function'.", p))
	}
	if typ == "custom" && t.has("custom") {
		// Chat Completions nests the custom tool under custom; the Responses form is flat.
		return c.respErr(p+".custom", "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s.custom'.", p))
	}
	if t.kind("name") != "string" {
		return c.respMissing(p + ".name")
	}
	name := t.str("name")
	if !functionName.MatchString(name) {
		return c.respErr(p+".name", "invalid_value", fmt.Sprintf("Invalid '%s.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", p))
	}
	if !c.optional(t, p+".", "description", "a string", "string") || !c.optional(t, p+".", "defer_loading", "a boolean", "boolean") {
		return false
	}
	if typ == "function" {
		if !c.optional(t, p+".", "parameters", "an object", "object") || !c.optional(t, p+".", "strict", "a boolean", "boolean") {
			return false
		}
	} else if !c.checkCustomFormat(p, t) {
		return false
	}
	for _, o := range req.tools {
		if o.name == name && o.namespace == namespace && o.kind != "tool_search" {
			return c.respErr("tools", "invalid_value", fmt.Sprintf("Duplicate tool name: '%s'.", name))
		}
	}
	req.tools = append(req.tools, offeredTool{kind: typ, name: name, namespace: namespace})
	if typ == "function" && namespace == "" {
		req.functions = append(req.functions, name)
	}
	return true
}

// checkCustomFormat: a custom tool's format is absent, {type: text}, or {type: grammar, syntax: lark | regex,
// definition: string}.
func (c *call) checkCustomFormat(p string, t *object) bool {
	if !t.has("format") || t.kind("format") == "null" {
		return true
	}
	f := t.sub("format")
	if f == nil {
		return c.respType(p+".format", "an object", t.m["format"])
	}
	switch typ := f.str("type"); typ {
	case "text":
	case "grammar":
		if f.has("grammar") {
			// Chat Completions nests {definition, syntax} under grammar; the Responses form is flat.
			return c.respErr(p+".format.grammar", "unknown_parameter", fmt.Sprintf("Unknown parameter: '%s.format.grammar'.", p))
		}
		if syntax := f.str("syntax"); syntax != "lark" && syntax != "regex" {
			if f.kind("syntax") == "" {
				return c.respMissing(p + ".format.syntax")
			}
			return c.respEnum(p+".format.syntax", syntax, []string{"lark", "regex"})
		}
		if f.kind("definition") != "string" {
			return c.respMissing(p + ".format.definition")
		}
	case "":
		return c.respMissing(p + ".format.type")
	default:
		return c.respEnum(p+".format.type", typ, []string{"text", "grammar"})
	}
	return true
}

func (c *call) checkToolChoice(req *respRequest) bool {
	o := c.body
	switch o.kind("tool_choice") {
	case "", "null":
		return true
	case "string":
		v := o.str("tool_choice")
		if !slices.Contains([]string{"none", "auto", "required"}, v) {
			return c.respEnum("tool_choice", v, []string{"none", "auto", "required"})
		}
		return true
	case "object":
	default:
		return c.respType("tool_choice", "an object", o.m["tool_choice"])
	}
	tc := o.sub("tool_choice")
	typ := tc.str("type")
	if !slices.Contains(responsesToolChoiceTypes, typ) {
		return c.respEnum("tool_choice.type", typ, responsesToolChoiceTypes)
	}
	if typ == "custom" {
		name := tc.str("name")
		if name == "" {
			return c.respMissing("tool_choice.name")
		}
		if !slices.ContainsFunc(req.tools, func(t offeredTool) bool { return t.kind == "custom" && t.name == name }) {
			return c.respErr("tool_choice", "invalid_value", fmt.Sprintf("Tool choice 'custom' not found in 'tools' parameter. (name '%s')", name))
		}
	}
	if typ == "function" {
		if tc.has("function") {
			// Chat Completions' {type, function: {name}}.
			return c.respErr("tool_choice.function", "unknown_parameter", "Unknown parameter: 'tool_choice.function'.")
		}
		name := tc.str("name")
		if name == "" {
			return c.respMissing("tool_choice.name")
		}
		if !slices.Contains(req.functions, name) {
			return c.respErr("tool_choice", "invalid_value", fmt.Sprintf("Tool choice 'function' not found in 'tools' parameter. (name '%s')", name))
		}
	}
	return true
}

// checkInput validates the input: a string, or an array of items.
func (c *call) checkInput(req *respRequest) bool {
	o := c.body
	switch o.kind("input") {
	case "", "null":
		if o.kind("previous_response_id") != "string" {
			return c.respMissing("input")
		}
	case "string":
		msg := marshal(obj{{"type", "message"}, {"role", "user"}, {"content", json.RawMessage(o.m["input"])}})
		req.input = []json.RawMessage{msg}
	case "array":
		for i, raw := range o.array("input") {
			item, ok := c.checkItem(fmt.Sprintf("input[%d]", i), raw)
			if !ok {
				return false
			}
			if it, _ := parseObject(raw); it != nil && it.str("type") == "additional_tools" {
				// The Codex CLI's code-mode models (gpt-6.2-sol, its default in 0.171.0, whose catalogue entry
				// says supported_in_api) declare their tools in this item instead of tools, to api.openai.com
				// too; openai-node at 7b7d6ca has no such item. Mock: accepted, its tools offered like
				// tools' (not verified against the service).
				p := fmt.Sprintf("input[%d].tools", i)
				if it.kind("tools") != "array" {
					return c.respType(p, "an array", it.m["tools"])
				}
				if !c.checkToolList(req, p, it.array("tools")) {
					return false
				}
				continue
			}
			req.input = append(req.input, item)
		}
	default:
		return c.respType("input", "a string or an array", o.m["input"])
	}
	return true
}

// callOutputs pairs each item type that calls a client-run tool with the item type of its output.
var callOutputs = map[string]string{
	"function_call":    "function_call_output",
	"custom_tool_call": "custom_tool_call_output",
	"tool_search_call": "tool_search_output", // with execution client only (a server search has no output item to send)
}

// callNouns names a call item type in the service's pairing errors.
var callNouns = map[string]string{
	"function_call": "function call", "custom_tool_call": "custom tool call", "tool_search_call": "tool search call",
}

// checkPairs: every output (function_call_output, custom_tool_call_output, tool_search_output of a client
// search) answers an earlier call of its kind, and every such call has its output, as the service requires of
// a conversation it is given. The function-call wording is the service's; the others follow it (mock).
func (c *call) checkPairs(history []json.RawMessage) bool {
	type pending struct {
		kind     string
		answered bool
	}
	calls := map[string]*pending{} // call_id -> the call
	var order []string
	outputOf := map[string]string{} // output type -> call type
	for call, output := range callOutputs {
		outputOf[output] = call
	}
	for _, raw := range history {
		it, _ := parseObject(raw)
		typ := it.str("type")
		if typ == "tool_search_call" || typ == "tool_search_output" {
			if it.str("execution") != "client" {
				continue
			}
		}
		id := it.str("call_id")
		if _, ok := callOutputs[typ]; ok {
			if _, seen := calls[id]; !seen {
				order = append(order, id)
			}
			calls[id] = &pending{kind: typ}
			continue
		}
		if kind, ok := outputOf[typ]; ok {
			p := calls[id]
			if p == nil || p.kind != kind {
				return c.respErr("input", "", fmt.Sprintf("No tool call found for %s output with call_id %s.", callNouns[kind], id))
			}
			p.answered = true
		}
	}
	for _, id := range order {
		if p := calls[id]; !p.answered {
			return c.respErr("input", "", fmt.Sprintf("No tool output found for %s %s.", callNouns[p.kind], id))
		}
	}
	return true
}

// checkExecution: a tool search item's execution is server or client.
func (c *call) checkExecution(p string, it *object) bool {
	if e := it.str("execution"); it.kind("execution") != "" && it.kind("execution") != "null" && e != "server" && e != "client" {
		return c.respEnum(p+".execution", e, []string{"server", "client"})
	}
	return true
}

// checkItem validates one input item and returns it with its type spelt out.
func (c *call) checkItem(p string, raw json.RawMessage) (json.RawMessage, bool) {
	it, err := parseObject(raw)
	if err != nil {
		return nil, c.respType(p, "an object", raw)
	}
	typ := it.str("type")
	if typ == "" && it.kind("type") != "" {
		return nil, c.respType(p+".type", "a string", it.m["type"])
	}
	if typ == "" {
		switch {
		case it.has("role"):
			typ = "message"
		case it.has("id") && len(it.keys) == 1:
			typ = "item_reference"
		default:
			return nil, c.respMissing(p + ".type")
		}
	}
	if !slices.Contains(responsesItemTypes, typ) {
		return nil, c.respEnum(p+".type", typ, responsesItemTypes)
	}
	switch typ {
	case "message":
		role := it.str("role")
		if role == "" {
			return nil, c.respMissing(p + ".role")
		}
		if !slices.Contains(responsesRoles, role) {
			return nil, c.respEnum(p+".role", role, responsesRoles)
		}
		switch it.kind("content") {
		case "string":
		case "array":
			parts := inputPartTypes
			if role == "assistant" {
				parts = assistantPartTypes
			}
			for j, pr := range it.array("content") {
				pp := fmt.Sprintf("%s.content[%d]", p, j)
				part, err := parseObject(pr)
				if err != nil {
					return nil, c.respType(pp, "an object", pr)
				}
				pt := part.str("type")
				if !slices.Contains(parts, pt) {
					return nil, c.respEnum(pp, pt, parts)
				}
				if (pt == "input_text" || pt == "output_text") && part.kind("text") != "string" {
					return nil, c.respMissing(pp + ".text")
				}
				if pt == "input_image" && !part.has("image_url") && !part.has("file_id") {
					return nil, c.respErr(pp, "", fmt.Sprintf("Invalid '%s': an input_image needs image_url or file_id.", pp))
				}
			}
		case "":
			return nil, c.respMissing(p + ".content")
		default:
			return nil, c.respType(p+".content", "a string or an array", it.m["content"])
		}
		if !it.has("type") {
			raw = marshal(append(obj{{"type", "message"}}, objOf(it)...))
		}
	case "function_call":
		for _, k := range []string{"call_id", "name", "arguments"} {
			if it.kind(k) != "string" {
				if it.kind(k) == "" {
					return nil, c.respMissing(p + "." + k)
				}
				return nil, c.respType(p+"."+k, "a string", it.m[k])
			}
		}
		if !c.optional(it, p+".", "namespace", "a string", "string") {
			return nil, false
		}
	case "custom_tool_call":
		// {call_id, name, input, namespace?} (openai-node ResponseCustomToolCall, responses.ts l.2610)
		for _, k := range []string{"call_id", "name", "input"} {
			if it.kind(k) != "string" {
				if it.kind(k) == "" {
					return nil, c.respMissing(p + "." + k)
				}
				return nil, c.respType(p+"."+k, "a string", it.m[k])
			}
		}
		if !c.optional(it, p+".", "namespace", "a string", "string") {
			return nil, false
		}
	case "function_call_output", "custom_tool_call_output":
		if it.kind("call_id") != "string" {
			return nil, c.respMissing(p + ".call_id")
		}
		switch it.kind("output") {
		case "string", "array":
		case "":
			return nil, c.respMissing(p + ".output")
		default:
			return nil, c.respType(p+".output", "a string or an array", it.m["output"])
		}
	case "tool_search_call":
		// {call_id, arguments: an object, execution} (openai-node ResponseToolSearchCall, responses.ts l.7567);
		// arguments is an object here, unlike a function call's JSON text (docs/agent-clients.md A4).
		if it.kind("arguments") != "object" {
			if it.kind("arguments") == "" {
				return nil, c.respMissing(p + ".arguments")
			}
			return nil, c.respType(p+".arguments", "an object", it.m["arguments"])
		}
		if !c.checkExecution(p, it) {
			return nil, false
		}
		if it.str("execution") == "client" && it.kind("call_id") != "string" {
			return nil, c.respMissing(p + ".call_id")
		}
	case "tool_search_output":
		// {call_id, tools, execution, status} (ResponseToolSearchOutputItemParam, responses.ts l.7641)
		if it.kind("tools") != "array" {
			if it.kind("tools") == "" {
				return nil, c.respMissing(p + ".tools")
			}
			return nil, c.respType(p+".tools", "an array", it.m["tools"])
		}
		if !c.checkExecution(p, it) {
			return nil, false
		}
		if it.str("execution") == "client" && it.kind("call_id") != "string" {
			return nil, c.respMissing(p + ".call_id")
		}
	case "reasoning":
		// Codex replays reasoning items with "content": null and encrypted_content (docs/agent-clients.md A6).
		if it.kind("summary") != "array" {
			return nil, c.respMissing(p + ".summary")
		}
		if !c.optional(it, p+".", "content", "an array", "array") || !c.optional(it, p+".", "encrypted_content", "a string", "string") {
			return nil, false
		}
		// Only the service can read encrypted_content: one it did not issue for this item (altered, moved to
		// another item, from another organization) is refused, with this text and code (seen from the service in
		// openai/codex#8145 and QuantumNous/new-api#4662). The mock's token names its item, so it knows its own.
		if enc := it.str("encrypted_content"); it.kind("encrypted_content") == "string" && enc != EncryptedReasoning(it.str("id")) {
			return nil, c.respErr("", "invalid_encrypted_content", "The encrypted content for item "+it.str("id")+
				" could not be verified. Reason: Encrypted content could not be decrypted or parsed.")
		}
	case "item_reference":
		if it.str("id") == "" {
			return nil, c.respMissing(p + ".id")
		}
		if !it.has("type") {
			raw = marshal(obj{{"type", "item_reference"}, {"id", it.str("id")}})
		}
	}
	return raw, true
}

// objOf turns a parsed object back into an ordered obj.
func objOf(o *object) obj {
	out := make(obj, len(o.keys))
	for i, k := range o.keys {
		out[i] = kv{k, json.RawMessage(o.m[k])}
	}
	return out
}

// itemText is the text an input item carries: a message's text parts, a function output's text.
func itemText(raw json.RawMessage) string {
	it, err := parseObject(raw)
	if err != nil {
		return ""
	}
	var v json.RawMessage
	switch it.str("type") {
	case "message":
		v = it.m["content"]
	case "function_call_output", "custom_tool_call_output":
		v = it.m["output"]
	case "tool_search_output":
		return string(it.m["tools"])
	case "function_call":
		return it.str("arguments")
	case "custom_tool_call":
		return it.str("input")
	default:
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(v, &parts)
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ---- the store ---------------------------------------------------------------------------------------------

// maxStored bounds the responses a provider keeps (mock: the oldest is forgotten first).
const maxStored = 256

type storedResponse struct {
	conversation []json.RawMessage // input and output items through this response
	items        []string          // ids of its output items
}

// store keeps a response created with store true (the default), so that a later request can name it in
// previous_response_id or its items in item_reference.
func (p *Provider) store(id string, conversation []json.RawMessage, output []obj) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.responses == nil {
		p.responses = map[string]*storedResponse{}
		p.items = map[string]json.RawMessage{}
	}
	s := &storedResponse{conversation: slices.Clone(conversation)}
	for _, it := range output {
		raw := marshal(it)
		s.conversation = append(s.conversation, raw)
		for _, m := range it {
			if m.k == "id" {
				id, _ := m.v.(string)
				s.items = append(s.items, id)
				p.items[id] = raw
			}
		}
	}
	p.responses[id] = s
	p.storedOrder = append(p.storedOrder, id)
	if len(p.storedOrder) > maxStored {
		old := p.storedOrder[0]
		p.storedOrder = p.storedOrder[1:]
		for _, it := range p.responses[old].items {
			delete(p.items, it)
		}
		delete(p.responses, old)
	}
}

func (p *Provider) storedConversation(id string) ([]json.RawMessage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.responses[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(s.conversation), true
}

func (p *Provider) storedItem(id string) (json.RawMessage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	it, ok := p.items[id]
	return it, ok
}

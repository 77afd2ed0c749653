//go:build !aidialect_no_bridge

package translate

// The tools of a Responses request bridged to Chat Completions, and what their calls become again.
//
// Chat Completions declares function tools only (and, at OpenAI, custom tools); the Responses API has more
// kinds, and agent clients use them all. Each kind the client runs itself is bridged; what runs on the
// servers of the Responses API cannot be, and is refused or, where the operator says so, left out:
//
//   - function tools are nested under "function", as chat's are.
//   - namespace tools group function (and custom) tools under a name (the OpenAI Agents SDK's toolNamespace,
//     the Codex CLI's sub-agent and MCP tools). Chat has no groups: each member becomes a chat tool named
//     <namespace>__<name> (shortened with a hash of both past chat's 64 characters), and its calls come back
//     as the Responses API sends them, a function_call (or custom_tool_call) with the member's own name and a
//     separate namespace member (Codex dispatches on it: without it, it answers "unsupported call").
//   - custom tools take freeform text (the Codex CLI's apply_patch). OpenAI's chat API has them, with the
//     grammar nested one level deeper; toward other providers a custom tool becomes a function taking one
//     string, input, whose grammar is described to the model in words but not enforced (the format is named
//     in x-aidialect-dropped-params). Either way the calls come back as custom_tool_call items.
//   - additional_tools items of the input declare tools too (the Codex CLI's code-mode models): their tools
//     become chat tools as the request's own do.
//   - tool_search with execution "client" is a tool the client runs (Codex searches its deferred MCP tools):
//     it becomes a chat function named tool_search taking the tool's parameters, and its calls come back as
//     tool_search_call items whose arguments are an object. The tools a tool_search_output item of the
//     history loaded become chat tools too, as the Responses API loads them from there.
//   - hosted tools (web_search, file_search, code_interpreter, image_generation, remote mcp, tool_search run
//     by the server) run on the servers of the Responses API: refused, or left out with hosted_tools "drop"
//     (Target.DropHostedTools), as are their calls in the history. The built-in tools of OpenAI's own models
//     (computer use, shell, local_shell, apply_patch) are refused: their calls are formats only those models
//     write.
//
// The chat names of the tools are kept (bridgedTools, in the echo) so that a call in the answer finds what it
// becomes. At most maxBridgedItems tools: chat providers take a few hundred at most (OpenAI 128).

import (
	"hash/fnv"
	"strconv"
	"unsafe"
)

// toolCallShape is what a chat call of a bridged tool becomes in the Response.
type toolCallShape uint8

const (
	// functionCallShape: a function_call, named as in chat (or, with a namespace, by its member name).
	functionCallShape toolCallShape = iota
	// customCallShape: a custom_tool_call whose input is the chat call's custom.input (OpenAI's chat custom
	// tools).
	customCallShape
	// customAsFunctionShape: a custom_tool_call whose input is the input member of the chat function call's
	// arguments.
	customAsFunctionShape
	// toolSearchShape: a tool_search_call (execution client) whose arguments are the chat call's arguments as
	// an object.
	toolSearchShape
)

// textSpan is a piece of bridgedTools.arena.
type textSpan struct{ start, end int32 }

// bridgedTool is one chat tool of a bridged request: what its calls become.
type bridgedTool struct {
	shape toolCallShape
	// name and namespace are the Responses call's name and namespace (JSON string contents as the client
	// wrote them); both empty for a tool whose calls keep their chat name and have no namespace.
	name, namespace textSpan
}

// bridgedTools are the chat tools a bridged request declared, by chat name. They live in the echo, kept from
// one request to the next.
type bridgedTools struct {
	// names are the chat names (views of arena), in the order the tools were written.
	names callIDSet
	tools []bridgedTool
	// arena holds the chat names and the Responses names. It only grows during a request, so the set's
	// views of it stay valid when it moves (the old array is kept while viewed, and never written again).
	arena []byte
	// scratch is the request bridge's buffer for names it makes, kept for the next request.
	scratch []byte
}

// reset empties the table for a new request, keeping its buffers.
func (t *bridgedTools) reset() {
	t.names.reset()
	t.tools, t.arena = t.tools[:0], t.arena[:0]
}

// add records a chat tool named chatName (JSON string contents) whose calls become shape, named name in
// namespace (both may be empty). fresh is false when a tool of that chat name is already there; full is set
// when the table holds maxBridgedItems tools.
func (t *bridgedTools) add(chatName []byte, shape toolCallShape, name, namespace []byte) (fresh, full bool) {
	start := len(t.arena)
	t.arena = append(t.arena, chatName...)
	pos, added := t.names.place(t.arena[start:len(t.arena):len(t.arena)], true)
	if pos < 0 {
		t.arena = t.arena[:start]
		return false, true
	}
	if !added {
		t.arena = t.arena[:start]
		return false, false
	}
	tool := bridgedTool{shape: shape, name: t.keep(name), namespace: t.keep(namespace)}
	t.tools = append(t.tools, tool)
	return true, false
}

// footprint is the bytes the table's buffers hold.
func (t *bridgedTools) footprint() int {
	return t.names.footprint() + cap(t.tools)*int(unsafe.Sizeof(bridgedTool{})) + cap(t.arena) + cap(t.scratch)
}

// keep copies s into the arena.
func (t *bridgedTools) keep(s []byte) textSpan {
	start := len(t.arena)
	t.arena = append(t.arena, s...)
	return textSpan{int32(start), int32(len(t.arena))}
}

// text is the arena's piece s.
func (t *bridgedTools) text(s textSpan) []byte { return t.arena[s.start:s.end:s.end] }

// lookup is the tool whose chat name is chatName (JSON string contents), nil for none: a call of a tool the
// request did not declare stays a function_call named as in chat.
func (t *bridgedTools) lookup(chatName []byte) *bridgedTool {
	if t == nil || len(t.tools) == 0 {
		return nil
	}
	if pos := t.names.find(chatName); pos >= 0 {
		return &t.tools[pos]
	}
	return nil
}

// maxChatToolName is the longest tool name chat providers take (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
const maxChatToolName = 64

// namespaceSeparator joins a namespace and its member's name into a chat tool name, as the Codex CLI's own
// chat adapter does.
const namespaceSeparator = "__"

// appendChatToolName appends the chat name of the member name of namespace (plain names, see
// isPlainToolName): namespace__name, or, past maxChatToolName characters, its first 47 characters, "_" and
// 16 hex digits of a hash of both names (the same for the same names, so a call in the history keeps the
// name its tool had).
func appendChatToolName(dst, namespace, name []byte) []byte {
	if len(namespace)+len(namespaceSeparator)+len(name) <= maxChatToolName {
		return append(append(append(dst, namespace...), namespaceSeparator...), name...)
	}
	h := fnv.New64a()
	h.Write(namespace)
	h.Write([]byte{0})
	h.Write(name)
	const kept = maxChatToolName - 17
	start := len(dst)
	dst = append(append(append(dst, namespace...), namespaceSeparator...), name...)
	dst = append(dst[:start+kept], '_')
	sum := h.Sum64()
	for shift := 60; shift >= 0; shift -= 4 {
		dst = append(dst, "0123456789abcdef"[sum>>uint(shift)&0xf])
	}
	return dst
}

// isPlainToolName reports whether the JSON string literal raw is a name chat providers take in a tool name:
// letters, digits, _ and -, nothing escaped, 1 to 64 characters.
func isPlainToolName(raw []byte) bool {
	if len(raw) < 3 || len(raw) > maxChatToolName+2 || raw[0] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hostedToolTypes are the tool types that run on the servers of the Responses API (OpenAI's or Azure
// OpenAI's): hosted_tools "drop" leaves them out of a bridged request.
var hostedToolTypes = []string{"web_search", "web_search_preview", "web_search_preview_2025_03_11",
	"web_search_2025_08_26", "file_search", "code_interpreter", "image_generation", "mcp"}

// hostedCallItemTypes are the items of the history a hosted tool made: left out with its tool.
var hostedCallItemTypes = []string{"web_search_call", "file_search_call", "code_interpreter_call",
	"image_generation_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response"}

// builtInToolTypes are tools the client runs, but whose calls only OpenAI's own models write.
var builtInToolTypes = []string{"computer_use_preview", "computer", "shell", "local_shell", "apply_patch"}

// isOneOf reports whether the JSON string literal raw is one of names.
func isOneOf(raw []byte, names []string) bool { return indexOf(raw, names) >= 0 }

// indexOf is the index in names of the JSON string literal raw, -1 when it is none of them.
func indexOf(raw []byte, names []string) int {
	for i, n := range names {
		if jsonStringIs(raw, n) {
			return i
		}
	}
	return -1
}

// isServerToolSearch reports whether the tool_search tool (or call, or output) f runs on the server: its
// execution is "server", or absent (the API's default).
func isServerToolSearch(f *objectFields) bool {
	return !jsonStringIs(f.value[keyExecution], "client")
}

// hostedRefusalFix is how a client of a bridged model stops sending a hosted tool.
const hostedRefusalFix = ": remove it from the request, have the operator set hosted_tools to \"drop\" for " +
	"this model (it is then left out), or route to an openai or azure-openai model"

// writeTools writes the request's tools, and those tool_search_output items of the history loaded, in chat's
// form; the member is left out when there are none.
func (b *requestBridge) writeTools(raw []byte) *Error {
	if raw != nil && !isJSONNull(raw) && raw[0] != '[' {
		return fieldPath("tools").mustBe("", "an array")
	}
	start := len(b.out)
	b.key("tools")
	b.writeByte('[')
	if raw != nil && !isJSONNull(raw) {
		if e := b.writeToolList(raw, fieldPath("tools"), false); e != nil {
			return e
		}
	}
	for i, loaded := range b.loaded {
		if e := b.writeToolList(loaded, b.loadedAt[i], true); e != nil {
			return e
		}
	}
	if b.out[len(b.out)-1] == '[' {
		b.unwrite(start) // an empty tools array means none, and some providers refuse it
		return nil
	}
	b.writeByte(']')
	return nil
}

// writeToolList writes the tools of the array raw, at place. loaded: the array is a tool_search_output's,
// whose tools may repeat ones declared or loaded before (they are written once).
func (b *requestBridge) writeToolList(raw []byte, place paramPath, loaded bool) *Error {
	tools := newObjectList(raw, place, "")
	if loaded {
		tools = newObjectList(raw, place, "tools")
	}
	for tools.next(&b.item) {
		at, f := tools.at(), &b.item
		typ := f.value[keyType]
		var e *Error
		switch {
		case jsonStringIs(typ, "function"):
			e = b.writeFunctionTool(at, f, nil, loaded)
		case jsonStringIs(typ, "custom"):
			e = b.writeCustomTool(at, f, nil, loaded)
		case jsonStringIs(typ, "namespace"):
			e = b.writeNamespace(at, f, loaded)
		case jsonStringIs(typ, "tool_search") && !isServerToolSearch(f):
			e = b.writeToolSearchTool(at, f, loaded)
		case b.dropHosted && jsonStringIs(typ, "tool_search"):
			b.leaveOutOnce(len(hostedToolTypes), "tools.tool_search")
		case b.dropHosted && isOneOf(typ, hostedToolTypes):
			i := indexOf(typ, hostedToolTypes)
			b.leaveOutOnce(i, "tools."+hostedToolTypes[i])
		default:
			e = unsupportedTool(at, f)
		}
		if e != nil {
			return e
		}
	}
	return tools.err
}

// openTool starts a chat tool in the tools array.
func (b *requestBridge) openTool() {
	if b.out[len(b.out)-1] != '[' {
		b.writeByte(',')
	}
}

// declare records the chat tool about to be written (its chat name is chatName, JSON string contents): false
// when it needs no writing, a loaded tool already declared. A tool declared twice is refused: the providers
// refuse it too.
func (b *requestBridge) declare(at paramPath, chatName []byte, shape toolCallShape, name, namespace []byte,
	loaded bool) (bool, *Error) {
	fresh, full := b.tools.add(chatName, shape, name, namespace)
	switch {
	case full:
		return false, at.refusal(ErrInvalidParameter, "", " is past the "+strconv.Itoa(maxBridgedItems)+" tools "+
			"a request bridged to Chat Completions may declare (chat providers take fewer: OpenAI 128): send fewer "+
			"tools, or defer them behind tool_search")
	case !fresh && loaded:
		return false, nil
	case !fresh:
		return false, at.refusal(ErrInvalidParameter, "name", " is a tool whose chat name "+
			quoteForMessage(string(chatName))+" another tool has already: give each tool its own name")
	}
	return true, nil
}

// checkToolMembers refuses a tool's description that is not a string, strict that is not a boolean, and
// parameters that nest too deep (the schema sits one level deeper in chat's form than in the request: a schema
// at the bound would make a chat request Parse refuses).
func checkToolMembers(at paramPath, f *objectFields) *Error {
	if d := f.value[keyDescription]; d != nil && !isJSONString(d) {
		return at.mustBe("description", "a string")
	}
	if s := f.value[keyStrict]; s != nil && string(s) != "true" && string(s) != "false" {
		return at.mustBe("strict", "true or false")
	}
	if p := f.value[keyParameters]; p != nil && nestingDepth(p) > maxSchemaDepth {
		param := at.member("parameters")
		return NewError(ErrInvalidParameter, param, param+" nests deeper than "+strconv.Itoa(maxSchemaDepth)+
			" levels: flatten the schema")
	}
	return nil
}

// writeFunctionTool writes the function tool at, a member of namespace when that is not nil.
func (b *requestBridge) writeFunctionTool(at paramPath, f *objectFields, namespace []byte, loaded bool) *Error {
	name := f.value[keyName]
	if !isJSONString(name) || len(name) == 2 {
		return at.mustBe("name", "a non-empty string")
	}
	if e := checkToolMembers(at, f); e != nil {
		return e
	}
	chatName, e := b.chatToolName(at, name, namespace)
	if e != nil {
		return e
	}
	var fresh bool
	if namespace == nil {
		fresh, e = b.declare(at, chatName, functionCallShape, nil, nil, loaded)
	} else {
		fresh, e = b.declare(at, chatName, functionCallShape, name[1:len(name)-1], namespace[1:len(namespace)-1], loaded)
	}
	if !fresh {
		return e
	}
	b.openTool()
	b.writeFramed(`{"type":"function","function":{"name":"`, chatName, `"`)
	b.nested = true
	b.copyUnlessNull("description", f.value[keyDescription])
	b.copyUnlessNull("parameters", f.value[keyParameters])
	b.copyUnlessNull("strict", f.value[keyStrict])
	b.nested = false
	b.write("}}")
	return nil
}

// chatToolName is the chat name (JSON string contents) of the tool named name (a JSON string literal), a
// member of namespace when that is not nil; a view of the request or of the bridge's scratch buffer, valid
// until the next call.
func (b *requestBridge) chatToolName(at paramPath, name, namespace []byte) ([]byte, *Error) {
	if namespace == nil {
		return name[1 : len(name)-1], nil
	}
	if !isPlainToolName(name) {
		return nil, at.mustBe("name", "a name of letters, digits, _ and - (at most 64), as chat tool names are")
	}
	b.scratch = appendChatToolName(b.scratch[:0], namespace[1:len(namespace)-1], name[1:len(name)-1])
	return b.scratch, nil
}

// writeNamespace writes each member of the namespace tool at as a chat tool of its own.
func (b *requestBridge) writeNamespace(at paramPath, f *objectFields, loaded bool) *Error {
	namespace, members := f.value[keyName], f.value[keyTools]
	switch {
	case !isPlainToolName(namespace):
		return at.mustBe("name", "a name of letters, digits, _ and - (at most 64), as chat tool names are")
	case members == nil || members[0] != '[':
		return at.mustBe("tools", "an array of function and custom tools")
	}
	// The namespace's own description has no place in chat: each member keeps its own.
	list := newObjectList(members, at, "tools")
	var inner objectFields // b.item holds the namespace while its members are read
	for list.next(&inner) {
		member, typ := list.at(), inner.value[keyType]
		var e *Error
		switch {
		case jsonStringIs(typ, "function"):
			e = b.writeFunctionTool(member, &inner, namespace, loaded)
		case jsonStringIs(typ, "custom"):
			e = b.writeCustomTool(member, &inner, namespace, loaded)
		default:
			e = member.mustBe("type", "function or custom: a namespace groups the tools the client runs")
		}
		if e != nil {
			return e
		}
	}
	return list.err
}

// writeCustomTool writes the custom (freeform) tool at, a member of namespace when that is not nil: a chat
// custom tool toward OpenAI's chat API, else a function taking one string.
func (b *requestBridge) writeCustomTool(at paramPath, f *objectFields, namespace []byte, loaded bool) *Error {
	name, description, format := f.value[keyName], f.value[keyDescription], f.value[keyFormat]
	switch {
	case !isJSONString(name) || len(name) == 2:
		return at.mustBe("name", "a non-empty string")
	case description != nil && !isJSONString(description):
		return at.mustBe("description", "a string")
	case format != nil && format[0] != '{':
		return at.mustBe("format", `an object: {"type":"text"} or {"type":"grammar","syntax":...,"definition":...}`)
	}
	var grammar objectFields
	if format != nil {
		if e := readObjectAt(format, &grammar, fieldPath(at.member("format"))); e != nil {
			return e
		}
		typ := grammar.value[keyType]
		switch {
		case jsonStringIs(typ, "text"):
		case !jsonStringIs(typ, "grammar"):
			return fieldPath(at.member("format")).mustBe("type", "text or grammar")
		case !isJSONString(grammar.value[keySyntax]) || !isJSONString(grammar.value[keyDefinition]):
			return fieldPath(at.member("format")).mustBe("", "a grammar with a syntax (lark or regex) and a "+
				"definition, both strings")
		}
	}
	chatName, e := b.chatToolName(at, name, namespace)
	if e != nil {
		return e
	}
	shape := customAsFunctionShape
	if b.opts.customTools {
		shape = customCallShape
	}
	// The Responses name is kept even without a namespace: a custom call is named as the client declared it.
	responsesName, ns := name[1:len(name)-1], []byte(nil)
	if namespace != nil {
		ns = namespace[1 : len(namespace)-1]
	}
	if fresh, e := b.declare(at, chatName, shape, responsesName, ns, loaded); !fresh {
		return e
	}
	b.openTool()
	if b.opts.customTools {
		b.writeFramed(`{"type":"custom","custom":{"name":"`, chatName, `"`)
		b.nested = true
		b.copyUnlessNull("description", description)
		b.nested = false
		if jsonStringIs(grammar.value[keyType], "grammar") {
			b.writeFramed(`,"format":{"type":"grammar","grammar":{"syntax":`, grammar.value[keySyntax], "")
			b.writeFramed(`,"definition":`, grammar.value[keyDefinition], "}}")
		} else if format != nil {
			b.write(`,"format":{"type":"text"}`)
		}
		b.write("}}")
		return nil
	}
	b.writeFramed(`{"type":"function","function":{"name":"`, chatName, `"`)
	b.nested = true
	b.copyUnlessNull("description", description)
	b.nested = false
	b.write(`,"parameters":{"type":"object","properties":{"input":{"type":"string","description":"The tool's ` +
		`freeform input, as text`)
	if jsonStringIs(grammar.value[keyType], "grammar") {
		// The provider cannot hold the model to the grammar; the model can still follow it when it reads it.
		b.writeFramed(`. It must match this `, grammar.value[keySyntax][1:len(grammar.value[keySyntax])-1], "")
		b.writeFramed(` grammar:\n`, grammar.value[keyDefinition][1:len(grammar.value[keyDefinition])-1], "")
		place := "tools."
		if namespace != nil {
			place += decodeJSONString(namespace) + "."
		}
		b.leaveOut(place + decodeJSONString(name) + ".format")
	}
	b.write(`."}},"required":["input"],"additionalProperties":false}}}`)
	return nil
}

// toolSearchChatName is the chat function a client-run tool_search becomes.
const toolSearchChatName = "tool_search"

// defaultToolSearchParameters are a tool_search function's parameters when the tool names none: a query.
const defaultToolSearchParameters = `{"type":"object","properties":{"query":{"type":"string","description":` +
	`"What to search the available tools for."}},"required":["query"]}`

// writeToolSearchTool writes the client-run tool_search tool at as a chat function. loaded: it is a
// tool_search_output's, and may repeat the request's own.
func (b *requestBridge) writeToolSearchTool(at paramPath, f *objectFields, loaded bool) *Error {
	if e := checkToolMembers(at, f); e != nil {
		return e
	}
	if taken := b.tools.lookup([]byte(toolSearchChatName)); taken != nil {
		if loaded && taken.shape == toolSearchShape {
			return nil
		}
		// The tool has no name to change (declare's refusal would point at one): the other tool must.
		return at.refusal(ErrInvalidParameter, "", " is a client tool_search, which becomes a chat function "+
			"named "+quoteForMessage(toolSearchChatName)+", and another tool has that name already: rename that tool")
	}
	if fresh, e := b.declare(at, []byte(toolSearchChatName), toolSearchShape, nil, nil, loaded); !fresh {
		return e
	}
	b.openTool()
	b.write(`{"type":"function","function":{"name":"` + toolSearchChatName + `","description":`)
	if d := f.value[keyDescription]; d != nil {
		b.writeRaw(d)
	} else {
		b.write(`"Searches the tools that are not loaded yet, and loads the ones that match."`)
	}
	b.write(`,"parameters":`)
	if p := f.value[keyParameters]; p != nil {
		b.writeRaw(p)
	} else {
		b.write(defaultToolSearchParameters)
	}
	b.write("}}")
	return nil
}

// unsupportedTool refuses a tool that has no Chat Completions form, saying truly why.
func unsupportedTool(at paramPath, f *objectFields) *Error {
	typ := f.value[keyType]
	if !isJSONString(typ) {
		return at.mustBe("type", `a string such as "function"`)
	}
	name := quoteForMessage(decodeJSONString(typ))
	var why string
	switch {
	case jsonStringIs(typ, "tool_search"):
		return at.refusal(ErrUnsupportedParameter, "execution", " is a tool_search run by the server (its "+
			"execution is not \"client\"), which searches on the servers of the Responses API, and this model's "+
			"provider has only Chat Completions: send execution \"client\" and run the search in the client, "+
			hostedRefusalFix[2:])
	case isOneOf(typ, hostedToolTypes):
		return at.refusal(ErrUnsupportedParameter, "type", " is a "+name+" tool, a hosted tool that runs on the "+
			"servers of the Responses API (OpenAI's or Azure OpenAI's), and this model's provider has only Chat "+
			"Completions"+hostedRefusalFix)
	case isOneOf(typ, builtInToolTypes):
		why = " is a " + name + " tool, a built-in tool whose calls only OpenAI's own models write, and this " +
			"model's provider has only Chat Completions: declare a function or custom tool for it instead, or " +
			"route to an openai or azure-openai model"
	default:
		why = " is a " + name + " tool, which the bridge to Chat Completions does not know (it takes function, " +
			"custom, namespace and client tool_search tools): remove it, or route to an openai or azure-openai model"
	}
	return at.refusal(ErrUnsupportedParameter, "type", why)
}

// openToolCall starts a tool call of the open assistant turn, opening one if none is; the caller writes the
// call object.
func (b *requestBridge) openToolCall() {
	switch b.turn {
	case noTurn:
		b.inputMessages++
		b.openMessage("assistant")
		b.write(`,"tool_calls":[`)
	case turnText:
		b.write(`,"tool_calls":[`)
	case turnToolCalls:
		b.writeByte(',')
	}
	b.turn = turnToolCalls
}

// writeCustomToolCall writes the custom_tool_call item at as a tool call of the open assistant turn.
func (b *requestBridge) writeCustomToolCall(at paramPath, f *objectFields) *Error {
	callID, name, input, namespace := f.value[keyCallID], f.value[keyName], f.value[keyInput], f.value[keyNamespace]
	switch {
	case !isJSONString(callID):
		return at.mustBe("call_id", "a string")
	case !isJSONString(name):
		return at.mustBe("name", "a string")
	case !isJSONString(input):
		return at.mustBe("input", "a string")
	case namespace != nil && !isPlainToolName(namespace):
		return at.mustBe("namespace", "a name of letters, digits, _ and - (at most 64), as chat tool names are")
	}
	chatName, e := b.chatToolName(at, name, namespace)
	if e != nil {
		return e
	}
	b.openToolCall()
	if b.opts.customTools {
		b.writeFramed(`{"id":`, callID, `,"type":"custom","custom":{"name":"`)
		b.writeFramed("", chatName, `","input":`)
		b.writeFramed("", input, "}}")
		return nil
	}
	b.writeFramed(`{"id":`, callID, `,"type":"function","function":{"name":"`)
	b.writeFramed("", chatName, `","arguments":"{\"input\":`)
	b.writeEscaped(input)
	b.write(`}"}}`)
	return nil
}

// writeToolSearchCall writes the client tool_search_call item at as a call of the tool_search function.
func (b *requestBridge) writeToolSearchCall(at paramPath, f *objectFields) *Error {
	callID, arguments := f.value[keyCallID], f.value[keyArguments]
	switch {
	case !isJSONString(callID):
		return at.mustBe("call_id", "a string")
	case arguments != nil && arguments[0] != '{' && !isJSONString(arguments):
		return at.mustBe("arguments", "an object")
	}
	b.openToolCall()
	b.writeFramed(`{"id":`, callID, `,"type":"function","function":{"name":"`+toolSearchChatName+`","arguments":`)
	switch {
	case arguments == nil:
		b.write(`"{}"`)
	case isJSONString(arguments):
		b.writeRaw(arguments)
	default:
		b.writeByte('"')
		b.writeEscaped(arguments)
		b.writeByte('"')
	}
	b.write("}}")
	return nil
}

// writeToolSearchOutput writes the client tool_search_output item at as the tool message answering its
// call, the tools it loaded as their JSON; the tools themselves are declared with the request's (writeTools).
func (b *requestBridge) writeToolSearchOutput(at paramPath, f *objectFields) *Error {
	callID, tools := f.value[keyCallID], f.value[keyTools]
	switch {
	case !isJSONString(callID):
		return at.mustBe("call_id", "a string")
	case tools == nil || tools[0] != '[':
		return at.mustBe("tools", "an array of tools")
	}
	b.loaded = append(b.loaded, tools)
	b.loadedAt = append(b.loadedAt, at)
	b.inputMessages++
	b.openMessage("tool")
	b.writeFramed(`,"tool_call_id":`, callID, `,"content":"Loaded tools: `)
	b.writeEscaped(tools)
	b.write(`"}`)
	return nil
}

// takeAdditionalTools declares the tools of the additional_tools item at among the chat tools; the item
// itself has no chat form. The Codex CLI sends its tools this way, in the first input item and not in tools,
// for the models of its catalogue marked "code_mode_only" (gpt-6.2-sol, its default in 0.171.0): namespaces of
// function and custom tools, whose calls it takes back as the Responses API writes them.
func (b *requestBridge) takeAdditionalTools(at paramPath, f *objectFields) *Error {
	tools := f.value[keyTools]
	if tools == nil || tools[0] != '[' {
		return at.mustBe("tools", "an array of tools")
	}
	b.loaded = append(b.loaded, tools)
	b.loadedAt = append(b.loadedAt, at)
	return nil
}

// writeEscaped writes the JSON text raw as the contents of a JSON string: quotes and backslashes escaped, and
// the whitespace between tokens (raw is valid JSON: no other control character is outside a string).
func (b *requestBridge) writeEscaped(raw []byte) {
	from := 0
	for i, c := range raw {
		var esc string
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			continue
		}
		b.writeRaw(raw[from:i])
		b.write(esc)
		from = i + 1
	}
	b.writeRaw(raw[from:])
}

// leaveOutHostedItem leaves out the history item at, the hosted tool call or result kind (an index in
// hostedCallItemTypes), when hosted tools are dropped; otherwise it is refused.
func (b *requestBridge) leaveOutHostedItem(at paramPath, kind int) *Error {
	if !b.dropHosted {
		return at.refusal(ErrUnsupportedParameter, "type", " is a "+quoteForMessage(hostedCallItemTypes[kind])+
			" item, made by a hosted tool that runs on the servers of the Responses API, and this model's provider "+
			"has only Chat Completions"+hostedRefusalFix)
	}
	b.leaveOutOnce(len(hostedToolTypes)+1+kind, "input."+hostedCallItemTypes[kind])
	return nil
}

// leaveOutOnce names what was left out in x-aidialect-dropped-params, once however often it was (a request
// may carry many hosted tools of a kind, and many of their calls): kind is the name's bit in b.leftOutKinds.
func (b *requestBridge) leaveOutOnce(kind int, name string) {
	if b.leftOutKinds&(1<<kind) == 0 {
		b.leftOutKinds |= 1 << kind
		b.leaveOut(name)
	}
}

package mock

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A scripted tool call makes multi-turn agent runs real: when the text the answer would echo (the last user
// message) has a line "mock-call NAME", the answer calls the tool NAME with the PAYLOAD that follows: the rest
// of that line when it has anything, else every following line to the end of the text. Without such a line a
// request offering function tools gets the usual call of the first one with {"text": <last user text>}.
// After the tool's output comes back the answer echoes that output, as for any call.

// mockCallPrefix starts the line that scripts a call; mockAnswerPrefix the line that scripts the answer's text
// ("mock-answer TEXT", TEXT as PAYLOAD above: a structured-output run needs an answer in its schema).
const (
	mockCallPrefix   = "mock-call"
	mockAnswerPrefix = "mock-answer"
	// mockReasoningPrefix starts the line "mock-reasoning TEXT" (TEXT: the rest of the line): the answer
	// reasons first, as a reasoning model does. A Responses answer gets a reasoning item (with
	// encrypted_content when include asks for reasoning.encrypted_content), a chat answer reasoning_content
	// where the provider sends it.
	mockReasoningPrefix = "mock-reasoning"
)

// parseMockReasoning finds the first "mock-reasoning TEXT" line of text.
func parseMockReasoning(text string) (string, bool) {
	rest, _, ok := scriptedLine(text, mockReasoningPrefix)
	return rest, ok && rest != ""
}

// scriptedCall is a parsed "mock-call NAME PAYLOAD" line.
type scriptedCall struct {
	name, payload string
}

// scriptedLine finds the first line of text that starts with prefix and returns what follows it on that line
// and every following line.
func scriptedLine(text, prefix string) (rest, following string, ok bool) {
	lines := strings.SplitAfter(text, "\n")
	for i, line := range lines {
		rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), prefix)
		if ok && (rest == "" || strings.ContainsRune(" \t\r\n", rune(rest[0]))) {
			return strings.TrimSpace(rest), strings.Join(lines[i+1:], ""), true
		}
	}
	return "", "", false
}

// parseMockCall finds the first "mock-call NAME" line of text.
func parseMockCall(text string) (scriptedCall, bool) {
	rest, following, ok := scriptedLine(text, mockCallPrefix)
	if !ok {
		return scriptedCall{}, false
	}
	name, payload, _ := strings.Cut(rest, " ")
	if name == "" {
		return scriptedCall{}, false
	}
	payload = strings.TrimSpace(payload)
	if payload == "" {
		payload = following
	}
	return scriptedCall{name: name, payload: payload}, true
}

// parseMockAnswer finds the first "mock-answer TEXT" line of text.
func parseMockAnswer(text string) (string, bool) {
	rest, following, ok := scriptedLine(text, mockAnswerPrefix)
	if !ok {
		return "", false
	}
	if rest != "" {
		return rest, true
	}
	return following, following != ""
}

// isJSONObject reports whether s is the JSON text of one object.
func isJSONObject(s string) bool {
	o, err := parseObject([]byte(s))
	return err == nil && o != nil
}

// scriptedResponses applies a scripted call to a Responses answer: a function tool named NAME (at the top level
// or in a namespace, whose name the call then carries) gets a function_call with PAYLOAD as its arguments (JSON
// object text); a custom tool NAME gets a custom_tool_call with PAYLOAD as its input; NAME tool_search, with a
// client tool_search offered, gets a tool_search_call whose arguments are PAYLOAD parsed as an object. An error
// is the mock's 400 (the test script is wrong, not the request).
func (c *call) scriptedResponses(sc scriptedCall, w *want) error {
	var offered []string
	for _, t := range c.resp.tools {
		if t.name != sc.name {
			name := t.name
			if t.namespace != "" {
				name = t.namespace + "." + name
			}
			offered = append(offered, name)
			continue
		}
		if (t.kind == "function" || t.kind == "tool_search") && !isJSONObject(sc.payload) {
			return fmt.Errorf("mock: mock-call %s needs a JSON object as its payload for a %s tool, got %q", sc.name, t.kind, sc.payload)
		}
		w.tool, w.toolKind, w.namespace, w.args = t.name, t.kind, t.namespace, sc.payload
		return nil
	}
	return fmt.Errorf("mock: mock-call names tool %q, which the request does not offer (offered: %s)", sc.name, strings.Join(offered, ", "))
}

// scriptedChat applies a scripted call to a chat answer: a function tool named NAME, or whose name ends with
// "__NAME" (the gateway flattens a namespace member into <namespace>__<name>), gets a call with PAYLOAD as its
// arguments when PAYLOAD is a JSON object, else {"input": PAYLOAD} (the gateway bridges a custom tool to a
// function taking one string, input); an OpenAI custom tool NAME gets a custom tool call with PAYLOAD as its
// input.
func (c *call) scriptedChat(sc scriptedCall, w *want) error {
	var offered []string
	for _, raw := range c.body.array("tools") {
		t, err := parseObject(raw)
		if err != nil {
			continue
		}
		kind := t.str("type")
		def := t.sub(kind)
		if def == nil {
			continue
		}
		name := def.str("name")
		offered = append(offered, name)
		switch {
		case kind == "custom" && name == sc.name:
			w.tool, w.toolKind, w.args = name, "custom", sc.payload
			return nil
		case kind == "function" && (name == sc.name || strings.HasSuffix(name, "__"+sc.name)):
			w.tool, w.toolKind, w.args = name, "function", sc.payload
			if !isJSONObject(sc.payload) {
				w.args = string(marshal(obj{{"input", sc.payload}}))
			}
			return nil
		}
	}
	slices.Sort(offered)
	return fmt.Errorf("mock: mock-call names tool %q, which the request does not offer (offered: %s)", sc.name, strings.Join(offered, ", "))
}

// rawJSON is s as raw JSON (s is known to be valid).
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

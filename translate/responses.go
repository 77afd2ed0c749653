package translate

// The OpenAI Responses API (POST /v1/responses) is a client surface of the OpenAI and Azure OpenAI dialects
// (their routes list it). Toward a provider that has it (openai, azure-openai) the request is forwarded in its
// own shape, like chat. Toward one that has only Chat Completions (azure-ai, eternalai, or a model entry
// marked chat_only), it is bridged: the request becomes a chat request in the hub's shape (bridgeRequest,
// responses_request.go), which the target's chat rules then render; the chat answer, after the usual edits
// for the client's dialect, becomes a Response (bridgeAnswer, responses_answer.go) and a chat stream becomes
// the Responses event sequence (responsesEvents, responses_stream.go). What needs server state (stored
// responses, previous_response_id, conversations, background runs, built-in tools) cannot be bridged by a
// stateless filter and is refused locally, naming the field and the fix.
//
// The API reference: https://platform.openai.com/docs/api-reference/responses and, for streams,
// https://platform.openai.com/docs/api-reference/responses-streaming

import (
	"strconv"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// Bridge is one Responses exchange bridged to Chat Completions: what the Response repeats of its request,
// the chat request built from it, and the converters' state. It lives in the RequestBody (one per worker,
// reused), so its buffers are kept from one request to the next.
type Bridge struct {
	echo responsesEcho
	// hub is the request as Chat Completions in the hub's shape; chat is it parsed, for the target's rules.
	hub  []byte
	chat *RequestBody
	// answer holds the chat answer, edited for the client's dialect, before it becomes a Response.
	answer []byte
	events responsesEvents
	// dropped is UpstreamBody.Dropped of a bridged request: the fields the bridge and the chat rules left out.
	dropped []string
}

// responsesEcho is what a bridged Response repeats of its request. Each value is the member's raw JSON as
// the client sent it (a copy, in buf: the request body is gone when the answer arrives), nil when absent.
type responsesEcho struct {
	buf []byte

	model, instructions, tools, toolChoice, parallelToolCalls, temperature, topP, maxOutputTokens,
	text, reasoning, metadata, user, safetyIdentifier, promptCacheKey, serviceTier, truncation,
	topLogprobs, maxToolCalls []byte

	// leftOut lists the fields sent that the target's chat API lacks, which the bridge left out.
	leftOut []string

	// stream: the client asked for a stream.
	stream bool
	// storeAsked: the client sent store: true or no store (whose default is true). A chat-only provider
	// stores nothing, so the Response says store: false whatever was asked.
	storeAsked bool
}

// bridgeOptions are what a chat-only target takes of the fields a Responses request maps to; each dialect's
// table sets them (chatBridge), as data.
type bridgeOptions struct {
	// maxTokensField is the chat field max_output_tokens becomes: "max_completion_tokens" (OpenAI's current
	// name) or "max_tokens".
	maxTokensField string
	// developerRole: the target takes the developer role; otherwise developer messages become system ones.
	developerRole bool
	// streamUsage: the target takes stream_options.include_usage, which a bridged stream asks for so its
	// terminal event carries usage.
	streamUsage bool
	// reasoningEffort: the target takes reasoning_effort (from reasoning.effort); otherwise it is left out.
	reasoningEffort bool
	// openAIParams: the target takes OpenAI's chat parameters parallel_tool_calls, user, safety_identifier,
	// prompt_cache_key, service_tier and verbosity (from text.verbosity); otherwise they are left out.
	openAIParams bool
}

// storedResponseRefusal answers the routes below .../responses/ (retrieve, delete, cancel, input_items,
// input_tokens, compact): the gateway picks a provider by the request's model, and these name none, so the
// one that stored a response cannot be found; nor can a provider with only Chat Completions store one.
func storedResponseRefusal(method, path string) *Error {
	return NewError(ErrUnsupportedParameter, "response_id", method+" "+quoteForMessage(path)+
		" needs a response stored at the provider, and this gateway routes each request by its model and keeps no "+
		"responses: create responses with store: false and send the whole conversation in input instead of "+
		"previous_response_id (AI SDK: providerOptions.openai.store = false)")
}

// bridges reports whether a request reaches its target as Chat Completions: a Responses request toward a
// provider without the Responses API, or toward a model entry marked chat_only.
func bridges(req *ClientRequest, t *Target) bool {
	return req.Op == OpResponses && (t.ChatOnly || !t.Dialect.Supports(OpResponses))
}

// asChat is the request as its target receives it: a bridged Responses request is a chat request there.
func asChat(req *ClientRequest) *ClientRequest {
	chat := *req
	chat.Op = OpChatCompletions
	return &chat
}

// renderBridged is RenderBody for a bridged request: the Responses body becomes a chat body in the hub's
// shape, which the target's chat rules then render like any chat client's.
func renderBridged(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	b := body.bridge
	if b == nil {
		b = &Bridge{chat: &RequestBody{}}
		body.bridge = b
	}
	hub, e := bridgeLocated(b.hub[:0], body.src, body.members, &t.Dialect.spec().chatBridge, &b.echo)
	if e != nil {
		return UpstreamBody{}, e
	}
	b.hub = hub
	if e := b.chat.parseWritten(hub); e != nil {
		// bridgeRequest writes what Parse accepts; reaching this is a bug in the bridge, not the client's.
		return UpstreamBody{}, NewError(ErrInternal, "", "the request bridged to chat completions is not valid: "+e.Message)
	}
	out, e := RenderBody(dst, asChat(req), b.chat, t)
	if e != nil {
		return out, e
	}
	if len(b.echo.leftOut) > 0 {
		// Listed first: the fields the bridge left out, then those the target's chat rules dropped.
		b.dropped = append(append(b.dropped[:0], b.echo.leftOut...), out.Dropped...)
		out.Dropped = b.dropped
	}
	if !out.Changed {
		// The caller keeps dst as its own buffer: the body must be there, not in the bridge's.
		out.Body = append(dst[:0], hub...)
	}
	out.Changed, out.Bridge = true, b
	return out, nil
}

// chatSide is the exchange between the provider and a chat client of the Responses client's dialect: what
// the chat answer is translated for before it becomes a Response. The bridge asked for usage where the
// provider takes the option, so the usage chunk reaches the converter.
func (x *Exchange) chatSide() Exchange {
	chat := *x
	chat.Op, chat.Bridge = OpChatCompletions, nil
	chat.IncludeUsage, chat.StripUsageChunk = true, false
	chat.Tools = x.Bridge.chat.HasTools()
	return chat
}

// answerBridged is Answer for a bridged exchange: the chat answer, edited for the client's dialect, becomes a
// Response.
func answerBridged(dst []byte, x *Exchange, body []byte) ([]byte, []Header, Usage, error) {
	b := x.Bridge
	chat := x.chatSide()
	answer, headers, usage, err := answerChat(b.answer[:0], &chat, body)
	if err != nil {
		return nil, nil, usage, err
	}
	if len(answer) > 0 && len(body) > 0 && &answer[0] != &body[0] {
		b.answer = answer[:0]
	}
	out, err := bridgeAnswer(dst[:0], answer, &b.echo)
	return out, headers, usage, err
}

// responsesStreamFinished reports whether the last data event of a Responses stream ended it.
func responsesStreamFinished(last []byte) bool {
	switch gjson.GetBytes(last, "type").Str {
	case "response.completed", "response.incomplete", "response.failed", "error":
		return true
	}
	return false
}

// responsesErrorEvent is the error event a Responses stream ends with when the gateway must stop it. Both
// shapes in use are written: the flat code and message of the API reference, and the nested error member
// the service sends (openai-go reports a stream error only for a top-level error member); its
// sequence_number follows the last event's.
func responsesErrorEvent(last []byte, e *Error) []byte {
	seq := int64(0)
	if n := gjson.GetBytes(last, "sequence_number"); n.Type == gjson.Number {
		seq = n.Int() + 1
	}
	b := append([]byte(nil), "event: error\ndata: {\"type\":\"error\",\"code\":"...)
	b = jsonscan.AppendString(b, string(e.Code))
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, e.Message)
	b = append(b, `,"param":null,"sequence_number":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"error":{"type":"server_error","code":`...)
	b = jsonscan.AppendString(b, string(e.Code))
	b = append(b, `,"message":`...)
	b = jsonscan.AppendString(b, e.Message)
	return append(b, `,"param":null}}`+"\n\n"...)
}

// openAIChatBridge is what OpenAI's chat API (and Azure OpenAI's) takes of a bridged Responses request.
var openAIChatBridge = bridgeOptions{maxTokensField: "max_completion_tokens", developerRole: true, streamUsage: true,
	reasoningEffort: true, openAIParams: true}

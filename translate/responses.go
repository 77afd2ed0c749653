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
	"math"
	"strconv"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// The Responses surface (surface.go) serves the Responses API's create and its stateless sub-routes: natively
// toward a target that has the API (responsesSurface), bridged to chat completions toward one that has not
// (bridgedRequests renders, a Bridge answers).
func init() {
	surfacePickers = append(surfacePickers, responsesSurfaceFor)
	for _, op := range [...]Operation{OpResponses, OpResponsesInputTokens, OpResponsesCompact} {
		nativeAnswers[op] = responses
	}
}

// responsesSurfaceFor picks the Responses surface's way of serving a request of its family.
func responsesSurfaceFor(req *ClientRequest, t *Target) requestSurface {
	switch {
	case !req.Op.responsesFamily():
		return nil
	case bridges(req, t):
		return bridgedRequests
	}
	return responses
}

// responsesSurface serves the Responses API toward a provider that has it: the request in its own shape,
// a Response passed through with its ids bound to the consumer (binding.go), and a stream of named events
// that ends with its terminal event instead of [DONE].
type responsesSurface struct{}

var responses = responsesSurface{}

func (responsesSurface) renderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	if e := chatOnlyRefusal(req, t); e != nil {
		return UpstreamHead{}, e
	}
	return renderHeadAs(req, req.Op, t)
}

func (responsesSurface) renderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	return renderBodyAs(dst, req, body, t)
}

// answer passes a Response through (the provider's Responses API answers in its client's shape; its usage
// is read all the same); the sub-routes' answers get the usual edits.
func (responsesSurface) answer(dst []byte, x *Exchange, body []byte) ([]byte, []Header, Usage, error) {
	out, headers, usage, err := answerChat(dst, x, body, x.Op != OpResponses && x.providerEdits())
	if err == nil && x.bindsAnswer() {
		out = x.bindAnswer(dst, out)
	}
	return out, headers, usage, err
}

func (responsesSurface) startStream(s *Stream, _ int) {
	if s.x.Op != OpResponses {
		s.inspect = streamMayNeedEdits(&s.x)
		return
	}
	// A Responses stream passes through, its lifecycle events' ids bound.
	s.namedEvents, s.bindIDs, s.inspect = true, s.x.bindsAnswer(), s.x.StripUsageChunk
}

func (responsesSurface) write(s *Stream, chunk []byte, emit func(piece []byte)) ([]byte, error) {
	out, err := s.writeChat(chunk)
	return emitOut(out, err, emit)
}

// close ends a Responses stream with its terminal event, and no [DONE] is added to it; a [DONE] an upstream
// sends instead of the terminal event does not finish it.
func (responsesSurface) close(s *Stream, emit func(piece []byte)) []byte {
	if !s.namedEvents {
		out, _ := emitOut(s.closeChat(), nil, emit)
		return out
	}
	s.flushLast()
	if !responsesStreamFinished(s.last) {
		s.truncated = true
		s.out = append(s.out, responsesErrorEvent(s.last, NewError(ErrUpstreamStream, "",
			"the upstream stream ended before the response was complete; retry the request"))...)
	}
	s.done = true
	out, _ := emitOut(s.out, nil, emit)
	return out
}

// failure is an error event when the provider's own Responses stream is cut short.
func (responsesSurface) failure(s *Stream, e *Error) []byte {
	if !s.namedEvents {
		return StreamFailure(s.x.Client, e)
	}
	return responsesErrorEvent(s.last, e)
}

func (responsesSurface) usage(s *Stream) Usage {
	if !s.namedEvents {
		return ReadUsage(s.last)
	}
	return usageOf(gjson.GetBytes(s.last, "response.usage")) // in the terminal event's response
}

func (responsesSurface) manyPieces() bool { return false }

func (responsesSurface) echoOmitted() []string { return nil }

// planClientMetadata leaves out a Responses request's client_metadata, named in x-aidialect-dropped-params.
// The Codex CLI sends it on every turn (installation, thread and turn ids for OpenAI's analytics; the same
// ids go out as its headers, and nothing in the answer depends on them), and the public APIs refuse it as an
// unknown parameter: OpenAI's Responses API (it is not in the API's schema; SEMOSS/Semoss#2532 and
// 9router#1157 report "Unknown parameter: 'client_metadata'") and Azure OpenAI's (LiteLLM's
// "AzureException BadRequestError - Unknown parameter: 'client_metadata'"). Forwarded, it would make the
// first request of every Codex session fail. docs/agent-clients.md has the evidence.
func planClientMetadata(c *renderContext, i int, p *memberPlan) *Error {
	if c.req.Op.responsesFamily() {
		p.edit, p.settled = editDrop, true
		c.extras.add(c.body, i)
	}
	return nil
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
	// customTools: the target's chat API declares custom (freeform) tools, as OpenAI's does; otherwise a
	// custom tool becomes a function taking one string (responses_tools.go).
	customTools bool
	// dropHostedTools is the target's hosted_tools "drop" (Target.DropHostedTools), set per request.
	dropHostedTools bool
}

// storedResponseRefusal answers the routes below .../responses/ other than input_tokens and compact
// (retrieve, delete, cancel, input_items): the gateway picks a provider by the request's model, and these
// name none, so the one that stored a response cannot be found; nor can a provider with only Chat
// Completions store one.
func storedResponseRefusal(method, path string) *Error {
	return NewError(ErrUnsupportedParameter, "response_id", method+" "+quoteForMessage(path)+
		" needs a response stored at the provider, and this gateway routes each request by its model and keeps no "+
		"responses: create responses with store: false and send the whole conversation in input instead of "+
		"previous_response_id (AI SDK: providerOptions.openai.store = false; LangChain: use_previous_response_id=False)")
}

// bridges reports whether a request reaches its target as Chat Completions: a Responses request toward a
// provider without the Responses API, or toward a model entry marked chat_only.
func bridges(req *ClientRequest, t *Target) bool {
	return req.Op == OpResponses && (t.ChatOnly || !t.Dialect.Supports(OpResponses))
}

// chatOnlyRefusal refuses the Responses API's stateless sub-routes toward a model entry marked chat_only:
// they have no chat completions equivalent (a provider without the API refuses them as any operation it
// lacks).
func chatOnlyRefusal(req *ClientRequest, t *Target) *Error {
	if !t.ChatOnly || !req.Op.responsesFamily() || req.Op == OpResponses {
		return nil
	}
	return NewError(ErrUnsupportedOperation, "", "the model is marked chat_only on this gateway, and chat completions "+
		"have no "+req.Op.String()+" operation: use a model served with the Responses API")
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
	if n := gjson.GetBytes(last, "sequence_number"); n.Type == gjson.Number && n.Int() >= 0 && n.Int() < math.MaxInt64 {
		seq = n.Int() + 1
	}
	b := append([]byte(nil), "event: error\ndata: {\"type\":\"error\",\"sequence_number\":"...)
	b = strconv.AppendInt(b, seq, 10)
	b = appendErrorEventFields(b, jsonscan.AppendString(nil, string(e.Code)), jsonscan.AppendString(nil, e.Message))
	return append(b, "}\n\n"...)
}

// appendErrorEventFields writes the members of an error event after its type and sequence_number, code and
// message being JSON strings.
func appendErrorEventFields(b, code, message []byte) []byte {
	b = append(b, `,"code":`...)
	b = append(b, code...)
	b = append(b, `,"message":`...)
	b = append(b, message...)
	b = append(b, `,"param":null,"error":{"type":"server_error","code":`...)
	b = append(b, code...)
	b = append(b, `,"message":`...)
	b = append(b, message...)
	return append(b, `,"param":null}`...)
}

// azureOpenAIChatBridge is what Azure OpenAI's chat API takes of a bridged Responses request: OpenAI's
// parameters, but no custom tools (none of Azure's chat API references has them).
var azureOpenAIChatBridge = bridgeOptions{maxTokensField: "max_completion_tokens", developerRole: true,
	streamUsage: true, reasoningEffort: true, openAIParams: true}

// openAIChatBridge is what OpenAI's chat API takes of a bridged Responses request: custom tools too
// (ChatCompletionCustomTool in the API reference).
var openAIChatBridge = func() bridgeOptions {
	o := azureOpenAIChatBridge
	o.customTools = true
	return o
}()

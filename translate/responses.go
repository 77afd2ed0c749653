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
	return renderHeadAs(req, t)
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

// Bridge is one Responses exchange bridged to Chat Completions, and the answer side of the bridged surface:
// what the Response repeats of its request, the chat request built from it, and the converters' state. It
// lives in the RequestBody (one per worker, reused), so its buffers are kept from one request to the next.
type Bridge struct {
	echo responsesEcho
	// chatRequest is the client's request as the chat request it becomes (its operation switched), which
	// the target's chat rules render.
	chatRequest ClientRequest
	// hub is the request as Chat Completions in the hub's shape; chat is it parsed, for the target's rules.
	hub  []byte
	chat *RequestBody
	// chatAnswer holds the chat answer, edited for the client's dialect, before it becomes a Response.
	chatAnswer []byte
	events     responsesEvents
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
	// toolCalls are the chat tools the request declared: what their calls become.
	toolCalls bridgedTools
	// omitted lists the fields sent whose values did not fit in maxEchoBytes: the Response states the API's
	// value for an absent member instead.
	omitted []string

	// stream: the client asked for a stream.
	stream bool
	// storeAsked: the client sent store: true or no store (whose default is true). A chat-only provider
	// stores nothing, so the Response says store: false whatever was asked.
	storeAsked bool
}

// echoOmitted lists the request fields whose values the bridged Response does not repeat, for they did not
// fit in the 256 KiB it repeats (the answer's x-aidialect-echo-omitted header); nil for none.
func (b *Bridge) echoOmitted() []string {
	if len(b.echo.omitted) == 0 {
		return nil
	}
	return b.echo.omitted
}

func (b *Bridge) answer(dst []byte, x *Exchange, body []byte) ([]byte, []Header, Usage, error) {
	return answerBridged(dst, x, b, body)
}

// startStream edits the chat stream for the client's dialect as any chat stream, then converts it.
func (b *Bridge) startStream(s *Stream, maxEventBytes int) {
	s.x = b.chatSide(&s.x)
	b.events.reset(&b.echo, maxEventBytes)
	s.inspect = streamMayNeedEdits(&s.x)
}

// write converts the next chunk of a bridged stream into Responses events: written to the stream's
// converted buffer and returned when emit is nil, else handed to emit in pieces (and what it returns is
// empty).
func (b *Bridge) write(s *Stream, chunk []byte, emit func(piece []byte)) ([]byte, error) {
	chat, err := s.writeChat(chunk)
	if err != nil {
		return nil, err
	}
	events := &b.events
	events.emit = emit
	defer func() { events.emit = nil }()
	s.converted, err = events.write(s.converted[:0], chat)
	return s.converted, err
}

// close ends a bridged stream, as write writes.
func (b *Bridge) close(s *Stream, emit func(piece []byte)) []byte {
	tail := s.closeChat()
	events := &b.events
	events.emit = emit
	defer func() { events.emit = nil }()
	var err error
	if s.converted, err = events.write(s.converted[:0], tail); err != nil {
		s.converted = events.fail(s.converted[:0], err.Error())
		return s.converted
	}
	s.converted = events.close(s.converted)
	return s.converted
}

// failure is response.failed, which the Responses SDKs report as the stream's error.
func (b *Bridge) failure(s *Stream, e *Error) []byte {
	return b.events.fail(s.converted[:0], e.Message)
}

func (b *Bridge) usage(s *Stream) Usage { return ReadUsage(s.last) }

// manyPieces: a chunk may end several output items, and the stream's end repeats them all.
func (b *Bridge) manyPieces() bool { return true }

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

// bridgedRequests is the bridged surface's request side: the Responses request rendered as the chat request
// it becomes.
var bridgedRequests = bridgeRequests{}

type bridgeRequests struct{}

func (bridgeRequests) renderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	chatRequest := *req
	chatRequest.Op = OpChatCompletions
	return renderHeadAs(&chatRequest, t)
}

// renderBody: the Responses body becomes a chat body in the hub's shape, which the target's chat rules then
// render like any chat client's.
func (bridgeRequests) renderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	b := body.bridge
	if b == nil {
		b = &Bridge{chat: &RequestBody{}}
		body.bridge = b
	}
	// The chat body's top-level members are recorded as they are written, into the chat RequestBody's own
	// table: it is parsed without a scan.
	table := b.chat.members[:0]
	if table == nil {
		table = make([]jsonscan.Member, 0, len(responsesFields))
	}
	opts := t.Dialect.spec().chatBridge
	opts.dropHostedTools = t.DropHostedTools
	hub, written, e := bridgeLocated(b.hub[:0], body.src, body.members, table, &opts, &b.echo)
	if e != nil {
		return UpstreamBody{}, e
	}
	b.hub = hub
	if e := b.chat.parseWritten(hub, written); e != nil {
		// bridgeRequest writes what Parse accepts; reaching this is a bug in the bridge, not the client's.
		return UpstreamBody{}, NewError(ErrInternal, "", "the request bridged to chat completions is not valid: "+e.Message)
	}
	// Rendered as the chat request it now is; the copy lives in the bridge (a local would be allocated:
	// the render context keeps it).
	b.chatRequest = *req
	b.chatRequest.Op = OpChatCompletions
	out, e := renderBodyAs(dst, &b.chatRequest, b.chat, t)
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
	out.Changed, out.surface = true, b
	return out, nil
}

// chatSide is the exchange between the provider and a chat client of the Responses client's dialect: what
// the chat answer is translated for before it becomes a Response. The bridge asked for usage where the
// provider takes the option, so the usage chunk reaches the converter.
func (b *Bridge) chatSide(x *Exchange) Exchange {
	chat := *x
	chat.Op, chat.surface, chat.Binding = OpChatCompletions, nil, ResponseBinding{}
	chat.IncludeUsage, chat.StripUsageChunk = true, false
	chat.Tools = b.chat.HasTools()
	return chat
}

// answerBridged is Answer for a bridged exchange: the chat answer, edited for the client's dialect, becomes a
// Response.
func answerBridged(dst []byte, x *Exchange, b *Bridge, body []byte) ([]byte, []Header, Usage, error) {
	chat := b.chatSide(x)
	answer, headers, usage, err := answerChat(b.chatAnswer[:0], &chat, body, chat.providerEdits())
	if err != nil {
		return failedAnswer(dst, body, &b.echo, err), nil, usage, err
	}
	if len(answer) > 0 && len(body) > 0 && &answer[0] != &body[0] {
		b.chatAnswer = answer[:0]
	}
	// An exchange answers in JSON or as a stream, never both: the stream converter's id set serves.
	out, err := bridgeAnswer(dst[:0], answer, &b.echo, &b.events.callIDs)
	if err != nil {
		return failedAnswer(dst, body, &b.echo, err), headers, usage, err
	}
	return out, headers, usage, nil
}

// failedAnswer is the Response a Responses client gets when the provider's chat answer cannot become one
// (not JSON, or past a bound): the chat body would mean nothing to its SDK, which reads a failed Response's
// error instead.
func failedAnswer(dst, body []byte, echo *responsesEcho, err error) []byte {
	var usage bridgedUsage
	r := bridgedResponse{hash: bridgeHash(body), status: responseStatusFailed, usage: &usage,
		failure: jsonscan.AppendString(nil, "the provider's answer could not be read: "+err.Error())}
	dst = appendResponseHead(dst[:0], &r, echo)
	return append(appendResponseTail(dst, &r, echo), '}')
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

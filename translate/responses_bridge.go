//go:build !aidialect_no_bridge

package translate

// The Responses bridge: a Responses request toward a target without the Responses API becomes a chat
// request (responses_request.go, responses_tools.go), and the chat answer or stream becomes a Response or its
// event sequence (responses_answer.go, responses_stream.go). Built without it (the build tag
// aidialect_no_bridge, responses_nobridge.go), such requests are refused locally and the module is smaller
// (BENCHMARKS.md gives the bytes).

import (
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

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

// bridgedRequests is the bridged surface's request side: the Responses request rendered as the chat request
// it becomes.
var bridgedRequests = bridgeRequests{}

type bridgeRequests struct{}

// renderHead renders the request line of the chat request the Responses request becomes.
func (bridgeRequests) renderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	return renderHeadAs(req, OpChatCompletions, t)
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

// footprint is the bytes a bridged exchange's state keeps: its chat body, answer and echo buffers, and the
// stream converter's (whose items hold a whole answer's text until the stream ends).
func (b *Bridge) footprint() int {
	if b == nil {
		return 0
	}
	n := cap(b.hub) + cap(b.chatAnswer) + cap(b.echo.buf) + (cap(b.echo.leftOut)+cap(b.echo.omitted)+cap(b.dropped))*int(unsafe.Sizeof("")) +
		b.chat.Footprint() + b.events.framer.Footprint() + cap(b.events.finish) + cap(b.events.createdAt) +
		cap(b.events.model) + cap(b.events.tier) + cap(b.events.failure) + cap(b.events.toolItems)*4 +
		(cap(b.events.top)+cap(b.events.choice)+cap(b.events.delta)+cap(b.events.call))*int(unsafe.Sizeof(jsonscan.Member{})) +
		cap(b.events.items)*int(unsafe.Sizeof(bridgedItem{})) + b.events.callIDs.footprint() + cap(b.events.scratch) +
		b.echo.toolCalls.footprint()
	for _, it := range b.events.items[:cap(b.events.items)] {
		n += cap(it.text) + cap(it.refusal) + cap(it.callID) + cap(it.name) + cap(it.arguments)
	}
	return n
}

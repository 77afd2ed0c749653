package translate

// Client surfaces. A surface is the shape of API a client speaks (chat completions and its siblings, the
// Responses API...) as one attempt serves it: how its request is rendered for a target, and how the
// target's answer, stream and failures are written back in the client's shape. The core (render.go,
// response.go, stream.go) knows dialects, never a surface: it calls the attempt's surface at each point
// where surfaces differ. chatSurface serves every operation no other surface claims: its answers and
// streams are the client dialect's own shapes (completions and embeddings included). Other surfaces
// register a picker in their own file (responses.go), so a new surface is one more implementation and a
// registration, and a build tag that leaves its files out leaves the surface out.

// requestSurface is a surface's request side: it renders the request for the target (render.go's
// RenderHead and RenderBody call it). A surface that serves the request in the target's own shape calls
// renderHeadAs and renderBodyAs; one that converts it renders what it converted to.
type requestSurface interface {
	renderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error)
	// renderBody sets UpstreamBody.surface when the answer needs state the rendering made.
	renderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error)
}

// answerSurface is a surface's answer side: the target's answer, stream and failures for the client.
type answerSurface interface {
	// answer translates a complete JSON answer for the client (Answer).
	answer(dst []byte, x *Exchange, body []byte) ([]byte, []Header, Usage, error)

	// startStream prepares s, already reset for x, for this surface's stream: it may change s.x (a
	// surface that converts another's stream edits it as that one first) and sets how events are read.
	startStream(s *Stream, maxEventBytes int)
	// write and close give the stream's output for a chunk and at its end: to emit in pieces of whole
	// events, or returned when emit is nil.
	write(s *Stream, chunk []byte, emit func(piece []byte)) ([]byte, error)
	close(s *Stream, emit func(piece []byte)) []byte
	// failure is the last event of a stream that cannot go on, in the shape the client's SDK reports as
	// an error.
	failure(s *Stream, e *Error) []byte
	// usage reads the stream's token usage after it ended.
	usage(s *Stream) Usage
	// manyPieces reports whether one chunk may give several pieces of output (a converting surface's may).
	manyPieces() bool
	// echoOmitted lists request fields the answer does not repeat though it repeats its request (see
	// Attempt.EchoOmitted); nil for a surface that repeats nothing.
	echoOmitted() []string
}

// surfacePicker is a surface's registration: the surface that serves the request toward the target, or
// nil when it does not serve it.
type surfacePicker func(req *ClientRequest, t *Target) requestSurface

// surfacePickers are the registered surfaces besides chat, asked in order.
var surfacePickers []surfacePicker

// nativeAnswers is, per operation, the answer side of the surface that serves the operation in the client's
// own shape (nil: chat's): an attempt whose rendering set no UpstreamBody.surface is answered by it.
var nativeAnswers [opCount]answerSurface

// answerSurface is the answer side for an exchange: the one its rendering set, else the operation's.
func (x *Exchange) answerSurface() answerSurface {
	switch {
	case x.surface != nil:
		return x.surface
	case int(x.Op) < len(nativeAnswers) && nativeAnswers[x.Op] != nil:
		return nativeAnswers[x.Op]
	}
	return chat
}

// surfaceFor is the surface that serves the request toward the target.
func surfaceFor(req *ClientRequest, t *Target) requestSurface {
	for _, pick := range surfacePickers {
		if s := pick(req, t); s != nil {
			return s
		}
	}
	return chat
}

// chat serves chat completions, completions and embeddings in the client dialect's own shapes.
var chat = chatSurface{}

type chatSurface struct{}

func (chatSurface) renderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	return renderHeadAs(req, req.Op, t)
}

func (chatSurface) renderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	return renderBodyAs(dst, req, body, t)
}

func (chatSurface) answer(dst []byte, x *Exchange, body []byte) ([]byte, []Header, Usage, error) {
	return answerChat(dst, x, body, x.providerEdits())
}

func (chatSurface) startStream(s *Stream, _ int) { s.inspect = streamMayNeedEdits(&s.x) }

func (chatSurface) write(s *Stream, chunk []byte, emit func(piece []byte)) ([]byte, error) {
	out, err := s.writeChat(chunk)
	return emitOut(out, err, emit)
}

func (chatSurface) close(s *Stream, emit func(piece []byte)) []byte {
	out, _ := emitOut(s.closeChat(), nil, emit)
	return out
}

func (chatSurface) failure(s *Stream, e *Error) []byte { return StreamFailure(s.x.Client, e) }

func (chatSurface) usage(s *Stream) Usage { return ReadUsage(s.last) }

func (chatSurface) manyPieces() bool { return false }

func (chatSurface) echoOmitted() []string { return nil }

// emitOut hands a surface's whole output to emit as one piece, when there is an emit and an output; the
// output is returned either way.
func emitOut(out []byte, err error, emit func(piece []byte)) ([]byte, error) {
	if emit != nil && err == nil && len(out) > 0 {
		emit(out)
	}
	return out, err
}

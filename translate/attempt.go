package translate

import "strings"

// Attempt is one upstream attempt of a client request: the request rendered for one target, and that
// target's answer, stream and errors translated back for the client. Rendering reads the parsed request
// and never changes it, so the caller keeps the client's original and makes one attempt per target: a later
// attempt toward another provider, another key or another dialect starts afresh from the same request.
type Attempt struct {
	target Target
	x      Exchange
	// dropped and droppedMore are the request fields the rendering left out (UpstreamBody.Dropped).
	dropped     []string
	droppedMore int
}

// NewAttempt starts an attempt of the request toward the target. Until its body is rendered, the attempt
// answers from what the request line says (an answer may come before the body was read: an upstream's or
// Envoy's error).
func NewAttempt(req *ClientRequest, t *Target) Attempt {
	return Attempt{target: *t, x: Exchange{Client: req.Dialect, Provider: t.Dialect, Op: req.Op,
		onchain: t.Settings.onchain, Binding: t.Binding}}
}

// Target is the attempt's target.
func (a *Attempt) Target() *Target { return &a.target }

// Client is the dialect the client is answered in.
func (a *Attempt) Client() Dialect { return a.x.Client }

// Head renders the request line and header edits for the target, through the models entry's cache (nil for
// none).
func (a *Attempt) Head(req *ClientRequest, cache *HeadCache) (UpstreamHead, *Error) {
	return cache.Render(req, &a.target)
}

// Render writes the body for the target into dst (see RenderBody) and completes the attempt's exchange from
// it: what the client asked of the answer, and the surface that answers it.
func (a *Attempt) Render(dst []byte, req *ClientRequest, body *RequestBody) (UpstreamBody, *Error) {
	out, e := RenderBody(dst, req, body, &a.target)
	if e != nil {
		return out, e
	}
	a.x = Exchange{Client: req.Dialect, Provider: a.target.Dialect, Op: req.Op, onchain: a.target.Settings.onchain,
		IncludeUsage: body.IncludeUsage, StripUsageChunk: out.ForcedUsage, Tools: body.HasTools(),
		surface: out.surface, Binding: a.target.Binding}
	a.dropped, a.droppedMore = out.Dropped, out.DroppedMore
	return out, nil
}

// Dropped lists the request fields the rendering left out, up to a bound, and how many more there were
// (for x-aidialect-dropped-params).
func (a *Attempt) Dropped() ([]string, int) { return a.dropped, a.droppedMore }

// EchoOmitted lists the request fields whose values the answer does not repeat though it repeats its request
// (a bridged Response's, past its budget: x-aidialect-echo-omitted); nil for none.
func (a *Attempt) EchoOmitted() []string { return a.x.answerSurface().echoOmitted() }

// Answer translates a successful JSON answer for the client (see Answer).
func (a *Attempt) Answer(dst, body []byte) (out []byte, headers []Header, usage Usage, err error) {
	return Answer(dst, &a.x, body)
}

// ErrorAnswer translates an upstream error answer into the client's envelope (see ErrorAnswer).
func (a *Attempt) ErrorAnswer(status int, body []byte) (int, []byte) {
	return ErrorAnswer(a.x.Client, a.x.Provider, status, body)
}

// ErrorStatus is the status the client sees for an upstream error status (see ClientErrorStatus).
func (a *Attempt) ErrorStatus(status int) int { return ClientErrorStatus(a.x.Client, status) }

// HeadersFromBody reports whether a JSON answer's headers depend on its body (see AnswerHeadersFromBody).
func (a *Attempt) HeadersFromBody() bool { return AnswerHeadersFromBody(&a.x) }

// StartStream prepares s, reused, for the attempt's stream.
func (a *Attempt) StartStream(s *Stream, maxEventBytes int) { s.Reset(a.x, maxEventBytes) }

// Release drops what the attempt holds of the request and its buffers.
func (a *Attempt) Release() { *a = Attempt{} }

// HeadCache is a models entry's last rendered request line. RenderHead reads nothing but the client request
// and the target, so for inputs equal to the last ones its result is the same; rendered anew it costs a dozen
// microseconds and several allocations per request. The inputs are compared whole (==), so a field added to
// either type is compared without a change here.
type HeadCache struct {
	req    ClientRequest
	target Target
	head   UpstreamHead
	valid  bool
}

// Render is RenderHead, remembered. The result's slices are shared: callers read them only.
func (c *HeadCache) Render(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	if c == nil {
		return RenderHead(req, t)
	}
	target := *t
	// The binding edits the body and the answer, never the request line: leaving it out lets one entry serve
	// every consumer.
	target.Binding = ResponseBinding{}
	if c.valid && c.req == *req && c.target == target {
		return c.head, nil
	}
	head, err := RenderHead(req, t)
	if err != nil {
		return head, err
	}
	*c = HeadCache{req: req.cloned(), target: target.cloned(), head: head, valid: true}
	return head, nil
}

// cloned copies the request's strings: a host may hand the guest strings in memory it later reuses, and a
// cache keeps them.
func (r ClientRequest) cloned() ClientRequest {
	for _, s := range [...]*string{&r.Deployment, &r.APIVersion, &r.SurfaceVersion, &r.ModelHeader, &r.PolicyHeader} {
		*s = strings.Clone(*s)
	}
	return r
}

// cloned copies the target's strings that may come from a request (the model a client named); the others
// are the configuration's.
func (t Target) cloned() Target {
	t.Model = strings.Clone(t.Model)
	return t
}

package main

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/health"
	"github.com/aidialect/aidialect/internal/redact"
	"github.com/aidialect/aidialect/translate"
)

// The lifecycle of an exchange is two phases, one per direction, each moved forward by the callbacks
// (docs/architecture.md draws them). Each invariant is a property of a phase: a request in requestBodyArriving
// went upstream with its headers and nothing of its body; once the answer is answerFlowing, no local reply
// is possible; an answer in answerEnded or answerFailed has given the client its last bytes.

// requestPhase is where the client's request is.
type requestPhase uint8

const (
	// requestArriving: the request headers have not been read (or failed before a decision).
	requestArriving requestPhase = iota
	// requestNotOurs: an unknown path, passed on untouched, headers and body.
	requestNotOurs
	// requestHeldForBody: the headers are held until the body names the model; no attempt yet.
	requestHeldForBody
	// requestBodyArriving: routed on the request line, the headers went upstream; the body is held until
	// it is whole and checked.
	requestBodyArriving
	// requestSent: checked, rendered for the attempt and released upstream.
	requestSent
	// requestCutShort: the answer began before the body was sent (an upstream's or Envoy's early answer):
	// the rest of the body is held, never checked nor forwarded, and the answer keeps the exchange it began
	// with.
	requestCutShort
)

// answerPhase is where the answer to the client is.
type answerPhase uint8

const (
	// answerAwaited: no response headers yet; a local reply is possible.
	answerAwaited answerPhase = iota
	// answerLocal: the filter answered locally; its reply passes back through the response callbacks
	// untouched (docs/envoy-host.md section 5).
	answerLocal
	// answerHeld: the upstream's response headers are held until the JSON body says which headers to add;
	// a local reply is still possible.
	answerHeld
	// answerFlowing: the response headers went to the client; the body is handled as the attempt's mode
	// says.
	answerFlowing
	// answerEnded: the client got its last event (the stream closed, or failed with an error event): the
	// rest of the upstream's stream has nothing more for it.
	answerEnded
	// answerFailed: the filter failed mid-answer (a panic): the client got an error in its dialect, and the
	// rest of the body is dropped.
	answerFailed
	// answerRetrying: the attempt's answer was a retryable failure and another attempt is under way by a
	// callout (failover.go); the failed answer's headers are held and its body dropped until the callout's
	// answer replaces it with a local reply.
	answerRetrying
)

// localReplyPossible reports whether a local reply can still answer the client: nothing of an upstream
// answer went to it, and it was not answered already.
func (a answerPhase) localReplyPossible() bool {
	return a == answerAwaited || a == answerHeld || a == answerRetrying
}

// responseMode is how an attempt's answer body is handled.
type responseMode uint8

const (
	responseUntouched responseMode = iota // not ours, unreadable (content-encoding), or without a body
	responseJSON                          // buffered, translated at the end
	responseError                         // buffered, translated into the client's envelope
	responseStream                        // SSE, translated chunk by chunk
)

// upstreamAttempt is the attempt side of an exchange: one candidate provider, the request rendered for it,
// and its answer. The request side (httpContext's req, clientKey, consumer and the parsed body) does not
// change from one attempt to the next.
type upstreamAttempt struct {
	route modelRoute
	translate.Attempt
	// key is the index of the provider key the attempt uses; admitted what the health store said of it.
	key      int
	admitted health.Admission
	// recorded: the attempt's answer was written to the health store (a probe it claimed is settled).
	recorded bool
	mode     responseMode
	status   int
}

// httpContext is one request/response exchange.
type httpContext struct {
	types.DefaultHttpContext
	plugin *pluginContext
	id     uint32 // the host's context id
	// watchSince is the body watch's tick count when the request started waiting for its body; watchSlot is
	// its place in the watch, plus one (0: not watched).
	watchSince, watchSlot int
	cfg                   *config
	metrics               *metrics
	state                 *requestState // the parsed request body and the stream translator, pooled

	// The request side: what the client sent and who it is, whichever provider serves it.
	req       translate.ClientRequest
	clientKey string
	consumer  *consumer
	// candidates are the routes that may serve the request, by priority; planned the order this request
	// tries them in (failover.go); modelName the model the client asked for.
	candidates []modelRoute
	planned    attemptPlan
	modelName  string
	// rawBody is the client's body as read, kept for the renders of later attempts; pinned: it names a
	// provider's stored state, so it never fails over.
	rawBody []byte
	pinned  bool
	request requestPhase
	// calloutPending: a failover attempt's callout is under way; streamGone: Envoy finished the stream (the
	// client left, or the answer ended), so a late callout answer changes nothing.
	calloutPending, streamGone bool
	// lineModel is the model a request line named, for a request held for its body all the same (budgets).
	lineModel string
	// budget is the request's token budget check (budget.go).
	budget budgetState
	// startedMs is when the request's headers arrived (unix ms), for the GenAI durations; firstChunkSeen: the
	// stream's first chunk was timed.
	startedMs      int64
	firstChunkSeen bool

	// The attempt side: attempts counts the attempts made (0 until the model resolved), up is the current.
	attempts int
	up       upstreamAttempt
	answer   answerPhase

	// requestBuffered and responseBuffered are the sizes of the bodies Envoy holds for the filter, as the last
	// body callback reported them: a trailers callback, which reports none, reads that much.
	requestBuffered, responseBuffered int
	// responseBodyHeld: a response body callback paused, so Envoy holds the body and the trailers callback may
	// still replace it; without one, Envoy has no body there and refuses any write (docs/envoy-host.md
	// section 4). inResponseTrailers: the trailers callback is running.
	responseBodyHeld, inResponseTrailers bool

	// emit is emitPiece as a func value; pieceChunk the body chunk the current callback was given, pieces
	// the pieces of output it sent so far, manyPieces whether it may send more than one.
	emit           func(piece []byte)
	pieceChunk     []byte
	pieces         int
	manyPieces     bool
	localReplyCode int
	reqHeaders     headerList // read once in OnHttpRequestHeaders, written once when the route is applied
	// calloutHeaders are the client's headers a failover attempt carries (keepCalloutHeaders).
	calloutHeaders [][2]string
	respHeaders    headerList // read once in OnHttpResponseHeaders, written once when released

	// fault names the callback a test build makes panic (see faults_on.go); always empty in production.
	fault string
}

// OnHttpRequestHeaders classifies the request and, when the request line names the model, routes it at once;
// otherwise it pauses until the body says which model (allow_on_headers_stop_iteration, Envoy >= 1.35).
func (h *httpContext) OnHttpRequestHeaders(_ int, endOfStream bool) (action types.Action) {
	defer h.recoverPanic(&action)
	h.injectFault("OnHttpRequestHeaders")
	if h.cfg == nil {
		return h.reply(translate.DialectUnknown, translate.NewError(translate.ErrInternal, "", "the filter has no valid configuration; see the Envoy log"))
	}
	h.reqHeaders = readRequestHeaders(h.plugin.takePairs())
	head := readRequestHead(&h.reqHeaders)
	method, path := head.values[slotMethod], head.values[slotPath]
	req, detectErr := translate.Detect(method, path, h.cfg.pathPrefix)
	h.req = req
	if !req.Known() {
		if h.cfg.rejectUnknown {
			return h.reply(translate.DialectUnknown, translate.NewError(translate.ErrUnknownPath, "",
				"no LLM API lives at this path: use /v1/chat/completions, /v1/responses, /v1/completions or /v1/embeddings"))
		}
		// Not ours: leave it alone, but never let a client pick a provider route by sending our header, however
		// many times it sent it (the whole map is written back: one remove call takes one copy on some hosts).
		h.reqHeaders.del(h.cfg.routingHeader)
		h.reqHeaders.writeRequest()
		h.request = requestNotOurs
		return types.ActionContinue
	}
	if detectErr != nil {
		return h.reply(req.Dialect, detectErr)
	}
	h.startedMs = nowMillis()
	for i, name := range decisiveHeaders {
		if head.counts[decisiveSlots[i]] > 1 {
			return h.reply(req.Dialect, translate.NewError(translate.ErrInvalidParameter, name,
				"the "+name+" header is sent more than once: send it once"))
		}
	}
	h.clientKey = translate.ClientCredential(head.values[slotAuthorization], head.values[slotAPIKey])
	if !translate.HeaderSafe(h.clientKey) {
		// Passthrough providers get this value in another header: never copy a line break or NUL there.
		return h.reply(req.Dialect, translate.NewError(translate.ErrUnauthorized, "",
			"the API key contains control characters: send it as Authorization: Bearer <key> or api-key: <key>"))
	}
	if len(h.cfg.consumers) > 0 {
		if h.consumer = h.cfg.authenticate(h.clientKey); h.consumer == nil {
			return h.reply(req.Dialect, translate.NewError(translate.ErrUnauthorized, "",
				"missing or unknown API key: send your gateway key as Authorization: Bearer <key> or api-key: <key>"))
		}
	}
	if req.Op == translate.OpListModels {
		return h.replyModelList()
	}
	if enc := head.values[slotContentEncoding]; enc != "" && !strings.EqualFold(enc, "identity") {
		return h.reply(req.Dialect, translate.NewError(translate.ErrUnsupportedEncoding, "",
			"request bodies with content-encoding "+strconv.Quote(enc)+" cannot be translated: send the JSON uncompressed"))
	}
	if n, err := strconv.Atoi(head.values[slotContentLength]); err == nil && n > h.cfg.maxRequestBytes {
		return h.reply(req.Dialect, bodyTooLarge(h.cfg.maxRequestBytes))
	}
	if endOfStream {
		return h.reply(req.Dialect, translate.NewError(translate.ErrInvalidJSON, "", "the request has no body: send a JSON object"))
	}
	if name := req.Dialect.ModelHeader(); name != "" {
		h.req.ModelHeader = head.get(name)
		if h.req.ModelHeader != "" && !translate.ValidDeployment(h.req.ModelHeader) {
			// The client's model header routes the request and is forwarded to providers of its dialect: the
			// same rule as a deployment in a path.
			return h.reply(req.Dialect, translate.NewError(translate.ErrInvalidDeployment, name,
				"the "+name+" header must be a deployment name: 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'"))
		}
	}
	if name := req.Dialect.PolicyHeader(); name != "" {
		h.req.PolicyHeader = head.get(name)
	}
	model, inRequestLine := h.req.ModelFromHeaders()
	if !inRequestLine || h.cfg.budgets.on {
		// With budgets, a request the request line routes waits for its body too: nothing goes upstream before
		// the budget admits it, and the reservation is estimated from the body.
		if inRequestLine {
			h.lineModel = model
		}
		h.request = requestHeldForBody
		if h.cfg.bodyWaitSeconds > 0 {
			h.plugin.watch.add(h)
		}
		return types.ActionPause
	}
	if err := h.resolveCandidates(model); err != nil {
		return h.reply(req.Dialect, err)
	}
	h.plan(false) // the body, which may pin the request, comes later: it can still refuse to fail over
	upstream, err := h.beginAttempt(model)
	if err == errAllBenched {
		return h.unavailable(model)
	}
	if err != nil {
		return h.reply(req.Dialect, err)
	}
	// The body may still change size: Envoy must not forward the client's content-length.
	h.applyRequestHeaders(upstream, -1)
	h.request = requestBodyArriving
	return types.ActionContinue
}

// resolveCandidates finds the routes that may serve the model and checks the consumer may use it.
func (h *httpContext) resolveCandidates(model string) *translate.Error {
	if model == "" {
		return translate.NewError(translate.ErrInvalidParameter, "model", "the request names no model: set \"model\" in the body")
	}
	if h.candidates = h.cfg.resolve(model); len(h.candidates) == 0 {
		return translate.NewError(translate.ErrModelNotFound, "model",
			"the model "+quoteBounded(model)+" does not exist on this gateway: GET /v1/models lists the models it serves")
	}
	if h.consumer != nil && !h.consumer.allows(model) {
		return translate.NewError(translate.ErrModelNotAllowed, "model",
			"your key may not use the model "+quoteBounded(model)+": ask the gateway operator for access")
	}
	h.modelName = model
	return nil
}

// errAllBenched: beginAttempt found every candidate benched (answered by unavailable).
var errAllBenched = translate.NewError(translate.ErrProvidersUnavailable, "", "every provider is benched")

// beginAttempt starts the next attempt, toward the next candidate, and renders its request line. Until its
// body is rendered, the attempt answers from what the request line says (an answer may come before the body
// was read).
func (h *httpContext) beginAttempt(model string) (translate.UpstreamHead, *translate.Error) {
	var unsupported *translate.Error
	for {
		route, key, adm, ok := h.admitNext()
		if !ok {
			if unsupported != nil {
				return translate.UpstreamHead{}, unsupported
			}
			return translate.UpstreamHead{}, errAllBenched
		}
		head, err := h.startAttempt(route, key, adm, model)
		if err == nil || err.Code != translate.ErrUnsupportedOperation {
			return head, err
		}
		// This candidate's dialect (or pinned api_version) lacks the operation: another may have it.
		h.attempts--
		if unsupported == nil {
			unsupported = err
		}
	}
}

// startAttempt makes the attempt toward one candidate, with one of its keys, and renders its request line.
func (h *httpContext) startAttempt(route modelRoute, key int, adm health.Admission, model string) (translate.UpstreamHead, *translate.Error) {
	h.attempts++
	target := h.cfg.target(&route, model)
	if h.consumer != nil {
		target.Binding = translate.ResponseBinding{Key: route.provider.bindingKey, Consumer: h.consumer.name,
			Provider: route.provider.name}
	}
	h.up = upstreamAttempt{route: route, key: key, admitted: adm, Attempt: translate.NewAttempt(&h.req, &target)}
	return h.up.Head(&h.req, route.head)
}

// OnHttpRequestBody buffers the body, then renders it for the provider. When the route waited for the body,
// every header edit happens here, before the headers are released.
func (h *httpContext) OnHttpRequestBody(bodySize int, endOfStream bool) (action types.Action) {
	defer h.recoverPanic(&action)
	h.injectFault("OnHttpRequestBody")
	if done, action := h.requestSettled(); done {
		return action
	}
	if bodySize > h.cfg.maxRequestBytes {
		return h.reply(h.req.Dialect, bodyTooLarge(h.cfg.maxRequestBytes))
	}
	h.requestBuffered = bodySize
	if !endOfStream {
		return types.ActionPause
	}
	return h.finishRequest(bodySize)
}

// OnHttpRequestTrailers finishes a request whose body ended with a trailers frame (HTTP/2, or chunked
// HTTP/1.1 with trailers): no body callback saw end_of_stream, Envoy still holds the body the filter paused
// on, and continuing here without the checks would forward it, and the client's own headers, unchecked.
func (h *httpContext) OnHttpRequestTrailers(int) (action types.Action) {
	defer h.recoverPanic(&action)
	h.injectFault("OnHttpRequestTrailers")
	if done, action := h.requestSettled(); done {
		return action
	}
	return h.finishRequest(h.requestBuffered)
}

// requestSettled is the start of every request callback after the headers: the body is arriving, so the
// watch can forget the request; and a request already answered locally, not ours, or already finished needs
// nothing more (done, with the action to return).
func (h *httpContext) requestSettled() (done bool, action types.Action) {
	h.plugin.watch.remove(h)
	switch {
	case h.answer == answerLocal:
		return true, types.ActionPause
	case h.request == requestArriving || h.request == requestNotOurs || h.request == requestSent:
		return true, types.ActionContinue
	case h.request == requestCutShort:
		// Held until the answer ends, when Envoy ends the exchange and drops it: unchecked, it must not go
		// upstream, and the answer under way must keep the exchange and buffers it began with.
		return true, types.ActionPause
	}
	return false, 0
}

// finishRequest checks the whole buffered body, routes on it when the request line did not, renders it for
// the provider and releases the request. It runs once, at end_of_stream or in the trailers callback.
func (h *httpContext) finishRequest(bodySize int) types.Action {
	// Counted before the read, so that garbage left by earlier bodies is collected before this one is copied in.
	h.plugin.pool.handled(bodySize)
	raw, err := getBody(bufferRequestBody, 0, bodySize)
	if err != nil && err != types.ErrorStatusNotFound {
		return h.reply(h.req.Dialect, translate.NewError(translate.ErrInternal, "", "reading the request body failed: "+err.Error()))
	}
	if h.state == nil {
		h.state = h.plugin.pool.get()
	}
	body := &h.state.body
	if perr := body.Parse(raw); perr != nil {
		return h.reply(h.req.Dialect, perr)
	}
	h.rawBody = raw
	h.pinned = body.NamesStoredState()
	h.req.RefineWithBody(body)
	var head translate.UpstreamHead
	allBenched := false
	headersHeld := h.request == requestHeldForBody
	h.request = requestSent // or refused below: either way, later request callbacks pass on
	if headersHeld {
		model := body.Model
		if h.lineModel != "" {
			model = h.lineModel
		}
		if rerr := h.resolveCandidates(model); rerr != nil {
			return h.reply(h.req.Dialect, rerr)
		}
		h.plan(h.pinned)
		var rerr *translate.Error
		if head, rerr = h.beginAttempt(model); rerr == errAllBenched {
			// Rendered all the same, for the first candidate: a request the client must fix is told so,
			// rather than told to come back later.
			allBenched = true
			head, rerr = h.startAttempt(h.candidates[h.planned.order[0]], 0, health.Admission{}, model)
		}
		if rerr != nil {
			return h.reply(h.req.Dialect, rerr)
		}
	}
	dst := h.state.out[:0]
	if need := len(raw) + len(raw)/8 + 256; cap(dst) < need {
		// Rendering writes the whole body once: sized up front, a large body is not grown by doubling through
		// a trail of garbage copies, whose freed gaps would grow linear memory (it never shrinks).
		dst = make([]byte, 0, need)
	}
	out, rerr := h.up.Render(dst, &h.req, body)
	if rerr != nil {
		return h.reply(h.req.Dialect, rerr)
	}
	if allBenched {
		return h.unavailable(h.modelName)
	}
	if out.Changed {
		h.state.out = out.Body[:0]
		if err := proxywasm.ReplaceHttpRequestBody(out.Body); err != nil {
			return h.reply(h.req.Dialect, translate.NewError(translate.ErrInternal, "", "replacing the request body failed: "+err.Error()))
		}
	}
	if headersHeld {
		h.applyRequestHeaders(head, len(out.Body))
	}
	if h.cfg.budgets.on {
		return h.checkBudget()
	}
	return types.ActionContinue
}

// applyRequestHeaders makes every request-header edit at once; callers do this only while the headers are
// still held (docs/envoy-host.md section 1).
func (h *httpContext) applyRequestHeaders(head translate.UpstreamHead, bodyLength int) {
	p := h.up.route.provider
	h.metrics.countAttempt(p.index)
	// Collected, then made in one rebuild of the list (headerList.apply): the same result as making them
	// one by one, without a pass and a copy of the list per edit.
	var edits headerEdits
	edits.set(":authority", p.host)
	edits.set(":path", head.Path)
	edits.set(h.cfg.routingHeader, p.name)
	for _, name := range translate.ClientCredentialHeaders {
		edits.del(name)
	}
	auth := h.authFor(p, h.up.key)
	if !p.passthrough {
		// With the gateway's key, the organization or project billed is the operator's choice, not the client's.
		for _, name := range translate.ClientAccountHeaders {
			edits.del(name)
		}
	}
	for _, hdr := range auth {
		edits.set(hdr.Name, hdr.Value)
	}
	for _, name := range head.Remove {
		edits.del(name)
	}
	for _, hdr := range head.Set {
		edits.set(hdr.Name, hdr.Value)
	}
	// We rewrite answers, so they must arrive in a form we can read.
	edits.del("accept-encoding")
	if bodyLength >= 0 {
		edits.set("content-length", strconv.Itoa(bodyLength))
	} else {
		edits.del("content-length")
	}
	hs := &h.reqHeaders
	orig := hs.pairs
	if h.cfg.failover.attempts > 1 {
		h.keepCalloutHeaders(orig)
	}
	hs.applyIn(edits.list(), h.plugin.takePairs())
	hs.writeRequest()
	// Nothing reads the request headers after this write.
	h.plugin.doneWith(hs, orig)
	clearRouteCache()
}

// OnHttpResponseHeaders decides how the answer is handled. Only an EternalAI answer whose onchain_data becomes
// headers holds the headers back; everything else is decided here and the headers go on.
func (h *httpContext) OnHttpResponseHeaders(_ int, endOfStream bool) (action types.Action) {
	defer h.recoverPanic(&action)
	h.injectFault("OnHttpResponseHeaders")
	if h.answer == answerLocal {
		return types.ActionContinue // our own local reply passing back through: already in the client's dialect
	}
	switch h.request {
	case requestBodyArriving:
		h.request = requestCutShort
	case requestSent:
	default:
		// Not ours, or an answer (another filter's, Envoy's) to a request whose headers were still held.
		h.answer = answerFlowing
		return types.ActionContinue
	}
	enc, contentType := h.readResponseHead()
	if h.request == requestCutShort && h.up.status < 300 {
		// A request routed on its request line went upstream with its headers alone: a success now answers
		// no request the client sent (an error, such as a 401 or Envoy's own 503, is translated as usual).
		proxywasm.LogWarnf("aidialect: %s answered %d before it was sent the whole request; answered the client with an error instead", h.up.route.provider.name, h.up.status)
		return h.reply(h.up.Client(), translate.NewError(translate.ErrUpstreamEarlyAnswer, "",
			"provider "+quoteBounded(h.up.route.provider.name)+" answered "+strconv.Itoa(h.up.status)+
				" before the gateway had sent it the whole request: retry the request"))
	}
	h.recordAnswer(h.up.status, h.respHeaders.get)
	if h.failoverPossible(h.up.status) && h.failOver(failoverReason(h.up.status)) {
		// The failed answer's headers stay held; its body is dropped; the callout's answer replaces it.
		return types.ActionPause
	}
	if h.up.status >= 300 && h.up.status < 400 {
		// No LLM API answers with a redirect, and following one would send the client, with its gateway key,
		// wherever the upstream's Location says; its body and Location may also echo the provider key.
		proxywasm.LogWarnf("aidialect: %s answered %d (a redirect); answered the client with an error instead", h.up.route.provider.name, h.up.status)
		return h.reply(h.up.Client(), translate.NewError(translate.ErrUpstreamRedirect, "",
			"provider "+quoteBounded(h.up.route.provider.name)+" answered a redirect ("+strconv.Itoa(h.up.status)+
				"), which this gateway never follows: the operator should check its host and base_path"))
	}
	// The edits are made in one rebuild of the list (headerList.apply), in a kept buffer unless the list is
	// held for the body's headers.
	var edits headerEdits
	if !h.up.route.provider.passthrough {
		// OpenAI names the organization and project the gateway's key bills (openai-organization: the
		// operator's org id): the operator's, not for every consumer to read.
		for _, name := range translate.ClientAccountHeaders {
			edits.del(name)
		}
	}
	if enc != "" && !strings.EqualFold(enc, "identity") {
		// We asked for identity; a body we cannot read is forwarded as is, and counted.
		h.metrics.countError(codeUpstreamEncoded)
		proxywasm.LogWarnf("aidialect: %s answered with content-encoding %q; forwarded untranslated", h.up.route.provider.name, enc)
		h.writeResponseHeaders(edits.list()) // redacted values, the account headers removed
		h.answer = answerFlowing
		return types.ActionContinue
	}
	if dropped, more := h.up.Dropped(); len(dropped) > 0 {
		edits.set("x-aidialect-dropped-params", droppedParamsHeader(dropped, more))
	}
	if h.cfg.failover.servedBy {
		edits.set("x-aidialect-served-by", h.up.route.provider.name)
		edits.set("x-aidialect-attempts", strconv.Itoa(h.attempts))
		if h.planned.nSkipped > 0 {
			edits.set("x-aidialect-skipped", h.skippedHeader())
		}
	}
	if omitted := h.up.EchoOmitted(); len(omitted) > 0 && h.up.status >= 200 && h.up.status < 300 {
		// The bridged Response leaves out of its echo the request values past its budget: said, not silent.
		edits.set("x-aidialect-echo-omitted", droppedParamsHeader(omitted, 0))
	}
	if endOfStream {
		h.writeResponseHeaders(edits.list())
		return h.bodylessAnswer(contentType)
	}
	switch status := h.up.status; {
	case status >= 400:
		h.up.mode = responseError
		if _, retryable := verdict(status); retryable && !h.pinned && h.planned.next < h.planned.n {
			// Not failed over here (a stream with failover.stream off, or no attempt left), but another
			// candidate may serve the client's retry at once: the failed provider's wait is not the client's.
			edits.del("retry-after")
			edits.del("retry-after-ms")
		}
		if clientStatus := h.up.ErrorStatus(status); clientStatus != status {
			edits.set(":status", strconv.Itoa(clientStatus))
		}
		edits.set("content-type", "application/json")
		edits.del("content-length")
		if h.largerWindowAhead(status) {
			// Perhaps a context-length error, which a candidate with a larger window may serve: the headers
			// wait for the body to say (finishBufferedAnswer).
			h.respHeaders.apply(edits.list())
			h.answer = answerHeld
			return types.ActionPause
		}
	case status >= 200 && status < 300 && isEventStream(contentType):
		h.up.mode = responseStream
		if h.state == nil {
			h.state = h.plugin.pool.get()
		}
		h.up.StartStream(&h.state.stream, h.cfg.maxEventBytes)
		edits.del("content-length")
	case status >= 200 && status < 300:
		h.up.mode = responseJSON
		edits.del("content-length")
		if h.up.HeadersFromBody() {
			// Written with the onchain headers once the body is read (finishBufferedAnswer).
			h.respHeaders.apply(edits.list())
			h.answer = answerHeld
			return types.ActionPause
		}
	}
	h.writeResponseHeaders(edits.list())
	h.answer = answerFlowing
	return types.ActionContinue
}

// writeResponseHeaders makes the edits and writes the response headers, which nothing reads afterwards: the
// list is rebuilt in a kept buffer, and both lists' buffers are given back.
func (h *httpContext) writeResponseHeaders(edits []headerEdit) {
	hs := &h.respHeaders
	orig := hs.pairs
	hs.applyIn(edits, h.plugin.takePairs())
	hs.writeResponse()
	h.plugin.doneWith(hs, orig)
}

// redactResponseTrailers replaces any trailer value that holds a provider key: Envoy forwards trailers to
// HTTP/2 clients, and an upstream may echo the request's credentials there as in its headers.
func (h *httpContext) redactResponseTrailers() {
	if h.cfg.secrets.Empty() {
		return
	}
	trailers, err := proxywasm.GetHttpResponseTrailers()
	if err != nil {
		return
	}
	changed := false
	for i, kv := range trailers {
		if h.cfg.secrets.FoundString(kv[1]) {
			trailers[i][1] = redact.Placeholder
			changed = true
		}
	}
	if changed {
		if err := proxywasm.ReplaceHttpResponseTrailers(trailers); err != nil {
			proxywasm.LogWarnf("aidialect: replacing the response trailers failed: %v", err)
		}
	}
}

// readResponseHead reads the upstream's response headers in one host call: it sets the attempt's status, returns the
// content-encoding and content-type, and replaces any value that holds a provider key, since an upstream
// may echo the request's credentials back. (Bodies are redacted where they are translated; a body in an
// encoding the filter cannot read is the one thing it cannot check.)
func (h *httpContext) readResponseHead() (encoding, contentType string) {
	h.respHeaders = readResponseHeaders(h.plugin.takePairs())
	for i, kv := range h.respHeaders.pairs {
		name, value := kv[0], kv[1]
		if h.cfg.secrets.FoundString(value) {
			value = redact.Placeholder
			h.respHeaders.pairs[i][1] = value
			h.respHeaders.dirty = true
		}
		switch name { // Envoy hands header names over in lower case
		case ":status":
			h.up.status, _ = strconv.Atoi(value)
		case "content-encoding":
			// Repeated, any coding other than identity means the body is encoded (a later "identity" must not
			// make the filter read compressed bytes as JSON, or redact them, and forward them as read).
			if encoding == "" || strings.EqualFold(encoding, "identity") {
				encoding = value
			}
		case "content-type":
			contentType = value
		}
	}
	return encoding, contentType
}

// bodylessAnswer handles an answer that ended with its headers: no body callback follows, so nothing can be
// translated in place. An error is answered instead with its translation (the response headers are still
// held, so a local reply is possible); a success has nothing a client could parse, and is counted.
func (h *httpContext) bodylessAnswer(contentType string) types.Action {
	proxywasm.LogWarnf("aidialect: %s answered %d without a body", h.up.route.provider.name, h.up.status)
	switch status := h.up.status; {
	case status >= 400:
		clientStatus, body := h.up.ErrorAnswer(status, nil)
		return h.sendLocal(clientStatus, body, [][2]string{{"content-type", "application/json"}})
	case status >= 200 && status < 300 && isEventStream(contentType):
		h.metrics.countError(codeUpstreamStreamCut)
	case status >= 200 && status < 300:
		h.metrics.countError(codeUpstreamBadJSON)
	}
	h.answer = answerFlowing
	return types.ActionContinue
}

// OnHttpResponseBody translates the answer: JSON and errors once complete, streams chunk by chunk without
// ever pausing (docs/envoy-host.md section 4).
func (h *httpContext) OnHttpResponseBody(bodySize int, endOfStream bool) (action types.Action) {
	defer h.recoverAnswerPanic(&action)
	h.injectFault("OnHttpResponseBody")
	if h.answer == answerFailed {
		h.dropResponseChunk()
		return types.ActionContinue
	}
	if h.answer == answerLocal {
		return types.ActionContinue
	}
	if h.answer == answerRetrying {
		// The failed answer's body is for no one: dropped as it comes, so Envoy's buffer stays empty.
		if bodySize > 0 {
			_ = proxywasm.ReplaceHttpResponseBody(nil)
		}
		return types.ActionPause
	}
	switch h.up.mode {
	case responseStream:
		return h.streamChunk(bodySize, endOfStream)
	case responseJSON, responseError:
		h.responseBuffered = bodySize
		if !endOfStream {
			h.responseBodyHeld = true
			return types.ActionPause
		}
		h.finishBufferedAnswer(bodySize)
		if h.answer == answerRetrying {
			return types.ActionPause // the held headers wait for the callout's answer
		}
	}
	return types.ActionContinue
}

// OnHttpResponseTrailers ends an answer whose last body chunk did not carry end_of_stream.
func (h *httpContext) OnHttpResponseTrailers(int) (action types.Action) {
	h.inResponseTrailers = true
	defer h.recoverAnswerPanic(&action)
	h.injectFault("OnHttpResponseTrailers")
	if h.answer == answerLocal {
		return types.ActionContinue
	}
	if h.answer == answerRetrying {
		return types.ActionPause
	}
	if h.attempts > 0 {
		h.redactResponseTrailers()
	}
	if h.answer == answerFailed {
		return types.ActionContinue
	}
	switch h.up.mode {
	case responseStream:
		if h.answer == answerFlowing {
			h.answer = answerEnded
			h.closeStreamInTrailers()
		}
	case responseJSON, responseError:
		if !h.responseBodyHeld {
			// Headers, then trailers, and no body: Envoy holds no body to write the translation into, so the
			// client gets the upstream's status and headers with an empty body.
			h.metrics.countError(codeUpstreamBadJSON)
			proxywasm.LogWarnf("aidialect: %s answered %d with trailers and no body; the client gets an empty body", h.up.route.provider.name, h.up.status)
			if h.answer == answerHeld {
				h.respHeaders.writeResponse()
				h.answer = answerFlowing
			}
			break
		}
		// The body ended without end_of_stream; what Envoy buffered is all there is.
		h.finishBufferedAnswer(h.responseBuffered)
		if h.answer == answerRetrying {
			return types.ActionPause
		}
	}
	return types.ActionContinue
}

func (h *httpContext) streamChunk(bodySize int, endOfStream bool) types.Action {
	h.plugin.pool.handled(bodySize)
	if !h.firstChunkSeen && bodySize > 0 {
		h.firstChunkSeen = true
		if s := h.metrics.genAI(&h.up.route, h.req.Op); s != nil {
			s.firstChunk.Record(uint64(max(nowMillis()-h.startedMs, 0)))
		}
	}
	chunk, err := getBody(bufferResponseBody, 0, bodySize)
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogWarnf("aidialect: reading a stream chunk failed: %v", err)
		return types.ActionContinue
	}
	// The chunk's output goes in pieces of whole events (a bridged stream's end repeats up to 4 MiB four
	// times): the first replaces the chunk, the others are appended, each redacted on its own.
	h.beginPieces(chunk)
	// A bridged stream's chunk may give several pieces, and the last chunk's output is followed by the end.
	h.manyPieces = h.state.stream.ManyPieces() || endOfStream
	if h.answer == answerFlowing { // else the client already got its last event
		if werr := h.state.stream.WriteTo(chunk, h.emit); werr != nil {
			// Ended: the failure is the client's last event, and a trailers callback must not end the stream
			// a second time.
			h.answer = answerEnded
			h.metrics.countError(codeStreamEventTooBig)
			proxywasm.LogWarnf("aidialect: %s sent a stream event over max_event_bytes (%d): %v", h.up.route.provider.name, h.cfg.maxEventBytes, werr)
			h.emitPiece(h.state.stream.Failure(translate.NewError(translate.ErrUpstreamStream, "",
				"the provider sent a stream event larger than this gateway accepts (max_event_bytes)")))
		} else if endOfStream {
			h.answer = answerEnded
			h.closeStream()
		}
	}
	if h.pieces == 0 && len(chunk) > 0 {
		// Nothing of this chunk is for the client (yet: an event still incomplete, or the stream is over).
		if err := proxywasm.ReplaceHttpResponseBody(nil); err != nil {
			proxywasm.LogWarnf("aidialect: replacing a stream chunk failed: %v", err)
		}
	}
	h.pieceChunk = nil
	return types.ActionContinue
}

// beginPieces prepares emitPiece for a body callback's output: chunk is the body the callback was given.
func (h *httpContext) beginPieces(chunk []byte) {
	if h.emit == nil {
		h.emit = h.emitPiece // one func value per exchange, not one per chunk
	}
	h.pieceChunk, h.pieces = chunk, 0
}

// emitPiece sends one piece of a stream's output (whole events) to the client, redacted: the first piece of a
// body callback replaces the chunk, unless it is the chunk itself, and every later one is appended after it
// (docs/envoy-host.md section 4: in a body callback, proxy_set_buffer_bytes from 0 drains the chunk and
// writes the piece; from past its end, it adds to it).
func (h *httpContext) emitPiece(piece []byte) {
	piece = h.cfg.secrets.Redact(piece)
	first := h.pieces == 0
	h.pieces++
	switch {
	case first && sameBytes(piece, h.pieceChunk):
	case first && !h.manyPieces:
		if err := proxywasm.ReplaceHttpResponseBody(piece); err != nil {
			proxywasm.LogWarnf("aidialect: replacing a stream chunk failed: %v", err)
		}
	case first:
		// The chunk is emptied and every piece appended: the next piece reuses this one's buffer, and a host
		// that kept a view of a replacement instead of a copy (proxytest, under internal/hostemu) would see
		// it change; an append is copied by every host.
		if err := proxywasm.ReplaceHttpResponseBody(nil); err != nil {
			proxywasm.LogWarnf("aidialect: replacing a stream chunk failed: %v", err)
		}
		fallthrough
	default:
		if err := proxywasm.AppendHttpResponseBody(piece); err != nil {
			proxywasm.LogWarnf("aidialect: appending to a stream chunk failed: %v", err)
		}
	}
}

// closeStream ends the stream, its last events handed to emitPiece.
func (h *httpContext) closeStream() {
	s := &h.state.stream
	s.CloseTo(h.emit)
	h.countStreamEnd()
}

// closeStreamInTrailers ends a stream whose upstream ended it with trailers. Envoy holds none of its body
// here (a stream is never paused, so every chunk already went on): proxy_set_buffer_bytes answers
// BadArgument, and nothing can follow the last chunk (docs/envoy-host.md section 4). The end is computed all
// the same, for the stream's usage and whether it was cut; when it had bytes for the client, they are lost:
// counted and logged. A well-formed stream loses nothing: its [DONE], or its terminal Responses event, and
// a bridged stream's end went out with the chunk that carried the upstream's [DONE].
func (h *httpContext) closeStreamInTrailers() {
	s := &h.state.stream
	lost := 0
	s.CloseTo(func(piece []byte) { lost += len(piece) })
	h.countStreamEnd()
	if lost == 0 {
		return
	}
	h.metrics.countError(codeStreamEndLost)
	what := "its end ([DONE], or a bridged stream's response.completed)"
	if s.Truncated() {
		what = "the error event that tells the client the stream was cut"
	}
	proxywasm.LogWarnf("aidialect: %s ended a stream with trailers before the stream's end: %s (%d bytes) "+
		"cannot follow the last chunk in Envoy, so the client does not get it", h.up.route.provider.name, what, lost)
}

func (h *httpContext) countStreamEnd() {
	s := &h.state.stream
	if s.Truncated() {
		h.metrics.countError(codeUpstreamStreamCut)
	}
	h.noteUsage(s.Usage())
}

// finishBufferedAnswer translates a complete JSON answer or error body.
func (h *httpContext) finishBufferedAnswer(bodySize int) {
	h.plugin.pool.handled(bodySize)
	body, err := getBody(bufferResponseBody, 0, bodySize)
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogWarnf("aidialect: reading the response body failed: %v", err)
		return
	}
	if h.up.mode == responseError {
		if h.answer == answerHeld {
			if translate.IsContextLengthError(h.up.status, body) && h.failOverForContext() {
				// The held error is for no one now: the callout's answer replaces it.
				_ = proxywasm.ReplaceHttpResponseBody(nil)
				return
			}
			h.respHeaders.writeResponse()
			h.answer = answerFlowing
		}
		_, out := h.up.ErrorAnswer(h.up.status, body)
		h.replaceResponseBody(body, h.cfg.secrets.Redact(out))
		return
	}
	if h.state == nil {
		h.state = h.plugin.pool.get()
	}
	out, headers, usage, terr := h.up.Answer(h.state.out[:0], body)
	h.noteUsage(usage)
	if terr != nil {
		h.metrics.countError(codeUpstreamBadJSON)
		proxywasm.LogWarnf("aidialect: %s answered %d with a body that is not JSON or cannot be translated (%v); forwarded as is (to a bridged Responses client: a failed Response)", h.up.route.provider.name, h.up.status, terr)
		if out == nil {
			out = body
		}
	}
	if h.answer == answerHeld {
		for _, hdr := range headers {
			if h.cfg.secrets.FoundString(hdr.Value) {
				hdr.Value = redact.Placeholder
			}
			h.respHeaders.set(hdr.Name, hdr.Value)
		}
		h.respHeaders.writeResponse()
	}
	h.answer = answerFlowing
	h.replaceResponseBody(body, h.cfg.secrets.Redact(out))
}

func (h *httpContext) replaceResponseBody(old, out []byte) {
	if sameBytes(out, old) {
		return
	}
	if err := proxywasm.ReplaceHttpResponseBody(out); err != nil {
		proxywasm.LogWarnf("aidialect: replacing the response body failed: %v", err)
	}
}

// OnHttpStreamDone counts the exchange and returns its buffers to the pool.
func (h *httpContext) OnHttpStreamDone() {
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogErrorf("aidialect: panic while finishing a request: %v", r)
			h.metrics.countError(codePanic)
		}
	}()
	h.plugin.watch.remove(h)
	h.streamGone = true
	h.chargeBudget()
	if h.attempts > 0 && h.up.admitted.Probe && !h.up.recorded {
		// The probe's request never brought an answer about the provider: the next request probes instead.
		h.releaseProbe(h.up.route.provider, h.up.key)
	}
	if h.calloutPending {
		// The client left (or Envoy ended the exchange) while a failover callout was under way: the callout
		// belongs to the root context and goes on, and the SDK drops its answer (docs/envoy-host.md section 9).
		h.metrics.countFailover(h.up.route.provider.name, "client_gone")
	}
	if h.req.Known() {
		providerIndex := -1
		if h.attempts > 0 {
			providerIndex = h.up.route.provider.index
			if s := h.metrics.genAI(&h.up.route, h.req.Op); s != nil && h.up.status != 0 { // a provider answered (a fallback's too)
				s.duration.Record(uint64(max(nowMillis()-h.startedMs, 0)))
			}
		}
		status := h.up.status
		if h.answer == answerLocal {
			status = h.localReplyCode
		}
		if status != 0 {
			h.metrics.countRequest(h.req.Dialect, providerIndex, status)
		}
	}
	h.injectFault("OnHttpStreamDone")
	if h.state != nil {
		pooled := h.plugin.pool.put(h.state)
		h.state = nil
		if !pooled {
			// An exchange whose buffers grew past what is pooled (megabytes of body, of answer, of a bridged
			// stream's text) is collected as it ends: until the next collection, the collector's goal stays
			// at twice the heap it saw live during the exchange, and the next large exchange would grow linear
			// memory beside this one's garbage instead of reusing it.
			h.up.Release()
			h.pieceChunk = nil
			h.plugin.pool.collect()
			return
		}
	}
	h.plugin.pool.maybeCollect()
}

// reply answers the client locally in its dialect and stops the exchange (docs/envoy-host.md section 5: return
// ActionPause; the reply comes back through the response callbacks and is left alone there).
func (h *httpContext) reply(client translate.Dialect, e *translate.Error) types.Action {
	h.metrics.countError(string(e.Code))
	return h.sendLocal(e.Status(), e.Body(client), [][2]string{
		{"content-type", "application/json"},
		{"x-aidialect-error", string(e.Code)},
	})
}

func (h *httpContext) sendLocal(status int, body []byte, headers [][2]string) types.Action {
	h.answer, h.up.mode = answerLocal, responseUntouched
	h.localReplyCode = status
	if err := proxywasm.SendHttpResponse(uint32(status), headers, body, -1); err != nil {
		proxywasm.LogErrorf("aidialect: sending a local reply failed: %v", err)
	}
	return types.ActionPause
}

// replyModelList answers GET /v1/models (and /openai/models, in Azure OpenAI's shape) from the configuration:
// the exact model names, those a consumer may use when consumers are configured.
func (h *httpContext) replyModelList() types.Action {
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	first := true
	for _, p := range h.cfg.providers {
		tail := translate.ModelObjectTail(&h.req, p.name)
		for _, name := range h.cfg.modelNames[p.name] {
			if h.consumer != nil && !h.consumer.allows(name) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(`{"id":`)
			b.Write(translate.JSONString(name))
			b.WriteString(tail)
		}
	}
	b.WriteString(`]}`)
	return h.sendLocal(200, b.Bytes(), [][2]string{{"content-type", "application/json"}})
}

// recoverPanic keeps a bug from killing the VM, and with it every request on this worker: the exchange gets
// a 500 in its dialect while that is still possible, and the panic is logged and counted.
func (h *httpContext) recoverPanic(action *types.Action) {
	if r := recover(); r != nil {
		h.panicked(r, action)
	}
}

// recoverAnswerPanic is recoverPanic for the callbacks that hold the answer's bytes. Continuing after a panic
// there would let Envoy forward the upstream's bytes as they came, untranslated and unredacted: the client
// gets an error in its dialect instead (an error event that ends a stream, an error body for a JSON answer,
// whose status already went out), and the rest of the answer is dropped.
func (h *httpContext) recoverAnswerPanic(action *types.Action) {
	r := recover()
	if r == nil {
		return
	}
	h.panicked(r, action)
	switch {
	case h.answer == answerLocal:
		return
	case h.inResponseTrailers && (h.up.mode == responseStream || !h.responseBodyHeld):
		// Envoy holds no body in the trailers callback unless a body callback paused: nothing can be written,
		// the client's answer just ends (counted and logged by panicked).
		h.answer = answerFailed
		return
	case h.answer == answerFailed:
		h.dropResponseChunk()
		return
	case h.up.mode == responseUntouched:
		return
	}
	var out []byte
	func() {
		defer func() {
			if recover() != nil {
				out = nil // the client's stream or body just ends
			}
		}()
		e := translate.NewError(translate.ErrInternal, "", "the gateway failed while translating this answer; it has been logged")
		switch {
		case h.up.mode != responseStream:
			out = e.Body(h.up.Client())
		case h.answer != answerEnded:
			out = h.state.stream.Failure(e)
		}
		out = h.cfg.secrets.Redact(out)
	}()
	h.answer = answerFailed
	if err := proxywasm.ReplaceHttpResponseBody(out); err != nil {
		proxywasm.LogWarnf("aidialect: replacing the answer after a failure failed: %v", err)
	}
}

// dropResponseChunk keeps the rest of a failed answer from the client.
func (h *httpContext) dropResponseChunk() {
	if err := proxywasm.ReplaceHttpResponseBody(nil); err != nil {
		proxywasm.LogWarnf("aidialect: dropping the rest of a failed answer failed: %v", err)
	}
}

// panicked logs and counts a recovered panic and decides the callback's action: a local reply in the client's
// dialect while one is possible.
func (h *httpContext) panicked(r any, action *types.Action) {
	buf := make([]byte, 2048)
	buf = buf[:runtime.Stack(buf, false)]
	proxywasm.LogCriticalf("aidialect: recovered from a panic: %v\n%s", r, buf)
	h.metrics.countError(codePanic)
	if !h.answer.localReplyPossible() {
		*action = types.ActionContinue
		return
	}
	*action = h.reply(h.clientDialect(), translate.NewError(translate.ErrInternal, "",
		"the gateway failed while translating this request; it has been logged"))
}

// clientDialect is the dialect to answer in, detected again when a failure came before detection.
func (h *httpContext) clientDialect() (d translate.Dialect) {
	if h.req.Known() || h.cfg == nil {
		return h.req.Dialect
	}
	defer func() {
		if recover() != nil {
			d = translate.DialectUnknown // answered in the hub dialect's envelope
		}
	}()
	req, _ := translate.Detect(requestHeader(":method"), requestHeader(":path"), h.cfg.pathPrefix)
	return req.Dialect
}

// decisiveHeaders decide authentication, routing or how the body is read. Sent twice, the filter could read
// one value and the provider another, so a repeated one is refused.
var decisiveHeaders = append(translate.DecisiveHeaders(), "content-encoding", "content-length")

// maxDroppedParamsHeader bounds x-aidialect-dropped-params: the names come from the client's body.
const maxDroppedParamsHeader = 1024

// droppedParamsHeader lists the dropped parameter names for a response header. The names are the client's own
// JSON keys: one that is not a plain token (a CR/LF would split the response head, a comma the list) is
// written Go-quoted in ASCII, and the list is cut at maxDroppedParamsHeader bytes with a final "...".
func droppedParamsHeader(names []string, more int) string {
	var stack [256]byte // the usual list fits: one allocation, the string
	b := stack[:0]
	for i, name := range names {
		start := len(b)
		if i > 0 {
			b = append(b, ',')
		}
		if isToken(name) {
			b = append(b, name...)
		} else {
			b = strconv.AppendQuoteToASCII(b, name)
		}
		if len(b) > maxDroppedParamsHeader {
			b = b[:start]
			if start > 0 {
				b = append(b, ',')
			}
			return string(append(b, "..."...))
		}
	}
	if more > 0 {
		b = append(b, ",..."...)
	}
	return string(b)
}

// isToken reports whether s is a non-empty run of the characters parameter names are made of.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}

func bodyTooLarge(limit int) *translate.Error {
	return translate.NewError(translate.ErrBodyTooLarge, "",
		"the request body is larger than this gateway accepts ("+strconv.Itoa(limit)+" bytes, max_request_bytes)")
}

func quoteBounded(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

// isEventStream reports whether a content-type's media type is text/event-stream. Media types are
// case-insensitive (RFC 9110 section 8.3.1): "Text/Event-Stream; charset=utf-8" is a stream too and must not
// be buffered as JSON.
func isEventStream(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream")
}

// sameBytes reports whether two slices are the same memory (not merely equal content).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

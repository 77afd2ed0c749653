// Package mock provides strict stand-ins for the four upstream LLM services the aidialect filter talks to
// (openai, azure-openai, azure-ai, eternalai). Each Provider is an http.Handler that accepts a request
// exactly when the real service would (and, where noted, is stricter: a few things a real service would
// ignore are refused because the filter must never send them), rejects everything else with that service's
// error status and body shape, and answers with realistic JSON bodies and SSE streams whose text echoes the
// request. Facts come from docs/dialects.md; every choice not found there is marked "mock".
//
// openai and azure-openai also serve the Responses API (POST .../responses, responses.go), keeping the
// responses created with store true in memory so that previous_response_id and item_reference work.
//
// A request header x-mock-fail injects failures (the filter forwards it untouched): 401, 404, 422, 429,
// 429-brief, context-length, 502-html, 503, hang (no answer), cut-stream, no-done, huge-event, gzip. See Provider.ServeHTTP.
package mock

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// The four dialects.
const (
	OpenAI      = "openai"
	AzureOpenAI = "azure-openai"
	AzureAI     = "azure-ai"
	EternalAI   = "eternalai"
)

// Dialects lists the dialects New accepts, in a stable order.
var Dialects = []string{OpenAI, AzureOpenAI, AzureAI, EternalAI}

// maxBody bounds a request body; larger bodies are refused with 413.
const maxBody = 16 << 20

// Options configures one mock provider.
type Options struct {
	// APIKey is the credential the provider expects. Empty accepts any non-empty credential (one must still
	// be present, in the right header).
	APIKey string
	// BasePath is the path prefix of the API. Empty means the dialect's default: openai and eternalai "/v1",
	// azure-openai "/openai", azure-ai the endpoint root, where "/models/..." (AI services style) also works.
	BasePath string
	// Deployments: for azure-openai, the deployment names that exist (path segment of the classic surface,
	// body model of the v1 surface); any other gives 404 DeploymentNotFound. For azure-ai, the names accepted
	// in the azureml-model-deployment header. Empty accepts any.
	Deployments []string
	// Models are the model names accepted in the body (openai, eternalai; azure-ai compares them ignoring
	// case, as the services endpoint does). Empty accepts any. Not used by azure-openai, whose body model is
	// a deployment name (v1 surface) or ignored (classic surface).
	Models []string
	// Bearer makes an azure-openai provider expect "Authorization: Bearer <APIKey>" (an Entra token) instead
	// of the api-key header.
	Bearer bool
}

// Recorded is one request as the provider received it.
type Recorded struct {
	Method   string
	Host     string
	Path     string // r.URL.Path
	RawQuery string
	Header   http.Header // a clone
	Body     []byte
	// Status and Reply are what the mock answered (Reply: the body as written, a stream's events whole; at
	// most maxBody bytes kept), so a test can hold a client's next request against what it was given.
	Status int
	Reply  []byte
}

// Provider is one mock provider. It is safe for concurrent use.
type Provider struct {
	dialect string
	opts    Options
	bases   []string // accepted path prefixes, without a trailing slash
	idSalt  uint64   // mixed into every generated id: the dialect's hash

	mu       sync.Mutex
	received []Recorded
	resets   int // how many times Reset forgot received: a reply recorded after one has no request
	seq      atomic.Uint64

	// the Responses store (responses.go), under mu
	responses   map[string]*storedResponse // response id -> its conversation
	items       map[string]json.RawMessage // output item id -> the item
	storedOrder []string                   // response ids, oldest first
}

// New returns a mock provider speaking dialect (one of Dialects); it panics on any other name.
func New(dialect string, opts Options) *Provider {
	h := fnv.New64a()
	h.Write([]byte(dialect))
	p := &Provider{dialect: dialect, opts: opts, idSalt: h.Sum64()}
	base := strings.TrimRight(opts.BasePath, "/")
	if opts.BasePath == "" {
		switch dialect {
		case OpenAI, EternalAI:
			base = "/v1"
		case AzureOpenAI:
			base = "/openai"
		case AzureAI:
			p.bases = []string{"", "/models"}
		}
	}
	switch dialect {
	case OpenAI, AzureOpenAI, AzureAI, EternalAI:
	default:
		panic("mock: unknown dialect " + dialect)
	}
	if p.bases == nil {
		p.bases = []string{base}
	}
	return p
}

// Dialect reports the provider's dialect.
func (p *Provider) Dialect() string { return p.dialect }

// Received returns a deep copy of every request received so far, in arrival order (rejected ones included).
func (p *Provider) Received() []Recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Recorded, len(p.received))
	for i, r := range p.received {
		r.Header = r.Header.Clone()
		r.Body = append([]byte(nil), r.Body...)
		r.Reply = append([]byte(nil), r.Reply...)
		out[i] = r
	}
	return out
}

// Reset forgets the recorded requests.
func (p *Provider) Reset() {
	p.mu.Lock()
	p.received = nil
	p.resets++
	p.mu.Unlock()
}

func (p *Provider) record(r *http.Request, body []byte) (at, resets int) {
	rec := Recorded{
		Method:   r.Method,
		Host:     r.Host,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     append([]byte(nil), body...),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.received = append(p.received, rec)
	return len(p.received) - 1, p.resets
}

// recordReply adds what the mock answered to the request recorded at i (unless Reset forgot it since).
func (p *Provider) recordReply(i, resets int, reply *replyRecorder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if resets == p.resets && i < len(p.received) {
		p.received[i].Status, p.received[i].Reply = reply.status, reply.body
	}
}

// replyRecorder keeps a copy of what a handler writes; Unwrap lets http.NewResponseController flush the
// underlying writer (streams).
type replyRecorder struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (w *replyRecorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *replyRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, b[:min(len(b), max(0, maxBody-len(w.body)))]...)
	return w.ResponseWriter.Write(b)
}

func (w *replyRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServeHTTP answers one request. The order of checks is: route (404), x-mock-fail status injections,
// query (api-version), credentials (401), deployment, transport (Content-Length, Content-Type, size), body
// (a JSON object, then the dialect's field rules), then the answer, which x-mock-fail may still damage
// (cut-stream, no-done, huge-event, gzip). Every request is recorded first.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	at, resets := p.record(r, body)
	reply := &replyRecorder{ResponseWriter: w}
	c := &call{p: p, w: reply, r: r, raw: body, readErr: err, seq: p.seq.Add(1)}
	c.serve()
	p.recordReply(at, resets, reply)
}

package mock

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type operation uint8

const (
	opNone operation = iota
	opChat
	opCompletions
	opEmbeddings
	opModels    // GET {base}/models (openai)
	opInfo      // GET {base}/info (azure-ai)
	opResponses // POST {base}/responses (openai; azure-openai v1 and classic surfaces), responses.go
)

// opPaths maps an operation's path suffix to the operation.
var opPaths = map[string]operation{
	"/chat/completions": opChat,
	"/completions":      opCompletions,
	"/embeddings":       opEmbeddings,
}

// call is one request being served.
type call struct {
	p       *Provider
	w       http.ResponseWriter
	r       *http.Request
	raw     []byte
	readErr error
	seq     uint64

	op         operation
	v1         bool   // azure-openai v1 surface (/openai/v1/...)
	deployment string // azure-openai classic path segment
	apiVersion string
	fail       string // x-mock-fail, lower case
	body       *object
	resp       *respRequest // a valid Responses request (responses.go)
	chunks     uint64       // stream chunks made so far (obfuscation values)
}

func (c *call) dialect() string { return c.p.dialect }

func (c *call) serve() {
	c.fail = strings.ToLower(strings.TrimSpace(c.r.Header.Get("X-Mock-Fail")))
	if !c.route() {
		c.errRouteNotFound()
		return
	}
	switch c.fail {
	case "":
	case "401":
		c.errUnauthorized()
		return
	case "404":
		c.errInjectedNotFound()
		return
	case "422":
		c.errUnprocessable()
		return
	case "429", "429-brief":
		c.errRateLimited()
		return
	case "context-length":
		c.errContextLength()
		return
	case "502-html":
		c.errBadGatewayHTML()
		return
	case "503":
		c.errOverloaded()
		return
	case "hang":
		// Never answers: the gateway's timeout (or the client leaving) ends the request.
		select {
		case <-c.r.Context().Done():
		case <-time.After(10 * time.Minute):
		}
		return
	case "cut-stream", "no-done", "huge-event", "gzip":
		// applied to the answer
	default:
		c.invalid("", "", fmt.Sprintf("mock: unknown x-mock-fail value %q", c.fail))
		return
	}
	if !c.checkQuery() || !c.checkAuth() || !c.checkTarget() {
		return
	}
	switch c.op {
	case opModels:
		c.answerModels()
		return
	case opInfo:
		c.answerInfo()
		return
	}
	if !c.checkTransport() || !c.parseBody() || !c.validate() {
		return
	}
	c.answer()
}

// pathChars is what a path the filter sends may contain: no percent-encoding, no exotic characters.
var pathChars = regexp.MustCompile(`^[A-Za-z0-9/._-]*$`)

// deploymentName is the shape of an Azure OpenAI deployment segment.
var deploymentName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// route recognises the path and method; false means 404 in the dialect's shape.
func (c *call) route() bool {
	path := c.r.URL.EscapedPath()
	if !pathChars.MatchString(path) || strings.Contains(path, "//") || strings.HasSuffix(path, "/") {
		return false
	}
	for _, base := range c.p.bases {
		rest, ok := strings.CutPrefix(path, base)
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		if c.routeRest(rest) {
			return true
		}
	}
	return false
}

func (c *call) routeRest(rest string) bool {
	post := c.r.Method == http.MethodPost
	get := c.r.Method == http.MethodGet
	switch c.dialect() {
	case OpenAI, EternalAI:
		if rest == "/models" && get && c.dialect() == OpenAI {
			c.op = opModels
			return true
		}
		if rest == "/responses" {
			// EternalAI has only Chat Completions and completions (docs/dialects.md section 4).
			c.op = opResponses
			return post && c.dialect() == OpenAI
		}
		c.op = opPaths[rest]
		if c.op == opEmbeddings && c.dialect() == EternalAI {
			return false // EternalAI has no embeddings endpoint (docs/dialects.md section 4)
		}
		return post && c.op != opNone
	case AzureOpenAI:
		if v1rest, ok := strings.CutPrefix(rest, "/v1"); ok {
			c.v1 = true
			if v1rest == "/responses" {
				c.op = opResponses
				return post
			}
			c.op = opPaths[v1rest]
			// legacy /completions is not among the v1 routes (docs/dialects.md section 2)
			return post && (c.op == opChat || c.op == opEmbeddings)
		}
		if rest == "/responses" {
			// The classic Responses surface has no deployment segment: the body model names the deployment
			// (api-version 2025-03-01-preview and later, checkQuery). /deployments/{d}/responses, which the AI
			// SDK's useDeploymentBasedUrls builds, is not among Microsoft's documented routes: 404 here.
			c.op = opResponses
			return post
		}
		dep, ok := strings.CutPrefix(rest, "/deployments/")
		if !ok {
			return false
		}
		i := strings.IndexByte(dep, '/')
		if i < 0 {
			return false
		}
		c.deployment = dep[:i]
		if !deploymentName.MatchString(c.deployment) || c.deployment == "." || c.deployment == ".." {
			return false
		}
		c.op = opPaths[dep[i:]]
		return post && c.op != opNone
	case AzureAI:
		if rest == "/info" && get {
			c.op = opInfo
			return true
		}
		c.op = opPaths[rest]
		return post && c.op != opNone
	}
	return false
}

// Azure OpenAI api-version values (docs/dialects.md section 2: GA folders, then preview folders).
var azureOpenAIVersions = []string{
	"2022-12-01", "2023-05-15", "2024-02-01", "2024-06-01", "2024-10-21",
	"2022-03-01-preview", "2022-06-01-preview", "2023-03-15-preview", "2023-06-01-preview",
	"2023-07-01-preview", "2023-08-01-preview", "2023-09-01-preview", "2023-10-01-preview",
	"2023-11-01-preview", "2023-12-01-preview", "2024-02-15-preview", "2024-03-01-preview",
	"2024-04-01-preview", "2024-05-01-preview", "2024-07-01-preview", "2024-08-01-preview",
	"2024-09-01-preview", "2024-10-01-preview", "2024-12-01-preview", "2025-01-01-preview",
	"2025-02-01-preview", "2025-03-01-preview", "2025-04-01-preview",
}

// Azure AI Model Inference api-version values (docs/dialects.md section 3).
var azureAIVersions = []string{
	"2024-04-01-preview", "2024-05-01-preview", "2025-04-01", "2025-05-01",
	"2025-02-01-preview", "2025-05-01-preview", "2025-05-15-preview",
}

var datedVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)

// checkQuery enforces the api-version rules of each dialect.
func (c *call) checkQuery() bool {
	q, err := url.ParseQuery(c.r.URL.RawQuery)
	if err != nil {
		c.invalid("", "", "mock: the query string does not parse: "+err.Error())
		return false
	}
	versions := q["api-version"]
	if len(versions) > 1 {
		// Exactly one api-version, ever (docs/contract.md section 5.1); no service documents what a duplicate does: mock 400.
		switch c.dialect() {
		case AzureOpenAI:
			c.azureErr(http.StatusBadRequest, "BadRequest", "mock: api-version is given more than once")
		default:
			c.invalid("api-version", "", "mock: api-version is given more than once")
		}
		return false
	}
	v := ""
	if len(versions) == 1 {
		v = versions[0]
	}
	c.apiVersion = v
	switch c.dialect() {
	case OpenAI, EternalAI:
		// A real OpenAI ignores unknown query parameters; the filter must never send api-version to these
		// dialects (docs/contract.md section 5.1), so the mock is stricter than the service here.
		if len(versions) > 0 {
			c.invalid("api-version", "", "mock: api-version is not a query parameter of this API (the filter must not send one)")
			return false
		}
	case AzureOpenAI:
		if c.v1 {
			switch v {
			case "", "v1", "latest", "preview":
				return true
			}
			c.azureErr(http.StatusBadRequest, "BadRequest", "API version not supported")
			return false
		}
		if v == "" {
			c.azureErr(http.StatusNotFound, "404", "Resource not found")
			return false
		}
		if !datedVersion.MatchString(v) || !slices.Contains(azureOpenAIVersions, v) {
			c.azureErr(http.StatusBadRequest, "BadRequest", "API version not supported")
			return false
		}
		if c.op == opResponses && v[:10] < "2025-03-01" {
			// Quoted from the service through LiteLLM (Aider-AI/aider#4029); the code is the mock's.
			c.azureErr(http.StatusBadRequest, "BadRequest", "Azure OpenAI Responses API is enabled only for api-version 2025-03-01-preview and later")
			return false
		}
	case AzureAI:
		if v == "" {
			// Not documented (docs/dialects.md section 3); api-version is a required parameter: mock 400.
			c.aiErr(http.StatusBadRequest, "BadRequest", "Missing required query parameter: api-version")
			return false
		}
		if !slices.Contains(azureAIVersions, v) {
			c.aiErr(http.StatusBadRequest, "BadRequest", "API version not supported")
			return false
		}
		if c.op == opCompletions && v != "2024-04-01-preview" {
			// /completions exists only in the 2024-04-01-preview documents.
			c.aiFlat(http.StatusNotFound, "NotFound", "Resource not found", "NotFound")
			return false
		}
	}
	return true
}

// credentials reads the two credential headers. present reports a header was sent; a malformed or repeated
// header yields ok=false.
type credential struct {
	present bool
	value   string
	ok      bool
}

func bearerOf(r *http.Request) credential {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return credential{}
	}
	if len(vals) > 1 {
		return credential{present: true}
	}
	scheme, tok, found := strings.Cut(strings.TrimSpace(vals[0]), " ")
	tok = strings.TrimSpace(tok)
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return credential{present: true}
	}
	return credential{present: true, value: tok, ok: true}
}

func apiKeyOf(r *http.Request) credential {
	vals := r.Header.Values("Api-Key")
	if len(vals) == 0 {
		return credential{}
	}
	if len(vals) > 1 || strings.TrimSpace(vals[0]) == "" {
		return credential{present: true}
	}
	return credential{present: true, value: strings.TrimSpace(vals[0]), ok: true}
}

// matches reports whether a credential is well formed and is the expected key.
func (c *call) matches(cr credential) bool {
	if !cr.ok {
		return false
	}
	if c.p.opts.APIKey == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(cr.value), []byte(c.p.opts.APIKey)) == 1
}

func (c *call) checkAuth() bool {
	bearer, apiKey := bearerOf(c.r), apiKeyOf(c.r)
	switch c.dialect() {
	case OpenAI, EternalAI:
		if apiKey.present {
			// The real services ignore an api-key header, but it can only be a client credential the filter
			// failed to remove (docs/contract.md section 5.2): the mock refuses it.
			c.invalid("", "", "mock: an api-key header must not reach this provider (the filter must remove client credentials)")
			return false
		}
		if !c.matches(bearer) {
			c.errUnauthorized()
			return false
		}
	case AzureOpenAI:
		if apiKey.present && bearer.present {
			// openai-go refuses to combine them (docs/dialects.md section 2); the mock refuses the combination.
			c.azureErr(http.StatusBadRequest, "BadRequest", "mock: both api-key and Authorization headers were sent; send exactly one credential")
			return false
		}
		var ok bool
		switch {
		case c.p.opts.Bearer:
			ok = c.matches(bearer)
		case c.v1:
			// the v1 surface also takes the key in Authorization (docs/dialects.md section 2)
			ok = c.matches(apiKey) || c.matches(bearer)
		default:
			ok = c.matches(apiKey)
		}
		if !ok {
			c.errUnauthorized()
			return false
		}
	case AzureAI:
		// api-key and/or Bearer; every credential sent must be right.
		if (!apiKey.present && !bearer.present) ||
			(apiKey.present && !c.matches(apiKey)) || (bearer.present && !c.matches(bearer)) {
			c.errUnauthorized()
			return false
		}
	}
	return true
}

// checkTarget checks the deployment named by the path (azure-openai classic) or by the
// azureml-model-deployment header (azure-ai).
func (c *call) checkTarget() bool {
	deps := c.p.opts.Deployments
	switch c.dialect() {
	case AzureOpenAI:
		if !c.v1 && c.op != opResponses && len(deps) > 0 && !slices.Contains(deps, c.deployment) {
			c.errDeploymentNotFound()
			return false
		}
	case AzureAI:
		vals := c.r.Header.Values("Azureml-Model-Deployment")
		if len(vals) > 1 {
			c.aiErr(http.StatusBadRequest, "BadRequest", "mock: azureml-model-deployment is given more than once")
			return false
		}
		if len(vals) == 1 && len(deps) > 0 && !slices.Contains(deps, vals[0]) {
			// Not documented; mock: the endpoint has no such deployment.
			c.aiFlat(http.StatusNotFound, "NotFound", fmt.Sprintf("Deployment %q not found on this endpoint", vals[0]), "NotFound")
			return false
		}
	}
	return true
}

// checkTransport checks what the HTTP layer carries: the whole body was read, Content-Length (when sent)
// is exact, the body is JSON by Content-Type.
func (c *call) checkTransport() bool {
	if len(c.raw) > maxBody {
		c.errTooLarge()
		return false
	}
	if c.readErr != nil {
		c.invalid("", "", "mock: the request body could not be read: "+c.readErr.Error())
		return false
	}
	if cls := c.r.Header.Values("Content-Length"); len(cls) > 0 {
		n, err := strconv.Atoi(cls[0])
		if len(cls) > 1 || err != nil || n != len(c.raw) {
			c.invalid("", "", fmt.Sprintf("mock: Content-Length %v does not match the body length %d", cls, len(c.raw)))
			return false
		}
	}
	if c.r.ContentLength >= 0 && c.r.ContentLength != int64(len(c.raw)) {
		c.invalid("", "", fmt.Sprintf("mock: Content-Length %d does not match the body length %d", c.r.ContentLength, len(c.raw)))
		return false
	}
	ct := c.r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		c.invalid("", "", fmt.Sprintf("mock: Content-Type %q is not application/json", ct))
		return false
	}
	return true
}

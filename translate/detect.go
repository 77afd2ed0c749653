package translate

import (
	"errors"
	"strconv"
	"strings"
)

// ClientRequest is what the request line and headers say about a client's request, before its body is read.
type ClientRequest struct {
	Dialect Dialect
	Op      Operation
	// Deployment is the azure-openai classic path segment /openai/deployments/{Deployment}/...; it names
	// the model, so the route is known without reading the body.
	Deployment string
	// APIVersion is the client's validated api-version ("" when it sent none).
	APIVersion string
	// AzureV1 marks the azure-openai v1 surface (/openai/v1/{op}), where the body model names the deployment.
	AzureV1 bool
	// ModelDeploymentHeader is an azure-ai client's azureml-model-deployment header, its model when the body
	// names none.
	ModelDeploymentHeader string
	// ExtraParameters is an azure-ai client's extra-parameters header; it overrides the provider's policy.
	ExtraParameters string
}

// Known reports whether the request is one the filter translates (or answers, for model listing).
func (r *ClientRequest) Known() bool { return r.Dialect != DialectUnknown }

// ModelFromHeaders is the model a request names outside its body: the azure-openai classic deployment
// segment, or an azure-ai client's azureml-model-deployment header (Azure routes on that header, so it wins
// over the body's model). When ok, the route is decided in the headers phase without reading the body.
func (r *ClientRequest) ModelFromHeaders() (model string, ok bool) {
	switch {
	case r.Deployment != "":
		return r.Deployment, true
	case r.Dialect == AzureAI && r.ModelDeploymentHeader != "":
		return r.ModelDeploymentHeader, true
	}
	return "", false
}

// Detect classifies a request by method and :path (query included), after stripping pathPrefix. A request
// on no known API path comes back with Dialect == DialectUnknown and no error: the caller's unknown_paths
// policy decides. Errors are answered in the detected dialect.
func Detect(method, path, pathPrefix string) (ClientRequest, *Error) {
	var req ClientRequest
	rawPath, rawQuery, _ := strings.Cut(path, "?")
	if pathPrefix != "" {
		rest, ok := strings.CutPrefix(rawPath, pathPrefix)
		if !ok || (rest != "" && rest[0] != '/') {
			return req, nil
		}
		rawPath = rest
	}
	version, hasVersion, verr := queryAPIVersion(rawQuery)

	switch {
	case rawPath == "/v1/models" || rawPath == "/openai/v1/models" || (rawPath == "/models" && !hasVersion):
		req.Dialect, req.Op = OpenAI, OpListModels
		if method != "GET" {
			return req, NewError(ErrMethodNotAllowed, "", "model listing takes GET, not "+method)
		}
		return req, nil
	case rawPath == "/openai/models":
		// Azure OpenAI's classic model list (GET /openai/models?api-version=), answered in its own shape.
		req.Dialect, req.Op = AzureOpenAI, OpListModels
		if method != "GET" {
			return req, NewError(ErrMethodNotAllowed, "", "model listing takes GET, not "+method)
		}
	case strings.HasPrefix(rawPath, "/v1/"):
		req.Dialect, req.Op = OpenAI, operationFromPath(rawPath[len("/v1/"):])
	case strings.HasPrefix(rawPath, "/openai/v1/"):
		req.Dialect, req.Op, req.AzureV1 = AzureOpenAI, operationFromPath(rawPath[len("/openai/v1/"):]), true
	case strings.HasPrefix(rawPath, "/openai/deployments/"):
		deployment, op, _ := strings.Cut(rawPath[len("/openai/deployments/"):], "/")
		req.Dialect, req.Op = AzureOpenAI, operationFromPath(op)
		if req.Op != OpUnknown {
			if !ValidDeployment(deployment) {
				return req, NewError(ErrInvalidDeployment, "deployment",
					"the deployment in the path must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
			}
			req.Deployment = deployment
		}
	default:
		suffix := strings.TrimPrefix(rawPath, "/models")
		if suffix == rawPath {
			suffix = strings.TrimPrefix(rawPath, "/")
		} else {
			suffix = strings.TrimPrefix(suffix, "/")
		}
		req.Op = operationFromPath(suffix)
		req.Dialect = OpenAI
		if hasVersion {
			req.Dialect = AzureAI
		}
	}
	if req.Op == OpUnknown {
		return ClientRequest{}, nil
	}
	if method != "POST" && req.Op != OpListModels {
		return req, NewError(ErrMethodNotAllowed, "", req.Op.String()+" takes POST, not "+method)
	}
	if verr != nil {
		return req, verr
	}
	if hasVersion {
		if req.Dialect == OpenAI {
			return req, NewError(ErrInvalidAPIVersion, "api-version", "OpenAI paths take no api-version query parameter: remove it")
		}
		if err := validateAPIVersion(req.Dialect, req.AzureV1, version); err != nil {
			return req, err
		}
		req.APIVersion = version
	}
	return req, nil
}

// queryAPIVersion finds the one api-version parameter in a raw query string. Names are compared decoded so
// "api%2Dversion" cannot smuggle a second value past the check.
func queryAPIVersion(rawQuery string) (value string, found bool, err *Error) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, nerr := queryUnescape(rawName)
		if nerr != nil || name != "api-version" {
			continue
		}
		if found {
			return "", true, NewError(ErrInvalidAPIVersion, "api-version", "api-version is given more than once: send it once")
		}
		v, verr := queryUnescape(rawValue)
		if verr != nil {
			return "", true, NewError(ErrInvalidAPIVersion, "api-version", "api-version is not valid URL encoding")
		}
		value, found = v, true
	}
	return value, found, nil
}

// validateAPIVersion checks a version against the dialect's shape: YYYY-MM-DD[-preview], or on the Azure
// OpenAI v1 surface v1, latest or preview.
func validateAPIVersion(d Dialect, azureV1 bool, v string) *Error {
	if azureV1 {
		if IsAzureOpenAIV1(v) {
			return nil
		}
		return NewError(ErrInvalidAPIVersion, "api-version",
			"the Azure OpenAI v1 surface takes api-version v1, latest or preview (or none), not "+quoteForMessage(v))
	}
	if IsDatedAPIVersion(v) {
		return nil
	}
	return NewError(ErrInvalidAPIVersion, "api-version",
		"api-version must look like 2024-10-21 or 2024-05-01-preview, not "+quoteForMessage(v))
}

// IsDatedAPIVersion reports whether v has the shape YYYY-MM-DD or YYYY-MM-DD-preview.
func IsDatedAPIVersion(v string) bool {
	date, _ := strings.CutSuffix(v, "-preview")
	if len(date) != 10 || date[4] != '-' || date[7] != '-' {
		return false
	}
	for i, c := range []byte(date) {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// ValidDeployment reports whether s is safe and valid as an Azure deployment name: it becomes a path segment
// or a header value, so nothing outside [A-Za-z0-9._-] may pass, and "." and ".." would walk the path.
func ValidDeployment(s string) bool {
	if len(s) == 0 || len(s) > 64 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// quoteForMessage quotes a client-supplied value for an error message, bounded so a huge value cannot
// inflate the answer.
func quoteForMessage(s string) string {
	const limit = 64
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strings.ToValidUTF8(strconv.Quote(s), "\uFFFD")
}

// RefineWithBody applies what only the body can tell: an OpenAI-path request that carries chain_id is an
// EternalAI client.
func (r *ClientRequest) RefineWithBody(body *RequestBody) {
	if r.Dialect == OpenAI && body.HasChainID {
		r.Dialect = EternalAI
	}
}

// queryUnescape decodes a query component (%XX and '+'); it fails on a malformed escape.
func queryUnescape(s string) (string, error) {
	if !strings.ContainsAny(s, "%+") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 >= len(s) || !isHexDigit(s[i+1]) || !isHexDigit(s[i+2]) {
				return "", errBadEscape
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b), nil
}

var errBadEscape = errors.New("malformed percent escape")

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

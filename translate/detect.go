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
	// Deployment is the deployment a client named in its path (/openai/deployments/{Deployment}/...); it
	// names the model, so the route is known without reading the body.
	Deployment string
	// APIVersion is the client's validated api-version ("" when it sent none).
	APIVersion string
	// SurfaceVersion is the api-version the client's route implies when it sends none ("v1" on the Azure
	// OpenAI v1 surface, where the body model names the deployment); "" elsewhere.
	SurfaceVersion string
	// ModelHeader is the client's Dialect.ModelHeader, its model when the body names none.
	ModelHeader string
	// PolicyHeader is the client's Dialect.PolicyHeader (Azure AI's extra-parameters); it overrides the
	// provider's policy toward a provider of the client's own dialect.
	PolicyHeader string
}

// Known reports whether the request is one the filter translates (or answers, for model listing).
func (r *ClientRequest) Known() bool { return r.Dialect != DialectUnknown }

// ModelFromHeaders is the model a request names outside its body: a deployment in its path, or its model
// header (the provider routes on that header, so it wins over the body's model). When ok, the route is
// decided in the headers phase without reading the body.
func (r *ClientRequest) ModelFromHeaders() (model string, ok bool) {
	switch {
	case r.Deployment != "":
		return r.Deployment, true
	case r.ModelHeader != "":
		return r.ModelHeader, true
	}
	return "", false
}

// versionRule says how a route takes ?api-version=.
type versionRule uint8

const (
	versionAny     versionRule = iota // optional, validated
	versionAbsent                     // the route is only this one without it
	versionNeeded                     // the route is only this one with it
	versionIgnored                    // not read (model lists that take any query)
)

// clientRoute is one request line a dialect's clients send: a path (prefix) and what it says.
type clientRoute struct {
	// path is matched exactly when op is set (the rest of the path names nothing), else as a prefix
	// followed by the operation's path suffix.
	path string
	op   Operation
	// deploymentSegment: after the prefix comes a deployment name, then "/" and the operation.
	deploymentSegment bool
	// only, when set, is the operations a prefix route serves; other operations below it are not its.
	only    uint16
	version versionRule
	// surfaceVersion is the ClientRequest.SurfaceVersion of the route; when set, only namedVersions are
	// valid api-versions on it, else only dated ones.
	surfaceVersion string
	dialect        Dialect // filled from the spec that lists the route
}

// routes are every dialect's routes, exact paths first, then longer prefixes before shorter ones, so the
// first match is the most specific.
var routes []clientRoute

func buildRoutes() {
	routes = routes[:0]
	for _, d := range Dialects {
		for _, r := range d.spec().routes {
			r.dialect = d
			routes = append(routes, r)
		}
	}
	// An insertion sort, stable, for a dozen rows (the slices package's generic sort costs the module 9 KB).
	for i := 1; i < len(routes); i++ {
		for j := i; j > 0 && routeBefore(&routes[j], &routes[j-1]); j-- {
			routes[j], routes[j-1] = routes[j-1], routes[j]
		}
	}
}

// routeBefore orders exact routes first, then longer prefixes before shorter ones.
func routeBefore(a, b *clientRoute) bool {
	if exact := a.op != OpUnknown; exact != (b.op != OpUnknown) {
		return exact
	}
	return len(a.path) > len(b.path)
}

// match reports whether the route serves path, and the operation and deployment it names.
func (r *clientRoute) match(path string, hasVersion bool) (op Operation, deployment string, ok bool) {
	switch {
	case r.version == versionAbsent && hasVersion, r.version == versionNeeded && !hasVersion:
		return OpUnknown, "", false
	case r.op != OpUnknown:
		return r.op, "", path == r.path
	}
	rest, found := strings.CutPrefix(path, r.path)
	if !found {
		return OpUnknown, "", false
	}
	if r.deploymentSegment {
		deployment, rest, _ = strings.Cut(rest, "/")
	}
	op = operationFromPath(rest)
	if r.only != 0 && r.only&(1<<op) == 0 {
		return OpUnknown, "", false
	}
	return op, deployment, true
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
	var route *clientRoute
	for i := range routes {
		op, deployment, ok := routes[i].match(rawPath, hasVersion)
		if !ok {
			continue
		}
		route = &routes[i]
		req.Dialect, req.Op, req.SurfaceVersion = route.dialect, op, route.surfaceVersion
		if op == OpUnknown {
			return ClientRequest{}, nil
		}
		if route.deploymentSegment {
			if !ValidDeployment(deployment) {
				return req, NewError(ErrInvalidDeployment, "deployment",
					"the deployment in the path must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'")
			}
			req.Deployment = deployment
		}
		break
	}
	if route == nil {
		return ClientRequest{}, nil
	}
	switch {
	case req.Op == OpStoredResponse:
		return req, storedResponseRefusal(method, rawPath)
	case req.Op != OpListModels && !req.Dialect.Supports(req.Op):
		return req, NewError(ErrUnsupportedOperation, "", req.Dialect.String()+" clients have no "+req.Op.String()+
			" operation on this path")
	}
	if req.Op == OpListModels && method != "GET" {
		return req, NewError(ErrMethodNotAllowed, "", "model listing takes GET, not "+method)
	}
	if req.Op != OpListModels && method != "POST" {
		return req, NewError(ErrMethodNotAllowed, "", req.Op.String()+" takes POST, not "+method)
	}
	if route.version == versionIgnored {
		return req, nil
	}
	if verr != nil {
		return req, verr
	}
	if hasVersion {
		s := req.Dialect.spec()
		if !s.usesAPIVersion {
			return req, NewError(ErrInvalidAPIVersion, "api-version", s.name+" paths take no api-version query parameter: remove it")
		}
		if err := validateAPIVersion(s, route, version); err != nil {
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

// validateAPIVersion checks a client's version against its route: a surface with its own version names
// takes only those, the others take dated versions (YYYY-MM-DD[-preview]).
func validateAPIVersion(s *dialectSpec, route *clientRoute, v string) *Error {
	if route.surfaceVersion != "" {
		if inList(s.namedVersions, v) {
			return nil
		}
		return NewError(ErrInvalidAPIVersion, "api-version", "this "+s.name+" surface takes api-version "+
			strings.Join(s.namedVersions, ", ")+" (or none), not "+quoteForMessage(v))
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

// RefineWithBody applies what only the body can tell: a dialect may claim a request detected as another one
// (an OpenAI-path request that carries chain_id is an EternalAI client).
func (r *ClientRequest) RefineWithBody(body *RequestBody) {
	for _, d := range Dialects {
		if d != r.Dialect && d.spec().claimsRequest(r, body) {
			r.Dialect = d
			return
		}
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

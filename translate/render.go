package translate

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
)

// Header is one HTTP header to set.
type Header struct{ Name, Value string }

// Target is the provider a request goes to, with the matched model's settings applied.
type Target struct {
	Dialect Dialect
	// BasePath precedes the operation path; use Dialect.DefaultBasePath() when the configuration names none.
	BasePath string
	// APIVersion is the provider's configured api-version; "" means the client's when it speaks the same
	// dialect, else the dialect's default.
	APIVersion string
	// Model is the model name the upstream receives in the body.
	Model string
	// Settings are the dialect's own settings for the models entry (settings.go): deployment, chain,
	// extra-parameters policy...
	Settings Settings
	// ChatOnly: the model entry has only Chat Completions, so Responses requests to it are bridged to chat
	// even when its provider's dialect has the Responses API.
	ChatOnly bool
	// DropHostedTools: a Responses request bridged to chat leaves out the hosted tools (web_search and the
	// others that run on the Responses API's servers) and their calls in the history, naming them in
	// x-aidialect-dropped-params, instead of being refused for them (the configuration's hosted_tools).
	DropHostedTools bool
	// ForceStreamUsage asks an OpenAI-family provider for stream_options.include_usage on streamed chat, so
	// token usage can be counted even when the client did not ask (see Exchange.StripUsageChunk).
	ForceStreamUsage bool
	// Binding binds the Responses state a request names to its consumer (binding.go); the zero value, with
	// no consumers configured, binds nothing.
	Binding ResponseBinding
}

// UpstreamHead is the request line and header edits for the upstream.
type UpstreamHead struct {
	Path   string
	Set    []Header
	Remove []string
}

// RenderHead builds the upstream :path and the dialect header edits (credentials aside: see AuthHeaders).
// It needs no body, so a route decided by the request line can go out before the body arrives.
func RenderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	return surfaceFor(req, t).renderHead(req, t)
}

// renderHeadAs is RenderHead for a request the target serves in its own shape, as the operation op (the
// request's own, or the one a surface converts it to).
func renderHeadAs(req *ClientRequest, op Operation, t *Target) (UpstreamHead, *Error) {
	var head UpstreamHead
	if !t.Dialect.Supports(op) {
		return head, NewError(ErrUnsupportedOperation, "",
			"the provider for this model speaks "+t.Dialect.String()+", which has no "+op.String()+" operation")
	}
	version, err := resolveAPIVersion(req, op, t)
	if err != nil {
		return head, err
	}
	target := t.Dialect.spec()
	path := make([]byte, 0, len(t.BasePath)+64)
	if path, err = target.upstreamPath(append(path, t.BasePath...), op, req, t, version); err != nil {
		return head, err
	}
	head.Path = string(path)
	head.Remove = headersToRemove[t.Dialect]
	return head, target.headEdits(&head, req, t, version)
}

// plainPath is the upstreamPath of a dialect whose routes are the base path, the operation and, when it
// has one, ?api-version=.
func plainPath(b []byte, op Operation, _ *ClientRequest, _ *Target, version string) ([]byte, *Error) {
	b = append(append(b, '/'), op.PathSuffix()...)
	if version != "" {
		b = append(append(b, "?api-version="...), version...)
	}
	return b, nil
}

// noHeadEdits is the headEdits of a dialect that needs no headers of its own.
func noHeadEdits(*UpstreamHead, *ClientRequest, *Target, string) *Error { return nil }

// resolveAPIVersion picks the one api-version the upstream gets: the provider's; else the client's when it
// speaks the provider's dialect (or the one its surface implies); else the operation's default in that
// dialect. The result is validated for the target, and must have the operation: sent anyway, the request
// would meet the service's bare 404 for a path that version lacks.
func resolveAPIVersion(req *ClientRequest, op Operation, t *Target) (string, *Error) {
	s := t.Dialect.spec()
	if !s.usesAPIVersion {
		return "", nil
	}
	versions := s.versionsOf(op)
	version, param := t.APIVersion, ""
	if version == "" && req.Dialect == t.Dialect {
		version = req.APIVersion
		if version != "" {
			param = "api-version"
		} else {
			version = req.SurfaceVersion
		}
	}
	if version == "" {
		version = s.defaultAPIVersion
		if versions != nil && versions.fallback != "" {
			version = versions.fallback
		}
	}
	if !s.validVersion(version) {
		return "", NewError(ErrInvalidAPIVersion, "api-version", "api-version "+quoteForMessage(version)+
			" is not valid for "+t.Dialect.String()+": use the form 2024-10-21 or 2024-05-01-preview")
	}
	if !versions.has(version) {
		return "", NewError(ErrUnsupportedOperation, param, t.Dialect.String()+" api-version "+version+" has no "+
			op.String()+" operation: "+versions.hint)
	}
	return version, nil
}

// UpstreamBody is a rendered request body.
type UpstreamBody struct {
	// Body aliases the client's body when Changed is false, else the dst buffer given to RenderBody.
	Body    []byte
	Changed bool
	// Dropped lists the extra parameters removed for an azure-ai provider (for x-aidialect-dropped-params), up
	// to maxListedParamBytes of names; DroppedMore counts the ones past that.
	Dropped     []string
	DroppedMore int
	// ForcedUsage: include_usage was added for the gateway's own accounting; the client did not ask for the
	// usage chunk, so the answer must not show it.
	ForcedUsage bool
	// surface answers the attempt: set by a surface whose answers need the request's state (a Responses
	// request bridged to chat); nil for the surface the operation has natively.
	surface answerSurface
}

// RenderBody writes the body for the target into dst (reused when large enough), as the surface that
// serves the request toward the target renders it. It reads body and never changes what Parse found, so the
// same body renders again for another target.
func RenderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	return surfaceFor(req, t).renderBody(dst, req, body, t)
}

// renderBodyAs is RenderBody for a request the target serves in its own shape: it plans every top-level
// member located by Parse with the target's rules (rules.go), then writes them in one pass, each copied,
// dropped or replaced once, and appends the additions.
func renderBodyAs(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	var out UpstreamBody
	c := body.startRender(req, t)
	defer func() { body.render = renderContext{body: body} }()
	if e := checkEncodingFormat(body, c.target); e != nil {
		return out, e
	}
	if c.binds() {
		if e := checkBoundInput(body.value(fieldInput)); e != nil {
			return out, e
		}
	}
	if e := c.target.prepareBody(c); e != nil {
		return out, e
	}
	changed, e := c.plan()
	if e != nil {
		return out, e
	}
	if c.policy == extraError && c.extras.count() > 0 {
		return out, NewError(ErrExtraParametersNotAllowed, c.extras.first(), "this provider does not accept the parameter(s) "+
			c.extras.String()+": remove them, or have the operator set extra_parameters to drop or pass-through")
	}
	out.ForcedUsage = c.forceUsage
	out.Dropped, out.DroppedMore = c.extras.names, c.extras.more
	w, added := c.write(dst[:0])
	if !changed && !added {
		out.Body = body.src
		return out, nil
	}
	out.Body, out.Changed = w, true
	return out, nil
}

// startRender sets up the body's render context for the target: what every rule reads. The context lives in
// the body: handed to the rules, a local would move to the heap for every request.
func (b *RequestBody) startRender(req *ClientRequest, t *Target) *renderContext {
	b.render = renderContext{req: req, body: b, t: t, target: t.Dialect.spec(), source: req.Dialect.asClient()}
	c := &b.render
	c.version, _ = resolveAPIVersion(req, req.Op, t)
	c.model, c.wantModel = c.target.bodyModel(req, t, c.version)
	c.forceUsage = t.ForceStreamUsage && b.Stream && !b.IncludeUsage && req.Op == OpChatCompletions &&
		c.target.streamUsageOption
	c.strictParams, c.policy = c.target.knownParams[req.Op] != nil, t.Settings.extraParameters
	return c
}

// plan fills body.plans, one per member, and reports whether any member changes. Each member is planned in
// the context's scratch plan (a local handed to a rule would move to the heap for every member), then kept
// packed: the few rewritten values go to body.planValues, so the per-member table holds no pointer for the
// collector to scan (a body of 4,096 members kept 192 KiB of plans for it to walk at every cycle).
func (c *renderContext) plan() (changed bool, err *Error) {
	b := c.body
	rules := &c.target.rulesByKind
	clear(b.planValues)
	b.plans, b.planValues = b.plans[:0], b.planValues[:0]
	p := &c.scratch
	for i := range b.members {
		opcount.Add(opcount.MembersVisited, 1)
		info := &b.fields[i]
		if p.str != "" || p.raw != nil {
			*p = memberPlan{}
		} else {
			p.edit, p.settled = editKeep, false
		}
		if rule := rules[info.kind]; rule != nil {
			if e := rule(c, i, p); e != nil {
				return false, e
			}
		}
		if p.edit == editKeep && !p.settled && (info.owner != DialectUnknown || c.strictParams) {
			planFallback(c, i, info, p)
		}
		packed := packedPlan{edit: p.edit}
		if p.str != "" || p.raw != nil {
			b.planValues = append(b.planValues, planValue{str: p.str, raw: p.raw})
			packed.value = uint16(len(b.planValues))
		}
		b.plans = append(b.plans, packed)
		changed = changed || p.edit != editKeep || b.members[i].KeyEscaped
	}
	return changed, nil
}

// write applies the plans in one pass over the members, then the additions; added reports an addition.
func (c *renderContext) write(w []byte) (_ []byte, added bool) {
	b, src := c.body, c.body.src
	w = append(w, '{')
	first := true
	for i, m := range b.members {
		p := b.plans[i]
		if p.edit == editDrop {
			continue
		}
		if !first {
			w = append(w, ',')
		}
		first = false
		if p.edit == editKeep && !m.KeyEscaped {
			w = append(w, src[m.KeyStart:m.ValEnd]...)
			continue
		}
		// Every other edit writes a canonical key (escaped keys are normalised) and a value.
		switch {
		case p.edit == editRename:
			w = jsonscan.AppendString(w, b.planValue(p).str)
		case m.KeyEscaped:
			w = jsonscan.AppendString(w, b.memberName(i))
		default:
			w = append(w, src[m.KeyStart:m.KeyEnd]...)
		}
		w = append(w, ':')
		switch p.edit {
		case editString:
			w = jsonscan.AppendString(w, b.planValue(p).str)
		case editRaw:
			w = append(w, b.planValue(p).raw...)
		case editWrapInArray:
			w = append(append(append(w, '['), m.Value(src)...), ']')
		default:
			w = append(w, m.Value(src)...)
		}
	}
	for _, list := range [...][]bodyAddition{sharedAdditionsFirst, c.target.bodyAdditions, sharedAdditionsLast} {
		for _, add := range list {
			key, value, ok := add(c)
			if !ok {
				continue
			}
			if !first {
				w = append(w, ',')
			}
			first, added = false, true
			w = append(jsonscan.AppendString(w, key), ':')
			w = append(w, value...)
		}
	}
	return append(w, '}'), added
}

// checkEncodingFormat refuses an embeddings encoding_format the target's providers do not take (Azure AI's
// integer and binary encodings toward dialects that know only float and base64), rather than letting the
// provider fail with a less clear message. A target without a list (Azure AI) judges the value itself.
func checkEncodingFormat(body *RequestBody, target *dialectSpec) *Error {
	v := body.value(fieldEncodingFormat)
	if v == nil || string(v) == "null" || target.encodingFormats == nil {
		return nil
	}
	for _, format := range target.encodingFormats {
		if len(v) == len(format)+2 && v[0] == '"' && string(v[1:len(v)-1]) == format {
			return nil
		}
	}
	return NewError(ErrInvalidParameter, "encoding_format", "encoding_format "+quoteForMessage(string(v))+
		" is not one this model's provider takes: use one of "+strings.Join(target.encodingFormats, ", "))
}

// withIncludeUsage returns stream_options (a validated object) with include_usage set to true, its other
// members kept.
func withIncludeUsage(options []byte) []byte {
	members, err := jsonscan.Members(options, nil, 0)
	if err != nil || len(options) == 0 || options[0] != '{' {
		return []byte(`{"include_usage":true}`)
	}
	out := append(make([]byte, 0, len(options)+24), '{')
	for _, m := range members {
		// Compared decoded: an escaped "include\u005fusage" kept beside the new one would be a duplicate key
		// whose first copy some parsers read.
		if key := m.Key(options); string(key) == "include_usage" ||
			m.KeyEscaped && decodeJSONString(options[m.KeyStart:m.KeyEnd]) == "include_usage" {
			continue
		}
		out = append(out, options[m.KeyStart:m.ValEnd]...)
		out = append(out, ',')
	}
	return append(out, `"include_usage":true}`...)
}

// isJSONStringOf reports whether raw is the escape-free JSON string literal of s.
func isJSONStringOf(raw []byte, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == s
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// maxListedParamBytes bounds the parameter names kept for a header or an error message: they are the client's
// own keys, and a body of thousands of long ones must not be copied again into either.
const maxListedParamBytes = 1024

// paramList collects parameter names up to maxListedParamBytes and counts the rest. The names of keys written
// without escapes are copied into one buffer (a body of thousands of extra parameters paid an allocation per
// listed name); the views into it stay valid when it grows, since a grown buffer is a new array.
type paramList struct {
	names []string
	buf   []byte
	size  int
	more  int
}

func (l *paramList) add(body *RequestBody, i int) {
	m := body.members[i]
	if n := m.KeyEnd - m.KeyStart - 2; l.size+n > maxListedParamBytes && len(l.names) > 0 {
		l.more++
		return
	}
	var name string
	if m.KeyEscaped {
		name = body.memberName(i) // decoded once, and kept by the body
	} else {
		if l.buf == nil {
			l.buf = make([]byte, 0, maxListedParamBytes)
		}
		start := len(l.buf)
		l.buf = append(l.buf, m.Key(body.src)...)
		name = unsafe.String(unsafe.SliceData(l.buf[start:]), len(l.buf)-start)
	}
	if l.names == nil {
		l.names = make([]string, 0, 16)
	}
	l.names = append(l.names, name)
	l.size += len(name)
}

func (l *paramList) count() int { return len(l.names) + l.more }

// first is the first name, bounded, for an error's param.
func (l *paramList) first() string {
	if n := l.names[0]; len(n) > maxListedParamBytes {
		return strings.ToValidUTF8(n[:maxListedParamBytes], "") + "..."
	}
	return l.names[0]
}

// String lists the names for an error message, with how many were left out.
func (l *paramList) String() string {
	s := strings.Join(l.names, ", ")
	if len(s) > 2*maxListedParamBytes {
		s = strings.ToValidUTF8(s[:2*maxListedParamBytes], "") + "..."
	}
	if l.more > 0 {
		s += " and " + strconv.Itoa(l.more) + " more"
	}
	return s
}

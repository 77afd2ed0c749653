package translate

import (
	"strconv"
	"strings"

	"github.com/aidialect/aidialect/internal/jsonscan"
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
	// Deployment is the model's deployment: the azure-openai path segment (the model name when empty), the
	// azure-openai v1 surface's body model (likewise), or the azure-ai azureml-model-deployment header.
	Deployment string
	// Model is the model name the upstream receives in the body.
	Model string
	// ChainID is the model's pinned chain_id; DefaultChainID the provider's, used when neither the model
	// nor the client names one.
	ChainID        string
	DefaultChainID string
	// ExtraParameters is the azure-ai provider's policy for fields outside its known set.
	ExtraParameters ExtraParameters
	// ForceStreamUsage asks an OpenAI-family provider for stream_options.include_usage on streamed chat, so
	// token usage can be counted even when the client did not ask (see Exchange.StripUsageChunk).
	ForceStreamUsage bool
}

// UpstreamHead is the request line and header edits for the upstream.
type UpstreamHead struct {
	Path   string
	Set    []Header
	Remove []string
}

// headersOnlyFor lists request headers that mean something to one dialect only; they are removed on the way
// to any other.
var headersOnlyFor = []struct {
	name    string
	dialect Dialect
}{
	{"openai-organization", OpenAI},
	{"openai-project", OpenAI},
	{"extra-parameters", AzureAI},
	{"azureml-model-deployment", AzureAI},
}

// headersToRemove lists, per target dialect, the headersOnlyFor entries of the other dialects.
var headersToRemove = func() map[Dialect][]string {
	m := map[Dialect][]string{}
	for _, d := range Dialects {
		for _, h := range headersOnlyFor {
			if h.dialect != d {
				m[d] = append(m[d], h.name)
			}
		}
	}
	return m
}()

// RenderHead builds the upstream :path and the dialect header edits (credentials aside: see AuthHeaders).
// It needs no body, so a route decided by the request line can go out before the body arrives.
func RenderHead(req *ClientRequest, t *Target) (UpstreamHead, *Error) {
	var head UpstreamHead
	if !t.Dialect.Supports(req.Op) {
		return head, NewError(ErrUnsupportedOperation, "",
			"the provider for this model speaks "+t.Dialect.String()+", which has no "+req.Op.String()+" operation")
	}
	version, err := resolveAPIVersion(req, t)
	if err != nil {
		return head, err
	}
	var path strings.Builder
	path.Grow(len(t.BasePath) + 64)
	path.WriteString(t.BasePath)
	switch {
	case t.Dialect == AzureOpenAI && IsAzureOpenAIV1(version):
		path.WriteString("/v1/")
		path.WriteString(req.Op.PathSuffix())
		if version != "v1" {
			path.WriteString("?api-version=" + version)
		}
	case t.Dialect == AzureOpenAI:
		deployment := t.Deployment
		if deployment == "" {
			deployment = t.Model
		}
		if !ValidDeployment(deployment) {
			return head, NewError(ErrInvalidDeployment, "model", "the model name "+quoteForMessage(deployment)+
				" cannot be an Azure deployment name (1-64 of A-Z a-z 0-9 . _ -): configure a deployment for it")
		}
		path.WriteString("/deployments/" + deployment + "/" + req.Op.PathSuffix() + "?api-version=" + version)
	default:
		path.WriteString("/" + req.Op.PathSuffix())
		if version != "" {
			path.WriteString("?api-version=" + version)
		}
	}
	head.Path = path.String()

	head.Remove = headersToRemove[t.Dialect]
	if t.Dialect == AzureAI {
		policy, e := extraPolicy(req, t)
		if e != nil {
			return head, e
		}
		head.Set = append(head.Set, Header{"extra-parameters", policy.headerValue(version)})
		if t.Deployment != "" {
			if !ValidDeployment(t.Deployment) {
				return head, NewError(ErrInvalidDeployment, "deployment", "the configured deployment is not a valid name")
			}
			head.Set = append(head.Set, Header{"azureml-model-deployment", t.Deployment})
		} else if req.Dialect != AzureAI {
			// Azure routes on this header. Only an Azure AI client's own header chose this route (it was the
			// model that was resolved and authorised); from any other client it would pick a deployment the
			// gateway never checked. The full slice expression keeps the shared table from being appended to.
			head.Remove = append(head.Remove[:len(head.Remove):len(head.Remove)], "azureml-model-deployment")
		}
	}
	return head, nil
}

// resolveAPIVersion picks the one api-version the upstream gets: the provider's; else the client's when it
// speaks the provider's dialect; else the operation's default in that dialect. The result is validated for
// the target, and must have the operation: sent anyway, the request would meet the service's bare 404 for a
// path that version lacks.
func resolveAPIVersion(req *ClientRequest, t *Target) (string, *Error) {
	s := t.Dialect.spec()
	if !s.usesAPIVersion {
		return "", nil
	}
	versions := s.versionsOf(req.Op)
	version, param := t.APIVersion, ""
	if version == "" && req.Dialect == t.Dialect {
		version = req.APIVersion
		if version != "" {
			param = "api-version"
		} else if req.AzureV1 {
			version = "v1"
		}
	}
	if version == "" {
		version = s.defaultAPIVersion
		if versions != nil && versions.fallback != "" {
			version = versions.fallback
		}
	}
	if !(t.Dialect == AzureOpenAI && IsAzureOpenAIV1(version)) && !IsDatedAPIVersion(version) {
		return "", NewError(ErrInvalidAPIVersion, "api-version", "api-version "+quoteForMessage(version)+
			" is not valid for "+t.Dialect.String()+": use the form 2024-10-21 or 2024-05-01-preview")
	}
	if !versions.has(version) {
		return "", NewError(ErrUnsupportedOperation, param, t.Dialect.String()+" api-version "+version+" has no "+
			req.Op.String()+" operation: "+versions.hint)
	}
	return version, nil
}

// extraPolicy is the provider's extra_parameters policy, unless an azure-ai client sent its own header.
func extraPolicy(req *ClientRequest, t *Target) (ExtraParameters, *Error) {
	if req.Dialect == AzureAI && req.ExtraParameters != "" {
		p, ok := parseClientExtraParameters(req.ExtraParameters)
		if !ok {
			return p, NewError(ErrInvalidParameter, "extra-parameters",
				"the extra-parameters header must be pass-through, drop or error, not "+quoteForMessage(req.ExtraParameters))
		}
		return p, nil
	}
	return t.ExtraParameters, nil
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
}

// memberEdit is what rendering does with one top-level member.
type memberEdit uint8

const (
	editKeep memberEdit = iota
	editDrop
	editString          // replace the value with a JSON string
	editWrapInArray     // "x" -> ["x"]
	editRenameMaxTokens // max_completion_tokens -> max_tokens, same value
	editRaw             // replace the value with other JSON
)

// RenderBody writes the body for the target into dst (reused when large enough) in one pass over the
// members located by Parse: each member is copied, dropped or replaced once, and missing fields are appended.
func RenderBody(dst []byte, req *ClientRequest, body *RequestBody, t *Target) (UpstreamBody, *Error) {
	var out UpstreamBody
	src := body.src
	target := t.Dialect.spec()
	source := req.Dialect.spec()
	strictParams := target.knownParams[req.Op] != nil
	policy := ExtraPassThrough
	if strictParams {
		var e *Error
		if policy, e = extraPolicy(req, t); e != nil {
			return out, e
		}
	}
	if e := checkPortableEncoding(body, t.Dialect); e != nil {
		return out, e
	}

	model, wantModel := bodyModel(req, t)
	chainID := ""
	if target.chainID {
		chainID = firstNonEmpty(t.ChainID, body.ChainID, t.DefaultChainID, DefaultChainID)
	}
	renameMaxCompletion := target.maxTokensOnly && !body.has(fieldMaxTokens)
	forceUsage := t.ForceStreamUsage && body.Stream && !body.IncludeUsage && req.Op == OpChatCompletions &&
		t.Dialect.OpenAIFamily()

	var extras paramList
	changed := false
	w := dst[:0]
	w = append(w, '{')
	first := true
	writeKey := func(key string) {
		if !first {
			w = append(w, ',')
		}
		first = false
		w = jsonscan.AppendString(w, key)
		w = append(w, ':')
	}
	for i, m := range body.members {
		info := &body.fields[i]
		kind := info.kind
		edit := editKeep
		var newString string // editString: the value to write as a JSON string
		var newRaw []byte    // editRaw: the JSON value to write
		switch kind {
		case fieldStreamOptions:
			if forceUsage {
				edit, newRaw = editRaw, withIncludeUsage(m.Value(src))
			}
		case fieldModel:
			if !wantModel {
				edit = editDrop
			} else if body.Model != model || m.KeyEscaped {
				edit, newString = editString, model
			}
		case fieldChainID:
			if !target.chainID {
				edit = editDrop
			} else if !isJSONStringOf(m.Value(src), chainID) || m.KeyEscaped {
				edit, newString = editString, chainID
			}
		case fieldStop, fieldInput:
			// The target takes only an array: a string is wrapped, an array or null kept, and any other type
			// refused here, since the filter is the one rewriting the field.
			if kind == fieldStop && target.stopMustBeArray || kind == fieldInput && target.inputMustBeArray && req.Op == OpEmbeddings {
				switch m.Value(src)[0] {
				case '"':
					edit = editWrapInArray
				case '[', 'n':
				default:
					name := body.memberName(i)
					return out, NewError(ErrInvalidParameter, name, name+" must be a string or an array")
				}
			}
		case fieldMaxCompletionTokens:
			if renameMaxCompletion {
				edit = editRenameMaxTokens
			}
		}
		if edit == editKeep && kind != fieldChainID && kind != fieldModel && !(kind == fieldStreamOptions && forceUsage) {
			switch {
			case info.owner != DialectUnknown && info.owner != t.Dialect:
				edit = editDrop
			case strictParams && info.knownOps[t.Dialect]&(1<<req.Op) == 0:
				switch policy {
				case ExtraDrop:
					edit = editDrop
					extras.add(body, i)
				case ExtraError:
					extras.add(body, i)
				}
			}
		}
		if edit == editKeep && !m.KeyEscaped {
			if !first {
				w = append(w, ',')
			}
			first = false
			w = append(w, src[m.KeyStart:m.ValEnd]...)
			continue
		}
		changed = true
		if edit == editDrop {
			continue
		}
		// Every other edit writes a canonical key (escaped keys are normalised) and a new value.
		switch {
		case edit == editRenameMaxTokens:
			writeKey("max_tokens")
		case m.KeyEscaped:
			writeKey(body.memberName(i))
		default:
			if !first {
				w = append(w, ',')
			}
			first = false
			w = append(w, src[m.KeyStart:m.KeyEnd]...)
			w = append(w, ':')
		}
		switch edit {
		case editString:
			w = jsonscan.AppendString(w, newString)
		case editRaw:
			w = append(w, newRaw...)
		case editWrapInArray:
			w = append(w, '[')
			w = append(w, m.Value(src)...)
			w = append(w, ']')
		default:
			w = append(w, m.Value(src)...)
		}
	}
	if policy == ExtraError && extras.count() > 0 {
		return out, NewError(ErrExtraParametersNotAllowed, extras.first(), "this provider does not accept the parameter(s) "+
			extras.String()+": remove them, or have the operator set extra_parameters to drop or pass-through")
	}
	if wantModel && !body.has(fieldModel) && model != "" {
		changed = true
		writeKey("model")
		w = jsonscan.AppendString(w, model)
	}
	if forceUsage && !body.has(fieldStreamOptions) {
		changed = true
		writeKey("stream_options")
		w = append(w, `{"include_usage":true}`...)
	}
	out.ForcedUsage = forceUsage
	if target.chainID && !body.has(fieldChainID) {
		changed = true
		writeKey("chain_id")
		w = jsonscan.AppendString(w, chainID)
	}
	if req.Op == OpCompletions && !body.has(fieldMaxTokens) && !(renameMaxCompletion && body.has(fieldMaxCompletionTokens)) &&
		source.completionsDefaultMaxTokens != target.completionsDefaultMaxTokens {
		// Keep the client's dialect's documented default: a silent jump from 16 to 256 tokens costs money.
		changed = true
		writeKey("max_tokens")
		w = strconv.AppendInt(w, int64(source.completionsDefaultMaxTokens), 10)
	}
	w = append(w, '}')
	out.Dropped, out.DroppedMore = extras.names, extras.more
	if !changed {
		out.Body = src
		return out, nil
	}
	out.Body, out.Changed = w, true
	return out, nil
}

// bodyModel is the model the upstream body names, and whether it names one: every upstream reads it from the
// body except the azure-openai classic surface, where the deployment path segment names it. The azure-openai
// v1 surface reads the deployment from the body model: the entry's deployment, else its model.
func bodyModel(req *ClientRequest, t *Target) (string, bool) {
	if t.Dialect != AzureOpenAI {
		return t.Model, true
	}
	v, _ := resolveAPIVersion(req, t)
	return firstNonEmpty(t.Deployment, t.Model), IsAzureOpenAIV1(v)
}

// checkPortableEncoding refuses Azure AI's integer/binary embedding encodings toward dialects that only
// know float and base64, rather than letting the provider fail with a less clear message.
func checkPortableEncoding(body *RequestBody, target Dialect) *Error {
	v := body.value(fieldEncodingFormat)
	if v == nil || target == AzureAI {
		return nil
	}
	switch string(v) {
	case `"float"`, `"base64"`, "null":
		return nil
	}
	return NewError(ErrInvalidParameter, "encoding_format", "encoding_format "+quoteForMessage(string(v))+
		" is only available from Azure AI providers; this model's provider takes float or base64")
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

// paramList collects parameter names up to maxListedParamBytes and counts the rest.
type paramList struct {
	names []string
	size  int
	more  int
}

func (l *paramList) add(body *RequestBody, i int) {
	m := body.members[i]
	if n := m.KeyEnd - m.KeyStart - 2; l.size+n > maxListedParamBytes && len(l.names) > 0 {
		l.more++
		return
	}
	name := body.memberName(i)
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

package translate

import (
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
	"github.com/tidwall/gjson"
)

// Exchange describes one request/response pair: who asked, who answered, and what the client asked for.
type Exchange struct {
	Client   Dialect
	Provider Dialect
	Op       Operation
	// onchain is what EternalAI's onchain_data becomes for clients of other dialects (the target's
	// Settings).
	onchain onchainPolicy
	// IncludeUsage: the client asked for stream_options.include_usage.
	IncludeUsage bool
	// Tools: the request offered tools, so streamed answers may carry tool-call deltas to index.
	Tools bool
	// StripUsageChunk: the gateway forced include_usage for its own accounting (UpstreamBody.ForcedUsage),
	// so the usage-only chunk is read and removed.
	StripUsageChunk bool
	// surface answers the client (surface.go): UpstreamBody's, or the operation's own when nil.
	surface answerSurface
	// Binding is the request's Target.Binding: a native Response's ids are bound to its consumer.
	Binding ResponseBinding
}

// AnswerHeadersFromBody reports whether a JSON answer's headers depend on its body (a provider's member
// exposed as headers, such as EternalAI's onchain_data), so the response headers must wait for the body.
func AnswerHeadersFromBody(x *Exchange) bool {
	p := x.Provider.spec()
	if x.Client == x.Provider || p == nil {
		return false
	}
	for _, k := range p.answerKeys {
		if k.fate(x) == keyToHeaders {
			return true
		}
	}
	return false
}

// ClientErrorStatus is the status a client sees for an upstream error status: Azure AI's 422 ("parameter
// not supported") is a 400 to clients whose SDKs treat 422 as unexpected.
func ClientErrorStatus(client Dialect, status int) int {
	if status == 422 && client.asClient().errors.unprocessableAs400 {
		return 400
	}
	return status
}

// answerKey is a top-level member of answers and stream events that only one dialect's providers send.
type answerKey struct {
	name string
	// headerPrefix names the headers a keyToHeaders member's fields become (prefix + field).
	headerPrefix string
	// fate is what becomes of it for a client of another dialect.
	fate func(x *Exchange) keyFate
}

// keyFate is what happens to an answerKey's member.
type keyFate uint8

const (
	keepKey      keyFate = iota
	dropKey              // removed
	keyToHeaders         // removed from a JSON answer, its scalar fields exposed as headers; removed from events
)

// dropForOthers is the fate of a member that means nothing to other dialects' clients.
func dropForOthers(*Exchange) keyFate { return dropKey }

// fateOf is what becomes of the provider's top-level member key for x's client (keepKey for every member
// the provider's dialect does not list), and the row that decided it.
func fateOf(provider *dialectSpec, x *Exchange, key []byte) (keyFate, *answerKey) {
	for i := range provider.answerKeys {
		opcount.Equal(len(provider.answerKeys[i].name), len(key))
		if k := &provider.answerKeys[i]; k.name == string(key) {
			return k.fate(x), k
		}
	}
	return keepKey, nil
}

// neverEdits is the editsAnswers of a dialect whose answers are already in the hub's shape.
func neverEdits(*Exchange) bool { return false }

// alwaysEdits is the editsAnswers of a dialect whose answers always carry something of its own.
func alwaysEdits(*Exchange) bool { return true }

// ModelObjectTail ends a model-list entry (after its "id") in the shape of the client's dialect and route;
// owner is the provider that serves the model.
func ModelObjectTail(req *ClientRequest, owner string) string {
	return req.Dialect.asClient().modelObject(req, owner)
}

// JSONString renders s as a JSON string literal.
func JSONString(s string) []byte { return jsonscan.AppendString(nil, s) }

// Usage is the token accounting read from an answer, for metrics.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	Seen             bool
}

// Answer translates a successful JSON answer for the client and reads its token usage, in one validating
// pass: a body that is not one JSON object is an error whatever the dialects (the caller counts it and
// forwards it as it came, or out when it is not nil: a bridged Responses client gets a failed Response). The result aliases body when nothing changes; otherwise it is written into dst.
// Headers are response headers to add (a provider's member exposed as headers).
func Answer(dst []byte, x *Exchange, body []byte) (out []byte, headers []Header, usage Usage, err error) {
	return x.answerSurface().answer(dst, x, body)
}

// providerEdits reports whether the provider's answers need edits for the client: its dialect's own
// members or events, which mean nothing to a client of another dialect.
func (x *Exchange) providerEdits() bool {
	p := x.Provider.spec()
	return x.Client != x.Provider && p != nil && p.editsAnswers(x)
}

// answerChat is Answer for an answer in the shape the client asked for (the client's dialect's, or a chat
// answer a converting surface converts next), the provider's own members removed when edits is set; its
// usage is read either way.
func answerChat(dst []byte, x *Exchange, body []byte, edits bool) (out []byte, headers []Header, usage Usage, err error) {
	var members [32]jsonscan.Member
	// Capped like requests: a real answer has a dozen keys, and the table must not grow with an upstream's.
	list, err := jsonscan.Members(body, members[:0], maxTopLevelMembers)
	if err != nil {
		return nil, nil, Usage{}, err
	}
	provider := x.Provider.spec()
	w := dst[:0]
	if edits {
		w = append(w, '{')
	}
	changed, first := false, true
	for _, m := range list {
		key := m.Key(body)
		if m.KeyEscaped {
			// Clients decode "usage" and "onchain\u005fdata" alike: so does the filter (rare, so it may allocate).
			key = []byte(decodeJSONString(body[m.KeyStart:m.KeyEnd]))
		}
		if string(key) == "usage" {
			usage = usageOfValue(m.Value(body))
		}
		if !edits {
			continue
		}
		switch fate, row := fateOf(provider, x, key); fate {
		case keyToHeaders:
			headers = scalarHeaders(row.headerPrefix, m.Value(body), headers)
			changed = true
			continue
		case dropKey:
			changed = true
			continue
		}
		if !first {
			w = append(w, ',')
		}
		first = false
		w = append(w, body[m.KeyStart:m.ValEnd]...)
	}
	if !changed {
		return body, headers, usage, nil
	}
	return append(w, '}'), headers, usage, nil
}

// An upstream decides how many fields a member exposed as headers has: the headers made from them are
// bounded so one answer cannot inflate the response head without limit.
const (
	maxExposedHeaders     = 32
	maxExposedHeaderBytes = 8 << 10
)

// scalarHeaders exposes an object's scalar fields as <prefix><field> headers. Values come from the upstream,
// so only header-safe ones are used: a CR/LF could otherwise split the response head.
func scalarHeaders(prefix string, raw []byte, headers []Header) []Header {
	added, size := 0, 0
	object := gjson.ParseBytes(raw)
	if !object.IsObject() {
		return headers // an array's elements have no field names to become headers
	}
	object.ForEach(func(k, v gjson.Result) bool {
		if added == maxExposedHeaders {
			return false // the rest stays out of the head; the fields are still in the upstream's own answer
		}
		var value string
		switch v.Type {
		case gjson.String:
			value = stringOf(v)
		case gjson.Number, gjson.True, gjson.False:
			value = v.Raw
		default:
			return true
		}
		name, ok := headerName(prefix, stringOf(k))
		if ok && headerValueSafe(value) && size+len(name)+len(value) <= maxExposedHeaderBytes {
			headers = append(headers, Header{name, value})
			added++
			size += len(name) + len(value)
		}
		return true
	})
	return headers
}

func headerName(prefix, field string) (string, bool) {
	if field == "" || len(field) > 64 {
		return "", false
	}
	b := []byte(prefix)
	for i := 0; i < len(field); i++ {
		c := field[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c == '_':
			b = append(b, '-')
		default:
			return "", false
		}
	}
	return string(b), true
}

func headerValueSafe(v string) bool {
	return len(v) <= 1024 && HeaderSafe(v)
}

// HeaderSafe reports whether a header value has no control characters but tab. A client-sent value the
// filter reads, routes on or moves into another header must pass: CR and LF would split the header it is
// written into, NUL ends it early in C hosts.
func HeaderSafe(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// ReadUsage reads prompt and completion tokens from an answer or stream chunk's usage object.
func ReadUsage(body []byte) Usage { return usageOf(gjson.GetBytes(body, "usage")) }

// usageOfValue is usageOf for a usage member's value as written.
func usageOfValue(raw []byte) Usage {
	if u, ok := plainUsage(raw); ok {
		return u
	}
	return usageOf(gjson.ParseBytes(raw))
}

func usageOf(u gjson.Result) Usage {
	if !u.IsObject() {
		return Usage{}
	}
	// A read-only view of gjson's string: no copy.
	if usage, ok := plainUsage(unsafe.Slice(unsafe.StringData(u.Raw), len(u.Raw))); ok {
		return usage
	}
	prompt, completion := u.Get("prompt_tokens"), u.Get("completion_tokens")
	if !prompt.Exists() && !completion.Exists() {
		// The Responses API's names for the same counts.
		prompt, completion = u.Get("input_tokens"), u.Get("output_tokens")
	}
	if !prompt.Exists() && !completion.Exists() {
		return Usage{}
	}
	return Usage{PromptTokens: prompt.Int(), CompletionTokens: completion.Int(), Seen: true}
}

// plainUsage reads a usage object in the shape providers send, without gjson's parse of every number as a
// float: escape-free keys, and plain integers of at most 18 digits for the token counts and every member
// before them. It reports false, for gjson to read, whatever else it meets before it has both counts (an
// escaped key, another kind of value, anything not well formed), so what it returns is what gjson's Get and
// Int would: the first member of each name, as an integer; Seen when either is present.
func plainUsage(raw []byte) (Usage, bool) {
	i := skipUsageSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return Usage{}, false
	}
	var u Usage
	var havePrompt, haveCompletion, haveInput, haveOutput bool
	var input, output int64
	i = skipUsageSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return u, true
	}
	for {
		if i == len(raw) || raw[i] != '"' {
			return Usage{}, false
		}
		start := i + 1
		i = start
		for i < len(raw) && raw[i] != '"' && raw[i] != '\\' {
			i++
		}
		if i == len(raw) || raw[i] != '"' {
			return Usage{}, false
		}
		key := raw[start:i]
		i = skipUsageSpace(raw, i+1)
		if i == len(raw) || raw[i] != ':' {
			return Usage{}, false
		}
		n, end, ok := plainInt(raw, skipUsageSpace(raw, i+1))
		if !ok {
			return Usage{}, false
		}
		switch {
		case !havePrompt && string(key) == "prompt_tokens":
			havePrompt, u.PromptTokens = true, n
		case !haveCompletion && string(key) == "completion_tokens":
			haveCompletion, u.CompletionTokens = true, n
		case !haveInput && string(key) == "input_tokens": // the Responses API's names
			haveInput, input = true, n
		case !haveOutput && string(key) == "output_tokens":
			haveOutput, output = true, n
		}
		if havePrompt && haveCompletion {
			break // gjson reads no further either
		}
		i = skipUsageSpace(raw, end)
		if i == len(raw) {
			return Usage{}, false
		}
		if raw[i] == '}' {
			break
		}
		if raw[i] != ',' {
			return Usage{}, false
		}
		i = skipUsageSpace(raw, i+1)
	}
	if !havePrompt && !haveCompletion {
		u.PromptTokens, u.CompletionTokens = input, output
		haveInput = haveInput || haveOutput
	}
	u.Seen = havePrompt || haveCompletion || haveInput
	return u, true
}

func skipUsageSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// plainInt reads -?[0-9]{1,18} ending where JSON lets a member's value end.
func plainInt(raw []byte, i int) (n int64, end int, ok bool) {
	neg := i < len(raw) && raw[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		n = n*10 + int64(raw[i]-'0')
		i++
	}
	if i == start || i-start > 18 || i == len(raw) {
		return 0, i, false
	}
	switch raw[i] {
	case ',', '}', ' ', '\t', '\n', '\r':
	default:
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// ProviderAuthHeaders are the headers that carry a provider credential in its dialect, with its settings
// (azure-openai's "auth": "bearer" sends an Entra token in Authorization instead of api-key).
func ProviderAuthHeaders(d Dialect, key string, s *Settings) []Header {
	style := d.spec().auth
	if s.entraToken { // "auth": "bearer", which only dialects listing that key accept
		style = authBearer
	}
	switch style {
	case authAPIKey:
		return []Header{{"api-key", key}}
	case authAPIKeyBearer:
		return []Header{{"api-key", key}, {"authorization", "Bearer " + key}}
	}
	return []Header{{"authorization", "Bearer " + key}}
}

// ClientCredentialHeaders are the request headers a client credential may arrive in; all are removed before
// a request goes upstream unless the provider forwards the client's own key.
var ClientCredentialHeaders = []string{"authorization", "api-key"}

// ClientAccountHeaders choose the OpenAI organization and project a request is billed to; they are removed
// from requests, and from answers (where they name the operator's account), unless the provider forwards the
// client's own key.
var ClientAccountHeaders = []string{"openai-organization", "openai-project"}

// ClientCredential extracts the client's key from Authorization: Bearer or api-key.
func ClientCredential(authorization, apiKey string) string {
	if len(authorization) > 7 && (authorization[:7] == "Bearer " || authorization[:7] == "bearer ") {
		return authorization[7:]
	}
	return apiKey
}

// ErrorEvent renders an SSE event carrying an error in the client's envelope, for a stream that cannot be
// finished normally.
func ErrorEvent(client Dialect, e *Error) []byte {
	b := append([]byte("data: "), e.Body(client)...)
	return append(b, "\n\n"...)
}

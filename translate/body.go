package translate

import (
	"strings"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
)

// fieldKind classifies the top-level request fields the translator reads or rewrites; everything else is
// copied through (or judged as an extra parameter by an Azure AI target).
type fieldKind uint8

const (
	fieldOther fieldKind = iota
	fieldModel
	fieldStream
	fieldStreamOptions
	fieldChainID
	fieldStop
	fieldInput
	fieldMaxTokens
	fieldMaxCompletionTokens
	fieldEncodingFormat
	fieldTools // tools or functions: the answer may carry tool calls
	// fieldPreviousResponseID and fieldConversation name a Responses request's stored state, and
	// fieldRequestID (vLLM's) the id of the response it makes (binding.go).
	fieldPreviousResponseID
	fieldConversation
	fieldRequestID
	// fieldClientMetadata is the Codex CLI's analytics map on Responses requests, which the public APIs refuse.
	fieldClientMetadata
	fieldKindCount
)

var fieldKinds = map[string]fieldKind{
	"model":                 fieldModel,
	"stream":                fieldStream,
	"stream_options":        fieldStreamOptions,
	"chain_id":              fieldChainID,
	"stop":                  fieldStop,
	"input":                 fieldInput,
	"max_tokens":            fieldMaxTokens,
	"max_completion_tokens": fieldMaxCompletionTokens,
	"encoding_format":       fieldEncodingFormat,
	"tools":                 fieldTools,
	"functions":             fieldTools,
	"previous_response_id":  fieldPreviousResponseID,
	"conversation":          fieldConversation,
	"request_id":            fieldRequestID,
	"client_metadata":       fieldClientMetadata,
}

// RequestBody is a client request body that has been validated once, with its top-level members located so
// rendering can copy them without another scan. Reuse one per worker: Parse keeps its buffers.
type RequestBody struct {
	src     []byte
	members []jsonscan.Member
	names   []string              // decoded names, only for members whose key had escapes
	fields  []fieldInfo           // per member, from fieldTable
	index   [fieldKindCount]int16 // member index+1 of each fieldKind, 0 when absent
	keys    keyTable              // finds repeated keys (body_keys.go)
	plans   []packedPlan          // RenderBody's plan, one per member
	// planValues are the plans' rewritten values (a few per body).
	planValues []planValue
	render     renderContext // RenderBody's context
	bridge     *Bridge       // a bridged Responses request's state, kept for the next one

	// Model is the body's model ("" when absent).
	Model string
	// Stream is the body's stream flag.
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// ChainID is an EternalAI chain_id as sent (a string, or a number's digits); HasChainID tells it was sent.
	ChainID    string
	HasChainID bool
}

// maxTopLevelMembers bounds the keys of a request object; real requests have a few dozen at most. The scan
// stops at the first key past it, so the member table never grows beyond it.
const (
	maxTopLevelMembers = 4096
	tooManyMembers     = "the request body has more than 4096 top-level fields"
)

// Parse validates src as a JSON object and reads the fields that decide routing. src must not change while
// the RequestBody is in use.
func (b *RequestBody) Parse(src []byte) *Error { return b.parse(src, nil, false) }

// parseWritten is Parse for a body the filter wrote itself (a bridged request's chat body): valid by
// construction, each member once and in lower case, and its top-level members recorded by its writer
// (members, which may use b's member table), so the body is not scanned again, nor its keys compared.
func (b *RequestBody) parseWritten(src []byte, members []jsonscan.Member) *Error {
	return b.parse(src, members, true)
}

// parse is Parse, or parseWritten when written.
func (b *RequestBody) parse(src []byte, members []jsonscan.Member, written bool) *Error {
	*b = RequestBody{src: src, members: b.members[:0], names: b.names[:0], fields: b.fields[:0], keys: b.keys,
		plans: b.plans[:0], planValues: b.planValues[:0], bridge: b.bridge}
	var err error
	if written {
		b.members = members
	} else if b.members, err = jsonscan.Members(src, b.members, maxTopLevelMembers); err != nil {
		if err == jsonscan.ErrTooManyMembers {
			return NewError(ErrInvalidJSON, "", tooManyMembers)
		}
		return NewError(ErrInvalidJSON, "", "the request body is not a valid JSON object: "+err.Error())
	}
	if !written {
		b.keys.reset(len(b.members))
	}
	for i := range b.members {
		opcount.Add(opcount.MembersVisited, 1)
		key := b.keyOf(i)
		h := hashKey(key)
		info := fieldsByHash.lookup(key, h)
		// A body the filter wrote has each member once, in lower case: no repeated or folded key to find.
		// Upstream parsers disagree on which of two repeated keys wins, so a body with one could be routed on
		// one model and served by another.
		if !written && b.keys.add(b, i, key, h) {
			name := b.memberName(i)
			return NewError(ErrInvalidJSON, name, "the request body has the field "+quoteForMessage(name)+
				" more than once: send each field once")
		}
		kind := info.kind
		if kind == fieldOther && !written {
			if name, ok := b.foldsToReadField(i); ok {
				return NewError(ErrInvalidJSON, b.memberName(i), "the request body has the field "+
					quoteForMessage(b.memberName(i))+", which a case-insensitive parser reads as "+quoteForMessage(name)+
					": send "+name+" once, in lower case")
			}
		}
		b.fields = append(b.fields, info)
		if kind != fieldOther {
			b.index[kind] = int16(i + 1)
		}
		if e := b.readField(kind, b.members[i].Value(src)); e != nil {
			return e
		}
	}
	return nil
}

// foldsToReadField reports whether member i's key differs only in letter case from a field the filter reads
// (and which one): "Model" beside "model" is no duplicate to the filter, but a case-insensitive upstream
// parser (Go's encoding/json, ASP.NET's defaults) reads it as the model, past the routing and the allow-list.
// Unicode folding counts too ("ſtream" is "stream" to encoding/json). Keys of plain lower-case ASCII, nearly
// all, cost one byte scan.
func (b *RequestBody) foldsToReadField(i int) (string, bool) {
	m := b.members[i]
	key := m.Key(b.src)
	if len(key) > 6*longestReadField { // every character of a field name written as a \uXXXX escape
		return "", false
	}
	plain := true
	opcount.Add(opcount.StepsTaken, len(key))
	for _, c := range key {
		if c >= 'A' && c <= 'Z' || c >= 0x80 || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return "", false
	}
	name := b.memberName(i)
	for field := range fieldKinds {
		opcount.Add(opcount.BytesCompared, min(len(name), len(field))) // EqualFold stops at the shorter
		if strings.EqualFold(name, field) {
			return field, true
		}
	}
	return "", false
}

// longestReadField is the length of the longest field name in fieldKinds.
var longestReadField = func() int {
	n := 0
	for field := range fieldKinds {
		n = max(n, len(field))
	}
	return n
}()

// memberName is the decoded key of member i (it allocates: keep it off the common path).
func (b *RequestBody) memberName(i int) string {
	m := b.members[i]
	if !m.KeyEscaped {
		return string(m.Key(b.src))
	}
	for len(b.names) <= i {
		b.names = append(b.names, "")
	}
	if b.names[i] == "" {
		opcount.Add(opcount.StepsTaken, m.KeyEnd-m.KeyStart) // decoded once, then kept
		b.names[i] = decodeJSONString(b.src[m.KeyStart:m.KeyEnd])
	}
	return b.names[i]
}

func (b *RequestBody) readField(kind fieldKind, raw []byte) *Error {
	switch kind {
	case fieldModel:
		if raw[0] == 'n' {
			// null is no model, as the providers read it: clients of a route that names the deployment (Azure
			// OpenAI's /openai/deployments/{d}, Azure AI's azureml-model-deployment) send "model": null
			// (LangChain's AzureChatOpenAI without model=), and a body-routed request without one is refused
			// as missing its model.
			return nil
		}
		if raw[0] != '"' {
			return NewError(ErrInvalidParameter, "model", "model must be a string naming the model")
		}
		b.Model = decodeJSONString(raw)
	case fieldStream:
		switch string(raw) {
		case "true":
			b.Stream = true
		case "false", "null":
		default:
			return NewError(ErrInvalidParameter, "stream", "stream must be true or false")
		}
	case fieldStreamOptions:
		if raw[0] == 'n' {
			return nil
		}
		if raw[0] != '{' {
			return NewError(ErrInvalidParameter, "stream_options", "stream_options must be an object")
		}
		// Every member is looked at, not only the first include_usage: a duplicate would let the filter and
		// the provider read different values, as with top-level duplicates. The object was validated with the
		// body, so Skim only locates its members (Members would validate it again, and its table escapes: one
		// allocation per streaming request); its keys are decoded as the provider decodes them.
		var table [8]jsonscan.Member
		members, err := jsonscan.Skim(raw, table[:0], maxTopLevelMembers)
		if err != nil { // only too many members: the body was validated
			return NewError(ErrInvalidParameter, "stream_options", "stream_options has more than 4096 fields: "+
				"send include_usage and the few others it takes")
		}
		var usage []byte
		seen := 0
		folded := false
		for _, m := range members {
			name := decodedKey(&m, raw)
			switch {
			case string(name) == "include_usage":
				usage = m.Value(raw)
				seen++
			case len(name) <= 6*len("include_usage") && strings.EqualFold(string(name), "include_usage"):
				folded = true // "Include_Usage": a case-insensitive upstream reads it as include_usage
			}
		}
		if seen > 1 || folded {
			return NewError(ErrInvalidJSON, "stream_options.include_usage",
				"stream_options has include_usage more than once (or in another letter case): send it once, in lower case")
		}
		switch string(usage) {
		case "true":
			b.IncludeUsage = true
		case "", "false", "null":
		default:
			return NewError(ErrInvalidParameter, "stream_options.include_usage", "stream_options.include_usage must be true or false")
		}
	case fieldChainID:
		switch {
		case raw[0] == '"':
			b.ChainID = decodeJSONString(raw)
		case raw[0] >= '0' && raw[0] <= '9' && !isFractionOrExponent(raw):
			// A number is accepted as the chain's digits; "-1", "84.53" or "1e3" would become no chain id.
			b.ChainID = string(raw)
		case raw[0] == 'n':
			return nil
		default:
			return NewError(ErrInvalidParameter, "chain_id", "chain_id must be a string such as \"45762\"")
		}
		b.HasChainID = true
	case fieldMaxTokens, fieldMaxCompletionTokens:
		if raw[0] != 'n' && (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || isFractionOrExponent(raw)) {
			name := "max_tokens"
			if kind == fieldMaxCompletionTokens {
				name = "max_completion_tokens"
			}
			return NewError(ErrInvalidParameter, name, name+" must be an integer")
		}
	}
	return nil
}

// isFractionOrExponent reports whether a validated JSON number is written with a fraction or an exponent,
// i.e. is not an integer literal.
func isFractionOrExponent(number []byte) bool {
	for _, c := range number {
		if c == '.' || c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

// HasTools reports whether the request offers tools (or legacy functions), so the answer may call them.
func (b *RequestBody) HasTools() bool { return b.has(fieldTools) }

// NamesStoredState reports whether the request continues state one provider keeps (a Responses request's
// previous_response_id or conversation, not null): only that provider can serve it, so it never fails over.
func (b *RequestBody) NamesStoredState() bool {
	return notNull(b.value(fieldPreviousResponseID)) || notNull(b.value(fieldConversation))
}

func notNull(raw []byte) bool { return len(raw) > 0 && string(raw) != "null" }

// has reports whether the body has a field of this kind.
func (b *RequestBody) has(kind fieldKind) bool { return b.index[kind] != 0 }

// value returns the raw JSON of the field of this kind (nil when absent).
func (b *RequestBody) value(kind fieldKind) []byte {
	if i := b.index[kind]; i != 0 {
		return b.members[i-1].Value(b.src)
	}
	return nil
}

// decodeJSONString decodes a JSON string literal as the provider's parser will (jsonscan.AppendUnquoted, in
// one allocation). A literal that is not well formed, which only unvalidated input (Skim's keys) can hold, is
// its bytes as written: with a quote, a backslash or a control character in them, they name no field the
// filter reads.
func decodeJSONString(raw []byte) string {
	decoded, ok := jsonscan.AppendUnquoted(make([]byte, 0, len(raw)), raw)
	if !ok {
		if len(raw) < 2 {
			return string(raw)
		}
		return string(raw[1 : len(raw)-1])
	}
	return unsafe.String(unsafe.SliceData(decoded), len(decoded)) // decoded is this string's alone
}

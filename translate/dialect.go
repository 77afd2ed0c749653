// Package translate knows the LLM HTTP dialects (OpenAI, Azure OpenAI, Azure AI Model Inference and
// EternalAI) and converts requests, responses, errors and SSE streams between them. It is pure Go: the
// proxy-wasm glue lives in plugin/, JSON scanning in internal/jsonscan and SSE framing in internal/sse.
//
// Each dialect is one file (openai.go, azureopenai.go, azureai.go, eternalai.go) that fills a dialectSpec:
// its data (operations, auth, api-versions, parameter lists) and its hooks (client routes, upstream path and
// headers, body field rules, answer and stream edits, error envelope, provider settings). The code outside
// those files reads the specs and never asks which dialect it holds. docs/adding-a-dialect.md walks through
// adding one.
//
// Functions that refuse a client's request (Detect, Parse, RenderHead, RenderBody) return *Error, because the
// caller answers with it: its Status, and its Body in the client's envelope. Functions whose callers only
// report a failure (configuration checks, upstream answers that are not JSON) return error.
package translate

import (
	"fmt"
	"strings"
)

// Dialect is one of the HTTP API dialects the filter speaks.
type Dialect uint8

const (
	// DialectUnknown is the zero value: a request the filter does not recognise. It is answered in the hub
	// dialect's envelope.
	DialectUnknown Dialect = iota
	OpenAI
	AzureOpenAI
	AzureAI
	EternalAI
	// DialectLimit is one past the last dialect: tables indexed by Dialect have this length. A new dialect is
	// added before it, and to specs below.
	DialectLimit
)

// specs is the dialect list: each dialect's table, filled in its own file.
var specs = [DialectLimit]*dialectSpec{
	OpenAI:      &openAISpec,
	AzureOpenAI: &azureOpenAISpec,
	AzureAI:     &azureAISpec,
	EternalAI:   &eternalAISpec,
}

// hub is the dialect whose envelope answers a client the filter could not place (an unknown path).
const hub = OpenAI

// Dialects lists every known dialect in a stable order (tests and tables iterate it).
var Dialects = func() []Dialect {
	var list []Dialect
	for d := DialectUnknown + 1; d < DialectLimit; d++ {
		list = append(list, d)
	}
	return list
}()

func (d Dialect) spec() *dialectSpec {
	if d < DialectLimit {
		return specs[d]
	}
	return nil
}

// asClient is the spec of a client of this dialect, whose envelope and shapes answer it: the hub's for an
// unknown client.
func (d Dialect) asClient() *dialectSpec {
	if s := d.spec(); s != nil {
		return s
	}
	return specs[hub]
}

func (d Dialect) String() string {
	if s := d.spec(); s != nil {
		return s.name
	}
	return "unknown"
}

// ParseDialect reads a dialect name as written in the plugin configuration.
func ParseDialect(name string) (Dialect, error) {
	names := make([]string, 0, len(Dialects))
	for _, d := range Dialects {
		if d.String() == name {
			return d, nil
		}
		names = append(names, d.String())
	}
	return DialectUnknown, fmt.Errorf("unknown dialect %q: use one of %s", name, strings.Join(names, ", "))
}

// Supports reports whether the dialect has the operation at all.
func (d Dialect) Supports(op Operation) bool {
	s := d.spec()
	return s != nil && s.operations&(1<<op) != 0
}

// DefaultBasePath is the path prefix a provider of this dialect uses when the configuration names none.
func (d Dialect) DefaultBasePath() string { return DefaultBasePathForHost(d, "") }

// DefaultBasePathForHost is the base path for a provider host when the configuration names none; some
// dialects serve their routes under a prefix that depends on the kind of endpoint.
func DefaultBasePathForHost(d Dialect, host string) string {
	if s := d.spec(); s != nil {
		return s.basePath(host)
	}
	return ""
}

// DefaultAPIVersion is the api-version sent when the provider configuration names none ("" for dialects
// that carry no api-version).
func (d Dialect) DefaultAPIVersion() string {
	if s := d.spec(); s != nil {
		return s.defaultAPIVersion
	}
	return ""
}

// DefaultAPIVersionFor is the api-version an operation gets when neither the provider nor the client names
// one: the operation's own when only some api-versions have it, else the dialect's default.
func (d Dialect) DefaultAPIVersionFor(op Operation) string {
	if r := d.spec().versionsOf(op); r != nil && r.fallback != "" {
		return r.fallback
	}
	return d.DefaultAPIVersion()
}

// ProviderHasOperation reports whether a provider of the dialect, with its configured api_version ("" when
// it pins none), can serve the operation (check-config warns when it cannot). Unpinned, the operation gets a
// version that has it (DefaultAPIVersionFor).
func ProviderHasOperation(d Dialect, op Operation, apiVersion string) bool {
	return d.Supports(op) && (apiVersion == "" || d.spec().versionsOf(op).has(apiVersion))
}

// OperationVersionHint says which api-versions of the dialect have an operation that only some have, and
// what to do otherwise ("" when every version has it).
func OperationVersionHint(d Dialect, op Operation) string {
	if r := d.spec().versionsOf(op); r != nil {
		return r.hint
	}
	return ""
}

// ModelHeader is the request header in which a client of this dialect may name its model instead of the
// body ("" when the dialect has none); the plugin reads it into ClientRequest.ModelHeader.
func (d Dialect) ModelHeader() string {
	if s := d.spec(); s != nil {
		return s.modelHeader
	}
	return ""
}

// PolicyHeader is the request header in which a client of this dialect may override its provider's policy
// ("" when the dialect has none); the plugin reads it into ClientRequest.PolicyHeader.
func (d Dialect) PolicyHeader() string {
	if s := d.spec(); s != nil {
		return s.policyHeader
	}
	return ""
}

// DecisiveHeaders are the request headers that decide authentication or routing for some dialect: the
// credential headers and every dialect's model and policy headers. Sent twice, the filter could read one
// value and the provider another.
func DecisiveHeaders() []string {
	list := append([]string(nil), ClientCredentialHeaders...)
	for _, d := range Dialects {
		for _, h := range [...]string{d.spec().modelHeader, d.spec().policyHeader} {
			if h != "" && !inList(list, h) {
				list = append(list, h)
			}
		}
	}
	return list
}

// opVersions says which api-versions of a dialect have an operation that not all of its versions have.
type opVersions struct {
	op Operation
	// versions lists the api-versions that have the operation or, when lacking, those that do not.
	versions []string
	lacking  bool
	// since: dated api-versions from this date on (YYYY-MM-DD, previews included) have the operation too.
	since string
	// fallback is the version the operation gets when neither the provider nor the client names one.
	fallback string
	// hint ends the refusal of a version without the operation: what to use instead.
	hint string
}

// versionsOf is the operation's versionedOps entry, nil when every api-version has the operation.
func (s *dialectSpec) versionsOf(op Operation) *opVersions {
	for i := 0; s != nil && i < len(s.versionedOps); i++ {
		if s.versionedOps[i].op == op {
			return &s.versionedOps[i]
		}
	}
	return nil
}

// has reports whether api-version v has the operation (a nil entry: every version has it).
func (r *opVersions) has(v string) bool {
	return r == nil || inList(r.versions, v) != r.lacking || r.since != "" && IsDatedAPIVersion(v) && v[:10] >= r.since
}

// validVersion reports whether v is an api-version the dialect takes: a dated one, or one of its names.
func (s *dialectSpec) validVersion(v string) bool {
	return IsDatedAPIVersion(v) || inList(s.namedVersions, v)
}

func inList(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Operation is what a request asks for.
type Operation uint8

const (
	OpUnknown Operation = iota
	OpChatCompletions
	OpCompletions
	OpEmbeddings
	OpListModels
	// OpResponses is the Responses API's create (POST .../responses); responses.go says how it is served.
	OpResponses
	// OpResponsesInputTokens and OpResponsesCompact are the Responses API's stateless sub-routes, which name
	// their model in the body like a create: counting a request's input tokens, compacting a conversation.
	// Only providers with the Responses API have them (nothing in chat completions answers them).
	OpResponsesInputTokens
	OpResponsesCompact
	// OpStoredResponse is any route below .../responses/ (retrieve, delete, cancel, input items, token
	// counts): each needs the response stored at one provider, which a request routed by model cannot
	// reach, so it is refused locally.
	OpStoredResponse
	// opCount is one past the last operation: tables indexed by Operation have this length.
	opCount
)

var operationPaths = [...]string{
	OpChatCompletions:      "chat/completions",
	OpCompletions:          "completions",
	OpEmbeddings:           "embeddings",
	OpListModels:           "models",
	OpResponses:            "responses",
	OpResponsesInputTokens: "responses/input_tokens",
	OpResponsesCompact:     "responses/compact",
	OpStoredResponse:       "responses/",
}

// PathSuffix is the operation's path below the dialect's base path, e.g. "chat/completions".
func (op Operation) PathSuffix() string {
	if int(op) < len(operationPaths) {
		return operationPaths[op]
	}
	return ""
}

func (op Operation) String() string {
	if s := op.PathSuffix(); s != "" {
		return s
	}
	return "unknown"
}

// postOperations are the operations a path suffix names (model listing is a route of its own).
var postOperations = [...]Operation{OpChatCompletions, OpCompletions, OpEmbeddings, OpResponses,
	OpResponsesInputTokens, OpResponsesCompact}

// responsesFamily reports whether op is one of the Responses API's (create and its stateless sub-routes).
func (op Operation) responsesFamily() bool {
	return op == OpResponses || op == OpResponsesInputTokens || op == OpResponsesCompact
}

// operationFromPath is the operation a path suffix names.
func operationFromPath(suffix string) Operation {
	for _, op := range postOperations {
		if operationPaths[op] == suffix {
			return op
		}
	}
	if strings.HasPrefix(suffix, operationPaths[OpStoredResponse]) {
		return OpStoredResponse
	}
	return OpUnknown
}

// ops builds an operation bit set.
func ops(list ...Operation) uint16 {
	var set uint16
	for _, op := range list {
		set |= 1 << op
	}
	return set
}

// authStyle says which headers carry a provider credential.
type authStyle uint8

const (
	authBearer       authStyle = iota // Authorization: Bearer <key>
	authAPIKey                        // api-key: <key>
	authAPIKeyBearer                  // both, as the Azure AI JS SDK sends
)

// dialectSpec is everything the filter knows about one dialect: data the generic code reads, and hooks it
// calls. Every hook must be set (TestEveryDialectFillsEveryHook): a dialect without a rule of some kind says
// so with the shared no-op (noHeadEdits, noBodyRules...), so a reader of its file sees all of its behaviour.
type dialectSpec struct {
	name       string
	operations uint16

	// Request line and headers.
	// routes are the request lines clients of this dialect send (detect.go matches them).
	routes []clientRoute
	// basePath is the upstream path prefix for a provider host when the configuration names none.
	basePath func(host string) string
	// upstreamPath appends the upstream :path (query included) of the operation for a resolved api-version.
	upstreamPath func(b []byte, op Operation, req *ClientRequest, t *Target, version string) ([]byte, *Error)
	// headEdits adds the dialect's own upstream request headers.
	headEdits func(head *UpstreamHead, req *ClientRequest, t *Target, version string) *Error
	// ownHeaders are request headers that mean something to this dialect only: removed toward any other.
	ownHeaders []string
	// modelHeader is the request header a client may name its model in ("" for none); it routes the request
	// like a deployment in the path.
	modelHeader string
	// policyHeader is a request header a client may send to override its provider's policy toward a provider
	// of its own dialect ("" for none).
	policyHeader string
	auth         authStyle

	// api-versions.
	usesAPIVersion    bool
	defaultAPIVersion string
	// namedVersions are api-version values besides the dated ones (YYYY-MM-DD[-preview]).
	namedVersions []string
	// versionHint says what a valid api-version looks like, for configuration errors.
	versionHint string
	// versionedOps lists the operations only some api-versions have; a request whose api-version lacks its
	// operation is refused locally rather than sent to a path the service does not have.
	versionedOps []opVersions

	// Request bodies.
	// claimsRequest reports whether a request detected as another dialect is really this one, by its body.
	claimsRequest func(req *ClientRequest, body *RequestBody) bool
	// bodyModel is the model the upstream body names, and whether it names one.
	bodyModel func(req *ClientRequest, t *Target, version string) (string, bool)
	// prepareBody computes what the dialect's body rules share, before the members are planned.
	prepareBody func(c *renderContext) *Error
	// bodyRules are the dialect's rows of the request rules (rules.go): what it does with a kind of field.
	bodyRules []bodyRule
	// bodyAdditions append fields the dialect needs and the body lacks.
	bodyAdditions []bodyAddition
	// ownFields are request fields only this dialect understands; they are removed when the request goes
	// to a provider of another dialect.
	ownFields []string
	// knownParams, when set for an operation, lists the request fields the dialect accepts; anything else
	// is an extra parameter subject to the provider's extra_parameters policy.
	knownParams map[Operation][]string
	// completionsDefaultMaxTokens is the max_tokens a completions request gets when it names none.
	completionsDefaultMaxTokens int
	// streamUsageOption: the dialect takes stream_options.include_usage, so the gateway can ask for usage.
	streamUsageOption bool
	// chatBridge says what the dialect's chat API takes of a Responses request bridged to it
	// (responses.go); only dialects without the Responses API, or with chat_only models, use it.
	chatBridge bridgeOptions
	// encodingFormats are the embeddings encoding_format values its providers take; nil: any, the provider
	// judges.
	encodingFormats []string

	// Answers, from this dialect's providers to clients of other dialects.
	// editsAnswers reports whether its answers may need edits for such a client; false also lets its streams
	// skip event inspection (the zero-copy path), so a dialect with only stream edits returns true.
	editsAnswers func(x *Exchange) bool
	// answerKeys are top-level answer (and stream event) members only this dialect's providers send.
	answerKeys []answerKey
	// dropsEvent reports whether a stream event is the dialect's own and has no place in another's stream.
	dropsEvent func(x *Exchange, ev *eventParts) bool
	// editEvent rewrites the parts of a stream event the dialect's providers send differently.
	editEvent func(s *Stream, ev *eventParts)
	// modelObject ends a model-list entry in the dialect's shape (after "id").
	modelObject func(req *ClientRequest, owner string) string

	// Errors.
	errors errorEnvelope

	// Configuration: top-level, provider and model keys only this dialect takes, with their checks and what
	// they set (settings.go).
	gatewayKeys  []configKey
	providerKeys []configKey
	modelKeys    []configKey

	// rulesByKind is bodyRules over the shared rules, indexed by field kind (built at start).
	rulesByKind [fieldKindCount]func(c *renderContext, i int, p *memberPlan) *Error
}

// always is a basePath hook for a dialect whose default prefix does not depend on the host.
func always(prefix string) func(string) string { return func(string) string { return prefix } }

// fieldInfo is everything the translator knows about one top-level request field name, gathered from the
// dialect tables at start so that rendering looks each body key up once.
type fieldInfo struct {
	kind  fieldKind
	owner Dialect // the one dialect that understands the field (its ownFields), or unknown
	// knownOps[d] has bit op set when dialect d lists the field among its known parameters for op.
	knownOps [DialectLimit]uint16
}

var fieldTable = map[string]fieldInfo{}

// headersToRemove lists, per target dialect, the ownHeaders of the other dialects.
var headersToRemove [DialectLimit][]string

func init() {
	for name, kind := range fieldKinds {
		fieldTable[name] = fieldInfo{kind: kind}
	}
	for _, d := range Dialects {
		s := d.spec()
		for _, f := range s.ownFields {
			info := fieldTable[f]
			info.owner = d
			fieldTable[f] = info
		}
		for op, names := range s.knownParams {
			for _, f := range names {
				info := fieldTable[f]
				info.knownOps[d] |= 1 << op
				fieldTable[f] = info
			}
		}
		for _, other := range Dialects {
			if other != d {
				headersToRemove[d] = append(headersToRemove[d], other.spec().ownHeaders...)
			}
		}
		s.rulesByKind = rulesByKind(s)
	}
	fieldsByHash = newFieldIndex(fieldTable)
	buildRoutes()
}

func stringSet(names []string) map[string]struct{} {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set
}

// ValidateProviderAPIVersion checks a configured api_version for a provider's dialect.
func ValidateProviderAPIVersion(d Dialect, v string) error {
	s := d.spec()
	if !s.usesAPIVersion {
		return fmt.Errorf("%s providers take no api-version; remove api_version", d)
	}
	if s.validVersion(v) {
		return nil
	}
	return fmt.Errorf("%q must look like %s", v, s.versionHint)
}

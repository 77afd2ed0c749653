// Package translate knows the four LLM HTTP dialects (OpenAI, Azure OpenAI, Azure AI Model Inference and
// EternalAI) and converts requests, responses, errors and SSE streams between them. It is pure Go: the
// proxy-wasm glue lives in plugin/.
package translate

import (
	"fmt"
	"strings"
)

// Dialect is one of the four HTTP API dialects the filter speaks.
type Dialect uint8

const (
	// DialectUnknown is the zero value: a request the filter does not recognise.
	DialectUnknown Dialect = iota
	OpenAI
	AzureOpenAI
	AzureAI
	EternalAI
	// DialectLimit is one past the last dialect: tables indexed by Dialect have this length. A new dialect is
	// added before it.
	DialectLimit
)

// Dialects lists every known dialect in a stable order (tests and tables iterate it).
var Dialects = []Dialect{OpenAI, AzureOpenAI, AzureAI, EternalAI}

func (d Dialect) String() string {
	if s := d.spec(); s != nil {
		return s.name
	}
	return "unknown"
}

// ParseDialect reads a dialect name as written in the plugin configuration.
func ParseDialect(name string) (Dialect, error) {
	for _, d := range Dialects {
		if d.String() == name {
			return d, nil
		}
	}
	return DialectUnknown, fmt.Errorf("unknown dialect %q: use one of openai, azure-openai, azure-ai, eternalai", name)
}

// OpenAIFamily reports whether the dialect uses the OpenAI error envelope
// {"error":{"message","type","param","code"}}; only Azure AI Model Inference does not.
func (d Dialect) OpenAIFamily() bool { return d != AzureAI && d != DialectUnknown }

// Supports reports whether the dialect has the operation at all.
func (d Dialect) Supports(op Operation) bool {
	s := d.spec()
	return s != nil && s.operations&(1<<op) != 0
}

// DefaultBasePath is the path prefix a provider of this dialect uses when the configuration names none.
func (d Dialect) DefaultBasePath() string {
	if s := d.spec(); s != nil {
		return s.defaultBasePath
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

// opVersions says which api-versions of a dialect have an operation that not all of its versions have.
type opVersions struct {
	op Operation
	// versions lists the api-versions that have the operation or, when lacking, those that do not.
	versions []string
	lacking  bool
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
func (r *opVersions) has(v string) bool { return r == nil || inList(r.versions, v) != r.lacking }

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
)

var operationPaths = [...]string{
	OpChatCompletions: "chat/completions",
	OpCompletions:     "completions",
	OpEmbeddings:      "embeddings",
	OpListModels:      "models",
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

func operationFromPath(suffix string) Operation {
	for op := OpChatCompletions; op <= OpEmbeddings; op++ {
		if operationPaths[op] == suffix {
			return op
		}
	}
	return OpUnknown
}

// ops builds an operation bit set.
func ops(list ...Operation) uint8 {
	var set uint8
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

// dialectSpec is the data that describes one dialect. Each dialect file fills one in; the translation code
// reads these tables instead of branching on the dialect.
type dialectSpec struct {
	name              string
	operations        uint8
	defaultBasePath   string
	defaultAPIVersion string
	auth              authStyle
	// completionsDefaultMaxTokens is the max_tokens a completions request gets when it names none.
	completionsDefaultMaxTokens int
	// ownFields are request fields only this dialect understands; they are removed when the request goes
	// to a provider of another dialect.
	ownFields []string
	// knownParams, when set for an operation, lists the request fields the dialect accepts; anything else
	// is an extra parameter subject to the provider's extra_parameters policy (Azure AI only).
	knownParams map[Operation][]string
	// usesAPIVersion: requests carry ?api-version=.
	usesAPIVersion bool
	// versionedOps lists the operations only some api-versions have; a request whose api-version lacks its
	// operation is refused locally rather than sent to a path the service does not have.
	versionedOps []opVersions
	// wantsOrgHeaders: OpenAI-Organization and OpenAI-Project mean something to this dialect.
	wantsOrgHeaders bool
	// stopMustBeArray / inputMustBeArray: a string value is wrapped as a one-element array.
	stopMustBeArray  bool
	inputMustBeArray bool
	// maxTokensOnly: the dialect knows max_tokens but not max_completion_tokens.
	maxTokensOnly bool
	// chainID: the request carries chain_id (a string).
	chainID bool
	// keepsAzureAnnotations: content-filter annotations are part of this dialect's answers.
	keepsAzureAnnotations bool
	// streamToolCallsLackIndex: streamed tool-call deltas from this dialect's providers carry no "index".
	streamToolCallsLackIndex bool
}

// fieldInfo is everything the translator knows about one top-level request field name, gathered from the
// dialect tables at start so that rendering looks each body key up once.
type fieldInfo struct {
	kind  fieldKind
	owner Dialect // the one dialect that understands the field (its ownFields), or unknown
	// knownOps[d] has bit op set when dialect d lists the field among its known parameters for op.
	knownOps [DialectLimit]uint8
}

var fieldTable = map[string]fieldInfo{}

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
	}
}

func stringSet(names []string) map[string]struct{} {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set
}

func (d Dialect) spec() *dialectSpec {
	switch d {
	case OpenAI:
		return &openAISpec
	case AzureOpenAI:
		return &azureOpenAISpec
	case AzureAI:
		return &azureAISpec
	case EternalAI:
		return &eternalAISpec
	}
	return nil
}

// DefaultBasePathForHost is the base path for a provider host when the configuration names none: Azure AI
// services endpoints (*.services.ai.azure.com) serve the inference routes under /models.
func DefaultBasePathForHost(d Dialect, host string) string {
	if d == AzureAI {
		name, _, _ := strings.Cut(host, ":")
		if strings.HasSuffix(strings.ToLower(name), ".services.ai.azure.com") {
			return "/models"
		}
	}
	return d.DefaultBasePath()
}

// ValidateProviderAPIVersion checks a configured api_version for a provider's dialect.
func ValidateProviderAPIVersion(d Dialect, v string) error {
	if !d.spec().usesAPIVersion {
		return fmt.Errorf("%s providers take no api-version; remove api_version", d)
	}
	if d == AzureOpenAI && IsAzureOpenAIV1(v) || IsDatedAPIVersion(v) {
		return nil
	}
	if d == AzureOpenAI {
		return fmt.Errorf("%q must look like 2024-10-21 or 2025-04-01-preview, or be v1, latest or preview for the v1 surface", v)
	}
	return fmt.Errorf("%q must look like 2024-05-01-preview or 2025-04-01", v)
}

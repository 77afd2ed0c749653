package translate

import (
	"strconv"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// A request body is rendered in two steps: plan, then write. Planning gives each top-level member one
// memberPlan, decided by the row of the target dialect's rules for the member's fieldKind (or by the
// rules every target shares, below); writing copies the members in one pass, applying the plans, then
// appends the additions. Each rule is a row someone can read and test alone (rules_test.go).

// memberEdit is what rendering does with one top-level member.
type memberEdit uint8

const (
	editKeep        memberEdit = iota
	editDrop                   // left out
	editString                 // the value replaced by the JSON string plan.str
	editRaw                    // the value replaced by the JSON plan.raw
	editWrapInArray            // "x" -> ["x"]
	editRename                 // the key replaced by plan.str, the value kept
)

// memberPlan is the plan for one member.
type memberPlan struct {
	edit memberEdit
	// settled: a rule decided the member, so the fallback rules (ownership, extra parameters) do not apply
	// to it even when it is kept.
	settled bool
	str     string
	raw     []byte
}

// packedPlan is a memberPlan as kept for writing: its edit, and its value's position in body.planValues, +1
// (0: none).
type packedPlan struct {
	edit  memberEdit
	value uint16
}

// planValue is a rewritten value of a packedPlan.
type planValue struct {
	str string
	raw []byte
}

// planValue is p's rewritten value (zero when it has none).
func (b *RequestBody) planValue(p packedPlan) planValue {
	if p.value == 0 {
		return planValue{}
	}
	return b.planValues[p.value-1]
}

// A bodyRule is one row of a dialect's request rules: what it does, as a target, with a member of one kind.
// It fills p (editKeep and unsettled by default) or refuses the request.
type bodyRule struct {
	field fieldKind
	plan  func(c *renderContext, i int, p *memberPlan) *Error
}

// A bodyAddition appends a field the body lacks: ok false when it adds nothing.
type bodyAddition func(c *renderContext) (key string, value []byte, ok bool)

// renderContext is what the rules of one rendering share, set before the members are planned; a target
// dialect's prepareBody may adjust policy and set chainID for its own rows.
type renderContext struct {
	req            *ClientRequest
	body           *RequestBody
	t              *Target
	target, source *dialectSpec
	version        string // the upstream api-version ("" when the target has none)
	model          string // the upstream body's model, when wantModel
	wantModel      bool
	forceUsage     bool // stream_options.include_usage is set for the gateway's own accounting
	// wroteMaxTokens: a member becomes max_tokens (a rename), so the body has it although it did not.
	wroteMaxTokens bool

	// strictParams: the target lists its known parameters for the operation (knownParams); the others
	// follow policy, the provider's extra_parameters unless the target's prepareBody overrides it.
	strictParams bool
	policy       extraParametersPolicy
	extras       paramList
	// chainID is the chain an EternalAI target receives.
	chainID string
	// scratch is the plan of the member being planned (plan).
	scratch memberPlan
}

// sharedRules apply toward every target, before the target's own rows (which may replace them by kind).
var sharedRules = []bodyRule{
	{fieldModel, planModel},
	{fieldStreamOptions, planStreamOptions},
	{fieldPreviousResponseID, planPreviousResponseID},
	{fieldConversation, planConversation},
	{fieldRequestID, planRequestID},
	{fieldClientMetadata, planClientMetadata},
}

// planModel writes the upstream's model (a deployment, a mapped name) or drops it where the target names
// the model elsewhere; an escaped key is rewritten in plain form.
func planModel(c *renderContext, i int, p *memberPlan) *Error {
	p.settled = true
	switch m := c.body.members[i]; {
	case !c.wantModel:
		p.edit = editDrop
	case c.body.Model != c.model || m.KeyEscaped:
		p.edit, p.str = editString, c.model
	}
	return nil
}

// planStreamOptions sets include_usage when the gateway needs usage the client did not ask for.
func planStreamOptions(c *renderContext, i int, p *memberPlan) *Error {
	if c.forceUsage {
		p.edit, p.settled, p.raw = editRaw, true, withIncludeUsage(c.body.members[i].Value(c.body.src))
	}
	return nil
}

// planFallback applies to every member no rule settled: a field another dialect owns is dropped, and a
// target with a strict parameter list judges the rest by its extra-parameters policy.
func planFallback(c *renderContext, i int, info *fieldInfo, p *memberPlan) {
	switch {
	case info.owner != DialectUnknown && info.owner != c.t.Dialect:
		p.edit = editDrop
	case c.strictParams && info.knownOps[c.t.Dialect]&(1<<c.req.Op) == 0:
		switch c.policy {
		case extraDrop:
			p.edit = editDrop
			c.extras.add(c.body, i)
		case extraError:
			c.extras.add(c.body, i)
		}
	}
}

// sharedAdditionsFirst come before the target's own additions, sharedAdditionsLast after them.
var (
	sharedAdditionsFirst = []bodyAddition{addModel, addStreamOptions}
	sharedAdditionsLast  = []bodyAddition{addCompletionsMaxTokens}
)

func addModel(c *renderContext) (string, []byte, bool) {
	if !c.wantModel || c.body.has(fieldModel) || c.model == "" {
		return "", nil, false
	}
	return "model", jsonscan.AppendString(nil, c.model), true
}

func addStreamOptions(c *renderContext) (string, []byte, bool) {
	if !c.forceUsage || c.body.has(fieldStreamOptions) {
		return "", nil, false
	}
	return "stream_options", includeUsageOnly, true
}

var includeUsageOnly = []byte(`{"include_usage":true}`)

// addCompletionsMaxTokens keeps the client's dialect's documented default max_tokens for completions: a
// silent jump from 16 to 256 tokens costs money.
func addCompletionsMaxTokens(c *renderContext) (string, []byte, bool) {
	if c.req.Op != OpCompletions || c.body.has(fieldMaxTokens) || c.wroteMaxTokens ||
		c.source.completionsDefaultMaxTokens == c.target.completionsDefaultMaxTokens {
		return "", nil, false
	}
	return "max_tokens", strconv.AppendInt(nil, int64(c.source.completionsDefaultMaxTokens), 10), true
}

// Rows a dialect may list among its bodyRules.

// wrapStringInArray is the row of a target that takes only an array where others also take a string: a
// string is wrapped, an array or null kept, and any other type refused here, since the filter is the one
// rewriting the field.
func wrapStringInArray(c *renderContext, i int, p *memberPlan) *Error {
	switch c.body.members[i].Value(c.body.src)[0] {
	case '"':
		p.edit = editWrapInArray
	case '[', 'n':
	default:
		name := c.body.memberName(i)
		return NewError(ErrInvalidParameter, name, name+" must be a string or an array")
	}
	return nil
}

// wrapEmbeddingsInput is wrapStringInArray for embeddings input only (completions input is no such field),
// for a target that embeds text only: OpenAI also takes token ids (arrays of integers, which LangChain's
// OpenAIEmbeddings sends by default), and such a provider would answer them with an error that names
// nothing the client can change, so they are refused here with the fix.
func wrapEmbeddingsInput(c *renderContext, i int, p *memberPlan) *Error {
	if c.req.Op != OpEmbeddings {
		return nil
	}
	if e := wrapStringInArray(c, i, p); e != nil {
		return e
	}
	input := c.body.members[i].Value(c.body.src)
	for element, pos := nextElement(input, 0); element != nil; element, pos = nextElement(input, pos) {
		if element[0] != '"' {
			return NewError(ErrInvalidParameter, "input", "the provider of this model embeds text only: input must be a "+
				"string or an array of strings, not token ids (LangChain: OpenAIEmbeddings(check_embedding_ctx_length=False))")
		}
	}
	return nil
}

// renameToMaxTokens is the row of a target that knows max_tokens but not max_completion_tokens: the newer
// name is renamed unless the body also has max_tokens (then it is an extra parameter like any other).
func renameToMaxTokens(c *renderContext, i int, p *memberPlan) *Error {
	if !c.body.has(fieldMaxTokens) {
		p.edit, p.settled, p.str = editRename, true, "max_tokens"
		c.wroteMaxTokens = true
	}
	return nil
}

// rulesByKind indexes a dialect's rows (its own over the shared ones) by field kind, once at start.
func rulesByKind(s *dialectSpec) (table [fieldKindCount]func(*renderContext, int, *memberPlan) *Error) {
	for _, r := range sharedRules {
		table[r.field] = r.plan
	}
	for _, r := range s.bodyRules {
		table[r.field] = r.plan
	}
	return table
}

// noBodyRules is the bodyRules of a dialect that takes every field as clients send it.
var noBodyRules []bodyRule

// noBodyAdditions is the bodyAdditions of a dialect that needs no field the client may leave out.
var noBodyAdditions []bodyAddition

// noPrepare is the prepareBody of a dialect whose rows share nothing.
func noPrepare(*renderContext) *Error { return nil }

// modelInBody is the bodyModel of a dialect whose upstream reads the model from the body.
func modelInBody(_ *ClientRequest, t *Target, _ string) (string, bool) { return t.Model, true }

// claimsNothing is the claimsRequest of a dialect that is only ever detected from the request line.
func claimsNothing(*ClientRequest, *RequestBody) bool { return false }

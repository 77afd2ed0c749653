package translate

// Response binding keeps what a consumer stored at a provider with that consumer. With consumers configured,
// every provider call uses the gateway's own provider key, so the provider sees one tenant: any consumer that
// sends a response's id as previous_response_id (or to .../responses/compact or .../input_tokens) would
// continue, and so read, a response another consumer created. So the ids the gateway hands out are bound to
// the consumer they were handed to, and the provider's own ids never reach a client:
//
//   - On the way out (a native Response, JSON or stream), the Response's id, and its previous_response_id,
//     become "resp_" + hex(tag || ciphertext), a deterministic authenticated encryption of the provider's id
//     under the consumer (SIV style: the tag is also the nonce):
//     tag        = first 128 bits of HMAC-SHA256(k_mac, len(consumer name) || consumer name ||
//                  len(provider name) || provider name || provider id)
//     keystream  = HMAC-SHA256(k_enc, tag || 0) || HMAC-SHA256(k_enc, tag || 1) || ... (4-byte counters)
//     ciphertext = provider id XOR keystream
//     The same id for the same consumer is always the same bound id, on every replica. A client never sees a
//     provider's id, so it cannot ask a provider to make a response under another consumer's id (vLLM names
//     a response after the client's request_id): the id it would need is hidden in the other's bound id.
//   - On the way in, previous_response_id must decrypt, under the consumer sending it, to an id whose tag it
//     carries (compared in constant time); the provider gets that id. Anything else (another consumer's id,
//     a provider's raw id, an id bound under another key) is refused (400 previous_response_not_found)
//     before the provider is called, so nobody learns whether the id exists.
//   - What cannot be bound is refused toward a provider while consumers are configured: conversation (its
//     ids are made outside the gateway's routes), request_id (it names the response), and input items that
//     carry an id without the content that spares the provider its store (item_reference, an item that is
//     only an id, a reasoning item without its encrypted_content, a message without content, ...), since
//     item ids appear in most events of a stream and are not rewritten.
//   - Provider ids are bound up to maxBindableID bytes (real ones are under 100); a longer one reaches the
//     client as an empty id, which continues nothing (no raw id is ever handed out).
//
// The binding key is SHA-256 of a fixed label and a secret every Envoy replica has without new setup: the
// provider's own key, or an operator's key named by response_binding_key_env (so that rotating the provider
// key does not end every conversation); k_mac and k_enc are HMAC-SHA256(binding key, "tag") and
// HMAC-SHA256(binding key, "keystream"). Changing it makes earlier ids unusable: their clients are told to
// start again without previous_response_id.

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/opcount"
	"github.com/aidialect/aidialect/internal/sha256"
)

const (
	// boundIDPrefix starts every bound id, as it starts OpenAI's.
	boundIDPrefix = "resp_"
	// bindingTagBytes is the tag's length: 128 bits of the HMAC.
	bindingTagBytes = 16
	// maxBindableID is the longest provider id bound (and so the longest a bound id decrypts to): the longest
	// bound id is len(boundIDPrefix) + 2*(bindingTagBytes+maxBindableID) characters.
	maxBindableID = 1024
	// keystreamBlock is the bytes of keystream one HMAC gives.
	keystreamBlock = 32
)

// bindingKeyLabel separates the binding key from any other use of the secret it is derived from.
const bindingKeyLabel = "aidialect response binding\x00"

// BindingKey is the key response ids are bound with (see the top of this file).
type BindingKey struct{ mac, enc *sha256.HMAC }

// NewBindingKey derives the binding key from a secret every replica shares.
func NewBindingKey(secret string) *BindingKey {
	key := sha256.Sum256(append([]byte(bindingKeyLabel), secret...))
	root := sha256.NewHMAC(key[:])
	macKey, encKey := root.Sum([]byte("tag")), root.Sum([]byte("keystream"))
	return &BindingKey{mac: sha256.NewHMAC(macKey[:]), enc: sha256.NewHMAC(encKey[:])}
}

// ResponseBinding binds the response ids of one request to its consumer. The zero value binds nothing: the
// gateway has no consumers (one tenant), and ids pass as they are.
type ResponseBinding struct {
	Key      *BindingKey
	Consumer string
	// Provider names the provider that minted the ids: an id bound for one provider does not verify for
	// another, even when both share a binding key (response_binding_key_env), so a consumer's id is only ever
	// sent back to the provider that issued it.
	Provider string
}

func (b *ResponseBinding) active() bool { return b.Key != nil }

// tagCache remembers the last id bound, for a stream: its lifecycle events name the same response.
type tagCache struct {
	id, bound []byte
	valid     bool
}

// footprint is the bytes the cache keeps.
func (c *tagCache) footprint() int { return cap(c.id) + cap(c.bound) }

// appendBoundID appends the bound id (without quotes) for the provider's id, from the cache when it holds
// id (nil: no cache).
func (b *ResponseBinding) appendBoundID(w, id []byte, cache *tagCache) []byte {
	if cache == nil || len(id) > maxBindableID {
		return b.appendBound(w, id) // (an id too long to bind is not cached: the cache stays small)
	}
	if !cache.valid || !bytes.Equal(cache.id, id) {
		opcount.Add(opcount.BytesCopied, len(id))
		cache.id, cache.bound, cache.valid = append(cache.id[:0], id...), b.appendBound(cache.bound[:0], id), true
	}
	opcount.Add(opcount.BytesCompared, len(id)) // the comparison with the cached id
	opcount.Add(opcount.BytesCopied, len(cache.bound))
	return append(w, cache.bound...)
}

// tag is the tag of the provider's id for this consumer and provider.
func (b *ResponseBinding) tag(id []byte) (tag [bindingTagBytes]byte) {
	// Each name is prefixed by its length, so that no consumer and provider pair reads as another.
	var consumerLength, providerLength [4]byte
	binary.BigEndian.PutUint32(consumerLength[:], uint32(len(b.Consumer)))
	binary.BigEndian.PutUint32(providerLength[:], uint32(len(b.Provider)))
	sum := b.Key.mac.Sum(consumerLength[:], unsafe.Slice(unsafe.StringData(b.Consumer), len(b.Consumer)),
		providerLength[:], unsafe.Slice(unsafe.StringData(b.Provider), len(b.Provider)), id)
	copy(tag[:], sum[:])
	return tag
}

// keystream is the keystream block n for tag.
func (b *ResponseBinding) keystream(tag *[bindingTagBytes]byte, n int) [keystreamBlock]byte {
	var counter [4]byte
	binary.BigEndian.PutUint32(counter[:], uint32(n))
	return b.Key.enc.Sum(tag[:], counter[:])
}

const hexDigits = "0123456789abcdef"

// appendBound appends the bound id for the provider's id; an id over maxBindableID bytes appends nothing
// (an empty id: see the top of this file).
func (b *ResponseBinding) appendBound(w, id []byte) []byte {
	if len(id) > maxBindableID {
		return w
	}
	opcount.Add(opcount.StepsTaken, len(id)) // MACed, then encrypted
	tag := b.tag(id)
	w = append(w, boundIDPrefix...)
	for _, c := range tag {
		w = append(w, hexDigits[c>>4], hexDigits[c&15])
	}
	for n := 0; n*keystreamBlock < len(id); n++ {
		ks := b.keystream(&tag, n)
		for i, c := range id[n*keystreamBlock : min((n+1)*keystreamBlock, len(id))] {
			c ^= ks[i]
			w = append(w, hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return w
}

// bind is the id handed to the consumer for the provider's id.
func (b *ResponseBinding) bind(id string) string { return string(b.appendBound(nil, []byte(id))) }

// unbind is the provider's id in an id the gateway handed out, and whether it was handed to this consumer.
func (b *ResponseBinding) unbind(bound string) (string, bool) {
	hexed, ok := bytes.CutPrefix(unsafe.Slice(unsafe.StringData(bound), len(bound)), []byte(boundIDPrefix))
	if !ok || len(hexed)%2 != 0 || len(hexed) < 2*bindingTagBytes || len(hexed) > 2*(bindingTagBytes+maxBindableID) {
		return "", false
	}
	var buf [bindingTagBytes + maxBindableID]byte
	for i := range len(hexed) / 2 {
		hi, lo := hexValue(hexed[2*i]), hexValue(hexed[2*i+1])
		if hi > 15 || lo > 15 {
			return "", false
		}
		buf[i] = hi<<4 | lo
	}
	var tag [bindingTagBytes]byte
	copy(tag[:], buf[:])
	id := buf[bindingTagBytes : len(hexed)/2]
	for n := 0; n*keystreamBlock < len(id); n++ {
		ks := b.keystream(&tag, n)
		for i := range id[n*keystreamBlock : min((n+1)*keystreamBlock, len(id))] {
			id[n*keystreamBlock+i] ^= ks[i]
		}
	}
	want := b.tag(id)
	if subtle.ConstantTimeCompare(want[:], tag[:]) != 1 {
		return "", false
	}
	return string(id), true
}

// hexValue is the value of a lower-case hex digit, or 16 (the bound ids are written in lower case only, so
// each has one spelling).
func hexValue(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return 16
}

// binds reports whether the request's stored-state references are bound: a Responses request toward a
// provider that has the API, with consumers configured.
func (c *renderContext) binds() bool { return c.t.Binding.active() && c.req.Op.responsesFamily() }

// previousResponseNotIssued is the refusal of a previous_response_id that is not this consumer's.
var previousResponseNotIssued = "previous_response_id was not issued to your key by this gateway: " +
	"continue only responses this gateway returned to your key (ids of responses made with another key, made " +
	"at the provider directly, or issued before the gateway's binding key changed are refused); to start " +
	"again, leave previous_response_id out and send the whole conversation in input"

// planPreviousResponseID checks that previous_response_id was handed to this consumer and gives the provider
// its own id.
func planPreviousResponseID(c *renderContext, i int, p *memberPlan) *Error {
	if !c.binds() {
		return nil
	}
	raw := c.body.members[i].Value(c.body.src)
	switch {
	case isJSONNull(raw):
		return nil
	case !isJSONString(raw):
		return NewError(ErrInvalidParameter, "previous_response_id", "previous_response_id must be a string")
	}
	id, ok := c.t.Binding.unbind(decodeJSONString(raw))
	if !ok {
		return NewError(ErrPreviousResponseNotFound, "previous_response_id", previousResponseNotIssued)
	}
	p.edit, p.settled, p.str = editString, true, id
	return nil
}

// storedStateFix is how a consumer continues a conversation without state the gateway cannot bind.
const storedStateFix = "continue a response with the previous_response_id this gateway returned to you, or send " +
	"store: false and the whole conversation in input (AI SDK: providerOptions.openai.store = false; LangChain: use_previous_response_id=False)"

// planConversation refuses a conversation: its id cannot be bound to a consumer.
func planConversation(c *renderContext, i int, _ *memberPlan) *Error {
	if !c.binds() || isJSONNull(c.body.members[i].Value(c.body.src)) {
		return nil
	}
	return NewError(ErrUnsupportedParameter, "conversation", "conversation is not available through this "+
		"gateway's consumer keys: a conversation is stored at the provider under the gateway's own key, where "+
		"every consumer could reach it: "+storedStateFix)
}

// planRequestID refuses a request_id: a provider that takes it (vLLM) names the response after it, so a
// consumer could have a response made under an id the gateway bound for another. (Raw ids never reach
// clients, so such an id cannot be learnt: this refusal is defence in depth.)
func planRequestID(c *renderContext, i int, _ *memberPlan) *Error {
	if !c.binds() || isJSONNull(c.body.members[i].Value(c.body.src)) {
		return nil
	}
	return NewError(ErrUnsupportedParameter, "request_id", "request_id is not available through this gateway's "+
		"consumer keys: it chooses the id of the response the provider stores, and response ids are the "+
		"gateway's to choose: leave request_id out (the response's id comes back in the answer)")
}

// checkBoundInput refuses input items that carry an id without the content that spares the provider its
// store (storedItemContent): nothing binds item ids to a consumer. Items are read one level deep, each member
// once; a key that is "type", "id", "role" or "encrypted_content" in another letter case, or one of them
// twice, is refused too, for a provider could read it either way.
func checkBoundInput(input []byte) *Error {
	if len(input) == 0 || input[0] != '[' {
		return nil // a string, or null: no items
	}
	for i, n := jsonscan.SkipSpace(input, 1), 0; i < len(input) && input[i] != ']'; n++ {
		end := jsonscan.SkimValue(input, i)
		if end <= i {
			return nil // Parse validated the body: unreachable
		}
		if e := checkBoundItem(input[i:end], n); e != nil {
			return e
		}
		if i = jsonscan.SkipSpace(input, end); i < len(input) && input[i] == ',' {
			i = jsonscan.SkipSpace(input, i+1)
		}
	}
	return nil
}

// itemMember is a member of an input item that says whether the item only names a stored one: its type,
// id and role, and the members that carry an item's content (storedItemContent).
type itemMember uint8

const (
	itemOther itemMember = iota
	itemType
	itemID
	itemRole
	itemEncryptedContent
	// The members below are read in lower case only: a provider that read another spelling of one would
	// find the item's content there, not in its store.
	itemContent
	itemCallID
	itemName
	itemArguments
	itemOutput
	itemInput
	itemAction
	itemTools
	itemMemberCount
)

// itemFolded is the first member not also refused in another letter case.
const itemFolded = itemContent

var itemMemberNames = [...]string{itemType: "type", itemID: "id", itemRole: "role", itemEncryptedContent: "encrypted_content",
	itemContent: "content", itemCallID: "call_id", itemName: "name", itemArguments: "arguments", itemOutput: "output",
	itemInput: "input", itemAction: "action", itemTools: "tools"}

// storedItemContent is, for each item type a client may send with its id, the members that carry the item
// itself: with them the provider has no need of its store, without them it would read the item from its
// store by id, under the gateway's own key. An item of another type that carries an id is refused.
var storedItemContent = [...]struct {
	typ  string
	need []itemMember
}{
	{"message", []itemMember{itemContent}},
	{"reasoning", []itemMember{itemEncryptedContent}},
	{"function_call", []itemMember{itemCallID, itemName, itemArguments}},
	{"function_call_output", []itemMember{itemCallID, itemOutput}},
	{"custom_tool_call", []itemMember{itemCallID, itemName, itemInput}},
	{"custom_tool_call_output", []itemMember{itemCallID, itemOutput}},
	{"computer_call", []itemMember{itemCallID, itemAction}},
	{"computer_call_output", []itemMember{itemCallID, itemOutput}},
	{"local_shell_call", []itemMember{itemCallID, itemAction}},
	{"local_shell_call_output", []itemMember{itemOutput}},
	{"web_search_call", []itemMember{itemAction}},
	// The Codex CLI's client-run tool search (docs/agent-clients.md): the call's arguments, the tools it loaded.
	{"tool_search_call", []itemMember{itemArguments}},
	{"tool_search_output", []itemMember{itemTools}},
	// The tools the Codex CLI's code-mode models declare in the input (its at_<uuid> id names nothing stored).
	{"additional_tools", []itemMember{itemTools}},
}

// checkBoundItem is checkBoundInput for the item at index n.
func checkBoundItem(item []byte, n int) *Error {
	if item[0] != '{' {
		return nil // not an item the provider takes: its own error
	}
	var values [itemMemberCount][]byte
	at := elementPath("input", n)
	for i := jsonscan.SkipSpace(item, 1); i < len(item) && item[i] == '"'; {
		keyEnd, escaped := jsonscan.StringEnd(item, i)
		if keyEnd < 0 {
			return nil
		}
		key := item[i+1 : keyEnd-1]
		if escaped {
			key = []byte(decodeJSONString(item[i:keyEnd]))
		}
		valStart := jsonscan.SkipSpace(item, jsonscan.SkipSpace(item, keyEnd)+1) // past the ':'
		valEnd := jsonscan.SkimValue(item, valStart)
		if valEnd <= valStart {
			return nil
		}
		if k, folded := itemMemberOf(key); k != itemOther && (!folded || k < itemFolded) {
			if folded || values[k] != nil {
				return at.refusal(ErrInvalidJSON, itemMemberNames[k], " has "+itemMemberNames[k]+" more than once, "+
					"or in another letter case: send it once, in lower case")
			}
			values[k] = item[valStart:valEnd]
		}
		if i = jsonscan.SkipSpace(item, valEnd); i < len(item) && item[i] == ',' {
			i = jsonscan.SkipSpace(item, i+1)
		}
	}
	typ, id := nullAsAbsent(values[itemType]), nullAsAbsent(values[itemID])
	if id == nil {
		return nil // not a stored item: the provider takes it as it is
	}
	if typ == nil && nullAsAbsent(values[itemRole]) != nil {
		typ = []byte(`"message"`) // a message written without its type
	}
	if typ == nil || jsonStringIs(typ, "item_reference") {
		return at.refusal(ErrUnsupportedParameter, "", " is an item_reference, a pointer to an item stored at the "+
			"provider under the gateway's own key, which this gateway cannot tie to your key: "+storedStateFix)
	}
	for _, kind := range storedItemContent {
		if !jsonStringIs(typ, kind.typ) {
			continue
		}
		for _, k := range kind.need {
			if v := nullAsAbsent(values[k]); v != nil && (k != itemEncryptedContent || isJSONString(v) && len(v) > 2) &&
				(k != itemContent || isJSONString(v) || v[0] == '[') {
				continue
			}
			if k == itemEncryptedContent {
				return at.refusal(ErrUnsupportedParameter, "encrypted_content", " is a reasoning item without "+
					"its encrypted_content (a non-empty string), which the provider would read from its store by id, "+
					"under the gateway's own key: ask for include: [\"reasoning.encrypted_content\"] and send the item "+
					"as you received it, or "+storedStateFix)
			}
			return at.refusal(ErrUnsupportedParameter, itemMemberNames[k], " is a "+kind.typ+" item with an id but "+
				"without its "+itemMemberNames[k]+", which the provider would read from its store by id, under the "+
				"gateway's own key: send the item with its "+itemMemberNames[k]+" as you received it, or "+storedStateFix)
		}
		return nil
	}
	return at.refusal(ErrUnsupportedParameter, "id", " is an item of a type this gateway cannot tell is whole "+
		"with an id, which the provider may read from its store by id, under the gateway's own key: send it "+
		"without its id, or "+storedStateFix)
}

// itemMemberOf is the itemMember a key names, and whether it names it in another letter case.
func itemMemberOf(key []byte) (itemMember, bool) {
	if len(key) > len("encrypted_content") || len(key) < 2 {
		return itemOther, false
	}
	for k := itemType; k < itemMemberCount; k++ {
		name := itemMemberNames[k]
		if len(key) != len(name) {
			continue
		}
		if string(key) == name {
			return k, false
		}
		if asciiEqualFold(key, name) {
			return k, true
		}
	}
	return itemOther, false
}

// asciiEqualFold reports whether b is s in another ASCII letter case. (A key's other Unicode foldings, such
// as the Kelvin sign for k, are not letters of these names.)
func asciiEqualFold(b []byte, s string) bool {
	for i := range len(b) {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func nullAsAbsent(v []byte) []byte {
	if v == nil || isJSONNull(v) {
		return nil
	}
	return v
}

// bindsAnswer reports whether the answer's response ids are bound for its consumer: a native Response (a
// bridged one is made by the gateway and stored nowhere) or a compacted one.
func (x *Exchange) bindsAnswer() bool {
	return x.Binding.active() && (x.Op == OpResponses || x.Op == OpResponsesCompact)
}

// appendBoundObject appends obj, a JSON object, with the string values of its id and previous_response_id
// members bound; changed is false (and nothing appended) when it has neither. members is a buffer, returned
// grown.
func (b *ResponseBinding) appendBoundObject(w, obj []byte, members []jsonscan.Member, cache *tagCache) (_ []byte, _ []jsonscan.Member, changed bool) {
	list, err := jsonscan.Skim(obj, members[:0], maxTopLevelMembers)
	if err != nil {
		return w, list, false // not an object the client could read either: forwarded as it came
	}
	copied := 0
	for _, m := range list {
		if !isBoundKey(obj, m) {
			continue
		}
		v := m.Value(obj)
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || m.ValStart < copied {
			continue // not a string (or, in a broken object, a member that overlaps the last)
		}
		opcount.Add(opcount.BytesCopied, m.ValStart-copied)
		w = append(w, obj[copied:m.ValStart+1]...)
		w = append(b.appendBoundID(w, boundIDBytes(v), cache), '"')
		copied, changed = m.ValEnd, true
	}
	if !changed {
		return w, list, false
	}
	opcount.Add(opcount.BytesCopied, len(obj)-copied)
	return append(w, obj[copied:]...), list, true
}

// isBoundKey reports whether the member is an id or previous_response_id.
func isBoundKey(obj []byte, m jsonscan.Member) bool {
	key := m.Key(obj)
	if m.KeyEscaped {
		key = []byte(decodeJSONString(obj[m.KeyStart:m.KeyEnd]))
	}
	return string(key) == "id" || string(key) == "previous_response_id"
}

// boundIDBytes is the id a JSON string literal holds: its bytes, decoded when it has escapes (rare, so it
// may allocate), so that a client that writes it back escaped otherwise still has it verified.
func boundIDBytes(literal []byte) []byte {
	inner := literal[1 : len(literal)-1]
	for _, c := range inner {
		if c == '\\' {
			return []byte(decodeJSONString(literal))
		}
	}
	return inner
}

// bindAnswer binds the ids of a native JSON Response (body, the answer as it goes to the client): written
// into dst unless body is there already.
func (x *Exchange) bindAnswer(dst, body []byte) []byte {
	var stack [32]jsonscan.Member
	w := dst[:0]
	if len(body) > 0 && cap(dst) > 0 && &body[0] == &dst[:1][0] {
		w = nil // the answer was edited into dst: the bound copy needs its own buffer
	}
	if out, _, changed := x.Binding.appendBoundObject(w, body, stack[:0], nil); changed {
		return out
	}
	return body
}

// lifecycleEvents are the names of a native Responses stream's events that carry the response object (after
// "response."; "done" is no Responses event, but the name other APIs give their last one).
var lifecycleEvents = [...]string{"created", "in_progress", "queued", "completed", "incomplete", "failed", "done"}

// maxLifecycleLine is the longest first line of a lifecycle event, "event: response.in_progress\r\n".
const maxLifecycleLine = len("event: response.in_progress\r\n")

// isLifecycleEvent reports whether an event (whole) may carry the response object: its event: line, wherever
// it is in the event, names a lifecycle event, or it has no event: line (a data-only event is judged by its
// data: appendBoundEvent binds the response object it finds there). Events start with their event: line, so
// the deltas, nearly every event, are told apart by its first bytes.
func isLifecycleEvent(raw []byte) bool {
	for i := 0; i < len(raw); {
		e := len(raw)
		if k := bytes.IndexByte(raw[i:], '\n'); k >= 0 {
			e = i + k + 1
		}
		opcount.Add(opcount.StepsTaken, e-i)
		if line := raw[i:e]; bytes.HasPrefix(line, []byte("event:")) {
			return isLifecycleLine(line[:min(len(line), maxLifecycleLine)], true)
		}
		i = e
	}
	return true
}

// isLifecycleLine reports whether an event's first line (or its first bytes, at least maxLifecycleLine of
// them when the line is longer) names an event that carries the response object; a line that is no event:
// line counts (isLifecycleEvent). With whole, the line may end where start does (the stream's last bytes).
func isLifecycleLine(start []byte, whole bool) bool {
	const field, prefix = "event:", "response."
	if len(start) < len(field) || string(start[:len(field)]) != field {
		return len(start) > 0 && start[0] == 'd' // a data-first event: judged by its data
	}
	name := start[len(field):]
	if len(name) > 0 && name[0] == ' ' {
		name = name[1:]
	}
	if len(name) <= len(prefix) || string(name[:len(prefix)]) != prefix {
		return false
	}
	name = name[len(prefix):]
	switch name[0] {
	case 'c', 'i', 'q', 'f', 'd':
	default:
		return false
	}
	for _, event := range lifecycleEvents {
		if len(name) >= len(event) && event[0] == name[0] && string(name[:len(event)]) == event &&
			(len(name) > len(event) && (name[len(event)] == '\n' || name[len(event)] == '\r') || len(name) == len(event) && whole) {
			return true
		}
	}
	return false
}

// dataLine locates the value of an event's one data field (after "data:" and one space); ok is false when it
// has none or several (data split over lines is left as it came).
func dataLine(raw []byte) (start, end int, ok bool) {
	for i := 0; i < len(raw); {
		e := len(raw)
		if k := bytes.IndexByte(raw[i:], '\n'); k >= 0 {
			e = i + k
		}
		if k := bytes.IndexByte(raw[i:e], '\r'); k >= 0 {
			e = i + k
		}
		if e-i >= len("data:") && string(raw[i:i+len("data:")]) == "data:" {
			if ok {
				return 0, 0, false
			}
			start, end, ok = i+len("data:"), e, true
			if start < e && raw[start] == ' ' {
				start++
			}
		}
		if e < len(raw) && raw[e] == '\r' {
			e++
		}
		if e < len(raw) && raw[e] == '\n' {
			e++
		}
		i = e
	}
	return start, end, ok
}

// appendBoundEvent appends a lifecycle event (raw, whole) with the ids of its response object bound, and
// reports whether it changed: an event whose data is not one line holding an object with a response object
// is not. members is a buffer, returned grown.
func (b *ResponseBinding) appendBoundEvent(w, raw []byte, members []jsonscan.Member, cache *tagCache) ([]byte, []jsonscan.Member, bool) {
	start, end, ok := dataLine(raw)
	if !ok {
		return w, members, false
	}
	data := raw[start:end]
	top, err := jsonscan.Skim(data, members[:0], maxTopLevelMembers)
	if err != nil {
		return w, top, false
	}
	for _, m := range top {
		if !isResponseKey(data, m) || m.ValEnd <= m.ValStart || data[m.ValStart] != '{' {
			continue
		}
		// The members' offsets are read before the buffer is reused for the response's own.
		valStart, valEnd := start+m.ValStart, start+m.ValEnd
		mark := len(w)
		opcount.Add(opcount.BytesCopied, valStart)
		w = append(w, raw[:valStart]...)
		var changed bool
		if w, top, changed = b.appendBoundObject(w, raw[valStart:valEnd], top, cache); !changed {
			return w[:mark], top, false
		}
		return append(w, raw[valEnd:]...), top, true
	}
	return w, top, false
}

// isResponseKey reports whether the member's key is "response", written plainly or with escapes (decoded on
// the stack: a key too long to be "response" in escapes is not).
func isResponseKey(data []byte, m jsonscan.Member) bool {
	const name = "response"
	if !m.KeyEscaped {
		return string(m.Key(data)) == name
	}
	if m.KeyEnd-m.KeyStart > 2+6*len(name) {
		return false
	}
	var scratch [6 * len(name)]byte
	key, ok := jsonscan.AppendUnquoted(scratch[:0], data[m.KeyStart:m.KeyEnd])
	return ok && string(key) == name
}

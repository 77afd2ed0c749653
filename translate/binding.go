package translate

// Response binding keeps what a consumer stored at a provider with that consumer. With consumers configured,
// every provider call uses the gateway's own provider key, so the provider sees one tenant: any consumer that
// sends a response's id as previous_response_id (or to .../responses/compact or .../input_tokens) would
// continue, and so read, a response another consumer created. So the ids the gateway hands out are bound to
// the consumer they were handed to:
//
//   - On the way out (a native Response, JSON or stream), the Response's id, and its previous_response_id,
//     become "<provider id>_<tag>", where tag is 32 hex digits, the first 128 bits of
//     HMAC-SHA256(binding key, len(consumer name) || consumer name || provider id). Clients treat ids as
//     opaque strings, and the resp_ prefix stays.
//   - On the way in, previous_response_id must carry the tag of the consumer sending it: it is checked in
//     constant time and the provider gets the id without it. An id without a tag, with another consumer's
//     tag, or with a tag for another id is refused (400 previous_response_not_found) before the provider is
//     called, so nobody learns whether the id exists.
//   - What cannot be bound is refused toward a provider while consumers are configured: conversation (its
//     ids are made outside the gateway's routes) and input items that name stored items by id alone
//     (item_reference, an item that is only an id, a reasoning item without its encrypted_content), since
//     item ids appear in most events of a stream and are not rewritten.
//
// The binding key is SHA-256 of a fixed label and a secret every Envoy replica has without new setup: the
// provider's own key, or an operator's key named by response_binding_key_env (so that rotating the provider
// key does not end every conversation). Changing it makes earlier ids unusable: their clients are told to
// start again without previous_response_id.

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/aidialect/aidialect/internal/sha256"
)

// bindingTagLen is the length of a tag: 128 bits of the HMAC in hex. bindingSuffixLen adds the '_' before it.
const (
	bindingTagLen    = 32
	bindingSuffixLen = 1 + bindingTagLen
)

// bindingKeyLabel separates the binding key from any other use of the secret it is derived from.
const bindingKeyLabel = "aidialect response binding\x00"

// BindingKey is the key response ids are bound with (see the top of this file).
type BindingKey struct{ mac *sha256.HMAC }

// NewBindingKey derives the binding key from a secret every replica shares.
func NewBindingKey(secret string) *BindingKey {
	key := sha256.Sum256(append([]byte(bindingKeyLabel), secret...))
	return &BindingKey{mac: sha256.NewHMAC(key[:])}
}

// ResponseBinding binds the response ids of one request to its consumer. The zero value binds nothing: the
// gateway has no consumers (one tenant), and ids pass as they are.
type ResponseBinding struct {
	Key      *BindingKey
	Consumer string
}

func (b *ResponseBinding) active() bool { return b.Key != nil }

// tagCache remembers the last tag made, for a stream: its lifecycle events name the same response.
type tagCache struct {
	id    []byte
	tag   [bindingTagLen]byte
	valid bool
}

// cachedTag is tag, from the cache when it holds id (nil: no cache).
func (b *ResponseBinding) cachedTag(id []byte, cache *tagCache) [bindingTagLen]byte {
	if cache == nil {
		return b.tag(id)
	}
	if !cache.valid || !bytes.Equal(cache.id, id) {
		cache.id, cache.tag, cache.valid = append(cache.id[:0], id...), b.tag(id), true
	}
	return cache.tag
}

// tag is the tag of the provider's id for this consumer.
func (b *ResponseBinding) tag(id []byte) (tag [bindingTagLen]byte) {
	var length [4]byte
	binary.BigEndian.PutUint32(length[:], uint32(len(b.Consumer)))
	sum := b.Key.mac.Sum(length[:], unsafe.Slice(unsafe.StringData(b.Consumer), len(b.Consumer)), id)
	const digits = "0123456789abcdef"
	for i, c := range sum[:bindingTagLen/2] {
		tag[2*i], tag[2*i+1] = digits[c>>4], digits[c&15]
	}
	return tag
}

// bind is the id handed to the consumer for the provider's id.
func (b *ResponseBinding) bind(id string) string {
	tag := b.tag([]byte(id))
	return id + "_" + string(tag[:])
}

// unbind is the provider's id in an id the gateway handed out, and whether it was handed to this consumer.
func (b *ResponseBinding) unbind(bound string) (string, bool) {
	if len(bound) <= bindingSuffixLen || bound[len(bound)-bindingSuffixLen] != '_' {
		return "", false
	}
	id := bound[:len(bound)-bindingSuffixLen]
	want := b.tag([]byte(id))
	got := unsafe.Slice(unsafe.StringData(bound[len(bound)-bindingTagLen:]), bindingTagLen)
	return id, subtle.ConstantTimeCompare(want[:], got) == 1
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
	"store: false and the whole conversation in input (AI SDK: providerOptions.openai.store = false)"

// planConversation refuses a conversation: its id cannot be bound to a consumer.
func planConversation(c *renderContext, i int, _ *memberPlan) *Error {
	if !c.binds() || isJSONNull(c.body.members[i].Value(c.body.src)) {
		return nil
	}
	return NewError(ErrUnsupportedParameter, "conversation", "conversation is not available through this "+
		"gateway's consumer keys: a conversation is stored at the provider under the gateway's own key, where "+
		"every consumer could reach it: "+storedStateFix)
}

// checkBoundInput refuses input items that name an item stored at the provider by its id alone: nothing
// binds item ids to a consumer. Items are read one level deep, each member once; a key that is "type", "id"
// or "encrypted_content" in another letter case, or one of them twice, is refused too, for a provider could
// read it either way.
func checkBoundInput(input []byte) *Error {
	if len(input) == 0 || input[0] != '[' {
		return nil // a string, or null: no items
	}
	for i, n := skipJSONSpace(input, 1), 0; i < len(input) && input[i] != ']'; n++ {
		end := jsonscan.SkimValue(input, i)
		if end <= i {
			return nil // Parse validated the body: unreachable
		}
		if e := checkBoundItem(input[i:end], n); e != nil {
			return e
		}
		if i = skipJSONSpace(input, end); i < len(input) && input[i] == ',' {
			i = skipJSONSpace(input, i+1)
		}
	}
	return nil
}

// itemMember is a member of an input item that says whether the item only names a stored one.
type itemMember uint8

const (
	itemOther itemMember = iota
	itemType
	itemID
	itemRole
	itemEncryptedContent
)

var itemMemberNames = [...]string{itemType: "type", itemID: "id", itemRole: "role", itemEncryptedContent: "encrypted_content"}

// checkBoundItem is checkBoundInput for the item at index n.
func checkBoundItem(item []byte, n int) *Error {
	if item[0] != '{' {
		return nil // not an item the provider takes: its own error
	}
	var values [len(itemMemberNames)][]byte
	at := elementPath("input", n)
	for i := skipJSONSpace(item, 1); i < len(item) && item[i] == '"'; {
		keyEnd, escaped := stringEnd(item, i)
		if keyEnd < 0 {
			return nil
		}
		key := item[i+1 : keyEnd-1]
		if escaped {
			key = []byte(decodeJSONString(item[i:keyEnd]))
		}
		valStart := skipJSONSpace(item, skipJSONSpace(item, keyEnd)+1) // past the ':'
		valEnd := jsonscan.SkimValue(item, valStart)
		if valEnd <= valStart {
			return nil
		}
		if k, folded := itemMemberOf(key); k != itemOther {
			if folded || values[k] != nil {
				return at.refusal(ErrInvalidJSON, itemMemberNames[k], " has "+itemMemberNames[k]+" more than once, "+
					"or in another letter case: send it once, in lower case")
			}
			values[k] = item[valStart:valEnd]
		}
		if i = skipJSONSpace(item, valEnd); i < len(item) && item[i] == ',' {
			i = skipJSONSpace(item, i+1)
		}
	}
	typ, id := nullAsAbsent(values[itemType]), nullAsAbsent(values[itemID])
	switch {
	case jsonStringIs(typ, "item_reference"), typ == nil && id != nil && nullAsAbsent(values[itemRole]) == nil:
		return at.refusal(ErrUnsupportedParameter, "", " is an item_reference, a pointer to an item stored at the "+
			"provider under the gateway's own key, which this gateway cannot tie to your key: "+storedStateFix)
	case jsonStringIs(typ, "reasoning") && id != nil && nullAsAbsent(values[itemEncryptedContent]) == nil:
		return at.refusal(ErrUnsupportedParameter, "encrypted_content", " is a reasoning item without "+
			"encrypted_content, which the provider would read from its store by id, under the gateway's own key: "+
			"ask for include: [\"reasoning.encrypted_content\"] and send the item as you received it, or "+storedStateFix)
	}
	return nil
}

// itemMemberOf is the itemMember a key names, and whether it names it in another letter case.
func itemMemberOf(key []byte) (itemMember, bool) {
	if len(key) > len("encrypted_content") || len(key) < 2 {
		return itemOther, false
	}
	for k := itemType; k <= itemEncryptedContent; k++ {
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
	return x.Binding.active() && x.Bridge == nil && (x.Op == OpResponses || x.Op == OpResponsesCompact)
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
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' || m.ValEnd-1 < copied {
			continue // not a string (or, in a broken object, a member that overlaps the last)
		}
		tag := b.cachedTag(boundIDBytes(v), cache)
		w = append(w, obj[copied:m.ValEnd-1]...)
		w = append(w, '_')
		w = append(w, tag[:]...)
		copied, changed = m.ValEnd-1, true
	}
	if !changed {
		return w, list, false
	}
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

// lifecycleEvents are the names of a native Responses stream's events that carry the response object.
var lifecycleEvents = [...]string{"created", "in_progress", "queued", "completed", "incomplete", "failed"} // after "response."

// maxLifecycleLine is the longest first line of a lifecycle event, "event: response.in_progress\r\n".
const maxLifecycleLine = len("event: response.in_progress\r\n")

// isLifecycleEvent reports whether an event (or its first bytes, at least maxLifecycleLine of them when the
// event is longer) starts with the event line of one that carries the response object. The name's first
// letter picks the candidates: the deltas, nearly every event, are told apart by it alone.
func isLifecycleEvent(start []byte) bool {
	const field, prefix = "event:", "response."
	if len(start) < len(field) || string(start[:len(field)]) != field {
		return false
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
	case 'c', 'i', 'q', 'f':
	default:
		return false
	}
	for _, event := range lifecycleEvents {
		if len(name) > len(event) && event[0] == name[0] && string(name[:len(event)]) == event &&
			(name[len(event)] == '\n' || name[len(event)] == '\r') {
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
		if m.KeyEscaped || string(m.Key(data)) != "response" || m.ValEnd <= m.ValStart || data[m.ValStart] != '{' {
			continue
		}
		// The members' offsets are read before the buffer is reused for the response's own.
		valStart, valEnd := start+m.ValStart, start+m.ValEnd
		mark := len(w)
		w = append(w, raw[:valStart]...)
		var changed bool
		if w, top, changed = b.appendBoundObject(w, raw[valStart:valEnd], top, cache); !changed {
			return w[:mark], top, false
		}
		return append(w, raw[valEnd:]...), top, true
	}
	return w, top, false
}

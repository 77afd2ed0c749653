package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its member order (answers look like the real services').
type obj []kv

// MarshalJSON writes the members in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(m.k))
		b.WriteByte(':')
		b.Write(marshal(m.v))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal encodes v without HTML escaping (the services send "<" as is).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("mock: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// object is a request body's top level: members in order, values raw.
type object struct {
	keys []string
	m    map[string]json.RawMessage
}

var errDuplicateKey = errors.New("duplicate key")

// parseObject reads a JSON object, refusing anything else, trailing data, and repeated top-level keys.
func parseObject(b []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, errors.New("the body is not a JSON object")
	}
	o := &object{m: map[string]json.RawMessage{}}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.m[key]; dup {
			return nil, fmt.Errorf("%w %q", errDuplicateKey, key)
		}
		o.keys = append(o.keys, key)
		o.m[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("the JSON object is not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

func (o *object) has(k string) bool {
	_, ok := o.m[k]
	return ok
}

// kind names the JSON type of a member ("" when absent): string, integer, number, boolean, null, array,
// object.
func (o *object) kind(k string) string {
	v, ok := o.m[k]
	if !ok {
		return ""
	}
	return kindOf(v)
}

func kindOf(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "number"
	}
	return "integer"
}

// an gives OpenAI's article-and-noun for a JSON kind ("an integer", "a string").
func an(kind string) string {
	switch kind {
	case "integer", "object", "array":
		return "an " + kind
	case "number":
		return "a decimal"
	case "null":
		return "null"
	}
	return "a " + kind
}

// str returns a string member ("" when absent or not a string).
func (o *object) str(k string) string {
	var s string
	if o.kind(k) == "string" {
		_ = json.Unmarshal(o.m[k], &s)
	}
	return s
}

// boolean returns a boolean member (false when absent or not a boolean).
func (o *object) boolean(k string) bool {
	var b bool
	if o.kind(k) == "boolean" {
		_ = json.Unmarshal(o.m[k], &b)
	}
	return b
}

// integer returns an integer member and whether it is one.
func (o *object) integer(k string) (int, bool) {
	var n int
	if o.kind(k) != "integer" || json.Unmarshal(o.m[k], &n) != nil {
		return 0, false
	}
	return n, true
}

// sub parses an object-valued member (nil when absent or not an object).
func (o *object) sub(k string) *object {
	if o.kind(k) != "object" {
		return nil
	}
	s, err := parseObject(o.m[k])
	if err != nil {
		return nil
	}
	return s
}

// array returns an array member's elements (nil when absent or not an array).
func (o *object) array(k string) []json.RawMessage {
	var a []json.RawMessage
	if o.kind(k) == "array" {
		_ = json.Unmarshal(o.m[k], &a)
	}
	return a
}

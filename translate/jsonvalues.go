package translate

// Small readers of JSON values the request rules, the Responses binding and the bridge share: values already
// validated by the scanner (internal/jsonscan), read in place; and the place of a value in a request, for
// refusals.

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// paramPath is the place in the request of a value the bridge reads, written out (it allocates) only for an
// error's param: list, list[i], or list[i].inner[j].
type paramPath struct {
	list  string
	i     int // -1: list is an object, not an array
	inner string
	j     int
}

// fieldPath is the top-level field (or member path) name, not an array.
func fieldPath(name string) paramPath { return paramPath{list: name, i: -1} }

// elementPath is list[i].
func elementPath(list string, i int) paramPath { return paramPath{list: list, i: i} }

// part is the element j of the array inner in w.
func (w paramPath) part(inner string, j int) paramPath { w.inner, w.j = inner, j; return w }

// element is element i of w's list when inner is "", else part(inner, i).
func (w paramPath) element(inner string, i int) paramPath {
	if inner == "" {
		return paramPath{list: w.list, i: i}
	}
	return w.part(inner, i)
}

func (w paramPath) String() string {
	s := w.list
	if w.i >= 0 {
		s += "[" + strconv.Itoa(w.i) + "]"
	}
	if w.inner != "" {
		s += "." + w.inner + "[" + strconv.Itoa(w.j) + "]"
	}
	return s
}

// member is the member name of the object at w; w itself when name is "".
func (w paramPath) member(name string) string {
	if name == "" {
		return w.String()
	}
	return w.String() + "." + name
}

// mustBe refuses the member name of the object at w (w itself when name is "") as invalid: its place, then
// "must be" what.
//
//go:noinline
func (w paramPath) mustBe(name, what string) *Error {
	param := w.member(name)
	return NewError(ErrInvalidParameter, param, param+" must be "+what)
}

// refusal refuses the object at w, or its member name when name is not "": the message is w's place then
// why.
//
//go:noinline
func (w paramPath) refusal(code ErrorCode, name, why string) *Error {
	at := w.String()
	return NewError(code, w.member(name), at+why)
}

func isJSONNull(raw []byte) bool { return string(raw) == "null" }

// isJSONString reports whether raw is a JSON string literal.
func isJSONString(raw []byte) bool { return len(raw) >= 2 && raw[0] == '"' }

// jsonStringIs reports whether raw is the string literal of s; one written with escapes is decoded (and
// allocates), which no client does for the types and roles compared.
func jsonStringIs(raw []byte, s string) bool {
	if isJSONStringOf(raw, s) {
		return true
	}
	// An escaped literal of s is at most 6 bytes a byte of s (\u0061) plus its quotes: a longer one cannot
	// be s, and decoding it would cost its length (and an allocation) at each of the comparisons a member
	// goes through.
	return len(raw) <= 6*len(s)+2 && isJSONString(raw) && strings.IndexByte(bytesAsString(raw), '\\') >= 0 &&
		decodeJSONString(raw) == s
}

// bytesAsString is b as a string, without a copy: b must not change while the string is in use.
func bytesAsString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// readOnlyBytes is the bytes of a string gjson returned as a view of its input, without a copy; read only.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// decodedKey is a member's key, decoded when it has escapes: clients decode "con\u0074ent" and "content"
// alike, so must the bridge (rare, so it may allocate).
func decodedKey(m *jsonscan.Member, src []byte) []byte {
	if m.KeyEscaped {
		return decodeEscapedKey(src[m.KeyStart:m.KeyEnd])
	}
	return src[m.KeyStart+1 : m.KeyEnd-1]
}

// nextElement is the element of the JSON array arr after offset pos (0 for the first), and the offset to
// pass for the one after it; nil after the last. arr must be part of a validated JSON text: the elements
// are passed over (valueEnd) without being checked again, with a loop, whatever their depth.
func nextElement(arr []byte, pos int) (element []byte, next int) {
	if pos == 0 {
		if len(arr) == 0 || arr[0] != '[' {
			return nil, 0
		}
		pos = 1
	}
	if pos = jsonscan.SkipSpace(arr, pos); pos < len(arr) && arr[pos] == ',' {
		pos = jsonscan.SkipSpace(arr, pos+1)
	}
	end := jsonscan.SkimValue(arr, pos)
	if pos >= len(arr) || arr[pos] == ']' || end <= pos {
		return nil, len(arr)
	}
	return arr[pos:end], end
}

// decodeEscapedKey is decodedKey's rare path, kept out of line so that the common one inlines.
func decodeEscapedKey(literal []byte) []byte {
	if key, ok := jsonscan.AppendUnquoted(nil, literal); ok {
		return key
	}
	return literal[1 : len(literal)-1]
}

package jsonscan

// The implementation this package had at commit 61d73ec (jsonscan.go: recursive descent, a byte loop around
// an 8-byte skip in strings, utf8.DecodeRune for non-ASCII, bytes.IndexByte in skimString), its declarations
// copied unchanged but for a "ref" prefix on every identifier (comments keep the old names): the reference
// FuzzMatchesReference holds the current code to, result for result, error message for error message.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// MaxDepth bounds nesting so a hostile body cannot exhaust the stack; real requests (tool schemas
// included) stay far below it.
const refMaxDepth = 256

// syntaxError describes why a body is not valid JSON, with the byte offset a client can look at.
type refsyntaxError struct {
	offset int
	msg    string
}

func (e *refsyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.offset) }

func refsyntaxErr(offset int, format string, args ...any) error {
	return &refsyntaxError{offset: offset, msg: fmt.Sprintf(format, args...)}
}

// stringSafe marks the bytes a JSON string may hold without further checks.
var refstringSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func refisSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func refskipSpace(src []byte, i int) int {
	for i < len(src) && refisSpace(src[i]) {
		i++
	}
	return i
}

// ErrTooManyMembers is the answer of Members and Skim to an object with more members than their limit.
var refErrTooManyMembers = &refsyntaxError{msg: "too many members"}

// Members validates src as one JSON object (the whole input, surrounding whitespace allowed) and appends its
// top-level members to dst. It stops with ErrTooManyMembers at the first member past limit (> 0; 0 means no
// limit), so a hostile object never grows dst beyond limit entries.
func refMembers(src []byte, dst []Member, limit int) ([]Member, error) {
	i := refskipSpace(src, 0)
	if i >= len(src) {
		return dst, refsyntaxErr(i, "empty body: expected a JSON object")
	}
	if src[i] != '{' {
		return dst, refsyntaxErr(i, "expected a JSON object, found %s", refdescribeByte(src[i]))
	}
	end, err := refscanObject(src, i, 1, &dst, limit)
	if err != nil {
		return dst, err
	}
	if j := refskipSpace(src, end); j != len(src) {
		return dst, refsyntaxErr(j, "unexpected data after the JSON object")
	}
	return dst, nil
}

// Valid reports whether b is exactly one JSON value (surrounding whitespace allowed) nested at most
// MaxDepth levels deep, with strings of valid UTF-8 (RFC 8259). Its recursion is bounded by that depth,
// unlike gjson.ValidBytes, which recurses once per level of the input: in a wasm VM a deep enough input
// overflows the host stack, a trap that no recover sees and that kills the VM. It allocates only when b is
// invalid.
func refValid(b []byte) bool {
	_, err := refCheck(b)
	return err == nil
}

// Check judges b exactly as Valid does and says why it is not valid: nil for valid JSON,
// otherwise an error whose message names the problem and ends "at byte N", and that offset N (0-based,
// from the start of b) where the scan stopped, for tools that point a person at the mistake.
func refCheck(b []byte) (offset int, err error) {
	end, err := refscanValue(b, refskipSpace(b, 0), 0)
	if err == nil {
		if j := refskipSpace(b, end); j != len(b) {
			err = refsyntaxErr(j, "unexpected data after the JSON value")
		}
	}
	if err == nil {
		return 0, nil
	}
	if se, ok := err.(*refsyntaxError); ok {
		return se.offset, err
	}
	return 0, err
}

func refdescribeByte(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	case c == '"':
		return "a string"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return fmt.Sprintf("%q", c)
}

// scanObject validates the object starting at src[i] == '{' and returns the offset after it. When members
// is not nil, the object's members are appended to it; limit > 0 bounds how many (ErrTooManyMembers).
func refscanObject(src []byte, i, depth int, members *[]Member, limit int) (int, error) {
	if depth > refMaxDepth {
		return 0, refsyntaxErr(i, "JSON nested deeper than %d levels", refMaxDepth)
	}
	i = refskipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if n == limit && limit > 0 {
			return 0, refErrTooManyMembers
		}
		if i >= len(src) || src[i] != '"' {
			return 0, refunexpected(src, i, "an object key")
		}
		keyStart := i
		keyEnd, escaped, err := refscanString(src, i)
		if err != nil {
			return 0, err
		}
		i = refskipSpace(src, keyEnd)
		if i >= len(src) || src[i] != ':' {
			return 0, refunexpected(src, i, "':' after an object key")
		}
		i = refskipSpace(src, i+1)
		valStart := i
		if i, err = refscanValue(src, i, depth); err != nil {
			return 0, err
		}
		if members != nil {
			*members = append(*members, Member{keyStart, keyEnd, valStart, i, escaped})
		}
		i = refskipSpace(src, i)
		if i >= len(src) {
			return 0, refunexpected(src, i, "',' or '}'")
		}
		switch src[i] {
		case ',':
			i = refskipSpace(src, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, refunexpected(src, i, "',' or '}'")
		}
	}
}

func refunexpected(src []byte, i int, want string) error {
	if i >= len(src) {
		return refsyntaxErr(i, "unexpected end of JSON: expected %s (is the body truncated?)", want)
	}
	return refsyntaxErr(i, "invalid JSON: expected %s, found %q", want, src[i])
}

// scanValue validates one JSON value starting at src[i] and returns the offset after it.
func refscanValue(src []byte, i, depth int) (int, error) {
	if i >= len(src) {
		return 0, refunexpected(src, i, "a value")
	}
	switch c := src[i]; {
	case c == '"':
		end, _, err := refscanString(src, i)
		return end, err
	case c == '{':
		return refscanObject(src, i, depth+1, nil, 0)
	case c == '[':
		return refscanArray(src, i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return refscanNumber(src, i)
	case c == 't':
		return refscanLiteral(src, i, "true")
	case c == 'f':
		return refscanLiteral(src, i, "false")
	case c == 'n':
		return refscanLiteral(src, i, "null")
	}
	return 0, refunexpected(src, i, "a value")
}

func refscanArray(src []byte, i, depth int) (int, error) {
	if depth > refMaxDepth {
		return 0, refsyntaxErr(i, "JSON nested deeper than %d levels", refMaxDepth)
	}
	i = refskipSpace(src, i+1)
	if i < len(src) && src[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = refscanValue(src, i, depth); err != nil {
			return 0, err
		}
		i = refskipSpace(src, i)
		if i >= len(src) {
			return 0, refunexpected(src, i, "',' or ']'")
		}
		switch src[i] {
		case ',':
			i = refskipSpace(src, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, refunexpected(src, i, "',' or ']'")
		}
	}
}

// scanString validates the string starting at src[i] == '"' (escapes, control characters, UTF-8) and
// returns the offset after its closing quote.
func refscanString(src []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for {
		i = refskipSafeWords(src, i)
		for i < len(src) && refstringSafe[src[i]] {
			i++
		}
		if i >= len(src) {
			return 0, false, refsyntaxErr(start, "unterminated string")
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(src) {
				return 0, false, refsyntaxErr(start, "unterminated string")
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) || !refisHex4(src[i+2:i+6]) {
					return 0, false, refsyntaxErr(i, "invalid \\u escape in string")
				}
				i += 6
			default:
				return 0, false, refsyntaxErr(i, "invalid escape \\%c in string", src[i+1])
			}
		case c < 0x20:
			return 0, false, refsyntaxErr(i, "control character %#02x in string: escape it", c)
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false, refsyntaxErr(i, "invalid UTF-8 in string")
			}
			i += size
		}
	}
}

// skipSafeWords skips 8 bytes at a time while none of them is a quote, a backslash, a control character
// or non-ASCII: message text, the bulk of every body, then costs a fraction of a byte-by-byte loop.
func refskipSafeWords(src []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(src) {
		x := binary.LittleEndian.Uint64(src[i:])
		quote := x ^ (ones * '"')
		backslash := x ^ (ones * '\\')
		below := (x - ones*0x20) &^ x // high bit where a byte is < 0x20
		isQuote := (quote - ones) &^ quote
		isBackslash := (backslash - ones) &^ backslash
		if (below|isQuote|isBackslash|x)&highs != 0 {
			return i
		}
		i += 8
	}
	return i
}

func refisHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func refscanNumber(src []byte, i int) (int, error) {
	start := i
	if src[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(src) && src[i] == '0' {
		i++
	} else if digits() == 0 {
		return 0, refsyntaxErr(start, "invalid number")
	}
	if i < len(src) && src[i] == '.' {
		i++
		if digits() == 0 {
			return 0, refsyntaxErr(start, "invalid number")
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, refsyntaxErr(start, "invalid number")
		}
	}
	return i, nil
}

func refscanLiteral(src []byte, i int, lit string) (int, error) {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return 0, refsyntaxErr(i, "invalid literal: expected %s", lit)
	}
	return i + len(lit), nil
}

// Skim locates the top-level members of a JSON object without validating the values: strings
// are skipped with a byte search and containers by counting brackets. It serves answers from providers (SSE
// events), where only a few top-level keys are read or replaced and the rest is copied as it came; client
// requests always get the validating Members. Malformed input fails with an error or yields
// members whose bytes are copied back unchanged, never a panic. limit bounds the members as in Members.
func refSkim(src []byte, dst []Member, limit int) ([]Member, error) {
	i := refskipSpace(src, 0)
	if i >= len(src) || src[i] != '{' {
		return dst, refsyntaxErr(i, "expected a JSON object")
	}
	i = refskipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return dst, nil
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return dst, refunexpected(src, i, "an object key")
		}
		keyStart := i
		keyEnd, ok := refskimString(src, i)
		if !ok {
			return dst, refsyntaxErr(i, "unterminated string")
		}
		i = refskipSpace(src, keyEnd)
		if i >= len(src) || src[i] != ':' {
			return dst, refunexpected(src, i, "':' after an object key")
		}
		valStart := refskipSpace(src, i+1)
		valEnd, ok := refskimValue(src, valStart)
		if !ok || valEnd == valStart {
			return dst, refunexpected(src, valStart, "a value")
		}
		escaped := bytes.IndexByte(src[keyStart+1:keyEnd-1], '\\') >= 0
		if limit > 0 && len(dst) == limit {
			// No provider event has that many keys; the table stays bounded whatever one sends.
			return dst, refErrTooManyMembers
		}
		dst = append(dst, Member{keyStart, keyEnd, valStart, valEnd, escaped})
		i = refskipSpace(src, valEnd)
		if i >= len(src) {
			return dst, refunexpected(src, i, "',' or '}'")
		}
		switch src[i] {
		case ',':
			i = refskipSpace(src, i+1)
		case '}':
			return dst, nil
		default:
			return dst, refunexpected(src, i, "',' or '}'")
		}
	}
}

// skimString returns the offset after the string starting at src[i] == '"'.
func refskimString(src []byte, i int) (end int, ok bool) {
	for j := i + 1; j < len(src); {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		backslashes := 0
		for b := q - 1; b > i && src[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return 0, false
}

// skimValue returns the offset after the value starting at src[i].
func refskimValue(src []byte, i int) (int, bool) {
	if i >= len(src) {
		return i, false
	}
	switch src[i] {
	case '"':
		return refskimString(src, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(src); j++ {
			switch src[j] {
			case '"':
				end, ok := refskimString(src, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(src) && src[j] != ',' && src[j] != '}' && src[j] != ']' && !refisSpace(src[j]) {
		j++
	}
	return j, true
}

// AppendString appends s as a JSON string literal. Invalid UTF-8 becomes U+FFFD so the output is always
// valid JSON, whatever an upstream sent.
func refAppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	if refplainASCII(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// plainASCII reports whether s needs no escaping inside a JSON string.
func refplainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if !refstringSafe[s[i]] {
			return false
		}
	}
	return true
}

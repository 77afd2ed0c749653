// Package jsonscan reads and writes JSON text at the byte level, for a filter that must not trap: it validates
// without recursion, its nesting bounded by MaxDepth (gjson.ValidBytes recurses once per level of its input,
// and a deep enough input overflows a wasm VM's stack, a trap no recover sees), locates an object's top-level
// members as byte offsets so callers copy the members they keep without another pass, and writes string
// literals.
//
// It is written for Go's wasm backend, where the filter runs: there a function is a loop around a br_table,
// so every call and every jump that does not fall through to the next block of the compiler's layout is
// costly, far more than natively. Strings, the bulk of every body, are checked 8 bytes at a time; the
// nesting is followed by one loop with an explicit stack; the common path is written so that the compiler
// lays it out straight (see scanValue).
package jsonscan

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"

	"github.com/aidialect/aidialect/internal/opcount"
)

// MaxDepth bounds nesting; real requests (tool schemas included) stay far below it.
const MaxDepth = 256

// Member is one key/value pair of a JSON object, as byte offsets into the source.
type Member struct {
	KeyStart, KeyEnd int // the key including its quotes
	ValStart, ValEnd int
	KeyEscaped       bool // the key has backslash escapes: compare its decoded form
}

// Key is the key as written, without its quotes (escapes not decoded: see KeyEscaped).
func (m Member) Key(src []byte) []byte { return src[m.KeyStart+1 : m.KeyEnd-1] }

// Value is the value as written.
func (m Member) Value(src []byte) []byte { return src[m.ValStart:m.ValEnd] }

// syntaxError describes why a body is not valid JSON, with the byte offset a client can look at.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.offset) }

func syntaxErr(offset int, format string, args ...any) error {
	return &syntaxError{offset: offset, msg: fmt.Sprintf(format, args...)}
}

// stringSafe marks the bytes a JSON string may hold without further checks.
var stringSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(src []byte, i int) int {
	if i < len(src) && src[i] <= ' ' {
		for i < len(src) && isSpace(src[i]) {
			i++
		}
	}
	return i
}

// skipSpaceCold is skipSpace for scanValue, where whitespace is rare: a call, which the compiler lays out
// off the straight path (inlined, the loop would make the code after it a join of two paths).
//
//go:noinline
func skipSpaceCold(src []byte, i int) int { return skipSpace(src, i) }

// ErrTooManyMembers is the answer of Members and Skim to an object with more members than their limit.
var ErrTooManyMembers = &syntaxError{msg: "too many members"}

// Members validates src as one JSON object (the whole input, surrounding whitespace allowed) and appends its
// top-level members to dst. It stops with ErrTooManyMembers at the first member past limit (> 0; 0 means no
// limit), so a hostile object never grows dst beyond limit entries.
func Members(src []byte, dst []Member, limit int) ([]Member, error) {
	i := skipSpace(src, 0)
	if i >= len(src) {
		return dst, syntaxErr(i, "empty body: expected a JSON object")
	}
	if src[i] != '{' {
		return dst, syntaxErr(i, "expected a JSON object, found %s", describeByte(src[i]))
	}
	end, err := scanObject(src, i, &dst, limit)
	if err != nil {
		return dst, err
	}
	if j := skipSpace(src, end); j != len(src) {
		return dst, syntaxErr(j, "unexpected data after the JSON object")
	}
	return dst, nil
}

// Valid reports whether b is exactly one JSON value (surrounding whitespace allowed) nested at most
// MaxDepth levels deep, with strings of valid UTF-8 (RFC 8259). It does not recurse, unlike
// gjson.ValidBytes, which recurses once per level of the input: in a wasm VM a deep enough input
// overflows the host stack, a trap that no recover sees and that kills the VM. It allocates only when b is
// invalid.
func Valid(b []byte) bool {
	_, err := Check(b)
	return err == nil
}

// Check judges b exactly as Valid does and says why it is not valid: nil for valid JSON,
// otherwise an error whose message names the problem and ends "at byte N", and that offset N (0-based,
// from the start of b) where the scan stopped, for tools that point a person at the mistake.
func Check(b []byte) (offset int, err error) {
	end, _, err := scanValue(b, skipSpace(b, 0), 0)
	if err == nil {
		if j := skipSpace(b, end); j != len(b) {
			err = syntaxErr(j, "unexpected data after the JSON value")
		}
	}
	if err == nil {
		return 0, nil
	}
	if se, ok := err.(*syntaxError); ok {
		return se.offset, err
	}
	return 0, err
}

func describeByte(c byte) string {
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

// scanObject validates the object starting at src[i] == '{' and returns the offset after it, appending its
// members to members; limit > 0 bounds how many (ErrTooManyMembers). Each key and value is one call of
// scanValue, which follows deeper containers without recursion.
func scanObject(src []byte, i int, members *[]Member, limit int) (int, error) {
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if n == limit && limit > 0 {
			return 0, ErrTooManyMembers
		}
		opcount.Add(opcount.MembersVisited, 1)
		if i >= len(src) || src[i] != '"' {
			return 0, unexpected(src, i, "an object key")
		}
		keyStart := i
		keyEnd, escaped, err := scanValue(src, i, 1)
		if err != nil {
			return 0, err
		}
		i = skipSpace(src, keyEnd)
		if i >= len(src) || src[i] != ':' {
			return 0, unexpected(src, i, "':' after an object key")
		}
		i = skipSpace(src, i+1)
		valStart := i
		if i, _, err = scanValue(src, i, 1); err != nil {
			return 0, err
		}
		*members = append(*members, Member{keyStart, keyEnd, valStart, i, escaped})
		i = skipSpace(src, i)
		if i >= len(src) {
			return 0, unexpected(src, i, "',' or '}'")
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, unexpected(src, i, "',' or '}'")
		}
	}
}

func unexpected(src []byte, i int, want string) error {
	if i >= len(src) {
		return syntaxErr(i, "unexpected end of JSON: expected %s (is the body truncated?)", want)
	}
	return syntaxErr(i, "invalid JSON: expected %s, found %q", want, src[i])
}

// What scanValue expects at src[i], after optional whitespace (its state).
const (
	atValue    = iota // a value (an object key if key is set)
	afterKey          // ':' and the member's value
	afterValue        // ',' and the next element or member, or the end of the container
)

// scanValue validates one JSON value starting at src[i], inside depth containers, and returns the offset
// after it, and for a string whether it has backslash escapes. It is one loop, not a recursion: the
// containers it is inside of are bits of a fixed-size stack, and the one that would be the (MaxDepth+1)th
// level is refused where it opens. It finds the errors a recursive descent finds, at the same offsets
// (reference_test.go holds one).
//
// In the compiled module a jump that does not fall through costs a pass through the function's br_table,
// and the compiler's layout (cmd/compile/internal/ssa: likelyadjust, layout) enters a block where paths
// join by a jump from all of them but the one laid out last, while a branch whose other side calls or
// returns falls through. So each token ends its iteration (continue) and the next starts from state, a
// string that ends within the 8 bytes after its quote costs one word and no branch but the test of its
// end, and what is rare (whitespace, longer or escaped strings) is a call or starts the iteration again
// rather than rejoin the common path. In the module's guest profile (bench, tag aidialect_profile), a JSON
// exchange calls scanValue, scanString and scanObject 75 times, where the recursive descent's scanValue,
// scanObject, scanString, skipSafeWords and utf8.DecodeRune were called 818 times.
func scanValue(src []byte, i, depth int) (end int, escaped bool, err error) {
	base := depth
	var inArray [MaxDepth / 64]uint64 // bit d-1 set: the container at depth d is an array
	key := false                      // the value at src[i] is an object key
	state := atValue
	for {
		opcount.Add(opcount.StepsTaken, 1) // one token, or one stop in it
		if state == afterValue {
			if depth == base {
				return i, escaped, nil
			}
			array := inArray[uint(depth-1)>>6&(MaxDepth/64-1)]&(1<<(uint(depth-1)&63)) != 0
			if i < len(src) && src[i] == ',' {
				i++
				state, key = atValue, !array
			} else {
				if i < len(src) && src[i] == "}]"[b2i(array)] {
					i++
					depth--
					escaped = false
					continue
				}
				if j := skipSpaceCold(src, i); j > i {
					i = j
					continue
				}
				if array {
					return 0, false, unexpected(src, i, "',' or ']'")
				}
				return 0, false, unexpected(src, i, "',' or '}'")
			}
		} else if state == afterKey {
			if i < len(src) && src[i] == ':' {
				i++
				state, key = atValue, false
			} else {
				if j := skipSpaceCold(src, i); j > i {
					i = j
					continue
				}
				return 0, false, unexpected(src, i, "':' after an object key")
			}
		}
		// A value, or an object key, starts at src[i].
		if i >= len(src) || src[i] <= ' ' {
			if j := skipSpaceCold(src, i); j > i {
				i = j
				continue
			}
			if key {
				return 0, false, unexpected(src, i, "an object key")
			}
			return 0, false, unexpected(src, i, "a value")
		}
		if c := src[i]; c == '"' {
			// Most strings (keys above all) end within the 8 bytes after the quote: j is their end, or
			// i+9 when those bytes are plain (bits.TrailingZeros64(0) == 64). scanString takes the others
			// from j, the first byte that is not plain.
			state = afterValue
			if key {
				state = afterKey
			}
			if j := i + 1; j+8 <= len(src) {
				x := binary.LittleEndian.Uint64(src[j:])
				j += bits.TrailingZeros64(asciiStops(x)&^twoByteSequences(x)) >> 3
				if j < len(src) && src[j] == '"' {
					i, escaped = j+1, false
					continue
				}
				if i, escaped, err = scanString(src, i, j); err != nil {
					return 0, false, err
				}
				continue
			}
			if i, escaped, err = scanString(src, i, i+1); err != nil {
				return 0, false, err
			}
			continue
		} else if key {
			return 0, false, unexpected(src, i, "an object key")
		} else {
			state = afterValue
			switch {
			case c == '{' || c == '[':
				if depth >= MaxDepth {
					return 0, false, syntaxErr(i, "JSON nested deeper than %d levels", MaxDepth)
				}
				level := uint(depth) // the new container's bit: depth-1 once depth counts it
				depth++
				i = skipSpace(src, i+1)
				if c == '[' {
					inArray[level>>6&(MaxDepth/64-1)] |= 1 << (level & 63)
					if i >= len(src) || src[i] != ']' {
						state = atValue
						continue
					}
				} else {
					inArray[level>>6&(MaxDepth/64-1)] &^= 1 << (level & 63)
					if i >= len(src) || src[i] != '}' {
						state, key = atValue, true
						continue
					}
				}
				i++ // an empty container is a whole value
				depth--
			case c == '-' || (c >= '0' && c <= '9'):
				if i, err = scanNumber(src, i); err != nil {
					return 0, false, err
				}
			case c == 't':
				if i, err = scanLiteral(src, i, "true"); err != nil {
					return 0, false, err
				}
			case c == 'f':
				if i, err = scanLiteral(src, i, "false"); err != nil {
					return 0, false, err
				}
			case c == 'n':
				if i, err = scanLiteral(src, i, "null"); err != nil {
					return 0, false, err
				}
			default:
				return 0, false, unexpected(src, i, "a value")
			}
		}
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanString validates the string that opened at src[start] == '"' from src[i] on (the bytes between are
// plain) and returns the offset after its closing quote, and whether it has backslash escapes.
func scanString(src []byte, start, i int) (end int, escaped bool, err error) {
	for {
		opcount.Add(opcount.StepsTaken, 1) // 8 bytes, or one stop in them
		if i+8 > len(src) {
			return scanStringBytes(src, start, i, escaped)
		}
		x := binary.LittleEndian.Uint64(src[i:])
		m := asciiStops(x)
		if m == 0 {
			i += 8 // plain ASCII: the common word, tested first, with fewer operations
			continue
		}
		if m &^= twoByteSequences(x); m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		c := src[i]
		if c == '"' {
			return i + 1, escaped, nil
		}
		if c == '\\' && i+1 < len(src) && simpleEscape[src[i+1]] {
			i += 2
			escaped = true
			continue
		}
		if c == '\\' {
			escaped = true
		}
		if i, err = stringStop(src, start, i); err != nil {
			return 0, false, err
		}
	}
}

// simpleEscape marks the bytes that make a two-byte escape after a backslash.
var simpleEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// stringStop checks what stops a run of plain bytes at src[i] in the string that opened at src[start]
// (not its closing quote) and returns the offset after it.
func stringStop(src []byte, start, i int) (int, error) {
	switch c := src[i]; {
	case c == '\\':
		if i+1 >= len(src) {
			return 0, syntaxErr(start, "unterminated string")
		}
		switch src[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return i + 2, nil
		case 'u':
			if i+6 > len(src) || !isHex4(src[i+2:i+6]) {
				return 0, syntaxErr(i, "invalid \\u escape in string")
			}
			return i + 6, nil
		}
		return 0, syntaxErr(i, "invalid escape \\%c in string", src[i+1])
	case c < 0x20:
		return 0, syntaxErr(i, "control character %#02x in string: escape it", c)
	}
	n := utf8Len(src, i)
	if n == 0 {
		return 0, syntaxErr(i, "invalid UTF-8 in string")
	}
	return i + n, nil
}

// scanStringBytes is scanString one byte at a time, for the last bytes of the input.
func scanStringBytes(src []byte, start, i int, escaped bool) (end int, esc bool, err error) {
	for {
		from := i
		for i < len(src) && stringSafe[src[i]] {
			i++
		}
		opcount.Add(opcount.StepsTaken, i-from+1)
		if i >= len(src) {
			return 0, false, syntaxErr(start, "unterminated string")
		}
		c := src[i]
		if c == '"' {
			return i + 1, escaped, nil
		}
		if c == '\\' {
			escaped = true
		}
		if i, err = stringStop(src, start, i); err != nil {
			return 0, false, err
		}
	}
}

// Word-at-a-time byte tests on 8 bytes loaded little-endian (the first byte lowest). Each sets the high bit
// of the bytes it finds, so the lowest set bit marks the first byte found (bits.TrailingZeros64(m)/8).
// asciiStops and twoByteSequences are exact in every byte; zeroBytes may set bits above a found byte (a
// borrow crosses bytes), never below it.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// zeroBytes marks the bytes of x that are 0.
func zeroBytes(x uint64) uint64 { return (x - ones) &^ x & highs }

// asciiStops marks the quotes, backslashes, control characters and non-ASCII bytes of x, exactly: on the
// low 7 bits of a byte, + 0x60 sets bit 7 from 0x20 up, and + 0x7f sets it for any value but 0, so after an
// XOR for any byte but the XOR's, and no carry crosses a byte.
func asciiStops(x uint64) uint64 {
	low := x &^ highs
	plain := (low + ones*0x60) & ((low ^ ones*'"') + ones*0x7f) & ((low ^ ones*'\\') + ones*0x7f)
	return (^plain | x) & highs
}

// twoByteSequences marks both bytes of the valid two-byte UTF-8 sequences wholly in x: a lead byte 0xc2 to
// 0xdf (110xxxxx, not 0xc0 or 0xc1) then a continuation byte 0x80 to 0xbf (10xxxxxx). Skipping them as
// plain is sound: a scan stops at the first byte that is neither ASCII nor in such a sequence, so one it
// skips follows only ASCII and other such sequences, and starts a character.
func twoByteSequences(x uint64) uint64 {
	cont := x &^ (x << 1)
	lead := x & (x << 1) &^ (x << 2) & ((x & (ones * 0x1e)) + ones*0x7f)
	pair := lead & (cont >> 8) & highs
	return pair | pair<<8
}

// utf8Len is the length of the UTF-8 sequence starting at src[i] (non-ASCII), or 0 where utf8.DecodeRune
// would find none (bad or truncated sequences, overlong forms, surrogates, beyond U+10FFFF). Two-byte
// sequences are checked first: accented Latin, Greek, Cyrillic, Hebrew and Arabic text are made of them.
func utf8Len(src []byte, i int) int {
	c := src[i]
	if c >= 0xC2 && c < 0xE0 {
		if i+1 < len(src) && src[i+1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	}
	if c >= 0xE0 && c < 0xF0 {
		if i+2 >= len(src) {
			return 0
		}
		lo, hi := byte(0x80), byte(0xBF)
		switch c {
		case 0xE0:
			lo = 0xA0 // shorter forms are overlong
		case 0xED:
			hi = 0x9F // U+D800 to U+DFFF are surrogates
		}
		if b := src[i+1]; b < lo || b > hi || src[i+2]&0xC0 != 0x80 {
			return 0
		}
		return 3
	}
	r, size := utf8.DecodeRune(src[i:])
	if r == utf8.RuneError && size <= 1 {
		return 0
	}
	return size
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// scanNumber validates the number starting at src[i] ('-' or a digit).
func scanNumber(src []byte, i int) (int, error) {
	start := i
	if src[i] == '-' {
		i++
	}
	if i < len(src) && src[i] == '0' {
		i++
	} else {
		j := i
		for i < len(src) && src[i]-'0' <= 9 {
			i++
		}
		if i == j {
			return 0, syntaxErr(start, "invalid number")
		}
	}
	if i < len(src) && src[i] == '.' {
		i++
		j := i
		for i < len(src) && src[i]-'0' <= 9 {
			i++
		}
		if i == j {
			return 0, syntaxErr(start, "invalid number")
		}
	}
	if i < len(src) && src[i]|0x20 == 'e' {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := i
		for i < len(src) && src[i]-'0' <= 9 {
			i++
		}
		if i == j {
			return 0, syntaxErr(start, "invalid number")
		}
	}
	return i, nil
}

func scanLiteral(src []byte, i int, lit string) (int, error) {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return 0, syntaxErr(i, "invalid literal: expected %s", lit)
	}
	return i + len(lit), nil
}

// Skim locates the top-level members of a JSON object without validating the values: strings are skipped
// 8 bytes at a time up to a quote or a backslash, and containers by counting brackets. It serves answers from
// providers (SSE events), where only a few top-level keys are read or replaced and the rest is copied as it
// came; a client request is validated once by Members, and a part of it already validated may be Skimmed. Malformed input fails with an error or yields
// members whose bytes are copied back unchanged, never a panic. limit bounds the members as in Members.
func Skim(src []byte, dst []Member, limit int) ([]Member, error) {
	i := skipSpace(src, 0)
	if i >= len(src) || src[i] != '{' {
		return dst, syntaxErr(i, "expected a JSON object")
	}
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return dst, nil
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return dst, unexpected(src, i, "an object key")
		}
		keyStart := i
		keyEnd, escaped := skimString(src, i)
		if keyEnd < 0 {
			return dst, syntaxErr(i, "unterminated string")
		}
		i = skipSpace(src, keyEnd)
		if i >= len(src) || src[i] != ':' {
			return dst, unexpected(src, i, "':' after an object key")
		}
		valStart := skipSpace(src, i+1)
		valEnd := SkimValue(src, valStart)
		if valEnd <= valStart {
			return dst, unexpected(src, valStart, "a value")
		}
		if limit > 0 && len(dst) == limit {
			// No provider event has that many keys; the table stays bounded whatever one sends.
			return dst, ErrTooManyMembers
		}
		opcount.Add(opcount.MembersVisited, 1)
		dst = append(dst, Member{keyStart, keyEnd, valStart, valEnd, escaped})
		i = skipSpace(src, valEnd)
		if i >= len(src) {
			return dst, unexpected(src, i, "',' or '}'")
		}
		switch src[i] {
		case ',':
			i = skipSpace(src, i+1)
		case '}':
			return dst, nil
		default:
			return dst, unexpected(src, i, "',' or '}'")
		}
	}
}

// skimString returns the offset after the string starting at src[i] == '"', or -1 if it does not end, and
// whether it holds a backslash. A backslash skips the byte after it, so the string ends at the first quote
// after an even run of backslashes.
func skimString(src []byte, i int) (end int, escaped bool) {
	i++
	for {
		opcount.Add(opcount.StepsTaken, 1) // 8 bytes, or one stop in them
		if i+8 > len(src) {
			return skimStringBytes(src, i, escaped)
		}
		x := binary.LittleEndian.Uint64(src[i:])
		m := zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\'))
		if m == 0 {
			i += 8
			continue
		}
		if i += bits.TrailingZeros64(m) >> 3; src[i] == '"' {
			return i + 1, escaped
		}
		escaped = true
		i += 2
	}
}

// StringEnd returns the offset after the JSON string starting at src[i] == '"', or -1 if it does not end, and
// whether it holds a backslash, without validating it (Skim's reading of a string): eight bytes at a time.
func StringEnd(src []byte, i int) (end int, escaped bool) { return skimString(src, i) }

// SkipSpace returns the offset of the first byte at or after i that is not JSON whitespace.
func SkipSpace(src []byte, i int) int { return skipSpace(src, i) }

// skimStringBytes is skimString from src[i] on, one byte at a time, for the last bytes of the input.
func skimStringBytes(src []byte, i int, escaped bool) (end int, esc bool) {
	for ; i < len(src); i++ {
		opcount.Add(opcount.StepsTaken, 1)
		switch src[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			i++
		}
	}
	return -1, escaped
}

// SkimValue returns the offset after the value starting at src[i], or -1 for a string or container that
// does not end, without validating it (Skim's reading of a member's value).
func SkimValue(src []byte, i int) int {
	if i >= len(src) {
		return -1
	}
	switch src[i] {
	case '"':
		end, _ := skimString(src, i)
		return end
	case '{', '[':
		depth := 0
		for {
			opcount.Add(opcount.StepsTaken, 1) // 8 bytes, or one stop in them
			// Up to the next quote or bracket, 8 bytes at a time: '[' and ']' are '{' and '}' with
			// bit 5 clear.
			if i+8 > len(src) {
				return skimContainerBytes(src, i, depth)
			}
			x := binary.LittleEndian.Uint64(src[i:])
			y := x | ones*0x20
			m := zeroBytes(x^(ones*'"')) | zeroBytes(y^(ones*'{')) | zeroBytes(y^(ones*'}'))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			switch src[i] {
			case '"':
				if i, _ = skimString(src, i); i < 0 {
					return -1
				}
			case '{', '[':
				depth++
				i++
			default:
				i++
				if depth--; depth == 0 {
					return i
				}
			}
		}
	}
	j := i
	for j < len(src) && src[j] != ',' && src[j] != '}' && src[j] != ']' && !isSpace(src[j]) {
		j++
	}
	opcount.Add(opcount.StepsTaken, j-i+1)
	return j
}

// skimContainerBytes is SkimValue's container loop from src[i] on, depth brackets deep, one byte at a
// time, for the last bytes of the input.
func skimContainerBytes(src []byte, i, depth int) int {
	for ; i < len(src); i++ {
		opcount.Add(opcount.StepsTaken, 1)
		switch src[i] {
		case '"':
			end, _ := skimString(src, i)
			if end < 0 {
				return -1
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// AppendString appends s as a JSON string literal. Invalid UTF-8 becomes U+FFFD so the output is always
// valid JSON, whatever an upstream sent.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; ; {
		// The bytes that need no escaping are copied as they are, in one append.
		j := i + plainPrefix(s[i:])
		b = append(b, s[i:j]...)
		if j == len(s) {
			return append(b, '"')
		}
		switch c := s[j]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			r, size := utf8.DecodeRuneInString(s[j:])
			switch {
			case r == 0x2028 || r == 0x2029:
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			case r == utf8.RuneError && size == 1:
				b = utf8.AppendRune(b, r)
			default:
				b = append(b, s[j:j+size]...) // valid UTF-8 is written as it came
			}
			i = j + size
			continue
		}
		i = j + 1
	}
}

// plainPrefix is the length of s's longest prefix that needs no escaping inside a JSON string: printable
// ASCII but quote and backslash, and two-byte UTF-8 sequences (valid, and not U+2028 or U+2029), which
// AppendString would write as they are.
func plainPrefix(s string) int {
	i := 0
	for i+8 <= len(s) {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if m := asciiStops(x) &^ twoByteSequences(x); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(s) && stringSafe[s[i]] {
		i++
	}
	return i
}

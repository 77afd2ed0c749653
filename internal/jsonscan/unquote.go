package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// AppendUnquoted appends the value of the JSON string literal lit (its quotes included) to dst, decoded
// exactly as encoding/json decodes it into a Go string, and reports whether lit is one well-formed literal
// (with dst unchanged when it is not). It is the filter's one string decoder: a name the filter routes on,
// allows, refuses, compares or moves into a header must be read as the provider's parser will read it, or a
// client could show the filter one name and the provider another. gjson differs: after a lone surrogate it
// swallows the escape that follows ("a\ud800\u002db" is "a\uFFFDb" to gjson, "a\uFFFD-b" to encoding/json).
//
// encoding/json's reading, which this follows:
//   - \uXXXX of a high surrogate followed by \uXXXX of a low one is the pair's character; a surrogate not in
//     such a pair (lone, reversed, or followed by anything else) is U+FFFD, and what follows it is decoded on
//     its own, a following escape included;
//   - a byte that does not start valid UTF-8 (a stray continuation byte, a truncated or overlong sequence, an
//     encoded surrogate) is U+FFFD each; the scanner (Valid, Members) rejects such strings, so a validated
//     literal has none, but an unvalidated one (Skim's keys) is decoded as encoding/json would;
//   - an unescaped quote or control character inside, a backslash before anything but " \ / b f n r t or u
//     and four hex digits, or a missing quote at either end: not a literal (false).
//
// It makes one pass over lit, without recursion, and allocates only to grow dst (by at most three bytes per
// byte of lit: U+FFFD for a bad byte).
func AppendUnquoted(dst, lit []byte) ([]byte, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return dst, false
	}
	start := len(dst)
	s := lit[1 : len(lit)-1]
	for i := 0; ; {
		// Printable ASCII and valid two-byte sequences decode to themselves: copied in one append.
		j := i + plainPrefix(unsafe.String(unsafe.SliceData(s[i:]), len(s)-i))
		dst = append(dst, s[i:j]...)
		if j == len(s) {
			return dst, true
		}
		switch c := s[j]; {
		case c == '\\':
			if j+1 == len(s) {
				return dst[:start], false
			}
			i = j + 2
			switch e := s[j+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hexEscape(s, j)
				if r < 0 {
					return dst[:start], false
				}
				i = j + 6
				if utf16.IsSurrogate(r) {
					// Only a high surrogate then a low one make a character; anything else is U+FFFD, and the
					// next escape is left for the next turn of the loop.
					if pair := utf16.DecodeRune(r, hexEscape(s, i)); pair != utf8.RuneError {
						r = pair
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst[:start], false
			}
		case c < 0x80: // a quote or a control character
			return dst[:start], false
		default:
			r, size := utf8.DecodeRune(s[j:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[j:j+size]...)
			}
			i = j + size
		}
	}
}

// hexEscape is the code unit of the \uXXXX escape at s[i], or -1 if there is none there.
func hexEscape(s []byte, i int) rune {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

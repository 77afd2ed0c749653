package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// nested is depth levels of open, then inner, then the matching closes.
func nested(open, inner, closing string, depth int) []byte {
	return []byte(strings.Repeat(open, depth) + inner + strings.Repeat(closing, depth))
}

func TestValid(t *testing.T) {
	const deep = 1_000_000
	tests := []struct {
		name string
		in   []byte
		want bool
	}{
		{"empty object", []byte(`{}`), true},
		{"empty array", []byte(`[]`), true},
		{"object with whitespace around", []byte(" \t\r\n{\"a\":[1,-2.5e+3,true,false,null,\"x\"]} \n"), true},
		{"string", []byte(`"a\"b\\c\u00e9\ud83d\ude00"`), true},
		{"lone surrogate escape", []byte(`"\ud800"`), true},
		{"number", []byte(`-0.5E-7`), true},
		{"literal", []byte(` null `), true},
		{"empty input", nil, false},
		{"only whitespace", []byte(" \n\t "), false},
		{"two values", []byte(`{} {}`), false},
		{"trailing data", []byte(`{"a":1}x`), false},
		{"trailing comma in array", []byte(`[1,]`), false},
		{"trailing comma in object", []byte(`{"a":1,}`), false},
		{"leading zero", []byte(`01`), false},
		{"bare fraction point", []byte(`1.`), false},
		{"truncated literal", []byte(`nul`), false},
		{"truncated escape", []byte(`"a\u00"`), false},
		{"control character in string", []byte("\"a\x01b\""), false},
		{"form feed is not JSON whitespace", []byte("\f1"), false},
		{"unquoted key", []byte(`{a:1}`), false},
		{"invalid UTF-8 in a string (RFC 8259)", []byte("\"\xff\""), false},
		{"arrays at the depth limit", nested("[", "", "]", MaxDepth), true},
		{"arrays one past the limit", nested("[", "", "]", MaxDepth+1), false},
		{"objects at the depth limit", nested(`{"a":`, "1", "}", MaxDepth), true},
		{"objects one past the limit", nested(`{"a":`, "1", "}", MaxDepth+1), false},
		{"mixed at the depth limit", nested(`[{"a":`, "1", "}]", MaxDepth/2), true},
		{"mixed one past the limit", nested(`[{"a":`, "[]", "}]", MaxDepth/2), false},
		{"a million open arrays", bytes.Repeat([]byte("["), deep), false},
		{"a million balanced arrays", nested("[", "", "]", deep), false},
		{"a million open objects", bytes.Repeat([]byte(`{"a":`), deep), false},
	}
	for _, tt := range tests {
		if got := Valid(tt.in); got != tt.want {
			t.Errorf("%s: Valid = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzValid: Valid agrees with encoding/json.Valid on every input whose nesting is within
// MaxDepth and whose bytes are UTF-8; deeper valid JSON is refused, and so are strings of invalid UTF-8
// (RFC 8259), which encoding/json lets through. It never panics.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `[1,{"a":"b\u00e9"},null,true,-1.5e3]`, ` "x" `, `{"a":1,}`, `[`, "\"\xff\"",
		`{"a":[[[]]]}`, string(nested("[", "", "]", MaxDepth)), string(nested("[", "", "]", MaxDepth+1)),
		"\f{}", `1 2`, `"\ud83d"`, `{"a"}`, `01`, `1e`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := Valid(b), json.Valid(b)
		switch {
		case got && !want:
			t.Fatalf("Valid accepted what encoding/json refuses: %q", b)
		case got == want:
		case !utf8.Valid(b):
			// encoding/json accepts invalid UTF-8 in strings; RFC 8259 and Valid do not.
		case nestingDepth(b) > MaxDepth:
			// Too deep for Valid, whatever encoding/json says.
		default:
			t.Fatalf("Valid = %v, encoding/json.Valid = %v: %q", got, want, b)
		}
		if got && nestingDepth(b) > MaxDepth {
			t.Fatalf("Valid accepted %d levels: %q", nestingDepth(b), b)
		}
	})
}

// nestingDepth is the deepest bracket nesting of b outside strings (exact for valid JSON).
func nestingDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// FuzzSkimMatchesScan: on every valid JSON object, the non-validating skim used for provider answers finds
// exactly the members the validating scan finds; on anything else it fails or copies, never panics.
func FuzzSkimMatchesScan(f *testing.F) {
	f.Add([]byte(`{"id":"a","object":"chat.completion","choices":[{"delta":{"content":"x\"}]{"}}],"usage":null}`))
	f.Add([]byte(`{"a\\"b":"\\\\","n":-1.5e3,"t":true,"o":{"p":[1,{"q":"]"}]}}`))
	f.Add([]byte(`{"unterminated":"abc`))
	f.Fuzz(func(t *testing.T, data []byte) {
		scanned, err := Members(data, nil, 0)
		skimmed, skimErr := Skim(data, nil, 0)
		if err != nil {
			return
		}
		if skimErr != nil {
			t.Fatalf("skim refused a valid object: %v", skimErr)
		}
		if len(scanned) != len(skimmed) {
			t.Fatalf("skim found %d members, scan %d", len(skimmed), len(scanned))
		}
		for i := range scanned {
			if scanned[i] != skimmed[i] {
				t.Fatalf("member %d: skim %+v, scan %+v", i, skimmed[i], scanned[i])
			}
		}
	})
}

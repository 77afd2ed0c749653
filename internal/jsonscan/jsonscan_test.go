package jsonscan

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
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

// TestMillionDeepWithoutRecursion: inputs nested 1,000,000 levels deep (arrays, objects, both, balanced or
// left open, as a lone value and as a member's value) go through Check, Valid, Members and Skim on a
// goroutine whose stack may not grow past 256 KiB, where a recursion per level of the input would end the
// test binary ("stack overflow"), as in a wasm VM it is a trap. The answers are the reference's (its
// recursion stops at MaxDepth), and Skim, which does not bound the depth, spans the whole deep value.
func TestMillionDeepWithoutRecursion(t *testing.T) {
	const deep = 1_000_000
	type answer struct {
		off                int
		err, refErr        string
		members, refMember []Member
		mErr, refMErr      string
		skim, refSkimmed   []Member
		sErr, refSErr      string
	}
	inputs := map[string][]byte{
		"open arrays":                   bytes.Repeat([]byte("["), deep),
		"balanced arrays":               nested("[", "", "]", deep),
		"open objects":                  bytes.Repeat([]byte(`{"a":`), deep),
		"balanced objects with strings": nested(`{"a\"":`, `"x"`, "}", deep),
		"mixed":                         nested(`[{"k":`, `[]`, "}]", deep/2),
	}
	answers := map[string]answer{}
	old := debug.SetMaxStack(256 << 10)
	defer debug.SetMaxStack(old)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, in := range inputs {
			for _, wrap := range []string{"", "member"} {
				src := in
				if wrap != "" {
					src = append(append([]byte(`{"v":`), in...), '}')
				}
				var a answer
				var err error
				a.off, err = Check(src)
				a.err = errText(err)
				refOff, refErr := refCheck(src)
				a.refErr = errText(refErr)
				if refOff != a.off || Valid(src) != (err == nil) {
					a.refErr += " (offsets or Valid differ)"
				}
				a.members, err = Members(src, nil, 0)
				a.mErr = errText(err)
				a.refMember, err = refMembers(src, nil, 0)
				a.refMErr = errText(err)
				a.skim, err = Skim(src, nil, 0)
				a.sErr = errText(err)
				a.refSkimmed, err = refSkim(src, nil, 0)
				a.refSErr = errText(err)
				answers[name+" "+wrap] = a
			}
		}
	}()
	<-done
	for name, a := range answers {
		if a.err == "<nil>" || a.err != a.refErr || a.mErr != a.refMErr || !sameMembers(a.members, a.refMember) ||
			a.sErr != a.refSErr || !sameMembers(a.skim, a.refSkimmed) {
			t.Errorf("%s: Check %d %s (reference %s); Members %v %s (reference %v %s); Skim %v %s (reference %v %s)",
				name, a.off, a.err, a.refErr, a.members, a.mErr, a.refMember, a.refMErr, a.skim, a.sErr, a.refSkimmed, a.refSErr)
		}
	}
	for _, name := range []string{"balanced arrays member", "balanced objects with strings member", "mixed member"} {
		in := inputs[strings.TrimSuffix(name, " member")]
		if want := []Member{{1, 4, 5, 5 + len(in), false}}; !sameMembers(answers[name].skim, want) {
			t.Errorf("%s: Skim = %v, want %v", name, answers[name].skim, want)
		}
	}
}

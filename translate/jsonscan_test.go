package translate

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// nested is depth levels of open, then inner, then the matching closes.
func nested(open, inner, closing string, depth int) []byte {
	return []byte(strings.Repeat(open, depth) + inner + strings.Repeat(closing, depth))
}

func TestValidJSON(t *testing.T) {
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
		{"arrays at the depth limit", nested("[", "", "]", maxJSONDepth), true},
		{"arrays one past the limit", nested("[", "", "]", maxJSONDepth+1), false},
		{"objects at the depth limit", nested(`{"a":`, "1", "}", maxJSONDepth), true},
		{"objects one past the limit", nested(`{"a":`, "1", "}", maxJSONDepth+1), false},
		{"mixed at the depth limit", nested(`[{"a":`, "1", "}]", maxJSONDepth/2), true},
		{"mixed one past the limit", nested(`[{"a":`, "[]", "}]", maxJSONDepth/2), false},
		{"a million open arrays", bytes.Repeat([]byte("["), deep), false},
		{"a million balanced arrays", nested("[", "", "]", deep), false},
		{"a million open objects", bytes.Repeat([]byte(`{"a":`), deep), false},
	}
	for _, tt := range tests {
		if got := ValidJSON(tt.in); got != tt.want {
			t.Errorf("%s: ValidJSON = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// withStackLimit runs f on its own goroutine, whose stack may not grow past limit bytes: a recursion as deep
// as its input is then a fatal "stack overflow" that ends the test binary, as in a wasm VM it is a trap that
// ends the VM (where V8 traps after about 10,000 nested Go calls).
func withStackLimit(limit int, f func()) {
	old := debug.SetMaxStack(limit)
	defer debug.SetMaxStack(old)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// Every reader of client or upstream bytes gets a hostile nesting (900,000 levels) with a stack too small
// for a recursion per level: the bounded scanner refuses it at maxJSONDepth, and the gjson readers used on
// such bytes (GetBytes, Get, ForEach, Array, ParseBytes, String) skip nested values with loops. The old
// gjson.ValidBytes used to reject error bodies recursed once per level.
func TestDeepInputsRunInABoundedStack(t *testing.T) {
	const depth = 900_000 // under the 1 MiB event bound, so the stream test reaches the end-of-stream check
	arrays := bytes.Repeat([]byte("["), depth)
	objects := bytes.Repeat([]byte(`{"a":`), depth)
	inError := append([]byte(`{"error":{"message":"m","type":"t","param":null,"code":"c","x":`), arrays...)
	bodies := map[string][]byte{"arrays": arrays, "objects": objects, "inside an error envelope": inError,
		"balanced": nested("[", "", "]", depth)}
	withStackLimit(1<<20, func() {
		for name, body := range bodies {
			if ValidJSON(body) {
				t.Errorf("%s: ValidJSON accepted %d levels", name, depth)
			}
			var b RequestBody
			if b.Parse(body) == nil {
				t.Errorf("%s: Parse accepted %d levels", name, depth)
			}
			for _, client := range Dialects {
				for _, provider := range Dialects {
					if status, out := TranslateError(client, provider, 400, body); status != 400 || !ValidJSON(out) {
						t.Errorf("%s: TranslateError(%s, %s) = %d %q", name, client, provider, status, out)
					}
				}
			}
			if _, _, _, err := TranslateJSON(nil, &Exchange{Client: OpenAI, Provider: EternalAI}, body); err == nil {
				t.Errorf("%s: TranslateJSON accepted %d levels", name, depth)
			}
			for _, x := range []Exchange{{Client: OpenAI, Provider: OpenAI}, {Client: OpenAI, Provider: AzureAI, Tools: true}} {
				s := NewStreamTranslator(x, 0)
				// Within the event bound: 180,000 to 900,000 open levels.
				stream := append(append([]byte("data: "), body[:min(len(body), depth)]...), "\n\n"...)
				if _, err := s.Write(stream[:len(stream)-2]); err != nil { // the last event, cut: Close judges it
					t.Fatal(err)
				}
				s.Close()
				if !s.Truncated() {
					t.Errorf("%s: a stream ending in %d open levels is not reported as cut", name, depth)
				}
				s.Reset(x, 0)
				if _, err := s.Write(stream); err != nil {
					t.Fatal(err)
				}
				s.Close()
				sinkBool = s.Usage().Seen
			}
			// The gjson readers on raw upstream bytes (as in finished, ReadUsage and indexToolCalls).
			root := gjson.ParseBytes(body)
			sinkBool = gjson.GetBytes(body, "error.message").Exists() || gjson.GetBytes(body, "0.0.0.0").Exists() ||
				gjson.GetBytes(body, "a.a.a.a.a").Exists() || root.Get("choices").Exists()
			for _, v := range root.Array() {
				sinkBool = v.Get("finish_reason").String() != "" || len(v.Array()) > 0
			}
			root.ForEach(func(k, v gjson.Result) bool {
				v.ForEach(func(_, w gjson.Result) bool { sinkBool = w.String() != ""; return true })
				return true
			})
			sinkBool = root.String() != "" && ReadUsage(body).Seen
		}
	})
}

// FuzzValidJSON: ValidJSON agrees with encoding/json.Valid on every input whose nesting is within
// maxJSONDepth and whose bytes are UTF-8; deeper valid JSON is refused, and so are strings of invalid UTF-8
// (RFC 8259), which encoding/json lets through. It never panics.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,{"a":"b\u00e9"},null,true,-1.5e3]`, ` "x" `, `{"a":1,}`, `[`, "\"\xff\"",
		`{"a":[[[]]]}`, string(nested("[", "", "]", maxJSONDepth)), string(nested("[", "", "]", maxJSONDepth+1)),
		"\f{}", `1 2`, `"\ud83d"`, `{"a"}`, `01`, `1e`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := ValidJSON(b), json.Valid(b)
		switch {
		case got && !want:
			t.Fatalf("ValidJSON accepted what encoding/json refuses: %q", b)
		case got == want:
		case !utf8.Valid(b):
			// encoding/json accepts invalid UTF-8 in strings; RFC 8259 and ValidJSON do not.
		case nestingDepth(b) > maxJSONDepth:
			// Too deep for ValidJSON, whatever encoding/json says.
		default:
			t.Fatalf("ValidJSON = %v, encoding/json.Valid = %v: %q", got, want, b)
		}
		if got && nestingDepth(b) > maxJSONDepth {
			t.Fatalf("ValidJSON accepted %d levels: %q", nestingDepth(b), b)
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

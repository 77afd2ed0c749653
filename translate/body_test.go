package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// objectOf is a JSON object of the given keys, written as they are (escapes included), with string values.
func objectOf(keys ...string) []byte {
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `"%s":"v"`, k)
	}
	return append(b, '}')
}

// fillers are n keys unlike any test key.
func fillers(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "filler-" + strconv.Itoa(i)
	}
	return keys
}

func TestDuplicateKeys(t *testing.T) {
	long := strings.Repeat("p", 2<<10)
	sharedPrefix := func(n int, last string) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s%05d", long, i)
		}
		return append(keys, last)
	}
	const accepted = "\x00accepted" // no key of the table
	tests := []struct {
		name string
		keys []string
		dup  string // the decoded key refused, or accepted
	}{
		{"model twice", []string{"model", "model"}, "model"},
		{"escaped, then plain", []string{`mo\u0064el`, "model"}, "model"},
		{"plain, then escaped", []string{"model", `mo\u0064el`}, "model"},
		{"escaped two ways", []string{`\u006dodel`, `mo\u0064el`}, "model"},
		{"escaped slash", []string{`a\/b`, "a/b"}, "a/b"},
		{"escaped quote two ways", []string{`a\"b`, `a\u0022b`}, `a"b`},
		{"accented letters escaped", []string{`\u00e9t\u00e9`, "été"}, "été"},
		{"surrogate pair", []string{`\ud83d\ude00`, "😀"}, "😀"},
		// After a lone surrogate the next escape is read on its own (encoding/json); gjson swallowed it, so
		// these two were different keys to the filter and one to the provider.
		{"lone surrogate, then an escape or its letter", []string{`\ud800\u0041`, `\ud800A`}, "\uFFFDA"},
		{"lone surrogate, then two different escapes", []string{`\ud800\u0041`, `\ud800\u0042`}, accepted},
		{"mismatched pair, then the same text", []string{`\udc00\ud800x`, "\uFFFD\uFFFDx"}, "\uFFFD\uFFFDx"},
		{"empty key twice", []string{"", ""}, ""},
		{"the first repeat is reported", []string{"b", "a", "a", "b"}, "a"},
		{"case differs", []string{"Foo", "foo"}, accepted},
		{"one key prefixes another", []string{"model", "model_x"}, accepted},
		{"newline and backslash-n", []string{`a\nb`, `a\\nb`}, accepted},
		{"long shared prefixes, all different", sharedPrefix(300, "x"), accepted},
		{"long shared prefixes, last one repeated", sharedPrefix(300, long+"00007"), long + "00007"},
		{"long shared prefixes, last one escaped", sharedPrefix(300, long+`0000\u0037`), long + "00007"},
	}
	for _, tt := range tests {
		// Alone, and behind fillers (in a bigger key table, whose probes pass over more keys).
		for _, pad := range []int{0, 40, 600} {
			keys := append(fillers(pad), tt.keys...)
			var b RequestBody
			err := b.Parse(objectOf(keys...))
			switch {
			case tt.dup == accepted && err != nil:
				t.Errorf("%s (%d fillers): refused: %v", tt.name, pad, err)
			case tt.dup != accepted && err == nil:
				t.Errorf("%s (%d fillers): the repeated key %q was accepted", tt.name, pad, tt.dup)
			case tt.dup != accepted && (err.Param != tt.dup || !strings.Contains(err.Message, "more than once")):
				t.Errorf("%s (%d fillers): got %q (param %q), want the repeated key %q", tt.name, pad, err.Message, err.Param, tt.dup)
			}
		}
	}
}

// TestParseReadsNamesAsEncodingJSON: the names Parse reads (the model, the chain id, escaped keys) are
// what encoding/json, the provider's kind of parser, reads. gjson swallowed the escape after a lone
// surrogate: "gpt-4o\ud800\u002dmini" was "gpt-4o\uFFFDmini" to the filter, "gpt-4o\uFFFD-mini" upstream.
func TestParseReadsNamesAsEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"model, lone surrogate then an escaped hyphen", `{"model":"gpt-4o\ud800\u002dmini"}`},
		{"model, lone low surrogate then an escape", `{"model":"gpt-4o\udc00\u0041"}`},
		{"model, reversed pair", `{"model":"a\udc00\ud800b"}`},
		{"model, high surrogate then a high and low pair", `{"model":"\ud800\ud83d\ude00"}`},
		{"model, pair", `{"model":"\ud83d\ude00"}`},
		{"model, every simple escape", `{"model":"\"\\\/\b\f\n\r\t"}`},
		{"escaped key", `{"mo\u0064el":"gpt-4o\ud800\u002dmini"}`},
		{"chain id", `{"chain_id":"45\ud800\u0037"}`},
	}
	for _, tt := range tests {
		var want struct {
			Model   string `json:"model"`
			ChainID string `json:"chain_id"`
		}
		if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", tt.name, err)
		}
		var b RequestBody
		if err := b.Parse([]byte(tt.body)); err != nil {
			t.Errorf("%s: refused: %v", tt.name, err)
			continue
		}
		if b.Model != want.Model || b.ChainID != want.ChainID {
			t.Errorf("%s: read model %q, chain_id %q; encoding/json reads %q, %q", tt.name, b.Model, b.ChainID,
				want.Model, want.ChainID)
		}
	}
}

func TestTopLevelMemberCap(t *testing.T) {
	many := func(n int, last string) []byte {
		return objectOf(append(fillers(n-1), last)...)
	}
	tooMany := "the request body has more than " + strconv.Itoa(maxTopLevelMembers) + " top-level fields"
	tests := []struct {
		name string
		body []byte
		want string // the error message, "" when accepted
	}{
		{"at the cap", many(maxTopLevelMembers, "last"), ""},
		{"at the cap, the last key repeated", many(maxTopLevelMembers, "filler-7"),
			`the request body has the field "filler-7" more than once: send each field once`},
		{"one over the cap", many(maxTopLevelMembers+1, "last"), tooMany},
		{"far over the cap", many(100_000, "last"), tooMany},
		{"far over the cap, every key the same", []byte("{" + strings.Repeat(`"a":1,`, 100_000) + `"a":1}`), tooMany},
		{"over the cap, then broken", []byte("{" + strings.Repeat(`"a":1,`, 100_000) + `"a":`), tooMany},
	}
	var b RequestBody
	for _, tt := range tests {
		err := b.Parse(tt.body)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || err.Message != tt.want || err.Code != ErrInvalidJSON):
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
		// The scan stops at the cap: the member table never holds more (the old one grew to every member).
		if len(b.members) > maxTopLevelMembers || cap(b.members) > 2*maxTopLevelMembers {
			t.Errorf("%s: the member table grew to %d entries (capacity %d)", tt.name, len(b.members), cap(b.members))
		}
	}
	if err := b.Parse(chatBody(1 << 10)); err != nil {
		t.Errorf("a reused body refuses a chat request: %v", err)
	}
}

// The key table starts each Parse empty (keys of the last body would collide with the next body's), never
// grows past 2*maxTopLevelMembers slots, and costs no allocation once warm, whatever the number of keys up to
// the cap. Checked to fail before the table: the map of a body over 256 keys was allocated per body (an
// allocation per Parse of maxTopLevelMembers keys, and its growth).
func TestKeyTableIsClearedAndBounded(t *testing.T) {
	var b RequestBody
	for _, n := range []int{8, 64, maxTopLevelMembers} {
		keys := fillers(n)
		body := objectOf(keys...)
		withDup := objectOf(append(keys[:len(keys)-1:len(keys)-1], keys[3])...)
		for i, step := range []struct {
			body []byte
			ok   bool
		}{{body, true}, {body, true}, {withDup, false}, {body, true}, {objectOf(keys[:5]...), true}, {body, true}} {
			if err := b.Parse(step.body); (err == nil) != step.ok {
				t.Fatalf("%d keys, step %d: %v", n, i, err)
			}
		}
		if allocs := testing.AllocsPerRun(20, func() { b.Parse(body) }); allocs != 0 {
			t.Errorf("Parse of %d keys allocates %.1f times, want 0", n, allocs)
		}
		if got := cap(b.keys.slots); got > 2*maxTopLevelMembers {
			t.Errorf("%d keys: the key table grew to %d slots", n, got)
		}
	}
}

// FuzzDuplicateKeys: Parse refuses a body for a repeated key exactly when a naive comparison of the decoded
// top-level keys (by encoding/json) finds one, and names the first repeat. data is parsed as it is, and also
// split on NUL into keys written with escapes chosen by modes, so that escaped twins are frequent.
func FuzzDuplicateKeys(f *testing.F) {
	f.Add([]byte(`{"model":"a","mo\u0064el":"b"}`), []byte{0})
	f.Add([]byte("model\x00mode\x00model"), []byte{1, 2, 0})
	f.Add([]byte("a/b\x00a\\/b\x00\U0001F600\x00é\x00"+strings.Repeat("x\x00", 20)+"\U0001F600"), []byte{2, 1, 0, 1})
	f.Add([]byte(`{"a":1,"b":{"a":2},"\u0061":3}`), []byte{})
	f.Add([]byte(`{"\ud800\u0041":1,"\ud800A":2,"\ud800\u0042":3,"\udc00\ud800\udc00":4,"\ud83d\ude00":5}`), []byte{})
	f.Fuzz(func(t *testing.T, data, modes []byte) {
		checkDuplicateVerdict(t, data)
		if len(modes) == 0 {
			return
		}
		parts := strings.Split(strings.ToValidUTF8(string(data), "?"), "\x00")
		if len(parts) > 200 {
			parts = parts[:200]
		}
		b := []byte{'{'}
		for i, key := range parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(b, key, modes[i%len(modes)])
			if key == "model" {
				b = append(b, `:"m"`...) // the one field null would not suit
			} else {
				b = append(b, ":null"...)
			}
		}
		b = append(b, '}')
		if !checkDuplicateVerdict(t, b) {
			t.Fatalf("the keys' body is not valid: %q", b)
		}
	})
}

// appendKey writes key as a JSON string: minimally escaped (mode%3 == 0), every UTF-16 unit as \uXXXX (1),
// or only its first character (2).
func appendKey(b []byte, key string, mode byte) []byte {
	escape := func(b []byte, r rune) []byte {
		for _, u := range utf16.Encode([]rune{r}) {
			b = fmt.Appendf(b, `\u%04x`, u)
		}
		return b
	}
	switch mode % 3 {
	case 1:
		b = append(b, '"')
		for _, r := range key {
			b = escape(b, r)
		}
		return append(b, '"')
	case 2:
		if r, size := utf8.DecodeRuneInString(key); size > 0 {
			b = append(escape(append(b, '"'), r), jsonscan.AppendString(nil, key[size:])[1:]...)
			return b
		}
	}
	return jsonscan.AppendString(b, key)
}

// checkDuplicateVerdict parses body and checks Parse's verdict on repeated keys against the reference; it
// reports whether body is a valid object, the only case with a verdict to check.
func checkDuplicateVerdict(t *testing.T, body []byte) bool {
	t.Helper()
	if _, err := jsonscan.Members(body, nil, 0); err != nil {
		return false
	}
	keys, ok := referenceKeys(body)
	if !ok {
		t.Fatalf("encoding/json cannot read the keys of a valid object: %q", body)
	}
	first, repeated := "", false
	for i := 0; i < len(keys) && !repeated; i++ {
		for j := 0; j < i; j++ {
			if keys[i] == keys[j] {
				first, repeated = keys[i], true
				break
			}
		}
	}
	var b RequestBody
	err := b.Parse(body)
	refusedForDup := err != nil && strings.Contains(err.Message, "more than once")
	switch {
	case len(keys) > maxTopLevelMembers:
		if err == nil {
			t.Fatalf("%d keys accepted", len(keys))
		}
	case err == nil && repeated:
		t.Fatalf("the repeated key %q was accepted: %q", first, body)
	case refusedForDup && !repeated:
		t.Fatalf("refused for a repeated key %q that encoding/json does not see: %q", err.Param, body)
	case refusedForDup && err.Param != first:
		t.Fatalf("refused for %q, but the first repeat is %q: %q", err.Param, first, body)
	}
	return true
}

// referenceKeys are the decoded top-level keys of a JSON object, by encoding/json.
func referenceKeys(body []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		key, isString := tok.(string)
		if err != nil || !isString {
			return nil, false
		}
		keys = append(keys, key)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
	}
	return keys, true
}

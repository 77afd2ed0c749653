package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// unquoteSeeds are the string bodies (between the quotes) the table and the fuzz target start from: every
// escape, surrogate pairs, lone, reversed and mismatched surrogates followed by each kind of thing, invalid
// UTF-8, and malformed literals.
var unquoteSeeds = []string{
	``, `model`, `gpt-4o`, `mo\u0064el`, `\"\\\/\b\f\n\r\t`, `\u0000\u001f\u007f\u0080\u07ff\u0800\uffff`,
	`\u00e9\u00C9`, `é ü ñ`, `日本語`, `\u2028\u2029`, `😀`, `\ud83d\ude00`, `\uD83D\uDE00`,
	`gpt-4o\ud800\u002dmini`, `\ud800`, `\udfff`, `\ud800x`, `\ud800\u0041`, `\ud800\ud800`, `\ud800\ud800\udc00`,
	`\udc00\ud800`, `\udc00\ud800\udc00`, `\ud800\n`, `\ud800\\`, `\ud800\"`, `\ud800\u00`, `\ud800\uZZZZ`,
	`\ud800\u`, `\ud800\`, `a\ud83d`, `\ud83d\u0020\ude00`, `\uDBFF\uDFFF`, `\uD800\uDC00`,
	"\xff", "a\x80b", "\xc3", "\xc3\x28", "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xef\xbf\xbd",
	`\x`, `\u12`, `\u12G4`, `\`, `a"b`, "a\nb", "\x00", "\x1f", "\x7f",
	strings.Repeat(`\ud800`, 9) + `\u002d`, strings.Repeat("plain text ", 5) + `\ud800\u002d` + strings.Repeat("é", 9),
}

// referenceUnquote is encoding/json's reading of the literal "body" into a string.
func referenceUnquote(body string) (string, bool) {
	var s string
	err := json.Unmarshal([]byte(`"`+body+`"`), &s)
	return s, err == nil
}

// sameAsEncodingJSON fails t where AppendUnquoted reads the literal "body" otherwise than encoding/json.
func sameAsEncodingJSON(t *testing.T, body string) {
	lit := []byte(`"` + body + `"`)
	got, ok := AppendUnquoted([]byte("x"), lit)
	want, wantOK := referenceUnquote(body)
	if ok != wantOK || ok && string(got) != "x"+want || !ok && string(got) != "x" {
		t.Fatalf("AppendUnquoted(%q) = %q, %v; encoding/json %q, %v", lit, got, ok, want, wantOK)
	}
}

func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	for _, body := range unquoteSeeds {
		sameAsEncodingJSON(t, body)
	}
}

func TestAppendUnquoted(t *testing.T) {
	tests := []struct {
		lit    string
		want   string
		wantOK bool
	}{
		{`"gpt-4o"`, "gpt-4o", true},
		// gjson reads "gpt-4o\uFFFDmini": the escaped hyphen after the lone surrogate is lost.
		{`"gpt-4o\ud800\u002dmini"`, "gpt-4o\uFFFD-mini", true},
		{`"mo\u0064el"`, "model", true},
		{`"\ud800\u0041"`, "\uFFFDA", true},
		{`"\ud800\ud800\udc00"`, "\uFFFD\U00010000", true},
		{`"\udc00\ud800"`, "\uFFFD\uFFFD", true},
		{`"\ud83d\ude00"`, "\U0001F600", true},
		{"\"a\xffb\"", "a\uFFFDb", true},
		{`""`, "", true},
		{`"`, "", false},
		{``, "", false},
		{`"abc`, "", false},
		{`abc"`, "", false},
		{`"a\"`, "", false},
		{`"a"b"`, "", false},
		{`"\q"`, "", false},
	}
	for _, tt := range tests {
		got, ok := AppendUnquoted(nil, []byte(tt.lit))
		if string(got) != tt.want || ok != tt.wantOK {
			t.Errorf("AppendUnquoted(%q) = %q, %v; want %q, %v", tt.lit, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestAppendUnquotedAllocs: decoding into a buffer with room allocates nothing.
func TestAppendUnquotedAllocs(t *testing.T) {
	lit := []byte(`"gpt-4o\ud800\u002dmini and some plain text \ud83d\ude00 \u00e9"`)
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendUnquoted(buf[:0], lit) }); n != 0 {
		t.Fatalf("AppendUnquoted allocated %v times per run into a buffer with room", n)
	}
}

// FuzzUnquote checks AppendUnquoted against encoding/json on any string body, and on any input taken as a
// whole literal.
func FuzzUnquote(f *testing.F) {
	for _, body := range unquoteSeeds {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		sameAsEncodingJSON(t, body)
		// The input itself as the literal: where encoding/json takes it with nothing around the string, the
		// two must agree; anything else must be refused.
		got, ok := AppendUnquoted(nil, []byte(body))
		var want string
		wantOK := len(body) >= 2 && body[0] == '"' && body[len(body)-1] == '"' && json.Unmarshal([]byte(body), &want) == nil
		if ok != wantOK || ok && string(got) != want {
			t.Fatalf("AppendUnquoted(%q) = %q, %v; encoding/json %q, %v", body, got, ok, want, wantOK)
		}
	})
}

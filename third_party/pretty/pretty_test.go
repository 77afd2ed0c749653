package pretty

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// goldenCase is one input of testdata/golden.txt with what tidwall/pretty v1.2.0 writes for it.
type goldenCase struct {
	name, input, ugly string
	pretty            []goldenPretty
}

type goldenPretty struct {
	opts Options
	want string
}

// readGolden reads testdata/golden.txt: lines "input NAME JSON", then "ugly OUT", then any number of
// "pretty WIDTH PREFIX INDENT SORTKEYS OUT", strings Go-quoted; '#' starts a comment line.
func readGolden(t *testing.T) []goldenCase {
	t.Helper()
	f, err := os.Open("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []goldenCase
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || text[0] == '#' {
			continue
		}
		word, rest, _ := strings.Cut(text, " ")
		fields := splitQuoted(t, line, rest)
		switch {
		case word == "input" && len(fields) == 2:
			cases = append(cases, goldenCase{name: fields[0], input: fields[1]})
		case word == "ugly" && len(fields) == 1 && len(cases) > 0:
			cases[len(cases)-1].ugly = fields[0]
		case word == "pretty" && len(fields) == 5 && len(cases) > 0:
			width, err1 := strconv.Atoi(fields[0])
			sortKeys, err2 := strconv.ParseBool(fields[3])
			if err1 != nil || err2 != nil {
				t.Fatalf("golden.txt:%d: bad width or sortKeys", line)
			}
			c := &cases[len(cases)-1]
			c.pretty = append(c.pretty, goldenPretty{Options{Width: width, Prefix: fields[1], Indent: fields[2], SortKeys: sortKeys}, fields[4]})
		default:
			t.Fatalf("golden.txt:%d: unexpected line", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// splitQuoted splits s into its space-separated fields, each a Go-quoted string or a bare word.
func splitQuoted(t *testing.T, line int, s string) []string {
	var fields []string
	for s != "" {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				t.Fatalf("golden.txt:%d: %v", line, err)
			}
			u, _ := strconv.Unquote(q)
			fields = append(fields, u)
			s = s[len(q):]
		} else {
			word, rest, _ := strings.Cut(s, " ")
			fields = append(fields, word)
			s = " " + rest
		}
		s = strings.TrimPrefix(s, " ")
	}
	return fields
}

// TestGolden compares Pretty, PrettyOptions and Ugly with tidwall/pretty v1.2.0's outputs, byte for byte.
func TestGolden(t *testing.T) {
	cases := readGolden(t)
	if len(cases) < 100 {
		t.Fatalf("golden.txt has %d inputs", len(cases))
	}
	outputs := 0
	for _, c := range cases {
		in := []byte(c.input)
		if got := string(Ugly(in)); got != c.ugly {
			t.Errorf("%s: Ugly\n got %q\nwant %q", c.name, got, c.ugly)
		}
		for _, g := range c.pretty {
			opts := g.opts
			if got := string(PrettyOptions(in, &opts)); got != g.want {
				t.Errorf("%s: PrettyOptions(%+v)\n got %q\nwant %q", c.name, opts, got, g.want)
			}
			if opts == *DefaultOptions {
				if got := string(Pretty(in)); got != g.want {
					t.Errorf("%s: Pretty\n got %q\nwant %q", c.name, got, g.want)
				}
			}
			outputs++
		}
		if string(in) != c.input {
			t.Errorf("%s: the input was modified", c.name)
		}
	}
	t.Logf("%d inputs, %d outputs", len(cases), outputs)
}

func TestDefaultOptions(t *testing.T) {
	if *DefaultOptions != (Options{Width: 80, Prefix: "", Indent: "  ", SortKeys: false}) {
		t.Fatalf("DefaultOptions = %+v", *DefaultOptions)
	}
}

// TestNoValue: input with no value gives the prefix alone on its line, as tidwall/pretty does.
func TestNoValue(t *testing.T) {
	for _, in := range []string{"", " \n\t", "]}:,"} {
		if got := PrettyOptions([]byte(in), nil); len(got) != 0 {
			t.Errorf("Pretty(%q) = %q", in, got)
		}
		if got := string(PrettyOptions([]byte(in), &Options{Prefix: "> "})); got != "> \n" {
			t.Errorf("Pretty(%q) with a prefix = %q", in, got)
		}
	}
}

// TestInvalid: invalid input gives some output without panicking; what Ugly keeps is what it got, less
// the whitespace outside strings.
func TestInvalid(t *testing.T) {
	inputs := []string{
		`{`, `[`, `{"a"`, `{"a":`, `{"a":}`, `[1,]`, `[,]`, `{,}`, `{"a" 1}`, `{1:2}`, `]`, `}`, `"`, `"\`,
		`"\"`, `[1 2]`, `{"a":1]`, `[{]}`, `tru`, `nul`, `n`, `nan`, `-`, `[-]`, `[NaN, Infinity, -Infinity]`,
		`{"a":1}{"b":2}`, `[[[[`, `{{{{`, `[1,{"a":[2,{"b":`, "\x00\xff", `{"\u12":1,"\ud800\u":2}`,
		`{"a":1,"a":2,"a":"\x","a":"\u00"}`, `["\`, `{"k\`,
	}
	for _, in := range inputs {
		for _, opts := range []*Options{nil, {Width: 1, SortKeys: true}, {Width: 100, Prefix: " ", Indent: ""}} {
			PrettyOptions([]byte(in), opts)
		}
		var want []byte
		for i := range len(in) {
			if in[i] > ' ' {
				want = append(want, in[i])
			}
		}
		if got := Ugly([]byte(in)); !bytes.Equal(got, want) && !strings.Contains(in, `"`) {
			t.Errorf("Ugly(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHostile: shapes that would take a recursive formatter deep into its stack, or a naive one into
// quadratic time, come out holding the same JSON. No time is asserted (a timing flakes on a loaded machine);
// BenchmarkHostile gives each shape's cost, where a quadratic pass shows as a throughput that falls with size.
func TestHostile(t *testing.T) {
	for _, c := range hostileCases() {
		out := PrettyOptions([]byte(c.in), c.opts)
		if got := Ugly(out); string(got) != c.want {
			t.Errorf("%s: the output holds other JSON", c.name)
		}
	}
}

// BenchmarkHostile: the cost of each hostile shape (compare with -benchtime runs at other sizes).
func BenchmarkHostile(b *testing.B) {
	for _, c := range hostileCases() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				PrettyOptions([]byte(c.in), c.opts)
			}
		})
	}
}

type hostileCase struct {
	name, in, want string
	opts           *Options
}

func hostileCases() []hostileCase {
	const n = 1 << 18
	deepArrays := strings.Repeat("[", n) + strings.Repeat("]", n)
	deepObjects := strings.Repeat(`{"":`, n/4) + "0" + strings.Repeat("}", n/4)
	// a big array that one-line attempts would render again at every level
	nestedWide := strings.Repeat("[", 1000) + strings.Repeat("1,", n/2) + "1" + strings.Repeat("]", 1000)
	// objects with their members out of order at every level, and duplicate keys with long equal values
	var sb strings.Builder
	for range n / 16 {
		sb.WriteString(`{"b":0,"a":`)
	}
	sb.WriteString("0")
	sb.WriteString(strings.Repeat("}", n/16))
	unsorted := sb.String()
	sorted := strings.Repeat(`{"a":`, n/16) + "0" + strings.Repeat(`,"b":0}`, n/16)
	value := "[" + strings.Repeat(" ", n/2) + "1]"
	dupKeys := `{"a":` + value + strings.Repeat(`,"a":[1]`, n/16) + "}"
	spaces := "[" + strings.Repeat(" ", n) + "1" + strings.Repeat(" ", n) + "]"

	// (json.Valid refuses nesting deeper than 10,000: the output is checked against Ugly of what it should hold)
	flat := &Options{Width: 80, Prefix: "", Indent: "", SortKeys: true}
	return []hostileCase{
		{"deep arrays", deepArrays, deepArrays, flat},
		{"deep objects", deepObjects, deepObjects, flat},
		{"nested wide", nestedWide, nestedWide, &Options{Width: 80, Indent: ""}},
		{"nested wide, one line", nestedWide, nestedWide, &Options{Width: 1 << 30, Indent: "  "}},
		{"unsorted at every level", unsorted, sorted, flat},
		{"duplicate keys", dupKeys, `{"a":[1]` + strings.Repeat(`,"a":[1]`, n/16) + "}", &Options{Width: 80, Indent: "  ", SortKeys: true}},
		{"spaces", spaces, "[1]", nil},
	}
}

// FuzzPretty: no input panics; on valid JSON the output is valid JSON, holds the same JSON as the input
// (Ugly of both is the same) unless keys are sorted, and formatting it again changes nothing.
func FuzzPretty(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c\"d"}],"e":null}`), 80, uint8(0), true)
	f.Add([]byte(`[[1,2],[3,[4]],"\u00e9",true,false,-1.5e3]`), 10, uint8(5), false)
	f.Add([]byte(`{"b":1,"a":{"d":[],"c":{}},"a":0}`), 0, uint8(9), true)
	f.Add([]byte(`{"a":`), 1, uint8(3), true)
	f.Fuzz(func(t *testing.T, in []byte, width int, style uint8, sortKeys bool) {
		space := []string{"", " ", "  ", "\t", "\n", "\r\n    "}
		opts := &Options{
			Width:    width,
			Prefix:   space[int(style)%len(space)],
			Indent:   space[int(style/8)%len(space)],
			SortKeys: sortKeys,
		}
		out := PrettyOptions(in, opts)
		ugly := Ugly(in)
		if !json.Valid(in) {
			return
		}
		if !json.Valid(out) || !json.Valid(ugly) {
			t.Fatalf("valid input, invalid output:\n%q\n%q", out, ugly)
		}
		if !sortKeys && !bytes.Equal(Ugly(out), ugly) {
			t.Fatalf("Ugly(Pretty(x)) != Ugly(x):\n%q\n%q", Ugly(out), ugly)
		}
		if again := PrettyOptions(out, opts); !bytes.Equal(again, out) {
			t.Fatalf("formatting twice changed the output:\n%q\n%q", out, again)
		}
	})
}

package sse

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// framerEvent is an Event copied out of the framer's buffers, comparable with ==.
type framerEvent struct {
	Raw, Data string
	HasData   bool
	NilData   bool // Data was nil (must be exactly when !HasData)
}

func (e framerEvent) String() string {
	if !e.HasData {
		return fmt.Sprintf("{raw %q}", e.Raw)
	}
	return fmt.Sprintf("{raw %q data %q}", e.Raw, e.Data)
}

func framerCopyEvent(ev Event) framerEvent {
	return framerEvent{Raw: string(ev.Raw), Data: string(ev.Data), HasData: ev.HasData, NilData: ev.Data == nil}
}

// framerDataEv and framerRawEv build expected events.
func framerDataEv(raw, data string) framerEvent {
	return framerEvent{Raw: raw, Data: data, HasData: true}
}
func framerRawEv(raw string) framerEvent { return framerEvent{Raw: raw, NilData: true} }

// framerRun feeds the chunks, draining Next after each, then flushes. It stops at the first Feed error.
func framerRun(f *Framer, chunks [][]byte) ([]framerEvent, error) {
	var out []framerEvent
	for _, c := range chunks {
		if err := f.Feed(c); err != nil {
			return out, err
		}
		for ev, ok := f.Next(); ok; ev, ok = f.Next() {
			out = append(out, framerCopyEvent(ev))
		}
	}
	if ev, ok := f.Flush(); ok {
		out = append(out, framerCopyEvent(ev))
	}
	if ev, ok := f.Next(); ok {
		out = append(out, framerCopyEvent(ev))
		return out, errors.New("Next returned an event after Flush")
	}
	return out, nil
}

// framerSplitAt cuts s at the given increasing offsets.
func framerSplitAt(s []byte, cuts ...int) [][]byte {
	var chunks [][]byte
	prev := 0
	for _, c := range cuts {
		chunks = append(chunks, s[prev:c])
		prev = c
	}
	return append(chunks, s[prev:])
}

// framerReference is a deliberately naive byte-by-byte reading of the rules (WHATWG line splitting and
// field parsing, plus this package's conventions: stray blank lines and the unterminated tail are events
// too), for the whole stream at once. final reports whether the last event came from the end of the stream
// rather than a blank line.
func framerReference(s []byte) (events []framerEvent, ends []int, final bool) {
	start, i := 0, 0
	first := true
	var data []string
	emit := func(end int) {
		ev := framerEvent{Raw: string(s[start:end]), NilData: true}
		if data != nil {
			ev = framerEvent{Raw: ev.Raw, Data: strings.Join(data, "\n"), HasData: true}
		}
		events, ends = append(events, ev), append(ends, end)
		start, data = end, nil
	}
	parse := func(line []byte) {
		if first {
			first = false
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 || line[0] == ':' {
			return
		}
		name, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			name, value = line[:c], line[c+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(name) == "data" {
			data = append(data, string(value))
		}
	}
	for i < len(s) {
		j := i
		for j < len(s) && s[j] != '\n' && s[j] != '\r' {
			j++
		}
		if j == len(s) {
			parse(s[i:j])
			break
		}
		next := j + 1
		if s[j] == '\r' && next < len(s) && s[next] == '\n' {
			next++
		}
		line := s[i:j]
		blank := len(line) == 0 || (first && string(line) == "\xEF\xBB\xBF")
		parse(line)
		if blank {
			emit(next)
		}
		i = next
	}
	if start < len(s) {
		emit(len(s))
		final = true
	}
	return events, ends, final
}

var framerCases = []struct {
	name string
	in   string
	want []framerEvent
}{
	{"empty", "", nil},
	{"lf", "data: a\n\n", []framerEvent{framerDataEv("data: a\n\n", "a")}},
	{"lf two events", "data: {\"x\":1}\n\ndata: {\"x\":2}\n\n", []framerEvent{
		framerDataEv("data: {\"x\":1}\n\n", `{"x":1}`), framerDataEv("data: {\"x\":2}\n\n", `{"x":2}`)}},
	{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []framerEvent{
		framerDataEv("data: a\r\n\r\n", "a"), framerDataEv("data: b\r\n\r\n", "b")}},
	{"cr", "data: a\r\rdata: b\r\r", []framerEvent{framerDataEv("data: a\r\r", "a"), framerDataEv("data: b\r\r", "b")}},
	{"mixed", "data: a\r\n\ndata: b\r\r\ndata: c\n\r", []framerEvent{
		framerDataEv("data: a\r\n\n", "a"), framerDataEv("data: b\r\r\n", "b"), framerDataEv("data: c\n\r", "c")}},
	{"cr then lf lines", "data: a\rdata: b\n\r\n", []framerEvent{framerDataEv("data: a\rdata: b\n\r\n", "a\nb")}},
	{"comments", ": ping\n\ndata: x\n: note\n\n:\n\n", []framerEvent{
		framerRawEv(": ping\n\n"), framerDataEv("data: x\n: note\n\n", "x"), framerRawEv(":\n\n")}},
	{"multi-line data", "data: a\ndata: b\ndata:\ndata\n\n", []framerEvent{
		framerDataEv("data: a\ndata: b\ndata:\ndata\n\n", "a\nb\n\n")}},
	{"multi-line data crlf", "data: {\r\ndata:  \"k\": 1\r\ndata: }\r\n\r\n", []framerEvent{
		framerDataEv("data: {\r\ndata:  \"k\": 1\r\ndata: }\r\n\r\n", "{\n \"k\": 1\n}")}},
	{"data without colon", "data\n\n", []framerEvent{framerDataEv("data\n\n", "")}},
	{"data without space", "data:x\n\ndata:  y\n\n", []framerEvent{
		framerDataEv("data:x\n\n", "x"), framerDataEv("data:  y\n\n", " y")}},
	{"empty data", "data:\n\ndata: \n\n", []framerEvent{framerDataEv("data:\n\n", ""), framerDataEv("data: \n\n", "")}},
	{"not data fields", "datum: x\ndata : y\nData: z\ndatadata\n\n", []framerEvent{
		framerRawEv("datum: x\ndata : y\nData: z\ndatadata\n\n")}},
	{"other fields", "event: message\nid: 7\nretry: 10\ndata: x\n\nevent: ping\n\n", []framerEvent{
		framerDataEv("event: message\nid: 7\nretry: 10\ndata: x\n\n", "x"), framerRawEv("event: ping\n\n")}},
	{"missing final blank line", "data: a\n\ndata: b\n", []framerEvent{
		framerDataEv("data: a\n\n", "a"), framerDataEv("data: b\n", "b")}},
	{"missing final newline", "data: a\n\ndata: b", []framerEvent{framerDataEv("data: a\n\n", "a"), framerDataEv("data: b", "b")}},
	{"missing final newline multi", "data: a\ndata: b", []framerEvent{framerDataEv("data: a\ndata: b", "a\nb")}},
	{"unterminated bare data", "data", []framerEvent{framerDataEv("data", "")}},
	{"final lone cr", "data: a\r", []framerEvent{framerDataEv("data: a\r", "a")}},
	{"final lone cr blank", "data: a\n\r", []framerEvent{framerDataEv("data: a\n\r", "a")}},
	{"only whitespace", " ", []framerEvent{framerRawEv(" ")}},
	{"stray blank lines", "\n\r\n\rdata: a\n\n\n\r\n", []framerEvent{
		framerRawEv("\n"), framerRawEv("\r\n"), framerRawEv("\r"), framerDataEv("data: a\n\n", "a"), framerRawEv("\n"), framerRawEv("\r\n")}},
	{"bom", "\xEF\xBB\xBFdata: a\n\ndata: b\n\n", []framerEvent{
		framerDataEv("\xEF\xBB\xBFdata: a\n\n", "a"), framerDataEv("data: b\n\n", "b")}},
	{"bom blank line", "\xEF\xBB\xBF\ndata: a\n\n", []framerEvent{framerRawEv("\xEF\xBB\xBF\n"), framerDataEv("data: a\n\n", "a")}},
	{"bom alone", "\xEF\xBB\xBF", []framerEvent{framerRawEv("\xEF\xBB\xBF")}},
	{"bom only once", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n", []framerEvent{framerRawEv("\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n")}},
	{"bom later is not a bom", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", []framerEvent{
		framerDataEv("data: a\n\n", "a"), framerRawEv("\xEF\xBB\xBFdata: b\n\n")}},
	{"done", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", []framerEvent{
		framerDataEv("data: {\"choices\":[]}\n\n", `{"choices":[]}`), framerDataEv("data: [DONE]\n\n", "[DONE]")}},
	{"colon in value", "data: a: b\n\n", []framerEvent{framerDataEv("data: a: b\n\n", "a: b")}},
	{"nul and invalid utf8", "data: \x00\xff\n\n", []framerEvent{framerDataEv("data: \x00\xff\n\n", "\x00\xff")}},
}

func TestFramerCases(t *testing.T) {
	for _, tc := range framerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			got, err := framerRun(NewFramer(0), [][]byte{in})
			if err != nil {
				t.Fatal(err)
			}
			if !framerEqual(got, tc.want) {
				t.Fatalf("events\n got %v\nwant %v", got, tc.want)
			}
			if ref, _, _ := framerReference(in); !framerEqual(ref, tc.want) {
				t.Fatalf("reference parser disagrees with the table\n ref %v\nwant %v", ref, tc.want)
			}
		})
	}
}

func framerEqual(a, b []framerEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// framerCheckChunking asserts that the chunks frame to want and that the Raws rebuild the stream.
func framerCheckChunking(t *testing.T, in []byte, want []framerEvent, chunks [][]byte, desc string) {
	t.Helper()
	got, err := framerRun(NewFramer(0), chunks)
	if err != nil {
		t.Fatalf("%s: %v", desc, err)
	}
	if !framerEqual(got, want) {
		t.Fatalf("%s: events\n got %v\nwant %v", desc, got, want)
	}
	var raw strings.Builder
	for _, ev := range got {
		raw.WriteString(ev.Raw)
		if ev.NilData == ev.HasData {
			t.Fatalf("%s: event %v: Data nil=%v with HasData=%v", desc, ev, ev.NilData, ev.HasData)
		}
	}
	if raw.String() != string(in) {
		t.Fatalf("%s: concatenated Raw %q != input %q", desc, raw.String(), in)
	}
}

func TestFramerSplitEverywhere(t *testing.T) {
	for _, tc := range framerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			for i := 0; i <= len(in); i++ {
				framerCheckChunking(t, in, tc.want, framerSplitAt(in, i), fmt.Sprintf("cut at %d", i))
			}
			for i := 0; i <= len(in); i++ {
				for j := i; j <= len(in); j++ {
					framerCheckChunking(t, in, tc.want, framerSplitAt(in, i, j), fmt.Sprintf("cuts at %d,%d", i, j))
				}
			}
			framerCheckChunking(t, in, tc.want, framerSplitAt(in, framerSeq(1, len(in))...), "byte by byte")
		})
	}
}

func framerSeq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// TestFramerLongStreamSplits runs longer multi-event streams through every single cut and a spread of
// chunk sizes.
func TestFramerLongStreamSplits(t *testing.T) {
	var all strings.Builder
	var want []framerEvent
	for _, tc := range framerCases {
		all.WriteString(tc.in)
	}
	in := []byte(all.String())
	want, _, _ = framerReference(in)
	for i := 0; i <= len(in); i++ {
		framerCheckChunking(t, in, want, framerSplitAt(in, i), fmt.Sprintf("cut at %d", i))
	}
	for size := 1; size <= 64; size++ {
		framerCheckChunking(t, in, want, framerSplitAt(in, framerSeqStep(size, len(in), size)...), fmt.Sprintf("chunks of %d", size))
	}
}

func framerSeqStep(from, to, step int) []int {
	var s []int
	for i := from; i < to; i += step {
		s = append(s, i)
	}
	return s
}

func TestFramerEventTooLarge(t *testing.T) {
	big := append(append([]byte("data: "), bytes.Repeat([]byte("x"), 2<<20)...), "\n\n"...)
	for _, size := range []int{1400, 64 << 10, len(big) - 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var f Framer // zero value: default bound
			var err error
			fed := 0
			for _, c := range framerSplitAt(big, framerSeqStep(size, len(big), size)...) {
				if err = f.Feed(c); err != nil {
					break
				}
				fed += len(c)
				if _, ok := f.Next(); ok {
					t.Fatal("event returned before its end")
				}
			}
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("err = %v, want ErrEventTooLarge", err)
			}
			if fed > DefaultMaxEventBytes || fed+size <= DefaultMaxEventBytes {
				t.Fatalf("failed after %d bytes fed in chunks of %d, bound %d", fed, size, DefaultMaxEventBytes)
			}
			for _, want := range []string{fmt.Sprint(fed + size), fmt.Sprint(DefaultMaxEventBytes)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}
			if f.Pending() != fed {
				t.Errorf("Pending = %d after the refused chunk, want %d", f.Pending(), fed)
			}
			if err2 := f.Feed([]byte("\n\n")); err2 != err {
				t.Errorf("Feed after failure = %v, want the same error", err2)
			}
			if _, ok := f.Flush(); ok {
				t.Error("Flush after failure returned an event")
			}
			f.Reset()
			got, err := framerRun(&f, [][]byte{[]byte("data: ok\n\n")})
			if err != nil || len(got) != 1 || got[0].Data != "ok" {
				t.Fatalf("after Reset: %v, %v", got, err)
			}
		})
	}
	t.Run("unterminated in one chunk", func(t *testing.T) {
		f := NewFramer(0)
		if err := f.Feed(big[:len(big)-2]); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("err = %v, want ErrEventTooLarge", err)
		}
		if f.Pending() != 0 {
			t.Fatalf("Pending = %d after the refused chunk", f.Pending())
		}
	})
	t.Run("complete in one chunk", func(t *testing.T) {
		// The bound is on carry-over: a whole event in one chunk is never copied.
		got, err := framerRun(NewFramer(0), [][]byte{big})
		if err != nil || len(got) != 1 || len(got[0].Data) != 2<<20 {
			t.Fatalf("got %d events, %v", len(got), err)
		}
	})
}

func TestFramerBoundEdges(t *testing.T) {
	event := func(n int) []byte { // an n-byte event
		return append(append([]byte("data: "), bytes.Repeat([]byte("y"), n-8)...), "\n\n"...)
	}
	t.Run("default bound, event of exactly the bound", func(t *testing.T) {
		in := append(event(DefaultMaxEventBytes), event(DefaultMaxEventBytes-1)...)
		got, err := framerRun(new(Framer), framerSplitAt(in, framerSeqStep(1400, len(in), 1400)...))
		if err != nil || len(got) != 2 || len(got[0].Raw) != DefaultMaxEventBytes {
			t.Fatalf("got %d events, %v", len(got), err)
		}
	})
	const bound = 100
	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr bool // byte by byte
	}{
		{"exactly the bound", event(bound), false},
		{"under the bound", event(bound - 1), false},
		// Byte by byte, the tail before the final LF is bound bytes: allowed.
		{"one over", event(bound + 1), false},
		{"two over", event(bound + 2), true},
		{"crlf exactly the bound", append(event(bound - 2)[:bound-4], "\r\n\r\n"...), false},
		{"cr held at the bound", append(event(bound - 1)[:bound-3], "\r\r"...), false},
		{"unterminated", bytes.Repeat([]byte("z"), bound+1), true},
		{"unterminated at the bound", bytes.Repeat([]byte("z"), bound), false},
		{"tail at the bound after an event", append([]byte("data: 1\n\n"), bytes.Repeat([]byte("z"), bound)...), false},
		{"tail over the bound after an event", append([]byte("data: 1\n\n"), bytes.Repeat([]byte("z"), bound+1)...), true},
		{"many small events", bytes.Repeat([]byte("data: 1\n\n"), 100), false},
		{"stray blank lines", bytes.Repeat([]byte("\r\n"), 200), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, ends, final := framerReference(tc.in)
			for size := 1; size <= len(tc.in); size++ {
				cuts := framerSeqStep(size, len(tc.in), size)
				wantErr := false
				for _, p := range append(cuts, len(tc.in)) {
					wantErr = wantErr || framerTailAt(tc.in, ends, final, p) > bound
				}
				if size == 1 && wantErr != tc.wantErr {
					t.Fatalf("the reference says wantErr=%v byte by byte", wantErr)
				}
				got, err := framerRun(NewFramer(bound), framerSplitAt(tc.in, cuts...))
				if wantErr != errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("chunks of %d: err = %v, want error %v", size, err, wantErr)
				}
				if !wantErr && !framerEqual(got, ref) {
					t.Fatalf("chunks of %d: events\n got %v\nwant %v", size, got, ref)
				}
			}
		})
	}
}

// framerTailAt is the incomplete tail a framer must hold after the first p bytes of s, from the reference
// framing of the whole stream: events that end before p, or at p but not on a CR that could start a CRLF,
// are known complete.
func framerTailAt(s []byte, ends []int, final bool, p int) int {
	if final {
		ends = ends[:len(ends)-1]
	}
	i := sort.SearchInts(ends, p+1) // ends[:i] are <= p
	if i > 0 && ends[i-1] == p && s[p-1] == '\r' {
		i--
	}
	if i == 0 {
		return p
	}
	return p - ends[i-1]
}

func TestFramerFromChunk(t *testing.T) {
	f := NewFramer(0)
	steps := []struct {
		chunk   string
		events  int
		from    bool
		pending int
	}{
		{"data: 1\n\ndata: 2\n\n", 2, true, 0},
		{"data: 3\n\ndata: 4", 1, true, 7}, // the tail is copied, but the events returned are the chunk's
		{"\n\ndata: 5\n\n", 2, false, 0},   // completing the carried event involves the carry-over
		{"data: 6\n\n", 1, true, 0},        // back to zero-copy
		{"data: 7\r", 0, true, 8},          // nothing returned: vacuously from the chunk
		{"\n\r\n", 1, false, 0},            // the held CR was carried over
		{"", 0, true, 0},                   // an empty chunk
		{"data: 8\n\ndata: 9\n\ndata", 2, true, 4},
	}
	for i, s := range steps {
		chunk := []byte(s.chunk)
		if err := f.Feed(chunk); err != nil {
			t.Fatal(err)
		}
		n, off := 0, 0
		for ev, ok := f.Next(); ok; ev, ok = f.Next() {
			n++
			if f.FromChunk() {
				// Zero copy really means subslices laid out from chunk[0].
				if &ev.Raw[0] != &chunk[off] {
					t.Errorf("step %d: event %d is not chunk[%d:]", i, n, off)
				}
			}
			if got := f.consumedPrefix(off + len(ev.Raw)); !bytes.Equal(got[off:], ev.Raw) {
				t.Errorf("step %d: consumedPrefix does not end with event %d", i, n)
			}
			off += len(ev.Raw)
		}
		if n != s.events || f.FromChunk() != s.from || f.Pending() != s.pending {
			t.Errorf("step %d (%q): %d events, FromChunk %v, Pending %d; want %d, %v, %d",
				i, s.chunk, n, f.FromChunk(), f.Pending(), s.events, s.from, s.pending)
		}
	}
	ev, ok := f.Flush()
	if !ok || string(ev.Raw) != "data" || f.FromChunk() {
		t.Errorf("Flush: %q %v, FromChunk %v: the tail was carried over", ev.Raw, ok, f.FromChunk())
	}
}

// TestFramerSlicesStayValid checks the promise that events stay intact until the next Feed, even when
// several events use the scratch buffer or live in the carry-over buffer.
func TestFramerSlicesStayValid(t *testing.T) {
	f := NewFramer(0)
	chunks := []string{
		"data: a\ndata: b\n\ndata: c\ndata: d\n\nevent: x\ndata: e\ndata: f",
		"\ndata: g\n\ndata: h\ndata: i\n\n" + strings.Repeat("data: jjjjjjjj\n", 50) + "\ndata: k",
	}
	want := [][]framerEvent{
		{framerDataEv("data: a\ndata: b\n\n", "a\nb"), framerDataEv("data: c\ndata: d\n\n", "c\nd")},
		{framerDataEv("event: x\ndata: e\ndata: f\ndata: g\n\n", "e\nf\ng"), framerDataEv("data: h\ndata: i\n\n", "h\ni"),
			framerDataEv(strings.Repeat("data: jjjjjjjj\n", 50)+"\n", strings.TrimSuffix(strings.Repeat("jjjjjjjj\n", 50), "\n"))},
	}
	for i, c := range chunks {
		if err := f.Feed([]byte(c)); err != nil {
			t.Fatal(err)
		}
		var evs []Event
		for ev, ok := f.Next(); ok; ev, ok = f.Next() {
			evs = append(evs, ev)
		}
		if i == len(chunks)-1 {
			ev, _ := f.Flush()
			evs = append(evs, ev)
			want[i] = append(want[i], framerDataEv("data: k", "k"))
		}
		var got []framerEvent
		for _, ev := range evs {
			got = append(got, framerCopyEvent(ev))
		}
		if !framerEqual(got, want[i]) {
			t.Fatalf("chunk %d\n got %v\nwant %v", i, got, want[i])
		}
	}
}

// TestFramerUndrained feeds again without draining Next: nothing is lost or reordered.
func TestFramerUndrained(t *testing.T) {
	in := []byte("data: 1\n\ndata: 2\n\ndata: 3\ndata: 4\n\ndata: 5\r")
	want, _, _ := framerReference(in)
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			f := NewFramer(0)
			var got []framerEvent
			for k, c := range framerSplitAt(in, i, j) {
				if err := f.Feed(c); err != nil {
					t.Fatal(err)
				}
				if k == 2 {
					for ev, ok := f.Next(); ok; ev, ok = f.Next() {
						got = append(got, framerCopyEvent(ev))
					}
				}
			}
			for ev, ok := f.Flush(); ok; ev, ok = f.Next() {
				got = append(got, framerCopyEvent(ev))
			}
			if !framerEqual(got, want) {
				t.Fatalf("cuts %d,%d\n got %v\nwant %v", i, j, got, want)
			}
		}
	}
}

// TestFramerReusedReadBuffer overwrites the caller's buffer after each drained chunk, as a reader loop does.
func TestFramerReusedReadBuffer(t *testing.T) {
	in := []byte("data: one\r\n\r\ndata: two\r\ndata: three\r\n\r\n: c\r\n\r\ndata: four")
	want, _, _ := framerReference(in)
	for size := 1; size <= len(in); size++ {
		f := NewFramer(0)
		readBuf := make([]byte, size)
		var got []framerEvent
		for off := 0; off < len(in); off += size {
			n := copy(readBuf, in[off:])
			if err := f.Feed(readBuf[:n]); err != nil {
				t.Fatal(err)
			}
			for ev, ok := f.Next(); ok; ev, ok = f.Next() {
				got = append(got, framerCopyEvent(ev))
			}
			for i := range readBuf {
				readBuf[i] = '#'
			}
		}
		if ev, ok := f.Flush(); ok {
			got = append(got, framerCopyEvent(ev))
		}
		if !framerEqual(got, want) {
			t.Fatalf("size %d\n got %v\nwant %v", size, got, want)
		}
	}
}

func TestFramerLifecycle(t *testing.T) {
	var f Framer
	if f.Limit() != DefaultMaxEventBytes || NewFramer(-1).Limit() != DefaultMaxEventBytes || NewFramer(10).Limit() != 10 {
		t.Fatal("bound defaults")
	}
	if _, ok := f.Next(); ok {
		t.Fatal("Next on a zero Framer returned an event")
	}
	if _, ok := f.Flush(); ok {
		t.Fatal("Flush on a zero Framer returned an event")
	}
	if err := f.Feed([]byte("data: x\n\n")); err == nil {
		t.Fatal("Feed after Flush succeeded")
	}
	f.Reset()
	if err := f.Feed([]byte("data: x\n\ndata: y")); err != nil {
		t.Fatal(err)
	}
	if ev, ok := f.Next(); !ok || string(ev.Data) != "x" {
		t.Fatalf("Next = %q, %v", ev.Data, ok)
	}
	if _, ok := f.Next(); ok || f.Pending() != 7 {
		t.Fatalf("Pending = %d, want 7", f.Pending())
	}
	if _, ok := f.Next(); ok {
		t.Fatal("Next after ok=false returned an event")
	}
	f.Reset() // drops the tail, keeps the max
	if f.Pending() != 0 {
		t.Fatalf("Pending after Reset = %d", f.Pending())
	}
	got, err := framerRun(&f, [][]byte{[]byte("data: z\n\n")})
	if err != nil || len(got) != 1 || got[0].Data != "z" {
		t.Fatalf("after Reset: %v %v", got, err)
	}
	if _, ok := f.Flush(); ok {
		t.Fatal("second Flush returned an event")
	}
}

// TestFramerDataAliasing pins down where Data lives: a single data value is a subslice of Raw, joined values
// are in the framer's scratch, and no returned slice can be appended to over the framer's bytes.
func TestFramerDataAliasing(t *testing.T) {
	f := NewFramer(0)
	in := []byte("data: abc\n\ndata: a\ndata: b\n\ndata: next\n\n")
	if err := f.Feed(in); err != nil {
		t.Fatal(err)
	}
	ev, _ := f.Next()
	if &ev.Data[0] != &ev.Raw[6] || &ev.Raw[0] != &in[0] {
		t.Error("single data value is not a subslice of Raw in the chunk")
	}
	if cap(ev.Raw) != len(ev.Raw) || cap(ev.Data) != len(ev.Data) {
		t.Error("returned slices have spare capacity over the framer's bytes")
	}
	ev, _ = f.Next()
	if string(ev.Data) != "a\nb" || cap(ev.Data) != len(ev.Data) {
		t.Errorf("joined data %q cap %d", ev.Data, cap(ev.Data))
	}
	_ = append(ev.Data, "XXXX"...)
	_ = append(ev.Raw, "XXXX"...)
	if ev, _ := f.Next(); string(ev.Raw) != "data: next\n\n" || string(ev.Data) != "next" {
		t.Errorf("appending to a returned slice damaged the next event: %q", ev.Raw)
	}
}

// framerAllocStream is a typical OpenAI stream: one data line per event, LF line ends.
func framerAllocStream(events int) []byte {
	var b []byte
	for i := range events {
		b = fmt.Appendf(b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"+
			"\"delta\":{\"content\":\"token %d\"},\"finish_reason\":null}]}\n\n", i)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func TestFramerAllocs(t *testing.T) {
	stream := framerAllocStream(50)
	multi := bytes.ReplaceAll(stream, []byte(`"choices"`), []byte("\ndata: \"choices\""))
	for _, tc := range []struct {
		name   string
		stream []byte
		size   int
	}{
		{"no carry-over", stream, len(stream)},
		{"carry-over", stream, 1400},
		{"carry-over small chunks", stream, 97},
		{"multi-line data", multi, 1400},
		{"crlf", bytes.ReplaceAll(stream, []byte("\n"), []byte("\r\n")), 333},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := framerSplitAt(tc.stream, framerSeqStep(tc.size, len(tc.stream), tc.size)...)
			f := NewFramer(0)
			n := 0
			run := func() {
				f.Reset()
				for _, c := range chunks {
					_ = f.Feed(c)
					for _, ok := f.Next(); ok; _, ok = f.Next() {
						n++
					}
				}
				if _, ok := f.Flush(); ok {
					n++
				}
			}
			run() // grows the buffers
			if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
				t.Fatalf("%v allocations per stream, want 0", allocs)
			}
			if n != 22*51 { // the warm-up run, AllocsPerRun's own warm-up and 20 runs
				t.Fatalf("%d events, want %d", n, 22*51)
			}
		})
	}
}

package translate

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/jsonscan"
)

// nested is depth levels of open, then inner, then the matching closes.
func nested(open, inner, closing string, depth int) []byte {
	return []byte(strings.Repeat(open, depth) + inner + strings.Repeat(closing, depth))
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
// for a recursion per level: the bounded scanner refuses it at jsonscan.MaxDepth, and the gjson readers used on
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
			if jsonscan.Valid(body) {
				t.Errorf("%s: ValidJSON accepted %d levels", name, depth)
			}
			var b RequestBody
			if b.Parse(body) == nil {
				t.Errorf("%s: Parse accepted %d levels", name, depth)
			}
			for _, client := range Dialects {
				for _, provider := range Dialects {
					if status, out := ErrorAnswer(client, provider, 400, body); status != 400 || !jsonscan.Valid(out) {
						t.Errorf("%s: ErrorAnswer(%s, %s) = %d %q", name, client, provider, status, out)
					}
				}
			}
			if _, _, _, err := Answer(nil, &Exchange{Client: OpenAI, Provider: EternalAI}, body); err == nil {
				t.Errorf("%s: TranslateJSON accepted %d levels", name, depth)
			}
			for _, x := range []Exchange{{Client: OpenAI, Provider: OpenAI}, {Client: OpenAI, Provider: AzureAI, Tools: true}} {
				s := NewStream(x, 0)
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

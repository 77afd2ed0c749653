package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aidialect/aidialect/internal/sse"
	"github.com/tidwall/gjson"
)

// Fuzz targets. `go test` runs their seed corpora (f.Add plus testdata/fuzz/); `make fuzz` explores.

var fuzzPaths = []string{
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings",
	"/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21",
	"/openai/v1/chat/completions?api-version=preview",
	"/chat/completions?api-version=2024-05-01-preview", "/embeddings?api-version=2024-05-01-preview",
	"/completions?api-version=2024-04-01-preview",
}

// FuzzRenderRequest: for any request line and body, rendering either refuses with a filter error or
// produces a valid JSON object, a path with at most one api-version and nothing that could split a request
// line or header.
func FuzzRenderRequest(f *testing.F) {
	for _, p := range fuzzPaths {
		f.Add(p, []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stop":"x","user":"u","chain_id":1}`), uint8(0))
	}
	f.Add("/v1/embeddings", []byte(`{"model":"m","input":"x","encoding_format":"int8","input_type":"query"}`), uint8(2))
	f.Add("/v1/completions", []byte(`{"model":"m","prompt":"p","max_completion_tokens":3,"mod\u0065l":"x"}`), uint8(5))
	addCorpusFromCases(f, func(path string, body []byte) { f.Add(path, body, uint8(len(body))) })
	f.Fuzz(func(t *testing.T, path string, body []byte, selector uint8) {
		req, err := Detect("POST", path, "")
		if err != nil || !req.Known() {
			return
		}
		var b RequestBody
		if err := b.Parse(body); err != nil {
			if gjson.ValidBytes(body) && gjson.ParseBytes(body).IsObject() && err.Code == ErrInvalidJSON &&
				!strings.Contains(err.Message, "more than once") && !strings.Contains(err.Message, "deeper") &&
				utf8.Valid(body) && !strings.Contains(err.Message, "top-level fields") &&
				!strings.Contains(err.Message, "case-insensitive parser") {
				t.Fatalf("valid JSON object refused: %v", err)
			}
			return
		}
		if !gjson.ValidBytes(body) {
			t.Fatalf("invalid JSON accepted: %q", body)
		}
		req.RefineWithBody(&b)
		target := Target{
			Dialect:  Dialects[int(selector)%len(Dialects)],
			Settings: Settings{extraParameters: extraParametersPolicy(int(selector/4) % 3)},
			Model:    b.Model,
		}
		if m, ok := req.ModelFromHeaders(); ok {
			target.Model = m
		}
		target.BasePath = target.Dialect.DefaultBasePath()
		head, e := RenderHead(&req, &target)
		if e != nil {
			checkFilterError(t, e)
			return
		}
		if strings.Count(head.Path, "api-version=") > 1 || strings.ContainsAny(head.Path, "\r\n #") {
			t.Fatalf("unsafe path %q", head.Path)
		}
		for _, h := range head.Set {
			if strings.ContainsAny(h.Value, "\r\n\x00") {
				t.Fatalf("unsafe header %q: %q", h.Name, h.Value)
			}
		}
		out, e := RenderBody(nil, &req, &b, &target)
		if e != nil {
			checkFilterError(t, e)
			return
		}
		if !gjson.ValidBytes(out.Body) || !gjson.ParseBytes(out.Body).IsObject() {
			t.Fatalf("rendered body is not a JSON object: %q", out.Body)
		}
		if target.Dialect != EternalAI && gjson.GetBytes(out.Body, "chain_id").Exists() {
			t.Fatalf("chain_id sent to %s: %s", target.Dialect, out.Body)
		}
		if !out.Changed && !bytes.Equal(out.Body, body) {
			t.Fatal("unchanged body differs from the input")
		}
	})
}

func checkFilterError(t *testing.T, e *Error) {
	t.Helper()
	for _, d := range Dialects {
		if body := e.Body(d); !gjson.ValidBytes(body) {
			t.Fatalf("error body not JSON: %q", body)
		}
	}
}

// FuzzTranslateError: any upstream error body becomes a valid envelope in every client dialect.
func FuzzTranslateError(f *testing.F) {
	seeds := []string{
		`{"error":{"message":"m","type":"t","param":null,"code":"c"}}`,
		`{"error":{"code":429,"message":"slow down","innererror":{"code":"x"}}}`,
		`{"status":422,"code":"parameter_not_supported","detail":{"loc":["body","n"]},"message":"bad"}`,
		`{"error":"Unauthorized","message":"no","status":401}`,
		`<html><title>502 Bad Gateway</title></html>`, "", "plain \xff text", `{"error":{"message":`,
	}
	for i, s := range seeds {
		f.Add(400+i, []byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, selector uint8) {
		if status < 100 || status > 599 {
			return
		}
		client := Dialects[int(selector)%len(Dialects)]
		provider := Dialects[int(selector)/len(Dialects)%len(Dialects)]
		got, out := ErrorAnswer(client, provider, status, body)
		if got < 100 || got > 599 {
			t.Fatalf("status %d", got)
		}
		if !gjson.ValidBytes(out) || !gjson.GetBytes(out, "error").Exists() {
			t.Fatalf("not an envelope: %q", out)
		}
	})
}

// FuzzTranslateJSON: a success answer is either refused as invalid JSON or translated into valid JSON.
func FuzzTranslateJSON(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[],"onchain_data":{"infer_id":1,"proposer":"0x\r\n1"},"prompt_filter_results":[]}`), uint8(3))
	f.Add([]byte(`{"object":"list","data":[]}`), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, selector uint8) {
		x := Exchange{
			Client:   Dialects[int(selector)%len(Dialects)],
			Provider: Dialects[int(selector)/len(Dialects)%len(Dialects)],
			Op:       OpChatCompletions,
			onchain:  onchainPolicy(int(selector/16) % 3),
		}
		out, headers, _, err := Answer(nil, &x, body)
		if err != nil {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid JSON out: %q", out)
		}
		for _, h := range headers {
			if !headerValueSafe(h.Value) || strings.ContainsAny(h.Name, "\r\n: ") {
				t.Fatalf("unsafe header %q: %q", h.Name, h.Value)
			}
		}
	})
}

// FuzzStreamChunking: however an upstream stream is cut into chunks, the client receives the same bytes, and
// always exactly one [DONE] at the end.
func FuzzStreamChunking(f *testing.F) {
	for _, name := range []string{"azure-openai", "azure-ai", "eternalai", "openai"} {
		data, err := os.ReadFile(filepath.Join("../testdata/fixtures", "response-"+name+"-chat-stream.http"))
		if err == nil {
			_, body, _ := bytes.Cut(data, []byte("\n\n"))
			f.Add(body, []byte{7, 1, 200}, uint8(len(name)))
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{}}]}}]}\r\n\r\ndata: [DONE]\r\r"), []byte{3}, uint8(8))
	f.Add([]byte("data: {\"x\":1}\n\ndata: [DONE]\n\ndata: [DONE]\n\n"), []byte{1, 2}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, cuts []byte, selector uint8) {
		x := Exchange{
			Client:       Dialects[int(selector)%len(Dialects)],
			Provider:     Dialects[int(selector)/len(Dialects)%len(Dialects)],
			Op:           OpChatCompletions,
			IncludeUsage: selector&0x40 != 0,
			Tools:        selector&0x80 != 0,
		}
		translate := func(sizes []byte) []byte {
			s := NewStream(x, 1<<16)
			var out []byte
			rest := stream
			for i := 0; len(rest) > 0; i++ {
				n := len(rest)
				if len(sizes) > 0 {
					n = min(int(sizes[i%len(sizes)])+1, len(rest))
				}
				chunk, err := s.Write(rest[:n])
				if err != nil {
					return append(out, "ERROR"...)
				}
				out = append(out, chunk...)
				rest = rest[n:]
			}
			return append(out, s.Close()...)
		}
		whole := translate(nil)
		if split := translate(cuts); !bytes.Equal(whole, split) {
			t.Fatalf("chunking changed the output:\nwhole %q\nsplit %q", whole, split)
		}
		if bytes.HasSuffix(whole, []byte("ERROR")) {
			return
		}
		if n, last := countDone(whole); n != 1 || !last {
			t.Fatalf("%d [DONE] events (want 1), last data event [DONE]: %v: %q", n, last, whole)
		}
	})
}

// countDone frames a client stream: how many [DONE] events it has, and whether the last data event is one.
func countDone(stream []byte) (n int, lastIsDone bool) {
	var f sse.Framer
	if err := f.Feed(stream); err != nil {
		return -1, false
	}
	count := func(ev sse.Event) {
		if !ev.HasData {
			return
		}
		lastIsDone = bytes.Equal(bytes.TrimSpace(ev.Data), doneData)
		if lastIsDone {
			n++
		}
	}
	for {
		ev, ok := f.Next()
		if !ok {
			break
		}
		count(ev)
	}
	if ev, ok := f.Flush(); ok {
		count(ev)
	}
	return n, lastIsDone
}

// addCorpusFromCases seeds a fuzz target with the golden cases' client requests.
func addCorpusFromCases(f *testing.F, add func(path string, body []byte)) {
	dirs, _ := filepath.Glob(filepath.Join(casesDir, "*"))
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "client_request.http"))
		if err != nil {
			continue
		}
		head, body, _ := bytes.Cut(raw, []byte("\n\n"))
		first, _, _ := strings.Cut(string(head), "\n")
		_, path, _ := strings.Cut(first, " ")
		add(path, bytes.TrimRight(body, "\n"))
	}
}

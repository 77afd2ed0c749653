package mock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// The standard providers of the tests.
var testOpts = map[string]Options{
	OpenAI:      {APIKey: "sk-openai"},
	AzureOpenAI: {APIKey: "aoai-key", Deployments: []string{"gpt4o-prod", "embed-prod", "instruct-prod"}},
	AzureAI: {APIKey: "ai-key", Deployments: []string{"llama3-blue"},
		Models: []string{"Meta-Llama-3-70B-Instruct", "Cohere-embed-v3-english"}},
	EternalAI: {APIKey: "eai-key"},
}

const (
	chat        = "chat"
	completions = "completions"
	embeddings  = "embeddings"
)

// operationsOf lists what each dialect serves.
var operationsOf = map[string][]string{
	OpenAI:      {chat, completions, embeddings},
	AzureOpenAI: {chat, completions, embeddings},
	AzureAI:     {chat, completions, embeddings},
	EternalAI:   {chat, completions},
}

// spec is a request under construction.
type spec struct {
	method string
	target string
	body   string
	header http.Header
}

// validSpec is a request the provider accepts.
func validSpec(d, op string) spec {
	s := spec{method: http.MethodPost, header: http.Header{}}
	s.header.Set("Content-Type", "application/json")
	model := map[string]string{chat: "gpt-4o", completions: "gpt-3.5-turbo-instruct", embeddings: "text-embedding-3-small"}[op]
	suffix := map[string]string{chat: "/chat/completions", completions: "/completions", embeddings: "/embeddings"}[op]
	switch d {
	case OpenAI, EternalAI:
		s.target = "/v1" + suffix
		s.header.Set("Authorization", "Bearer "+testOpts[d].APIKey)
	case AzureOpenAI:
		dep := map[string]string{chat: "gpt4o-prod", completions: "instruct-prod", embeddings: "embed-prod"}[op]
		s.target = "/openai/deployments/" + dep + suffix + "?api-version=2024-10-21"
		s.header.Set("api-key", testOpts[d].APIKey)
		model = ""
	case AzureAI:
		version := "2024-05-01-preview"
		if op == completions {
			version = "2024-04-01-preview"
		}
		s.target = suffix + "?api-version=" + version
		s.header.Set("api-key", testOpts[d].APIKey)
		s.header.Set("Authorization", "Bearer "+testOpts[d].APIKey)
		s.header.Set("azureml-model-deployment", "llama3-blue")
		model = "Meta-Llama-3-70B-Instruct"
		if op == embeddings {
			model = "Cohere-embed-v3-english"
		}
	}
	body := map[string]any{}
	if model != "" {
		body["model"] = model
	}
	switch op {
	case chat:
		body["messages"] = []any{
			map[string]any{"role": "system", "content": "You are terse."},
			map[string]any{"role": "user", "content": "hello mock"},
		}
	case completions:
		body["prompt"] = "hello mock"
	case embeddings:
		body["input"] = []string{"hello", "mock"}
	}
	s.body = string(mustJSON(body))
	return s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// set changes one top-level body field (nil deletes it).
func (s *spec) set(k string, v any) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s.body), &m); err != nil {
		panic(err)
	}
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
	s.body = string(mustJSON(m))
}

func (s spec) request() *http.Request {
	r := httptest.NewRequest(s.method, "http://mock.local"+s.target, strings.NewReader(s.body))
	for k, vs := range s.header {
		r.Header[k] = append([]string(nil), vs...)
	}
	return r
}

// chunkRecorder records each Write separately, so tests see how a stream was cut.
type chunkRecorder struct {
	header  http.Header
	status  int
	writes  [][]byte
	flushes int
}

func newChunkRecorder() *chunkRecorder { return &chunkRecorder{header: http.Header{}} }

func (c *chunkRecorder) Header() http.Header { return c.header }

func (c *chunkRecorder) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *chunkRecorder) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.writes = append(c.writes, append([]byte(nil), b...))
	return len(b), nil
}

func (c *chunkRecorder) Flush() { c.flushes++ }

func (c *chunkRecorder) body() []byte { return bytes.Join(c.writes, nil) }

// serve runs one request through p.
func serve(p *Provider, s spec) *chunkRecorder {
	rec := newChunkRecorder()
	p.ServeHTTP(rec, s.request())
	return rec
}

// decode parses a JSON body.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%.400s", err, b)
	}
	return m
}

// get walks a decoded JSON value by a dotted path; numbers index arrays.
func get(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func has(v any, path string) bool {
	i := strings.LastIndexByte(path, '.')
	parent, key := v, path
	if i >= 0 {
		parent, key = get(v, path[:i]), path[i+1:]
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// sseEvents splits a data-only SSE body into its payloads; it fails on anything but "data: ..." blocks.
// The tail after the last blank line is returned separately.
func sseEvents(t *testing.T, b []byte) (events []string, tail string) {
	t.Helper()
	s := string(b)
	for {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			return events, s
		}
		block := s[:i]
		s = s[i+2:]
		if strings.Contains(block, "\n") || !strings.HasPrefix(block, "data: ") {
			t.Fatalf("not a single data line: %q", block)
		}
		events = append(events, strings.TrimPrefix(block, "data: "))
	}
}

// streamText reassembles choice 0's text (delta.content or text) from a stream's payloads.
func streamText(t *testing.T, events []string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e == "[DONE]" {
			continue
		}
		m := decode(t, []byte(e))
		choices, _ := m["choices"].([]any)
		for _, ch := range choices {
			if get(ch, "index") != float64(0) {
				continue
			}
			if s, ok := get(ch, "delta.content").(string); ok {
				b.WriteString(s)
			}
			if s, ok := get(ch, "text").(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func countDone(events []string) int {
	n := 0
	for _, e := range events {
		if e == "[DONE]" {
			n++
		}
	}
	return n
}

// respSpec is a valid Responses request: openai at /v1/responses; azure-openai on its v1 surface
// (/openai/v1/responses) or, with classic, at /openai/responses?api-version=2025-04-01-preview. The body
// model is a model (openai) or a deployment (azure-openai).
func respSpec(d string, classic bool) spec {
	s := spec{method: http.MethodPost, header: http.Header{}}
	s.header.Set("Content-Type", "application/json")
	model := "gpt-4o"
	switch d {
	case OpenAI:
		s.target = "/v1/responses"
		s.header.Set("Authorization", "Bearer "+testOpts[d].APIKey)
	case AzureOpenAI:
		s.target = "/openai/v1/responses"
		if classic {
			s.target = "/openai/responses?api-version=2025-04-01-preview"
		}
		s.header.Set("api-key", testOpts[d].APIKey)
		model = "gpt4o-prod"
	default:
		panic("no Responses API in " + d)
	}
	s.body = string(mustJSON(map[string]any{"model": model, "input": "hello mock"}))
	return s
}

// respEvent is one event of a Responses stream: its event: line and its data.
type respEvent struct {
	name string
	data map[string]any
	raw  string
}

// respEvents splits a Responses stream into its events; every block must be an event: line and a data: line
// whose type is the event's name. The tail after the last blank line is returned separately.
func respEvents(t *testing.T, b []byte) (events []respEvent, tail string) {
	t.Helper()
	s := string(b)
	for {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			return events, s
		}
		block := s[:i]
		s = s[i+2:]
		name, data, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || strings.Contains(data, "\n") {
			t.Fatalf("not an event: line and a data: line: %q", block)
		}
		e := respEvent{name: strings.TrimPrefix(name, "event: "), raw: strings.TrimPrefix(data, "data: ")}
		e.data = decode(t, []byte(e.raw))
		if e.data["type"] != e.name {
			t.Fatalf("event %q carries type %v", e.name, e.data["type"])
		}
		events = append(events, e)
	}
}

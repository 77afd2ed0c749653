package main

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/translate"
)

// Answers that come before the request ended. A request routed on its request line (an Azure OpenAI
// deployment path, Azure AI's azureml-model-deployment header) goes upstream with its headers while the
// filter still holds the body; the upstream may answer at once (a 401 or 413 before reading the body, Envoy's
// own 503 when it cannot connect), and Envoy keeps handing the filter request data while that answer is under
// way, and none once it ended (docs/envoy-host.md section 4b).

// earlyRequest is a request routed on its request line, its body in three chunks.
type earlyRequest struct {
	name    string
	client  translate.Dialect
	path    string
	headers [][2]string
	body    string
}

var earlyRequests = []earlyRequest{
	{"azure-openai deployment path, openai provider", translate.AzureOpenAI,
		"/openai/deployments/gpt-4.1/chat/completions?api-version=2024-10-21", [][2]string{{"api-key", "client-key"}},
		`{` + userMessages + `,"temperature":0.5}`},
	{"azure-openai deployment path, azure-ai provider", translate.AzureOpenAI,
		"/openai/deployments/llama-3-70b/chat/completions?api-version=2024-10-21", [][2]string{{"api-key", "client-key"}},
		`{` + userMessages + `}`},
	{"azure-ai model header, openai provider", translate.AzureAI,
		"/chat/completions?api-version=2024-05-01-preview",
		[][2]string{{"authorization", "Bearer client-key"}, {"azureml-model-deployment", "gpt-4.1"}},
		`{` + userMessages + `}`},
}

func (r earlyRequest) head() [][2]string {
	h := [][2]string{{":method", "POST"}, {":path", r.path}, {":authority", "gateway.local"},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(r.body))}}
	return append(h, r.headers...)
}

// chunks splits the body in three.
func (r earlyRequest) chunks() [][]byte {
	b := []byte(r.body)
	n := len(b) / 3
	return [][]byte{b[:n], b[n : 2*n], b[2*n:]}
}

// earlyAnswer is what the upstream answers.
type earlyAnswer struct {
	name    string
	status  int
	headers [][2]string
	chunks  []string
}

var earlyAnswers = []earlyAnswer{
	{"401 openai envelope", 401, jsonHeaders, []string{`{"error":{"message":"Incorrect API key provided",`,
		`"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`}},
	{"413 plain text", 413, [][2]string{{"content-type", "text/plain"}}, []string{"request entity ", "too large"}},
	{"503 from envoy", 503, [][2]string{{"content-type", "text/plain"}}, []string{"upstream connect error or disconnect/reset before headers"}},
	{"200 json", 200, jsonHeaders, []string{chatOK[:40], chatOK[40:]}},
	{"200 stream", 200, [][2]string{{"content-type", "text/event-stream"}},
		[]string{"data: " + `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n",
			"data: [DONE]\n\n"}},
}

// hookedReader hands out one chunk per Read, and runs before[i] before it hands out chunk i: there the test
// delivers more of the request, or runs another exchange, between two response body callbacks.
type hookedReader struct {
	chunks []string
	before map[int]func()
	i      int
}

func (r *hookedReader) Read(p []byte) (int, error) {
	if f := r.before[r.i]; f != nil {
		delete(r.before, r.i)
		f()
	}
	if r.i == len(r.chunks) {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[r.i])
	r.i++
	return n, nil
}

// clientAnswer is what a client got.
type clientAnswer struct {
	status int
	body   []byte
	head   map[string]string
}

// sequentialAnswer is the client's answer when the upstream answers after the whole request: the reference.
func sequentialAnswer(t *testing.T, md mode, req earlyRequest, ans earlyAnswer) clientAnswer {
	t.Helper()
	o := run(t, md, exchange{config: earlyAnswerConfig, method: "POST", path: req.path,
		headers: append([][2]string{{"content-type", "application/json"}}, req.headers...), body: []string{req.body},
		upstream: &upstreamAnswer{status: ans.status, headers: ans.headers, chunks: ans.chunks}})
	o.assertRules(t)
	return clientAnswer{o.status, o.clientBody, o.clientHead}
}

// TestEarlyAnswer: an answer that comes while the request body is still arriving is the client's right answer,
// in its dialect, whatever the request does meanwhile: more body after the response headers, after part of
// the response body, or none after the response ended; and with another exchange on the same worker between
// two of its callbacks (the filter's pooled per-request state must stay with its own exchange).
func TestEarlyAnswer(t *testing.T) {
	type script struct {
		name string
		// restAt is the response body chunk before which the rest of the request arrives (len(chunks): after
		// the last one, when Envoy drops it); overlapAt likewise for another whole exchange (-1: none).
		restAt, overlapAt int
		rest              restKind
	}
	scripts := []script{
		{"rest of the request after the response headers", 0, -1, validRest},
		{"rest of the request after the first response chunk", 1, -1, validRest},
		{"the response ends first", 99, -1, validRest},
		{"another exchange after the response headers, then the rest", 1, 0, validRest},
		{"another exchange after the first response chunk, then the rest", 1, 1, validRest},
		// The rest of a request answered early is neither checked nor forwarded: a body that would be refused
		// gets no local reply (Envoy would reset the answer under way), and nothing goes upstream.
		{"a rest that would be refused, after the first response chunk", 1, -1, refusableRest},
		{"a rest ending in trailers, after the response headers", 0, -1, restWithTrailers},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, req := range earlyRequests {
				for _, ans := range earlyAnswers {
					want := sequentialAnswer(t, md, req, ans)
					other := earlyRequests[(len(earlyRequests)-1)%len(earlyRequests)]
					otherWant := sequentialAnswer(t, md, other, earlyAnswers[len(earlyAnswers)-1])
					for _, sc := range scripts {
						t.Run(req.name+"/"+ans.name+"/"+sc.name, func(t *testing.T) {
							checkEarlyAnswer(t, md, req, ans, sc.restAt, sc.overlapAt, sc.rest, want, other, otherWant)
						})
					}
				}
			}
		})
	}
}

// restKind is how the rest of the request arrives.
type restKind int

const (
	validRest        restKind = iota // the body's last two thirds, the last with end_of_stream
	refusableRest                    // bytes that make the body invalid JSON and over max_request_bytes
	restWithTrailers                 // the body's last two thirds, then trailers
)

func checkEarlyAnswer(t *testing.T, md mode, req earlyRequest, ans earlyAnswer, restAt, overlapAt int, kind restKind,
	want clientAnswer, other earlyRequest, otherWant clientAnswer) {
	host, err := hostemu.New(md.vm(t), []byte(earlyAnswerConfig))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	x := host.Begin()
	defer func() {
		x.Finish()
		_, _, critical := host.Logs()
		for _, l := range critical {
			t.Errorf("critical log (a panic?): %s", l)
		}
		if err := host.Dead(); err != nil {
			t.Errorf("the VM died: %v", err)
		}
	}()
	if err := x.BeginRequest(req.head(), false); err != nil || x.Local != nil {
		t.Fatalf("request headers: %v %+v", err, x.Local)
	}
	chunks := req.chunks()
	if err := x.RequestChunk(chunks[0], false); err != nil || x.Local != nil {
		t.Fatalf("first request chunk: %v %+v", err, x.Local)
	}
	rest := func() {
		tail := chunks[1:]
		if kind == refusableRest {
			tail = [][]byte{bytes.Repeat([]byte("}"), 2<<20)}
		}
		for i, c := range tail {
			if err := x.RequestChunk(c, i == len(tail)-1 && kind != restWithTrailers); err != nil {
				t.Errorf("the rest of the request: %v", err)
			}
		}
		if kind == restWithTrailers {
			if err := x.RequestTrailers([][2]string{{"x-checksum", "abc"}}); err != nil {
				t.Errorf("the request's trailers: %v", err)
			}
		}
	}
	overlap := func() {
		y := host.Begin()
		defer y.Finish()
		hs := other.head()
		if err := y.SendRequest(hs, [][]byte{[]byte(other.body)}); err != nil || y.Upstream == nil {
			t.Fatalf("the other exchange's request: %v %+v", err, y.Local)
		}
		last := earlyAnswers[len(earlyAnswers)-1]
		w := &recorder{}
		if err := y.RelayResponse(last.status, last.headers, &hookedReader{chunks: last.chunks}, nil, w); err != nil {
			t.Fatalf("the other exchange's answer: %v", err)
		}
		if w.status != otherWant.status || !bytes.Equal(w.body, otherWant.body) {
			t.Errorf("the other exchange got %d %q\nwant %d %q", w.status, w.body, otherWant.status, otherWant.body)
		}
	}
	before := map[int]func(){restAt: rest}
	if overlapAt >= 0 {
		if overlapAt == restAt {
			before[overlapAt] = func() { overlap(); rest() }
		} else {
			before[overlapAt] = overlap
		}
	}
	w := &recorder{}
	if err := x.RelayResponse(ans.status, ans.headers, &hookedReader{chunks: ans.chunks, before: before}, nil, w); err != nil {
		t.Fatalf("the answer: %v", err)
	}
	if restAt >= len(ans.chunks) {
		rest() // Envoy drops request data once the response ended: the filter sees none of it
	}
	if x.Upstream != nil {
		t.Errorf("the request went upstream after it was answered: %q", x.Upstream.Body)
	}
	got := clientAnswer{w.status, w.body, w.headers}
	if x.Local != nil {
		got = clientAnswer{x.Local.Status, x.Local.Body, headerMap(x.Local.Headers)}
	}
	if ans.status >= 300 {
		// An error is the same answer, in the client's dialect, as when the upstream answers in turn.
		if got.status != want.status || !bytes.Equal(got.body, want.body) || got.head["content-type"] != want.head["content-type"] {
			t.Errorf("the client got %d %q\nwant %d %q", got.status, got.body, want.status, want.body)
		}
		return
	}
	// A success before the upstream had the whole request answers no request the client sent.
	o := &outcome{local: x.Local, status: got.status, clientHead: got.head, clientBody: got.body}
	checkRefusal(t, o, req.client, 502, string(translate.ErrUpstreamEarlyAnswer), "")
}

// earlyAnswerConfig is hardeningConfig with rejected keys never benched: the rows answer 401 and then check
// that another exchange on the same host goes through, which a bench would answer with a 503.
var earlyAnswerConfig = strings.Replace(hardeningConfig, `"max_request_bytes": 262144`,
	`"max_request_bytes": 262144, "failover": {"rejected_key_seconds": 0}`, 1)

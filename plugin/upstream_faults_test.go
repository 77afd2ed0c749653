package main

import (
	"bytes"
	"io"
	"log"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/redact"
	"github.com/aidialect/aidialect/translate"
)

// Broken upstreams (issue 6 item 2): whatever a provider or the load balancer in front of it sends, the
// client gets a well-formed answer in its dialect, or a clean end (for streams: exactly one [DONE], last,
// with an error event in the client's envelope before it when the answer was cut), and the operator gets
// the matching metric and/or warn log. No row may panic or hang (assertRules: panics and host rules).

// faultConfig is testConfig with a small max_event_bytes, so one oversized SSE event is cheap to send.
var faultConfig = withSetting(hardeningConfig, `"max_event_bytes": 1024`)

// hostLogs collects every line the plugin logs through proxytest, at every level (proxytest writes them
// to the log package as "proxy_<level>_log: <message>"; TestMain discards that output). The returned
// function stops collecting and returns the lines by level.
func hostLogs() (stop func() map[string][]string) {
	var buf bytes.Buffer
	log.SetOutput(&buf)
	return func() map[string][]string {
		log.SetOutput(io.Discard)
		levels := map[string][]string{}
		var current string
		for _, line := range strings.Split(buf.String(), "\n") {
			if i := strings.Index(line, "proxy_"); i >= 0 && strings.Contains(line[i:], "_log: ") {
				level, msg, _ := strings.Cut(line[i+len("proxy_"):], "_log: ")
				current = level
				levels[level] = append(levels[level], msg)
				continue
			}
			if current != "" && line != "" && !strings.Contains(line, "[foreign call]") {
				// A continuation line of a multi-line message (a panic's stack).
				n := len(levels[current])
				levels[current][n-1] += "\n" + line
			}
		}
		return levels
	}
}

// fault is one broken-upstream row.
type fault struct {
	name   string
	ex     exchange
	client translate.Dialect
	status int    // the status the client must see
	metric string // filter error code counted once ("" none: every code stays 0)
	// endLost: the stream ended with trailers before its end, which the client never gets:
	// stream_end_lost_in_trailers is counted once too.
	endLost bool
	warn    string // a warn log line must contain this ("" none required)
	check   func(t *testing.T, o *outcome)
}

const (
	chunkA    = `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"he"},"finish_reason":null}]}`
	chunkB    = `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":null}]}`
	chunkStop = `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	// Azure AI streams name their chunks "chat.completion"; the filter edits them for OpenAI-family clients.
	aiChunkA    = `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"he"},"finish_reason":null}]}`
	aiChunkStop = `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func events(data ...string) string {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return b.String()
}

// pair is a client dialect asking for a model served by a provider of some dialect.
type pair struct {
	client   translate.Dialect
	provider string // provider name in hardeningConfig
	ex       func(stream bool) exchange
}

func pairRequest(client translate.Dialect, model string) func(bool) exchange {
	return func(stream bool) exchange {
		extra := ""
		if stream {
			extra = `,"stream":true`
		}
		var ex exchange
		switch client {
		case translate.AzureAI:
			ex = exchange{method: "POST", path: "/chat/completions?api-version=2024-05-01-preview",
				headers: [][2]string{{"api-key", "client-key"}},
				body:    []string{`{"model":"` + model + `",` + userMessages + extra + `}`}}
		case translate.AzureOpenAI:
			ex = exchange{method: "POST", path: "/openai/deployments/" + model + "/chat/completions?api-version=2024-10-21",
				headers: [][2]string{{"api-key", "client-key"}},
				body:    []string{`{` + userMessages + extra + `}`}}
		case translate.EternalAI:
			ex = exchange{method: "POST", path: "/v1/chat/completions",
				headers: [][2]string{{"authorization", "Bearer client-key"}},
				body:    []string{`{"model":"` + model + `","chain_id":"8453",` + userMessages + extra + `}`}}
		default:
			ex = exchange{method: "POST", path: "/v1/chat/completions",
				headers: [][2]string{{"authorization", "Bearer client-key"}},
				body:    []string{`{"model":"` + model + `",` + userMessages + extra + `}`}}
		}
		ex.config = faultConfig
		ex.headers = append(ex.headers, [2]string{"content-type", "application/json"}, [2]string{"accept-encoding", "gzip, br"})
		return ex
	}
}

var (
	openaiToAzureAI     = pair{translate.OpenAI, "llama", pairRequest(translate.OpenAI, "llama-3-70b")}
	openaiToOpenAI      = pair{translate.OpenAI, "openai", pairRequest(translate.OpenAI, "gpt-4.1")}
	openaiToAzureOpenAI = pair{translate.OpenAI, "azure-east", pairRequest(translate.OpenAI, "gpt-4o")}
	azureAIToOpenAI     = pair{translate.AzureAI, "openai", pairRequest(translate.AzureAI, "gpt-4.1")}
	azureAIToAzureAI    = pair{translate.AzureAI, "llama", pairRequest(translate.AzureAI, "llama-3-70b")}
	azureOpenAIToAI     = pair{translate.AzureOpenAI, "llama", pairRequest(translate.AzureOpenAI, "llama-3-70b")}
	eternalToEternal    = pair{translate.EternalAI, "eternal", pairRequest(translate.EternalAI, "intellect-1")}
	faultPairs          = []pair{openaiToAzureAI, openaiToOpenAI, azureAIToOpenAI, azureOpenAIToAI}
)

func (p pair) label() string { return p.client.String() + " client, " + p.provider + " provider" }

// answer sets the upstream's answer.
func answer(ex exchange, status int, headers [][2]string, chunks ...string) exchange {
	ex.upstream = &upstreamAnswer{status: status, headers: headers, chunks: chunks}
	return ex
}

func withTrailers(ex exchange) exchange { ex.trailers = true; return ex }

// checkErrorEnvelope asserts body is one error in the client's envelope.
func checkErrorEnvelope(t *testing.T, client translate.Dialect, status int, body []byte, code string) {
	t.Helper()
	if !gjson.ValidBytes(body) {
		t.Fatalf("not JSON: %q", body)
	}
	e := gjson.GetBytes(body, "error")
	if m := e.Get("message"); m.Type != gjson.String || m.Str == "" {
		t.Errorf("no error.message: %s", body)
	}
	if client == translate.AzureAI {
		if e.Get("code").Type != gjson.String || e.Get("status").Int() != int64(status) {
			t.Errorf("not the azure-ai envelope (status %d): %s", status, body)
		}
	} else if e.Get("type").Type != gjson.String || !e.Get("param").Exists() || !e.Get("code").Exists() {
		t.Errorf("not the openai-family envelope: %s", body)
	}
	if code != "" && e.Get("code").String() != code {
		t.Errorf("error code %q, want %q", e.Get("code").String(), code)
	}
}

// checkStreamEnd asserts an SSE answer that ends cleanly: every data event is JSON, exactly one
// data: [DONE], last; with cut, the event before it is an upstream_stream_error in the client's envelope.
func checkStreamEnd(t *testing.T, client translate.Dialect, body []byte, cut bool) {
	t.Helper()
	raw := strings.TrimSuffix(string(body), "\n\n")
	evs := strings.Split(raw, "\n\n")
	if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) || bytes.Count(body, []byte("[DONE]")) != 1 {
		t.Fatalf("the stream does not end with exactly one [DONE]: %q", body)
	}
	var data []string
	for _, ev := range evs[:len(evs)-1] {
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, d)
				if !gjson.Valid(d) {
					t.Errorf("a data event the client cannot parse: %q", d)
				}
			}
		}
	}
	isErr := len(data) > 0 && gjson.Get(data[len(data)-1], "error").Exists()
	if cut != isErr {
		t.Fatalf("cut=%v but the last event before [DONE] is %q", cut, data)
	}
	if cut {
		checkErrorEnvelope(t, client, 502, []byte(data[len(data)-1]), "upstream_stream_error")
	}
}

// checkStreamEndLost asserts the body of a stream whose upstream ended it with trailers before its end: the
// events that went out with the chunks, whole and parseable, the last of them holding last, and nothing the
// gateway adds at a stream's end (no error event, no [DONE]).
func checkStreamEndLost(t *testing.T, body []byte, last string) {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) || bytes.Contains(body, []byte("[DONE]")) {
		t.Fatalf("want whole events and no [DONE]: %q", body)
	}
	evs := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	for _, ev := range evs {
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok || !gjson.Valid(d) || gjson.Get(d, "error").Exists() {
			t.Errorf("an event that is not an answer's JSON data: %q", ev)
		}
	}
	if !strings.Contains(evs[len(evs)-1], last) {
		t.Errorf("the last event %q does not hold %s", evs[len(evs)-1], last)
	}
}

func faults() []fault {
	var rows []fault
	add := func(f ...fault) { rows = append(rows, f...) }
	html := "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>"
	for _, p := range faultPairs {
		p := p
		add(
			fault{name: p.label() + ": plain-text 500", ex: answer(p.ex(false), 500, [][2]string{{"content-type", "text/plain"}}, "internal oops\n"),
				client: p.client, status: 500, check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 500, o.clientBody, "")
					if !strings.Contains(gjson.GetBytes(o.clientBody, "error.message").String(), "internal oops") {
						t.Errorf("the upstream's text is lost: %s", o.clientBody)
					}
				}},
			fault{name: p.label() + ": HTML 502 from a load balancer", ex: answer(p.ex(false), 502,
				[][2]string{{"content-type", "text/html"}, {"content-length", strconv.Itoa(len(html))}}, html[:50], html[50:]),
				client: p.client, status: 502, check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 502, o.clientBody, "")
					if msg := gjson.GetBytes(o.clientBody, "error.message").String(); !strings.Contains(msg, "502 Bad Gateway") || strings.Contains(msg, "<") {
						t.Errorf("message %q", msg)
					}
				}},
			// Found by FuzzTranslateError: invalid UTF-8 inside the title once crashed the translation.
			fault{name: p.label() + ": HTML 502 with invalid UTF-8 in its title", ex: answer(p.ex(false), 502,
				[][2]string{{"content-type", "text/html"}}, "<html><TITLE>502 \xff\x89 Bad Gateway</TITLE></html>"),
				client: p.client, status: 502, check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 502, o.clientBody, "")
				}},
			fault{name: p.label() + ": HTML 502 streamed request", ex: answer(p.ex(true), 502,
				[][2]string{{"content-type", "text/html"}}, html), client: p.client, status: 502,
				check: func(t *testing.T, o *outcome) { checkErrorEnvelope(t, p.client, 502, o.clientBody, "") }},
			fault{name: p.label() + ": truncated JSON in a 200", ex: answer(p.ex(false), 200, jsonHeaders, chatOK[:60]),
				client: p.client, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON",
				check: func(t *testing.T, o *outcome) {
					if string(o.clientBody) != chatOK[:60] {
						t.Errorf("a body the filter cannot read must reach the client as sent: %q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": HTML page in a 200", ex: answer(p.ex(false), 200, [][2]string{{"content-type", "text/html"}}, html),
				client: p.client, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON"},
			fault{name: p.label() + ": empty 200 (headers only)", ex: answer(p.ex(false), 200, jsonHeaders),
				client: p.client, status: 200, metric: codeUpstreamBadJSON, warn: "without a body",
				check: func(t *testing.T, o *outcome) {
					if len(o.clientBody) != 0 {
						t.Errorf("body %q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": empty 200 (empty last data frame)", ex: answer(p.ex(false), 200, jsonHeaders, ""),
				client: p.client, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON"},
			fault{name: p.label() + ": 204", ex: answer(p.ex(false), 204, nil),
				client: p.client, status: 204, metric: codeUpstreamBadJSON, warn: "without a body"},
			fault{name: p.label() + ": 503 with an empty body (headers only)", ex: answer(p.ex(false), 503, [][2]string{{"content-length", "0"}}),
				client: p.client, status: 503, warn: "without a body", check: func(t *testing.T, o *outcome) {
					// No body callback follows: the filter answers with the translated error while it still can.
					checkErrorEnvelope(t, p.client, 503, o.clientBody, "")
					if o.clientHead["content-type"] != "application/json" || o.clientHead["content-length"] == "0" ||
						!strings.Contains(gjson.GetBytes(o.clientBody, "error.message").String(), "503") {
						t.Errorf("%q %s", o.clientHead, o.clientBody)
					}
				}},
			fault{name: p.label() + ": 422 with an empty body (headers only)", ex: answer(p.ex(false), 422, nil),
				client: p.client, status: map[bool]int{true: 422, false: 400}[p.client == translate.AzureAI], warn: "without a body",
				check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, o.status, o.clientBody, "")
				}},
			fault{name: p.label() + ": 500 with an empty body (empty last data frame)", ex: answer(p.ex(false), 500, nil, ""),
				client: p.client, status: 500, check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 500, o.clientBody, "")
				}},
			fault{name: p.label() + ": gzip JSON although accept-encoding was removed", ex: answer(p.ex(false), 200,
				[][2]string{{"content-type", "application/json"}, {"content-encoding", "gzip"}}, "\x1f\x8b\x08\x00\x00gzipped"),
				client: p.client, status: 200, metric: codeUpstreamEncoded, warn: "content-encoding", check: func(t *testing.T, o *outcome) {
					if _, has := o.upstreamHead["accept-encoding"]; has {
						t.Errorf("accept-encoding went upstream")
					}
					if string(o.clientBody) != "\x1f\x8b\x08\x00\x00gzipped" || o.clientHead["content-encoding"] != "gzip" {
						t.Errorf("a body the filter cannot read must reach the client as sent: %q %q", o.clientHead, o.clientBody)
					}
				}},
			fault{name: p.label() + ": content-encoding gzip, then identity", ex: answer(p.ex(false), 200,
				[][2]string{{"content-type", "application/json"}, {"content-encoding", "gzip"}, {"content-encoding", "identity"}}, "\x1f\x8b\x08\x00\x00gzipped"),
				client: p.client, status: 200, metric: codeUpstreamEncoded, warn: "content-encoding", check: func(t *testing.T, o *outcome) {
					if string(o.clientBody) != "\x1f\x8b\x08\x00\x00gzipped" {
						t.Errorf("a body the filter cannot read must reach the client as sent: %q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": gzip event stream", ex: answer(p.ex(true), 200,
				[][2]string{{"content-type", "text/event-stream"}, {"content-encoding", "gzip"}}, "\x1f\x8b\x08\x00\x00", "gzipped"),
				client: p.client, status: 200, metric: codeUpstreamEncoded, warn: "content-encoding", check: func(t *testing.T, o *outcome) {
					if string(o.clientBody) != "\x1f\x8b\x08\x00\x00gzipped" {
						t.Errorf("%q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": gzip 500", ex: answer(p.ex(false), 500,
				[][2]string{{"content-type", "application/json"}, {"content-encoding", "gzip"}}, "\x1f\x8b\x08\x00\x00gzipped"),
				client: p.client, status: 500, metric: codeUpstreamEncoded, warn: "content-encoding"},
			fault{name: p.label() + ": JSON answer ending in trailers", ex: withTrailers(answer(p.ex(false), 200, jsonHeaders, chatOK[:50], chatOK[50:])),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) {
					if gjson.GetBytes(o.clientBody, "choices.0.message.content").String() != "hi" {
						t.Errorf("answer lost: %q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": error ending in trailers", ex: withTrailers(answer(p.ex(false), 400, [][2]string{{"content-type", "text/plain"}}, "bad ", "request")),
				client: p.client, status: 400, check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 400, o.clientBody, "")
					if !strings.Contains(gjson.GetBytes(o.clientBody, "error.message").String(), "bad request") {
						t.Errorf("%s", o.clientBody)
					}
				}},
			fault{name: p.label() + ": finished stream ending in trailers after its [DONE]", ex: withTrailers(answer(p.ex(true), 200, eventHeaders,
				events(chunkA), events(chunkStop), events("[DONE]"))),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
			fault{name: p.label() + ": finished stream ending in trailers after its [DONE], in one chunk", ex: withTrailers(answer(p.ex(true), 200, eventHeaders,
				events(chunkA, chunkStop, "[DONE]"))),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
			// Ended with trailers before its end: Envoy lets nothing follow the last chunk (docs/envoy-host.md
			// section 4), so the [DONE] or the error event the gateway would add never reaches the client.
			fault{name: p.label() + ": finished stream ending in trailers without [DONE]", ex: withTrailers(answer(p.ex(true), 200, eventHeaders, events(chunkA), events(chunkStop))),
				client: p.client, status: 200, endLost: true, warn: "ended a stream with trailers before the stream's end",
				check: func(t *testing.T, o *outcome) { checkStreamEndLost(t, o.clientBody, `"finish_reason":"stop"`) }},
			fault{name: p.label() + ": cut stream ending in trailers", ex: withTrailers(answer(p.ex(true), 200, eventHeaders, events(chunkA), `data: {"id":"a","cho`)),
				client: p.client, status: 200, metric: codeUpstreamStreamCut, endLost: true, warn: "the error event",
				check: func(t *testing.T, o *outcome) { checkStreamEndLost(t, o.clientBody, `"he"`) }},
			fault{name: p.label() + ": stream cut mid-event", ex: answer(p.ex(true), 200, eventHeaders, events(chunkA, chunkB), `data: {"id":"a","object":"chat.comp`),
				client: p.client, status: 200, metric: codeUpstreamStreamCut,
				check: func(t *testing.T, o *outcome) {
					checkStreamEnd(t, p.client, o.clientBody, true)
					if !bytes.Contains(o.clientBody, []byte(`"llo"`)) {
						t.Errorf("the events before the cut were lost: %q", o.clientBody)
					}
				}},
			fault{name: p.label() + ": stream cut inside [DONE]", ex: answer(p.ex(true), 200, eventHeaders, events(chunkA, chunkStop), "data: [DO"),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
			fault{name: p.label() + ": finished stream without [DONE]", ex: answer(p.ex(true), 200, eventHeaders, events(chunkA), events(chunkStop)),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
			fault{name: p.label() + ": finished stream without [DONE] or a last blank line", ex: answer(p.ex(true), 200, eventHeaders, events(chunkA), "data: "+chunkStop),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
			fault{name: p.label() + ": unfinished stream without [DONE]", ex: answer(p.ex(true), 200, eventHeaders, events(chunkA), events(chunkB)),
				client: p.client, status: 200, metric: codeUpstreamStreamCut,
				check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, true) }},
			fault{name: p.label() + ": event stream with no body (headers only)", ex: answer(p.ex(true), 200, eventHeaders),
				client: p.client, status: 200, metric: codeUpstreamStreamCut, warn: "without a body"},
			fault{name: p.label() + ": event stream with no events", ex: answer(p.ex(true), 200, eventHeaders, ""),
				client: p.client, status: 200, metric: codeUpstreamStreamCut,
				check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, true) }},
			fault{name: p.label() + ": event stream that is a JSON body", ex: answer(p.ex(true), 200, eventHeaders, chatOK),
				client: p.client, status: 200, metric: codeUpstreamStreamCut,
				check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, true) }},
			fault{name: p.label() + ": two [DONE]s and events after them", ex: answer(p.ex(true), 200, eventHeaders,
				events(chunkA, chunkStop, "[DONE]"), events("[DONE]", chunkB)),
				client: p.client, status: 200, check: func(t *testing.T, o *outcome) {
					checkStreamEnd(t, p.client, o.clientBody, false)
					if bytes.Contains(o.clientBody, []byte(`"llo"`)) {
						t.Errorf("an event after [DONE] reached the client")
					}
				}},
			fault{name: p.label() + ": one event over max_event_bytes", ex: answer(p.ex(true), 200, eventHeaders,
				append([]string{events(chunkA)}, split([]byte(events(`{"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+
					strings.Repeat("x", 4096)+`"}}]}`, chunkStop, "[DONE]")), 256)...)...),
				client: p.client, status: 200, metric: codeStreamEventTooBig, warn: "max_event_bytes",
				check: func(t *testing.T, o *outcome) {
					checkStreamEnd(t, p.client, o.clientBody, true)
					if bytes.Contains(o.clientBody, []byte("xxxx")) || !bytes.Contains(o.clientBody, []byte(`"he"`)) {
						t.Errorf("%q", o.clientBody)
					}
				}},
		)
	}
	// Pairs whose answers the filter edits, with the provider's own stream shapes.
	add(
		fault{name: "openai client, azure-ai provider: azure-ai stream cut mid-event", ex: answer(openaiToAzureAI.ex(true), 200, eventHeaders,
			events(aiChunkA), `data: {"id":"a","object":"chat.completion","choices":[{"index":0,"delta":{"content":"l`),
			client: translate.OpenAI, status: 200, metric: codeUpstreamStreamCut, check: func(t *testing.T, o *outcome) {
				checkStreamEnd(t, translate.OpenAI, o.clientBody, true)
				if bytes.Contains(o.clientBody, []byte(`"chat.completion"`)) {
					t.Errorf("untranslated chunk: %q", o.clientBody)
				}
			}},
		fault{name: "openai client, azure-ai provider: azure-ai stream finished without [DONE]", ex: answer(openaiToAzureAI.ex(true), 200, eventHeaders,
			events(aiChunkA, aiChunkStop)), client: translate.OpenAI, status: 200,
			check: func(t *testing.T, o *outcome) { checkStreamEnd(t, translate.OpenAI, o.clientBody, false) }},
		fault{name: "openai client, azure-openai provider: annotation-only stream cut", ex: answer(openaiToAzureOpenAI.ex(true), 200, eventHeaders,
			events(`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0}]}`)),
			client: translate.OpenAI, status: 200, metric: codeUpstreamStreamCut,
			check: func(t *testing.T, o *outcome) { checkStreamEnd(t, translate.OpenAI, o.clientBody, true) }},
		fault{name: "openai client, azure-openai provider: truncated JSON with annotations", ex: answer(openaiToAzureOpenAI.ex(false), 200, jsonHeaders,
			`{"prompt_filter_results":[],"id":"c","choices":[{"index":0,"mess`), client: translate.OpenAI, status: 200,
			metric: codeUpstreamBadJSON, warn: "not JSON"},
		fault{name: "eternalai client, eternal provider: truncated JSON", ex: answer(eternalToEternal.ex(false), 200, jsonHeaders, `{"id":"e","onchain_data":{`),
			client: translate.EternalAI, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON"},
		fault{name: "openai client, eternal provider: truncated JSON while onchain headers are held", ex: answer(pairRequest(translate.OpenAI, "intellect-1")(false),
			200, jsonHeaders, `{"id":"e","onchain_data":{"infer_id":4`), client: translate.OpenAI, status: 200,
			metric: codeUpstreamBadJSON, warn: "not JSON"},
		fault{name: "openai client, eternal provider: empty body while onchain headers are held", ex: answer(pairRequest(translate.OpenAI, "intellect-1")(false),
			200, jsonHeaders, ""), client: translate.OpenAI, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON"},
		fault{name: "openai client, eternal provider: JSON ending in trailers while onchain headers are held", ex: withTrailers(answer(
			pairRequest(translate.OpenAI, "intellect-1")(false), 200, jsonHeaders, `{"id":"e","choices":[],`, `"onchain_data":{"infer_id":42}}`)),
			client: translate.OpenAI, status: 200, check: func(t *testing.T, o *outcome) {
				if o.clientHead["x-onchain-infer-id"] != "42" || string(o.clientBody) != `{"id":"e","choices":[]}` {
					t.Errorf("%q %s", o.clientHead, o.clientBody)
				}
			}},
		fault{name: "azure-ai client, azure-ai provider: 5xx with an empty JSON object", ex: answer(azureAIToAzureAI.ex(false), 503, jsonHeaders, `{}`),
			client: translate.AzureAI, status: 503, check: func(t *testing.T, o *outcome) {
				checkErrorEnvelope(t, translate.AzureAI, 503, o.clientBody, "")
			}},
		fault{name: "azure-openai client, azure-ai provider: 422 with a body that is a JSON string", ex: answer(azureOpenAIToAI.ex(false), 422, jsonHeaders, `"unprocessable"`),
			client: translate.AzureOpenAI, status: 400, check: func(t *testing.T, o *outcome) {
				checkErrorEnvelope(t, translate.AzureOpenAI, 400, o.clientBody, "")
			}},
		fault{name: "openai client, openai provider: error JSON nested 10,000 deep", ex: answer(openaiToOpenAI.ex(false), 500, jsonHeaders,
			`{"error":`+strings.Repeat(`[`, 10000)+strings.Repeat(`]`, 10000)+`}`), client: translate.OpenAI, status: 500,
			check: func(t *testing.T, o *outcome) { checkErrorEnvelope(t, translate.OpenAI, 500, o.clientBody, "") }},
		// Deeper than the filter reads (256 levels): forwarded as it came, and counted as unreadable, the same
		// for every dialect pair.
		fault{name: "openai client, openai provider: 200 JSON nested 10,000 deep", ex: answer(openaiToOpenAI.ex(false), 200, jsonHeaders,
			deepAnswer), client: translate.OpenAI, status: 200, metric: codeUpstreamBadJSON, warn: "not JSON",
			check: func(t *testing.T, o *outcome) {
				if string(o.clientBody) != deepAnswer {
					t.Errorf("the unreadable answer was not forwarded as it came")
				}
			}},
	)
	// Issue 10: redirects, nesting deep enough to trap an unbounded recursion, media types in another case,
	// and an answer that would become thousands of headers.
	for _, p := range faultPairs {
		p := p
		for _, status := range []int{301, 302, 307, 308} {
			add(fault{name: p.label() + ": " + strconv.Itoa(status) + " redirect echoing the key", ex: answer(p.ex(false), status,
				[][2]string{{"content-type", "text/html"}, {"location", "https://attacker.example/steal?k=" + providerKeyOf(p.provider)}},
				"<a href=\"https://attacker.example/?k="+providerKeyOf(p.provider)+"\">moved</a>"),
				client: p.client, status: 502, metric: string(translate.ErrUpstreamRedirect), warn: "redirect",
				check: func(t *testing.T, o *outcome) {
					checkErrorEnvelope(t, p.client, 502, o.clientBody, string(translate.ErrUpstreamRedirect))
					if _, has := o.clientHead["location"]; has {
						t.Errorf("the redirect's Location reached the client: %q", o.clientHead["location"])
					}
				}})
		}
		add(
			fault{name: p.label() + ": error JSON nested 400,000 deep", ex: answer(p.ex(false), 500, jsonHeaders,
				`{"error":`+strings.Repeat(`[`, 400000)+strings.Repeat(`]`, 400000)+`}`), client: p.client, status: 500,
				check: func(t *testing.T, o *outcome) { checkErrorEnvelope(t, p.client, 500, o.clientBody, "") }},
			fault{name: p.label() + ": stream ending in an unterminated event nested 400,000 deep", ex: withConfig(answer(p.ex(true), 200, eventHeaders,
				events(chunkA), "data: "+strings.Repeat(`[`, 400000)), bigEventConfig), client: p.client, status: 200, metric: codeUpstreamStreamCut,
				check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, true) }},
			fault{name: p.label() + ": Text/Event-Stream in another letter case is a stream", ex: answer(p.ex(true), 200,
				[][2]string{{"content-type", "Text/Event-Stream; Charset=UTF-8"}}, events(chunkA, chunkStop), "data: [DONE]\n\n"),
				client: p.client, status: 200,
				check: func(t *testing.T, o *outcome) { checkStreamEnd(t, p.client, o.clientBody, false) }},
		)
	}
	// Trailers echoing the key, on a buffered answer, an error and a stream: Envoy forwards them to HTTP/2
	// clients.
	for _, p := range faultPairs {
		p := p
		echo := func(ex exchange) exchange {
			ex = withTrailers(ex)
			ex.upstreamTrailers = [][2]string{{"x-echo-auth", "Bearer " + providerKeyOf(p.provider)},
				{"grpc-message", "key " + providerKeyOf(p.provider) + " rejected"}, {"x-plain", "kept"}}
			return ex
		}
		keptPlain := func(t *testing.T, o *outcome) {
			if o.clientTrailers["x-plain"] != "kept" || o.clientTrailers["x-echo-auth"] != redact.Placeholder {
				t.Errorf("client trailers %q", o.clientTrailers)
			}
		}
		add(
			fault{name: p.label() + ": JSON answer whose trailers echo the key", ex: echo(answer(p.ex(false), 200, jsonHeaders, chatOK)),
				client: p.client, status: 200, check: keptPlain},
			fault{name: p.label() + ": error whose trailers echo the key", ex: echo(answer(p.ex(false), 500, jsonHeaders, `{"error":{"message":"no"}}`)),
				client: p.client, status: 500, check: keptPlain},
			fault{name: p.label() + ": stream whose trailers echo the key", ex: echo(answer(p.ex(true), 200, eventHeaders, events(chunkA, chunkStop), "data: [DONE]\n\n")),
				client: p.client, status: 200, check: keptPlain},
		)
	}
	many := ""
	for i := 0; i < 5001; i++ {
		many += `"f` + strconv.Itoa(i) + `":"v",`
	}
	openaiToEternal := pair{translate.OpenAI, "eternal", pairRequest(translate.OpenAI, "intellect-1")}
	add(fault{name: "openai client, eternal provider: onchain_data with 5,001 fields", ex: answer(openaiToEternal.ex(false), 200, jsonHeaders,
		`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"onchain_data":{`+many+`"last":"v"}}`),
		client: translate.OpenAI, status: 200, check: func(t *testing.T, o *outcome) {
			n, size := 0, 0
			for name, v := range o.clientHead {
				if strings.HasPrefix(name, "x-onchain-") {
					n++
					size += len(name) + len(v)
				}
			}
			if n == 0 || n > 32 || size > 9<<10 {
				t.Errorf("%d x-onchain-* headers (%d bytes) reached the client, want 1..32", n, size)
			}
		}})
	return rows
}

// bigEventConfig lets a 400 KB event through, so its content is what gets judged.
var bigEventConfig = withSetting(hardeningConfig, `"max_event_bytes": 1048576`)

func withConfig(ex exchange, config string) exchange { ex.config = config; return ex }

// providerKeyOf is the provider key hardeningConfig gives a provider.
func providerKeyOf(provider string) string {
	return map[string]string{"azure-east": "az-provider-key", "llama": "ai-provider-key", "eternal": "et-provider-key",
		"openai": "sk-provider-openai"}[provider]
}

var deepAnswer = `{"usage":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000) + `}`

// TestUpstreamFaults is issue 6 item 2.
func TestUpstreamFaults(t *testing.T) {
	rows := faults()
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, f := range rows {
				t.Run(f.name, func(t *testing.T) {
					counts := map[string]uint64{}
					ex := f.ex
					ex.onDone = func(o *outcome) {
						for _, code := range countedCodes {
							counts[code] = o.counter(metricFilterErrors + ".code." + code)
						}
					}
					stop := hostLogs()
					o := run(t, md, ex)
					logs := stop()
					o.assertRules(t)
					if o.upstreamCalls != 1 || o.local != nil {
						t.Fatalf("the request did not go upstream: %d %s", o.status, o.clientBody)
					}
					if o.status != f.status {
						t.Errorf("client status %d, want %d: %q", o.status, f.status, o.clientBody)
					}
					for code, n := range counts {
						want := uint64(0)
						if code == f.metric || code == codeStreamEndLost && f.endLost {
							want = 1
						}
						if n != want {
							t.Errorf("%s.code.%s = %d, want %d", metricFilterErrors, code, n, want)
						}
					}
					if f.warn != "" && !containsLine(logs["warn"], f.warn) {
						t.Errorf("no warn log mentioning %q: %q", f.warn, logs["warn"])
					}
					if len(logs["error"]) > 0 || len(logs["critical"]) > 0 {
						t.Errorf("error logs: %q %q", logs["error"], logs["critical"])
					}
					checkNoSecret(t, "client", o.clientHead, o.clientBody, providerKeys...)
					checkNoSecret(t, "client trailer", o.clientTrailers, nil, providerKeys...)
					checkLogs(t, logs, append([]string{"client-key"}, providerKeys...)...)
					if f.check != nil {
						f.check(t, o)
					}
				})
			}
		})
	}
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

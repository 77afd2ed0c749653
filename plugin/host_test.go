package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/translate"
)

// TestHeaderList: the header list helpers (host.go) on repeated and mixed-case names. Envoy hands names over
// in lower case, so lookups are exact; set leaves one value, last; del removes every value; only a change
// marks the list dirty (a clean list is never written back to the host).
func TestHeaderList(t *testing.T) {
	type pairs = [][2]string
	tests := []struct {
		name  string
		start pairs
		edit  func(l *headerList)
		want  pairs
		dirty bool
	}{
		{"no edit", pairs{{"a", "1"}}, func(*headerList) {}, pairs{{"a", "1"}}, false},
		{"set a new header appends it", pairs{{"a", "1"}}, func(l *headerList) { l.set("b", "2") },
			pairs{{"a", "1"}, {"b", "2"}}, true},
		{"set replaces every value with one, at the end", pairs{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}},
			func(l *headerList) { l.set("a", "9") }, pairs{{"b", "2"}, {"c", "4"}, {"a", "9"}}, true},
		{"set to the value it had is still a write", pairs{{"a", "1"}}, func(l *headerList) { l.set("a", "1") },
			pairs{{"a", "1"}}, true},
		{"set on an empty list", nil, func(l *headerList) { l.set(":path", "/x") }, pairs{{":path", "/x"}}, true},
		{"set leaves other letter cases alone", pairs{{"X-A", "1"}}, func(l *headerList) { l.set("x-a", "2") },
			pairs{{"X-A", "1"}, {"x-a", "2"}}, true},
		{"del removes every value, keeps the order of the rest", pairs{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}, {"a", "5"}},
			func(l *headerList) { l.del("a") }, pairs{{"b", "2"}, {"c", "4"}}, true},
		{"del of the only header", pairs{{"a", "1"}}, func(l *headerList) { l.del("a") }, pairs{}, true},
		{"del of an absent header is no change", pairs{{"a", "1"}, {"b", "2"}}, func(l *headerList) { l.del("c") },
			pairs{{"a", "1"}, {"b", "2"}}, false},
		{"del on an empty list", nil, func(l *headerList) { l.del("a") }, nil, false},
		{"del is exact: other letter cases stay", pairs{{"X-A", "1"}, {"x-a", "2"}, {"x-A", "3"}},
			func(l *headerList) { l.del("x-a") }, pairs{{"X-A", "1"}, {"x-A", "3"}}, true},
		{"del matches whole names, not prefixes", pairs{{"api-key", "1"}, {"api-key-2", "2"}, {"x-api-key", "3"}},
			func(l *headerList) { l.del("api-key") }, pairs{{"api-key-2", "2"}, {"x-api-key", "3"}}, true},
		{"del then set", pairs{{"a", "1"}, {"b", "2"}}, func(l *headerList) { l.del("a"); l.set("b", "3"); l.set("a", "4") },
			pairs{{"b", "3"}, {"a", "4"}}, true},
		{"empty values are values", pairs{{"a", ""}, {"a", "x"}}, func(l *headerList) { l.set("a", "") },
			pairs{{"a", ""}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := headerList{pairs: slices.Clone(tt.start)}
			tt.edit(&l)
			if !slices.Equal(l.pairs, tt.want) || len(l.pairs) != len(tt.want) {
				t.Errorf("pairs %q, want %q", l.pairs, tt.want)
			}
			if l.dirty != tt.dirty {
				t.Errorf("dirty %v, want %v", l.dirty, tt.dirty)
			}
		})
	}
}

// TestHeaderListRead: get returns the first value, count every one, both by exact name.
func TestHeaderListRead(t *testing.T) {
	l := headerList{pairs: [][2]string{{"a", "1"}, {"Content-Type", "text/plain"}, {"a", "2"}, {"b", ""}, {"a", "3"}}}
	tests := []struct {
		name  string
		get   string
		count int
	}{
		{"a", "1", 3},
		{"b", "", 1},
		{"content-type", "", 0}, // Envoy lower-cases; a mixed-case name is another header
		{"Content-Type", "text/plain", 1},
		{"c", "", 0},
		{"", "", 0},
	}
	for _, tt := range tests {
		if got := l.get(tt.name); got != tt.get {
			t.Errorf("get(%q) = %q, want %q", tt.name, got, tt.get)
		}
		if got := l.count(tt.name); got != tt.count {
			t.Errorf("count(%q) = %d, want %d", tt.name, got, tt.count)
		}
	}
	if l.dirty {
		t.Error("reading made the list dirty")
	}
}

// TestHeaderEditsThroughTheFilter: in both modes, what the header helpers make of repeated and mixed-case
// headers on the way upstream and back (the host lower-cases names, as Envoy does). Each row counts a header's
// values in the full list, which the harness's maps cannot show.
func TestHeaderEditsThroughTheFilter(t *testing.T) {
	openai, azureDeployment := clientShapes[0], clientShapes[1]
	tests := []struct {
		name     string
		ex       exchange
		upstream map[string][]string // header -> its values as sent upstream, in order (nil: none)
		client   map[string][]string // header -> its values as the client got them
	}{
		{"a body-routed request: the routing header, sent twice in mixed case, set once", func() exchange {
			ex := openai.request(openai.body(""))
			ex.headers = append(ex.headers, [2]string{"X-AIDialect-Provider", "llama"}, [2]string{"x-aidialect-provider", "eternal"})
			return ex
		}(), map[string][]string{"x-aidialect-provider": {"openai"}, ":authority": {"api.openai.com"},
			":path": {"/v1/chat/completions"}, "authorization": {"Bearer sk-provider-openai"}}, nil},
		{"a request-line-routed request: repeated accept-encoding and credentials removed", func() exchange {
			ex := azureDeployment.request(azureDeployment.body(""))
			ex.headers = append(ex.headers, [2]string{"Accept-Encoding", "gzip"}, [2]string{"accept-encoding", "br"},
				[2]string{"Authorization", "Bearer client-key"}, [2]string{"Content-Length", "44"})
			return ex
		}(), map[string][]string{"accept-encoding": nil, "api-key": {"az-provider-key"}, "authorization": nil,
			"content-length": nil, "x-aidialect-provider": {"azure-east"}}, nil},
		{"a body-routed request: content-length set once to the rendered length", func() exchange {
			ex := openai.request(`{"model":"llama-3-70b",` + userMessages + `}`)
			ex.headers = append(ex.headers, [2]string{"Content-Length", strconv.Itoa(len(ex.body[0]))})
			return ex
		}(), map[string][]string{"content-length": {renderedLength}, "azureml-model-deployment": {"llama3-blue"}}, nil},
		{"an unknown path: every copy of the routing header removed, the rest untouched", exchange{config: hardeningConfig,
			method: "GET", path: "/healthz", headers: [][2]string{{"X-AIDialect-Provider", "openai"}, {"x-custom", "1"},
				{"x-aidialect-provider", "llama"}, {"X-Custom", "2"}, {"x-AIDIALECT-provider", "eternal"}}},
			map[string][]string{"x-aidialect-provider": nil, "x-custom": {"1", "2"}, ":path": {"/healthz"}}, nil},
		{"a translated answer: repeated content-length removed, content-type kept", answered(openai.request(openai.body("")), 200,
			[][2]string{{"Content-Type", "application/json"}, {"Content-Length", "999"}, {"content-length", "999"}, {"X-Request-Id", "r1"}}, chatOK),
			nil, map[string][]string{"content-length": nil, "content-type": {"application/json"}, "x-request-id": {"r1"}}},
		{"an error answer: content-type set once, status mapped for the client", answered(openai.request(`{"model":"llama-3-70b",`+userMessages+`}`), 422,
			[][2]string{{"Content-Type", "application/json"}, {"content-type", "text/plain"}}, `{"status":422,"message":"bad"}`),
			nil, map[string][]string{"content-type": {"application/json"}, ":status": {"400"}}},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					up, body, client := exchangeHeaderLists(t, md, tt.ex)
					for name, want := range tt.upstream {
						if slices.Equal(want, []string{renderedLength}) {
							if want = []string{strconv.Itoa(len(body))}; len(body) == len(strings.Join(tt.ex.body, "")) {
								t.Errorf("the body went upstream as the client sent it: %s", body)
							}
						}
						if got := valuesOf(up, name); !slices.Equal(got, want) {
							t.Errorf("upstream %s: %q, want %q", name, got, want)
						}
					}
					for name, want := range tt.client {
						if got := valuesOf(client, name); !slices.Equal(got, want) {
							t.Errorf("client %s: %q, want %q", name, got, want)
						}
					}
				})
			}
		})
	}
}

// renderedLength stands for the length of the body as sent upstream.
const renderedLength = "(the rendered body's length)"

// exchangeHeaderLists plays ex on a fresh host and returns the header lists as sent upstream and as the client
// got them (with :status first), and the body sent upstream.
func exchangeHeaderLists(t *testing.T, md mode, ex exchange) (upstream [][2]string, body []byte, client [][2]string) {
	t.Helper()
	host, err := hostemu.New(md.vm(t), []byte(ex.config))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	x := host.Begin()
	defer x.Finish()
	headers := append([][2]string{{":method", ex.method}, {":path", ex.path}, {":authority", "gateway.local"}}, ex.headers...)
	var chunks [][]byte
	for _, c := range ex.body {
		chunks = append(chunks, []byte(c))
	}
	if len(chunks) > 0 && !hasHeader(ex.headers, "content-length") {
		headers = append(headers, [2]string{"content-length", strconv.Itoa(len(strings.Join(ex.body, "")))})
	}
	if err := x.SendRequest(headers, chunks); err != nil {
		t.Fatal(err)
	}
	if x.Upstream == nil {
		t.Fatalf("not sent upstream: %+v", x.Local)
	}
	if ex.upstream == nil {
		return x.Upstream.Headers, x.Upstream.Body, nil
	}
	w := &listRecorder{}
	if err := x.RelayResponse(ex.upstream.status, ex.upstream.headers, strings.NewReader(strings.Join(ex.upstream.chunks, "")), nil, w); err != nil {
		t.Fatal(err)
	}
	return x.Upstream.Headers, x.Upstream.Body, append([][2]string{{":status", strconv.Itoa(w.status)}}, w.headers...)
}

// listRecorder keeps the client's response headers as a list.
type listRecorder struct {
	status  int
	headers [][2]string
}

func (r *listRecorder) WriteHeaders(status int, headers [][2]string) {
	r.status, r.headers = status, headers
}
func (r *listRecorder) WriteBody([]byte) error { return nil }

// valuesOf is every value of a header, by name in any letter case, in order (nil when absent).
func valuesOf(h [][2]string, name string) []string {
	var out []string
	for _, kv := range h {
		if strings.EqualFold(kv[0], name) {
			out = append(out, kv[1])
		}
	}
	return out
}

// TestStatePool: the free list reuses states last-in first-out, holds at most maxPooledStates, refuses a state
// whose buffers grew past maxPooledFootprint, and empties the buffers it keeps without shrinking them.
func TestStatePool(t *testing.T) {
	base := (&requestState{}).footprint()
	sized := func(out int) *requestState { return &requestState{out: make([]byte, 5, out)} }
	tests := []struct {
		name string
		run  func(t *testing.T, p *statePool)
	}{
		{"an empty pool makes a new state", func(t *testing.T, p *statePool) {
			a, b := p.get(), p.get()
			if a == nil || b == nil || a == b {
				t.Errorf("got %p and %p", a, b)
			}
		}},
		{"last in, first out", func(t *testing.T, p *statePool) {
			a, b := p.get(), p.get()
			p.put(a)
			p.put(b)
			if got := p.get(); got != b {
				t.Errorf("got %p, want the last put %p", got, b)
			}
			if got := p.get(); got != a {
				t.Errorf("got %p, want %p", got, a)
			}
			if len(p.free) != 0 {
				t.Errorf("%d states left", len(p.free))
			}
		}},
		{"at most maxPooledStates", func(t *testing.T, p *statePool) {
			for i := 0; i < maxPooledStates+3; i++ {
				p.put(&requestState{})
			}
			if len(p.free) != maxPooledStates {
				t.Errorf("%d states pooled, want %d", len(p.free), maxPooledStates)
			}
		}},
		{"a state at maxPooledFootprint is kept", func(t *testing.T, p *statePool) {
			s := sized(maxPooledFootprint - base)
			p.put(s)
			if len(p.free) != 1 || p.free[0] != s {
				t.Fatalf("not pooled (footprint %d)", s.footprint())
			}
			if len(s.out) != 0 || cap(s.out) != maxPooledFootprint-base {
				t.Errorf("out len %d cap %d: want emptied, capacity kept", len(s.out), cap(s.out))
			}
		}},
		{"a state one byte over is left to the collector", func(t *testing.T, p *statePool) {
			p.put(sized(maxPooledFootprint - base + 1))
			if len(p.free) != 0 {
				t.Errorf("pooled a state of footprint %d", maxPooledFootprint+1)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, &statePool{})
		})
	}
}

// TestStatePoolCollects: a collection runs after collectAfterBytes body bytes, whatever the number of
// requests, and after every collectEvery finished requests; each one starts the byte count again.
func TestStatePoolCollects(t *testing.T) {
	tests := []struct {
		name         string
		run          func(p *statePool)
		sinceCollect int
		released     int
	}{
		{"bytes below the threshold accumulate", func(p *statePool) { p.handled(1000); p.handled(collectAfterBytes - 1001) },
			collectAfterBytes - 1, 0},
		{"the byte that reaches it collects", func(p *statePool) { p.handled(collectAfterBytes - 1); p.handled(1) }, 0, 0},
		{"one large body collects at once", func(p *statePool) { p.handled(3 * collectAfterBytes) }, 0, 0},
		{"counting restarts after a collection", func(p *statePool) { p.handled(collectAfterBytes); p.handled(7) }, 7, 0},
		{"requests below collectEvery do not collect", func(p *statePool) {
			p.handled(5)
			for i := 0; i < collectEvery-1; i++ {
				p.maybeCollect()
			}
		}, 5, collectEvery - 1},
		{"the collectEvery-th request collects", func(p *statePool) {
			p.handled(5)
			for i := 0; i < collectEvery; i++ {
				p.maybeCollect()
			}
		}, 0, collectEvery},
		{"and every collectEvery after", func(p *statePool) {
			for i := 0; i < 2*collectEvery-1; i++ {
				p.maybeCollect()
			}
			p.handled(9)
			p.maybeCollect()
		}, 0, 2 * collectEvery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &statePool{}
			tt.run(p)
			if p.sinceCollect != tt.sinceCollect || p.released != tt.released {
				t.Errorf("sinceCollect %d released %d, want %d %d", p.sinceCollect, p.released, tt.sinceCollect, tt.released)
			}
		})
	}
}

// TestPooledStateReleasesTheRequest: a state back in the pool keeps nothing of its last exchange readable
// (its buffers are emptied, its body and stream released), so the next exchange starts clean.
func TestPooledStateReleasesTheRequest(t *testing.T) {
	p := &statePool{}
	s := p.get()
	if err := s.body.Parse([]byte(`{"model":"gpt-4o","messages":[]}`)); err != nil {
		t.Fatal(err)
	}
	if s.body.Model != "gpt-4o" {
		t.Fatalf("parsed model %q", s.body.Model)
	}
	s.out = append(s.out, "rendered"...)
	s.stream.Reset(translate.Exchange{Client: translate.OpenAI, Provider: translate.OpenAI, Op: translate.OpChatCompletions}, 1024)
	p.put(s)
	if got := p.get(); got != s {
		t.Fatal("the state was not pooled")
	}
	if s.body.Model != "" || len(s.out) != 0 {
		t.Errorf("kept: model %q out %q", s.body.Model, s.out)
	}
}

// TestHeaderListApply: a batch of edits made by apply leaves the list, and its dirty mark, exactly as making
// them one by one with set and del does.
func TestHeaderListApply(t *testing.T) {
	set := func(name, value string) headerEdit { return headerEdit{name: name, value: value} }
	del := func(name string) headerEdit { return headerEdit{name: name, del: true} }
	start := [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {"a", "1"}, {"b", "2"}, {"a", "3"},
		{"X-Mixed", "m"}, {"c", ""}}
	tests := []struct {
		name  string
		start [][2]string
		edits []headerEdit
	}{
		{"no edits", start, nil},
		{"one set of a new header", start, []headerEdit{set("d", "4")}},
		{"one set of a repeated header", start, []headerEdit{set("a", "9")}},
		{"one del of a repeated header", start, []headerEdit{del("a")}},
		{"a del of an absent header", start, []headerEdit{del("zz")}},
		{"only dels of absent headers", start, []headerEdit{del("zz"), del("x-mixed")}},
		{"set then del of the same header", start, []headerEdit{set("a", "9"), del("a")}},
		{"del then set of the same header", start, []headerEdit{del("a"), set("a", "9")}},
		{"two sets: the last wins", start, []headerEdit{set("b", "8"), set("b", "9")}},
		{"sets keep the order of their last edit", start, []headerEdit{set("a", "7"), set("d", "8"), set("a", "9"), set("e", "0")}},
		{"names are exact", start, []headerEdit{set("x-mixed", "n"), del("X-MIXED")}},
		{"a routed request's batch", start, []headerEdit{set(":authority", "api.openai.com"), set(":path", "/v1/x"),
			set("x-aidialect-provider", "p"), del("authorization"), del("api-key"), set("authorization", "Bearer k"),
			del("accept-encoding"), del("content-length")}},
		{"on an empty list", nil, []headerEdit{set("a", "1"), del("b"), set("c", "3")}},
		{"on a list with spare capacity", append(make([][2]string, 0, 32), start...), []headerEdit{set("n1", "1"), set("n2", "2"), del("b")}},
		{"an empty value is set", start, []headerEdit{set("c", ""), set("d", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := headerList{pairs: slices.Clone(tt.start)}
			for _, e := range tt.edits {
				if e.del {
					want.del(e.name)
				} else {
					want.set(e.name, e.value)
				}
			}
			got := headerList{pairs: tt.start}
			if tt.start != nil {
				got.pairs = append(make([][2]string, 0, cap(tt.start)), tt.start...)
			}
			got.apply(tt.edits)
			if !slices.Equal(got.pairs, want.pairs) || len(got.pairs) != len(want.pairs) {
				t.Errorf("apply: %q\none by one: %q", got.pairs, want.pairs)
			}
			if got.dirty != want.dirty {
				t.Errorf("apply dirty %v, one by one %v", got.dirty, want.dirty)
			}
		})
	}
}

// TestRequestHead: the one-pass reading of the request headers answers as the list does: the first value of
// a header, and whether it is present more than once, for the headers it watches and any other.
func TestRequestHead(t *testing.T) {
	lists := map[string][][2]string{
		"empty":  nil,
		"simple": {{":method", "POST"}, {":path", "/v1/chat/completions"}, {"authorization", "Bearer k"}, {"x-other", "o"}},
		"repeats": {{"api-key", "a"}, {"content-length", "1"}, {"api-key", "b"}, {"content-length", "1"},
			{"content-length", "2"}, {"x-other", "o1"}, {"x-other", "o2"}},
		"mixed case":   {{"Authorization", "Bearer k"}, {"authorization", "Bearer l"}, {"Content-Encoding", "gzip"}},
		"empty values": {{"content-encoding", ""}, {"content-encoding", "gzip"}, {"api-key", ""}},
	}
	names := append(slices.Clone(watchedHeaders), "x-other", "x-absent", "Authorization", "")
	for listName, pairs := range lists {
		t.Run(listName, func(t *testing.T) {
			l := headerList{pairs: pairs}
			head := readRequestHead(&l)
			for _, name := range names {
				if got, want := head.get(name), l.get(name); got != want {
					t.Errorf("get(%q) = %q, the list says %q", name, got, want)
				}
				if got, want := head.repeated(name), l.count(name) > 1; got != want {
					t.Errorf("repeated(%q) = %v, the list counts %d", name, got, l.count(name))
				}
			}
		})
	}
	for _, name := range []string{":method", ":path", "authorization", "api-key", "content-encoding", "content-length"} {
		if !slices.Contains(watchedHeaders, name) {
			t.Errorf("%s is not watched", name)
		}
	}
}

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/goldencase"
	"github.com/aidialect/aidialect/internal/hostemu"
)

// memoryCheckpoints are the request counts at which TestMemory reads the guest's linear memory.
var memoryCheckpoints = []int{1_000, 10_000, 100_000}

// TestMemory runs 100,000 mixed requests through one VM (one hostemu.Host) of the compiled filter: every
// golden case (chat, streamed chat, completions, embeddings and errors over all 16 client x provider dialect
// pairs, including the local replies) plus the two benchmark scenarios (a 4 KiB request, a 100-event
// stream), rotating. It prints the linear memory after 1k, 10k and 100k requests, beside the floor module
// given the same requests, and asserts no growth after warm-up: 100k within 10% of 10k. Linear memory
// never shrinks, so a leak, or garbage collected too late, shows as growth.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests through the compiled module: run without -short")
	}
	mix, cfg := memoryMix(t)
	sizes := map[string][]uint32{}
	for _, name := range []string{filterName, floorName} {
		// A VM of its own, so its memory starts from the module's initial size.
		g, err := loadGuest(name, moduleBytes(name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.start(cfg)
		if err != nil {
			g.close()
			t.Fatal(err)
		}
		sizes[name] = append(sizes[name], g.memoryBytes())
		next := 0
		for i := 1; i <= memoryCheckpoints[len(memoryCheckpoints)-1]; i++ {
			m := mix[(i-1)%len(mix)]
			x, err := s.exchange(m.req)
			if err != nil {
				t.Fatalf("%s, request %d (%s): %v", name, i, m.req.name, err)
			}
			if i <= len(mix) && name == filterName {
				// The first round checks the routing really reaches the intended provider and dialect.
				got, status := s.client.body, s.client.status
				if x.Local != nil {
					got, status = x.Local.Body, x.Local.Status
				}
				if status != m.status || !m.anyBody && !bytes.Equal(got, m.want) {
					t.Fatalf("%s: client got %d %s\nwant %d %s", m.req.name, status, got, m.status, m.want)
				}
			}
			if i == memoryCheckpoints[next] {
				sizes[name] = append(sizes[name], g.memoryBytes())
				next++
			}
		}
		s.close()
		g.close()
	}
	var table strings.Builder
	fmt.Fprintf(&table, "linear memory (MiB) over %d request kinds, rotating:\n%10s %10s %10s\n", len(mix), "requests", filterName, floorName)
	for i, n := range append([]int{0}, memoryCheckpoints...) {
		fmt.Fprintf(&table, "%10d %10.2f %10.2f\n", n, mib(sizes[filterName][i]), mib(sizes[floorName][i]))
	}
	t.Log("\n" + table.String())
	at10k, at100k := sizes[filterName][2], sizes[filterName][3]
	if float64(at100k) > float64(at10k)*1.10 {
		t.Errorf("the filter's linear memory grew after warm-up: %.2f MiB at 10k requests, %.2f MiB at 100k (limit +10%%)",
			mib(at10k), mib(at100k))
	}
}

func mib(n uint32) float64 { return float64(n) / (1 << 20) }

// mixed is one request kind of TestMemory, with the client status and body the filter must produce.
type mixed struct {
	req     *request
	status  int
	want    []byte
	anyBody bool // only the status is checked
}

// memoryMix builds the request kinds and a configuration with one provider per dialect, each with its
// golden-case settings and one model, "m-<dialect>"; every golden request is re-pointed at the model of its
// case's provider (body "model", Azure OpenAI deployment path, azureml-model-deployment header).
func memoryMix(t *testing.T) ([]mixed, string) {
	cases, err := goldencase.Load(goldencase.Dir)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]goldencase.Provider{}
	var order []string
	var mix []mixed
	for _, c := range cases {
		p := c.Provider
		if c.PathPrefix != "" || c.OnchainData != "" {
			continue // needs a configuration of its own
		}
		if prev, ok := providers[p.Dialect]; !ok {
			providers[p.Dialect] = p
			order = append(order, p.Dialect)
		} else if prev != p {
			continue // another setting of the same dialect: would need a second provider
		}
		want, _, err := c.Expected("client_response.http")
		if err != nil {
			t.Fatal(err)
		}
		status, _ := strconv.Atoi(want.First)
		mix = append(mix, mixed{req: goldenRequest(t, c, "m-"+p.Dialect), status: status, want: want.Body})
	}
	if len(mix) < 64 {
		t.Fatalf("only %d golden cases usable for the memory mix", len(mix))
	}
	if providers["azure-ai"].Model != "Meta-Llama-3-70B-Instruct" {
		t.Fatalf("the golden azure-ai provider changed (%+v): the benchmark scenarios expect its model", providers["azure-ai"])
	}
	for _, r := range []*request{jsonScenario("m-azure-ai"), streamScenario("m-azure-ai")} {
		// In the mix for their size; TestScenarios checks what the filter makes of them.
		mix = append(mix, mixed{req: r, status: 200, anyBody: true})
	}
	var list []any
	for _, d := range order {
		provider := providers[d].PluginProvider("p-"+d, d+".provider.test", "m-"+d)
		list = append(list, provider)
	}
	raw, err := json.Marshal(map[string]any{"providers": list})
	if err != nil {
		t.Fatal(err)
	}
	return mix, string(raw)
}

// goldenRequest turns a golden case into a request for model, its body in two chunks and the answer in
// 512-byte chunks.
func goldenRequest(t *testing.T, c goldencase.Case, model string) *request {
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	body := req.Body
	old := ""
	if m := gjson.GetBytes(body, "model"); m.Type == gjson.String {
		old = m.Str
		body = bytes.Replace(body, []byte(`"model":"`+old+`"`), []byte(`"model":"`+model+`"`), 1)
	}
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		d, tail, _ := strings.Cut(rest, "/")
		old = d
		path = "/openai/deployments/" + model + "/" + tail
	}
	var headers [][2]string
	for _, h := range req.Headers {
		switch {
		case h[0] == "content-length":
			continue
		case h[0] == "azureml-model-deployment":
			old = h[1]
			h[1] = model
		}
		headers = append(headers, h)
	}
	if old == "" {
		t.Fatalf("%s: no model in the request to re-point", c.Name)
	}
	status, err := strconv.Atoi(resp.First)
	if err != nil {
		t.Fatalf("%s: upstream status %q", c.Name, resp.First)
	}
	return newRequest(c.Name, method, path, headers, body, 2).answerWith(status, resp.Headers, split(resp.Body, 512))
}

// worstCaseLimit is max_request_bytes in TestMemoryWorstCase (the filter's default).
const worstCaseLimit = 8 << 20

// TestMemoryWorstCase runs bursts of the largest exchanges a client or an upstream can make through one VM of
// the filter built with the aidialect_memstats tag: maximum-size request bodies (rendered, and refused for
// too many members), a maximum-size JSON answer, and streams of 1 MiB events. Linear memory never shrinks,
// so its size at the end is the peak; goal: at most 4 x max_request_bytes + 16 MiB. After the bursts the live
// heap (read through the tag's export, after a collection) must be back under 16 MiB: nothing holds on to
// the large buffers.
func TestMemoryWorstCase(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of MiB through the compiled module: run without -short")
	}
	g, err := loadGuest("aidialect (memstats)", memstatsWasm)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	heapLive := g.mod.ExportedFunction("aidialect_heap_live")
	if heapLive == nil {
		t.Fatal("the memstats module exports no aidialect_heap_live")
	}
	cfg := `{"providers":[
	  {"name":"openai","dialect":"openai","host":"api.openai.com","api_key":"sk-provider-key-1","models":[{"name":"gpt-4o"}]},
	  {"name":"llama","dialect":"azure-ai","host":"llama.models.ai.azure.com","api_key":"ai-provider-key-1",
	   "models":[{"name":"llama-3-70b","model":"Meta-Llama-3-70B-Instruct"}]}],
	 "max_request_bytes":` + strconv.Itoa(worstCaseLimit) + `,"max_event_bytes":2097152}`
	s, err := g.start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	start := g.memoryBytes()
	for round := 0; round < 3; round++ {
		for _, r := range worstCaseBurst() {
			x, err := s.exchange(r.req)
			if err != nil {
				t.Fatalf("%s: %v", r.req.name, err)
			}
			status := s.client.status
			if x.Local != nil {
				status = x.Local.Status
			}
			if status != r.status {
				body := s.client.body
				if x.Local != nil {
					body = x.Local.Body
				}
				t.Fatalf("%s: status %d, want %d: %.200s", r.req.name, status, r.status, body)
			}
		}
	}
	peak := g.memoryBytes()
	limit := 4*worstCaseLimit + 16<<20
	// 64 streams of 1 MiB events open at once, as on a busy worker: each exchange's buffers grow to the event
	// size (the peak is then the open streams' own need, reported, not bounded here), and all of them come
	// back to the pool together: none may stay pinned.
	if err := s.overlapping(64, worstCaseStream()); err != nil {
		t.Fatal(err)
	}
	overlapped := g.memoryBytes()
	for i := 0; i < 200; i++ {
		if _, err := s.exchange(jsonScenario("llama-3-70b")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := heapLive.Call(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live := res[0]
	t.Logf("linear memory: %.2f MiB at start, %.2f MiB after 3 sequential bursts (goal <= %.0f MiB = 4 x max_request_bytes + 16 MiB), "+
		"%.2f MiB after 64 overlapping 1 MiB-event streams; live heap after all: %.2f MiB (goal < 16 MiB)",
		mib(start), mib(peak), mib(uint32(limit)), mib(overlapped), float64(live)/(1<<20))
	if int(peak) > limit {
		t.Errorf("peak linear memory %.2f MiB over %.0f MiB", mib(peak), mib(uint32(limit)))
	}
	if live >= 16<<20 {
		t.Errorf("live heap %.2f MiB after the bursts, want < 16 MiB", float64(live)/(1<<20))
	}
}

// worstCaseBurst is one burst of TestMemoryWorstCase: each request with the status the client must get.
func worstCaseBurst() []mixed {
	big := chatBody("gpt-4o", worstCaseLimit-1024)
	// As many members as fit: refused by the member cap, after the scan reached it.
	var members bytes.Buffer
	members.WriteString(`{"model":"gpt-4o"`)
	for i := 0; members.Len() < worstCaseLimit-64; i++ {
		fmt.Fprintf(&members, `,"k%07d":1`, i)
	}
	members.WriteString(`}`)
	// 4096 keys of 2 KiB sharing all but their last bytes: the duplicate check's worst case.
	var prefixed bytes.Buffer
	prefixed.WriteString(`{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}]`)
	prefix := strings.Repeat("p", 2000)
	for i := 0; i < 4000; i++ {
		fmt.Fprintf(&prefixed, `,"%s%05d":1`, prefix, i)
	}
	prefixed.WriteString(`}`)
	small := []byte(`{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}]}`)
	content := strings.Repeat("x", worstCaseLimit-512)
	bigAnswer := `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"` +
		content + `"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	okAnswer := []byte(`{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	jsonHead := [][2]string{{"content-type", "application/json"}}
	return []mixed{
		{req: newRequest("8 MiB chat request", "POST", "/v1/chat/completions", clientHeaders, big, 128).answerWith(200, jsonHead, [][]byte{okAnswer}), status: 200},
		{req: newRequest("8 MiB of members", "POST", "/v1/chat/completions", clientHeaders, members.Bytes(), 128), status: 400},
		{req: newRequest("8 MiB of shared-prefix keys", "POST", "/v1/chat/completions", clientHeaders, prefixed.Bytes(), 128).answerWith(200, jsonHead, [][]byte{okAnswer}), status: 200},
		{req: newRequest("8 MiB JSON answer", "POST", "/v1/chat/completions", clientHeaders, small, 1).answerWith(200, jsonHead, split([]byte(bigAnswer), 64<<10)), status: 200},
		{req: worstCaseStream(), status: 200},
	}
}

// worstCaseStream is an OpenAI client's stream from the azure-ai provider with eight 1 MiB events, each edited
// by the filter, in 64 KiB network chunks.
func worstCaseStream() *request {
	body := []byte(`{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	event := []byte(`data: {"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("y", 1<<20) + `"},"finish_reason":null}]}` + "\n\n")
	var stream [][]byte
	for i := 0; i < 8; i++ {
		stream = append(stream, split(event, 64<<10)...)
	}
	stream = append(stream, []byte("data: [DONE]\n\n"))
	return newRequest("stream of 1 MiB events", "POST", "/v1/chat/completions", clientHeaders, body, 1).
		answerWith(200, [][2]string{{"content-type", "text/event-stream"}}, stream)
}

// overlapping plays n copies of r with their lifetimes overlapping: every request is sent, then every answer
// relayed, then every exchange ended (Finish: proxy_on_log, proxy_on_delete), so n exchanges hold their state
// at once.
func (s *session) overlapping(n int, r *request) error {
	xs := make([]*hostemu.Exchange, n)
	for i := range xs {
		xs[i] = s.host.Begin()
		if err := xs[i].SendRequest(r.headers, r.chunks); err != nil {
			return err
		}
		if xs[i].Upstream == nil {
			return fmt.Errorf("%s: answered locally", r.name)
		}
	}
	for _, x := range xs {
		s.client.reset()
		if err := x.RelayResponse(r.status, r.answerHeaders, &chunkReader{chunks: r.answer}, nil, &s.client); err != nil {
			return err
		}
		if s.client.status != 200 {
			return fmt.Errorf("%s: status %d", r.name, s.client.status)
		}
	}
	for _, x := range xs {
		x.Finish()
	}
	return s.host.Dead()
}

package bench

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/goldencase"
	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/wasmtest"
)

// TestMemory runs 100,000 mixed requests through one VM (one hostemu.Host) of the compiled filter: every
// golden case (chat, streamed chat, completions, embeddings and errors over all 16 client x provider dialect
// pairs, including the local replies) plus the two benchmark scenarios (a 4 KiB request, a 100-event
// stream), rotating (benchdata.MemoryMix, the mix internal/v8host's TestV8Memory runs under V8). It prints
// the linear memory after 1k, 10k and 100k requests, beside the floor module given the same requests, and
// asserts no growth after warm-up: 100k within 10% of 10k. Linear memory never shrinks, so a leak, or
// garbage collected too late, shows as growth.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests through the compiled module: run without -short")
	}
	mix, cfg, err := benchdata.MemoryMix(goldencase.Dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]*request, len(mix))
	for i, m := range mix {
		reqs[i] = newRequest(m.X)
	}
	checkpoints := wasmtest.MemoryCheckpoints
	sizes := map[string][]uint64{}
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
		sizes[name] = append(sizes[name], uint64(g.memoryBytes()))
		next := 0
		for i := 1; i <= checkpoints[len(checkpoints)-1]; i++ {
			m, req := mix[(i-1)%len(mix)], reqs[(i-1)%len(mix)]
			x, err := s.exchange(req)
			if err != nil {
				t.Fatalf("%s, request %d (%s): %v", name, i, req.name, err)
			}
			if i <= len(mix) && name == filterName {
				// The first round checks the routing really reaches the intended provider and dialect.
				got, status := s.client.Body, s.client.Status
				if x.Local != nil {
					got, status = x.Local.Body, x.Local.Status
				}
				if status != m.Status || !m.AnyBody && !bytes.Equal(got, m.Want) {
					t.Fatalf("%s: client got %d %s\nwant %d %s", req.name, status, got, m.Status, m.Want)
				}
			}
			if i == checkpoints[next] {
				sizes[name] = append(sizes[name], uint64(g.memoryBytes()))
				next++
			}
		}
		s.close()
		g.close()
	}
	t.Log("\n" + wasmtest.MemoryTable("", len(mix), sizes[filterName], sizes[floorName]))
	wasmtest.CheckMemoryGrowth(t, sizes[filterName], "")
}

func mib(n uint32) float64 { return wasmtest.MiB(uint64(n)) }

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
			x, err := s.exchange(newRequest(r.X))
			if err != nil {
				t.Fatalf("%s: %v", r.X.Name, err)
			}
			status, body := s.client.Status, s.client.Body
			if x.Local != nil {
				status, body = x.Local.Status, x.Local.Body
			}
			if status != r.Status {
				t.Fatalf("%s: status %d, want %d: %.200s", r.X.Name, status, r.Status, body)
			}
			if round == 0 {
				t.Logf("%s: %d bytes to the client", r.X.Name, len(body))
			}
		}
	}
	peak := g.memoryBytes()
	limit := 4*worstCaseLimit + 16<<20
	// 64 streams of 1 MiB events open at once, as on a busy worker: each exchange's buffers grow to the event
	// size (the peak is then the open streams' own need, reported, not bounded here), and all of them come
	// back to the pool together: none may stay pinned.
	if err := s.overlapping(64, newRequest(worstCaseStream())); err != nil {
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
func worstCaseBurst() []benchdata.Mixed {
	big := benchdata.ChatRequest("gpt-4o", worstCaseLimit-1024)
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
	// Responses requests bridged to the chat-only provider, all instructions: the Response repeats the
	// request's settings (instructions among them), in a JSON answer and in a stream's created, in_progress
	// and terminal events.
	instructions := strings.Repeat("i", worstCaseLimit-1024)
	bridged := []byte(`{"model":"llama-3-70b","instructions":"` + instructions + `","input":"hi"}`)
	bridgedStream := []byte(`{"model":"llama-3-70b","instructions":"` + instructions + `","input":"hi","stream":true}`)
	okEvents := []byte("data: " + `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}` +
		"\n\ndata: " + `{"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` +
		"\n\ndata: [DONE]\n\n")
	return []benchdata.Mixed{
		{X: chat("8 MiB chat request", big, 128).AnswerWith(200, jsonHead, [][]byte{okAnswer}), Status: 200},
		{X: chat("8 MiB of members", members.Bytes(), 128), Status: 400},
		{X: chat("8 MiB of shared-prefix keys", prefixed.Bytes(), 128).AnswerWith(200, jsonHead, [][]byte{okAnswer}), Status: 200},
		{X: chat("8 MiB JSON answer", small, 1).AnswerWith(200, jsonHead, benchdata.Split([]byte(bigAnswer), 64<<10)), Status: 200},
		{X: worstCaseStream(), Status: 200},
		{X: responses("8 MiB bridged Responses request", bridged, 128).AnswerWith(200, jsonHead, [][]byte{okAnswer}), Status: 200},
		{X: responses("8 MiB bridged Responses stream", bridgedStream, 128).AnswerWith(200,
			[][2]string{{"content-type", "text/event-stream"}}, [][]byte{okEvents}), Status: 200},
		{X: bridgedStreamAtCap("bridged stream holding 4 MiB of text", func(i int, part string) string {
			return `{"content":"` + part + `"}`
		}), Status: 200},
		{X: bridgedStreamAtCap("bridged stream holding 4 MiB of tool-call arguments", func(i int, part string) string {
			head := `"index":0`
			if i == 0 {
				head += `,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"` + part + `"}`
				return `{"tool_calls":[{` + head + `}]}`
			}
			return `{"tool_calls":[{` + head + `,"function":{"arguments":"` + part + `"}}]}`
		}), Status: 200},
	}
}

// bridgedStreamAtCap is a Responses stream bridged from the azure-ai provider's chat stream whose deltas
// (delta(i, part) for the i-th of four parts of just under 1 MiB) add up to just under the 4 MiB of text and
// arguments a bridged stream holds: its end repeats them four times (text.done, content_part.done,
// output_item.done and response.completed), in 64 KiB network chunks.
func bridgedStreamAtCap(name string, delta func(i int, part string) string) *benchdata.Exchange {
	body := []byte(`{"model":"llama-3-70b","input":"hi","stream":true}`)
	const head = `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	var events bytes.Buffer
	events.WriteString("data: " + head + `{"role":"assistant"},"finish_reason":null}]}` + "\n\n")
	part := strings.Repeat("z", 1<<20-4<<10)
	for i := 0; i < 4; i++ {
		events.WriteString("data: " + head + delta(i, part) + `,"finish_reason":null}]}` + "\n\n")
	}
	events.WriteString("data: " + head + `{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	return responses(name, body, 1).AnswerWith(200, [][2]string{{"content-type", "text/event-stream"}},
		benchdata.Split(events.Bytes(), 64<<10))
}

// responses is an OpenAI client's Responses request named name, its body cut into bodyChunks chunks.
func responses(name string, body []byte, bodyChunks int) *benchdata.Exchange {
	return benchdata.NewExchange(name, "POST", "/v1/responses", benchdata.ClientHeaders(), body, bodyChunks)
}

// chat is an OpenAI client's chat request named name, its body cut into bodyChunks chunks.
func chat(name string, body []byte, bodyChunks int) *benchdata.Exchange {
	return benchdata.NewExchange(name, "POST", "/v1/chat/completions", benchdata.ClientHeaders(), body, bodyChunks)
}

// worstCaseStream is an OpenAI client's stream from the azure-ai provider with eight 1 MiB events, each edited
// by the filter, in 64 KiB network chunks.
func worstCaseStream() *benchdata.Exchange {
	body := []byte(`{"model":"llama-3-70b","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	event := []byte(`data: {"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("y", 1<<20) + `"},"finish_reason":null}]}` + "\n\n")
	var stream [][]byte
	for i := 0; i < 8; i++ {
		stream = append(stream, benchdata.Split(event, 64<<10)...)
	}
	stream = append(stream, []byte("data: [DONE]\n\n"))
	return chat("stream of 1 MiB events", body, 1).AnswerWith(200, [][2]string{{"content-type", "text/event-stream"}}, stream)
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
		s.client.Reset()
		if err := x.RelayResponse(r.status, r.answerHeaders, &wasmtest.ChunkReader{Chunks: r.answer}, nil, &s.client); err != nil {
			return err
		}
		if s.client.Status != 200 {
			return fmt.Errorf("%s: status %d", r.name, s.client.Status)
		}
	}
	for _, x := range xs {
		x.Finish()
	}
	return s.host.Dead()
}

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/tetratelabs/wazero/api"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/hostemu"
)

// The two modules under test, built once per process by TestMain with the flags of `make build`.
var (
	filterWasm []byte // ./plugin: dist/aidialect.wasm (AIDIALECT_WASM names a prebuilt one instead)
	floorWasm  []byte // ./bench/floorfilter
	// memstatsWasm is ./plugin built with the aidialect_memstats tag, which exports the guest's live heap
	// (TestMemoryWorstCase).
	memstatsWasm []byte
)

// wasmBuildArgs are `make build`'s: both modules are built the same way.
var wasmBuildArgs = []string{"build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w"}

func TestMain(m *testing.M) {
	// proxytest narrates every host call (foreign calls, logs) through the log package.
	log.SetOutput(io.Discard)
	dir, err := os.MkdirTemp("", "aidialect-bench")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := buildModules(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func buildModules(dir string) error {
	var wg sync.WaitGroup
	var filterErr, floorErr, memstatsErr error
	build := func(pkg, out string, dst *[]byte, errp *error, extra ...string) {
		defer wg.Done()
		cmd := exec.Command("go", append(append(wasmBuildArgs, extra...), "-o", out, pkg)...)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if output, err := cmd.CombinedOutput(); err != nil {
			*errp = fmt.Errorf("building %s for wasip1 failed: %v\n%s", pkg, err, output)
			return
		}
		*dst, *errp = os.ReadFile(out)
	}
	wg.Add(1)
	go build("github.com/aidialect/aidialect/bench/floorfilter", filepath.Join(dir, "floor.wasm"), &floorWasm, &floorErr)
	if path := os.Getenv("AIDIALECT_WASM"); path != "" {
		filterWasm, filterErr = os.ReadFile(path)
	} else {
		wg.Add(1)
		go build("github.com/aidialect/aidialect/plugin", filepath.Join(dir, "aidialect.wasm"), &filterWasm, &filterErr)
	}
	wg.Add(1)
	go build("github.com/aidialect/aidialect/plugin", filepath.Join(dir, "memstats.wasm"), &memstatsWasm, &memstatsErr,
		"-tags=aidialect_memstats")
	wg.Wait()
	return errors.Join(filterErr, floorErr, memstatsErr)
}

// guest is one compiled module running in its own wazero runtime, as proxytest.NewWasmVMContext makes it.
type guest struct {
	name string
	vm   proxytest.WasmVMContext
	mod  api.Module // the guest's module instance: its linear memory, its exports
}

func loadGuest(name string, wasm []byte) (*guest, error) {
	vm, err := proxytest.NewWasmVMContext(wasm)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	mod, err := hostemu.GuestModule(vm)
	if err != nil {
		vm.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &guest{name: name, vm: vm, mod: mod}, nil
}

func (g *guest) close() { g.vm.Close() }

// Compiling a module takes seconds: tests and benchmarks share one guest per module, loaded on first use.
// (TestMemory loads its own, so its memory starts clean.)
var (
	sharedMu     sync.Mutex
	sharedGuests = map[string]*guest{}
)

func sharedGuest(tb testing.TB, name string) *guest {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if g := sharedGuests[name]; g != nil {
		return g
	}
	g, err := loadGuest(name, moduleBytes(name))
	if err != nil {
		tb.Fatal(err)
	}
	sharedGuests[name] = g
	return g
}

func moduleBytes(name string) []byte {
	if name == floorName {
		return floorWasm
	}
	return filterWasm
}

// memoryBytes is the guest's linear memory size; it only grows.
func (g *guest) memoryBytes() uint32 { return g.mod.Memory().Size() }

// session is one hostemu.Host on a guest: the plugin started once, then any number of exchanges.
type session struct {
	g      *guest
	host   *hostemu.Host
	reader chunkReader
	client client
}

func (g *guest) start(config string) (*session, error) {
	host, err := hostemu.New(g.vm, []byte(config))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.name, err)
	}
	return &session{g: g, host: host}, nil
}

func (s *session) close() { s.host.Close() }

// exchange plays one request through the filter, and the upstream's answer back, then ends the stream the
// way Envoy does: Finish runs proxy_on_log, then proxy_on_delete, and the host forgets the stream's state
// (hostemu does what proxytest does not; TestScenarios checks the stream map is left empty).
func (s *session) exchange(r *request) (*hostemu.Exchange, error) {
	s.client.reset()
	x := s.host.Begin()
	err := x.SendRequest(r.headers, r.chunks)
	if err == nil && x.Local == nil && x.Upstream != nil {
		s.reader = chunkReader{chunks: r.answer}
		err = x.RelayResponse(r.status, r.answerHeaders, &s.reader, nil, &s.client)
	}
	x.Finish()
	return x, errors.Join(err, s.host.Dead())
}

// client is the downstream side: what the filter releases.
type client struct {
	status  int
	headers [][2]string
	body    []byte
}

func (c *client) WriteHeaders(status int, headers [][2]string) { c.status, c.headers = status, headers }

func (c *client) WriteBody(p []byte) error {
	c.body = append(c.body, p...)
	return nil
}

func (c *client) reset() { c.status, c.headers, c.body = 0, nil, c.body[:0] }

func (c *client) header(name string) string {
	for _, kv := range c.headers {
		if strings.EqualFold(kv[0], name) {
			return kv[1]
		}
	}
	return ""
}

// chunkReader hands out one chunk per Read, like network reads.
type chunkReader struct {
	chunks [][]byte
	i, off int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.i >= len(r.chunks) {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[r.i][r.off:])
	if r.off += n; r.off == len(r.chunks[r.i]) {
		r.i, r.off = r.i+1, 0
	}
	return n, nil
}

// request is a client request and the upstream's answer to it.
type request struct {
	name          string
	headers       [][2]string // with :method, :path, :authority, content-length
	chunks        [][]byte    // request body chunks
	status        int
	answerHeaders [][2]string
	answer        [][]byte // upstream answer body chunks
}

func newRequest(name, method, path string, headers [][2]string, body []byte, bodyChunks int) *request {
	r := &request{name: name}
	r.headers = append([][2]string{{":method", method}, {":path", path}, {":authority", "gateway.local"}}, headers...)
	if len(body) > 0 {
		r.headers = append(r.headers, [2]string{"content-length", strconv.Itoa(len(body))})
		r.chunks = split(body, (len(body)+bodyChunks-1)/bodyChunks)
	}
	return r
}

func (r *request) answerWith(status int, headers [][2]string, chunks [][]byte) *request {
	r.status, r.answerHeaders, r.answer = status, headers, chunks
	return r
}

func (r *request) body() []byte  { return bytes.Join(r.chunks, nil) }
func (r *request) reply() []byte { return bytes.Join(r.answer, nil) }

// split cuts b into pieces of at most n bytes.
func split(b []byte, n int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, b[:k:k])
		b = b[k:]
	}
	return out
}

// benchConfig is the README's four providers, keys inline (proxytest's wasm mode has no environment).
const benchConfig = `{
  "providers": [
    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "azure-key",
     "api_version": "2024-10-21", "models": [{"name": "gpt-4o", "deployment": "gpt4o-prod"}, {"name": "gpt-35-*"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama-ep.eastus2.models.ai.azure.com", "api_key": "ai-key",
     "extra_parameters": "drop",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct", "deployment": "llama3-blue"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "eternal-key",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"}]},
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-openai",
     "models": [{"name": "*"}]}
  ],
  "default_provider": "openai"
}`

var clientHeaders = [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer sk-client-key"}}

// chatBody is the benchmarks' shared chat request (internal/benchdata), so wasm and native figures measure
// the same bytes.
func chatBody(model string, size int) []byte { return benchdata.ChatRequest(model, size) }

// jsonScenario: a 4 KiB OpenAI chat request routed to the azure-ai provider (rewritten, two fields dropped),
// answered with a 2 KiB Azure AI chat completion.
func jsonScenario(model string) *request {
	r := newRequest("json-4KiB-openai-to-azure-ai", "POST", "/v1/chat/completions", clientHeaders, chatBody(model, 4<<10), 1)
	head := `{"id":"1f3b9c2e7d8a4e0f","object":"chat.completion","created":1732000000,"model":"Meta-Llama-3-70B-Instruct","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`
	tail := `","tool_calls":null}}],"usage":{"prompt_tokens":918,"completion_tokens":412,"total_tokens":1330}}`
	var content strings.Builder
	for content.Len() < 2048-len(head)-len(tail) {
		content.WriteString("The quick brown fox jumps over the lazy dog. ")
	}
	answer := head + content.String()[:2048-len(head)-len(tail)] + tail
	return r.answerWith(200, [][2]string{{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(answer))}},
		[][]byte{[]byte(answer)})
}

// streamEvents is the number of data events in streamScenario's answer (then data: [DONE]).
const streamEvents = 100

// streamScenario: an OpenAI client's streamed chat on the azure-ai provider, answered with 100 Azure AI
// events, one per network chunk; every event is edited ("object":"chat.completion" becomes
// "chat.completion.chunk").
func streamScenario(model string) *request {
	body := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"Tell me a story."}],"stream":true,"max_tokens":256}`)
	r := newRequest("sse-100-events-azure-ai-to-openai", "POST", "/v1/chat/completions",
		append(clientHeaders, [2]string{"accept", "text/event-stream"}), body, 1)
	const event = `data: {"id":"9c1d2e3f","object":"chat.completion","created":1732000000,"model":"Meta-Llama-3-70B-Instruct","choices":[{"index":0,"delta":%s,"finish_reason":%s}]%s}` + "\n\n"
	var chunks [][]byte
	for i := range streamEvents {
		switch i {
		case 0:
			chunks = append(chunks, fmt.Appendf(nil, event, `{"role":"assistant","content":""}`, "null", ""))
		case streamEvents - 1:
			chunks = append(chunks, fmt.Appendf(nil, event, `{"content":""}`, `"stop"`,
				`,"usage":{"prompt_tokens":12,"completion_tokens":98,"total_tokens":110}`))
		default:
			chunks = append(chunks, fmt.Appendf(nil, event, fmt.Sprintf(`{"content":" token%d"}`, i), "null", ""))
		}
	}
	chunks = append(chunks, []byte("data: [DONE]\n\n"))
	return r.answerWith(200, [][2]string{{"content-type", "text/event-stream"}}, chunks)
}

// checkScenario checks one exchange's outcome: the filter translated, the floor changed nothing.
func checkScenario(g *guest, r *request, x *hostemu.Exchange, c *client) error {
	if x.Local != nil {
		return fmt.Errorf("%s answered locally: %d %s", g.name, x.Local.Status, x.Local.Body)
	}
	if x.Upstream == nil || c.status != 200 {
		return fmt.Errorf("%s: no upstream request or client status %d", g.name, c.status)
	}
	up, down := x.Upstream.Body, c.body
	if g.name == floorName {
		if !bytes.Equal(up, r.body()) || !bytes.Equal(down, r.reply()) {
			return fmt.Errorf("the floor changed a body:\n%s\n%s", up, down)
		}
		return nil
	}
	if bytes.Contains(up, []byte(`"user":`)) || bytes.Contains(up, []byte(`"logit_bias":`)) ||
		!bytes.Contains(up, []byte(`"model":"Meta-Llama-3-70B-Instruct"`)) {
		return fmt.Errorf("the upstream body was not rendered for azure-ai: %.300s", up)
	}
	if got := x.Upstream.Header("x-aidialect-provider"); got != "llama" {
		return fmt.Errorf("routed to %q, want llama", got)
	}
	if !strings.Contains(x.Upstream.Header(":path"), "api-version=") {
		return fmt.Errorf("upstream path %q has no api-version", x.Upstream.Header(":path"))
	}
	if len(r.answer) > 1 { // the stream
		if n := bytes.Count(down, []byte(`"object":"chat.completion.chunk"`)); n != streamEvents {
			return fmt.Errorf("%d of %d events edited:\n%s", n, streamEvents, down)
		}
		if !bytes.HasSuffix(down, []byte("data: [DONE]\n\n")) {
			return fmt.Errorf("the stream does not end with [DONE]: %s", down)
		}
		return nil
	}
	if got := c.header("x-aidialect-dropped-params"); got != "user,logit_bias" {
		return fmt.Errorf("x-aidialect-dropped-params %q, want user,logit_bias", got)
	}
	if !bytes.Contains(down, []byte(`"total_tokens":1330`)) {
		return fmt.Errorf("answer not relayed: %s", down)
	}
	return nil
}

const (
	filterName = "aidialect"
	floorName  = "floor"
)

// TestScenarios checks what the benchmarks measure: both modules load, the filter translates each scenario
// and the floor leaves it alone, and the session bookkeeping (memory size, proxy_on_delete) works.
func TestScenarios(t *testing.T) {
	for _, name := range []string{filterName, floorName} {
		t.Run(name, func(t *testing.T) {
			g := sharedGuest(t, name)
			s, err := g.start(benchConfig)
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			for _, r := range []*request{jsonScenario("llama-3-70b"), streamScenario("llama-3-70b")} {
				for range 3 {
					x, err := s.exchange(r)
					if err != nil {
						t.Fatalf("%s: %v", r.name, err)
					}
					if err := checkScenario(g, r, x, &s.client); err != nil {
						t.Fatalf("%s: %v", r.name, err)
					}
				}
			}
			if g.memoryBytes() == 0 {
				t.Fatal("the guest's linear memory reads as empty")
			}
			if n := s.host.OpenStreams(); n != 0 {
				t.Fatalf("%d stream states left in the emulator", n)
			}
		})
	}
}

package demo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/mock"

	"github.com/aidialect/aidialect/internal/services"
)

// These tests run what the banner prints: every curl, as the shell would read it, against the local gateway
// running the compiled filter (AIDIALECT_WASM, else ../../dist/aidialect.wasm: make build).

func TestMain(m *testing.M) {
	// proxytest narrates every host call through the log package; the gateway has its own logger.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

func wasm(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv("AIDIALECT_WASM")
	if path == "" {
		path = filepath.Join("..", "..", "dist", "aidialect.wasm")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the filter (make build): %v", err)
	}
	return b
}

func start(t *testing.T, opts Options) *Env {
	t.Helper()
	opts.Wasm = wasm(t)
	opts.Listen = "127.0.0.1:0"
	opts.Logger = log.New(io.Discard, "", 0)
	if testing.Verbose() {
		opts.Logger = log.New(os.Stderr, "gateway: ", log.Lmicroseconds)
	}
	env, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

// shellWords splits a command line as a POSIX shell does for the quoting the banner uses: single quotes
// (with '\” inside), double quotes expanding $NAME from env, backslash escapes outside quotes.
func shellWords(t *testing.T, line string, env map[string]string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				t.Fatalf("unterminated ' in %s", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case c == '"':
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 {
				t.Fatalf("unterminated \" in %s", line)
			}
			quoted := line[i+1 : i+1+end]
			if strings.ContainsAny(quoted, "\\`") {
				t.Fatalf("double-quoted text the test does not expand: %s", quoted)
			}
			for name, value := range env {
				quoted = strings.ReplaceAll(quoted, "$"+name, value)
			}
			if strings.Contains(quoted, "$") {
				t.Fatalf("unexpanded variable in %s", quoted)
			}
			cur.WriteString(quoted)
			i += 1 + end
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// answer is what a curl got.
type answer struct {
	status int
	header http.Header
	body   string
}

// runCurl runs the command line the banner prints for c (not c's fields), checks it says what c says, and
// returns the answer.
func runCurl(t *testing.T, c Curl, env map[string]string) answer {
	t.Helper()
	time.Sleep(c.After)
	line := c.String()
	words := shellWords(t, line, env)
	if len(words) < 2 || words[0] != "curl" {
		t.Fatalf("not a curl command: %s", line)
	}
	var url, body string
	var header [][2]string
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-H" || w == "-d":
			if i+1 >= len(words) {
				t.Fatalf("%s without a value: %s", w, line)
			}
			i++
			if w == "-d" {
				body = words[i]
				continue
			}
			name, value, ok := strings.Cut(words[i], ": ")
			if !ok {
				t.Fatalf("header %q: %s", words[i], line)
			}
			header = append(header, [2]string{name, value})
		case strings.HasPrefix(w, "-s"):
			if w[2:] != c.Flags {
				t.Errorf("flags %q, want -s%s", w, c.Flags)
			}
		case strings.HasPrefix(w, "-"):
			t.Fatalf("unexpected flag %s: %s", w, line)
		default:
			url = w
		}
	}
	// The command must say what the Curl says (quoting intact).
	want := slices.Clone(c.Header)
	for i := range want {
		for name, value := range env {
			want[i][1] = strings.ReplaceAll(want[i][1], "$"+name, value)
		}
	}
	if c.Body != "" {
		want = append(want, [2]string{"Content-Type", "application/json"})
	}
	if url != c.URL || body != c.Body || fmt.Sprint(header) != fmt.Sprint(want) {
		t.Errorf("%s\nreads as url %q body %q headers %v", line, url, body, header)
	}
	if body != "" && !json.Valid([]byte(body)) {
		t.Errorf("the body is not JSON: %s", body)
	}

	method := http.MethodGet
	var rd io.Reader
	if body != "" {
		method, rd = http.MethodPost, strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	for _, h := range header {
		req.Header.Add(h[0], h[1])
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if c.ServedBy != "" && resp.Header.Get("x-aidialect-served-by") != c.ServedBy {
		t.Errorf("# %s\n%s\nserved by %q, want %q", c.Note, line, resp.Header.Get("x-aidialect-served-by"), c.ServedBy)
	}
	if a.status != c.Status || resp.Header.Get("x-aidialect-error") != c.Code {
		t.Errorf("# %s\n%s\nanswered %d %q %s, want %d %q", c.Note, line, a.status, resp.Header.Get("x-aidialect-error"), a.body, c.Status, c.Code)
	}
	return a
}

// bannerModels is the models section of a banner: provider name -> the models listed.
func bannerModels(t *testing.T, banner string) map[string][]string {
	t.Helper()
	_, section, ok := strings.Cut(banner, "providers and models (GET /v1/models lists the exact names):\n")
	if !ok {
		t.Fatalf("no models section in\n%s", banner)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		name, rest, _ := strings.Cut(strings.TrimSpace(line), " (")
		_, models, _ := strings.Cut(rest, ") ")
		out[name] = strings.Split(strings.TrimSpace(models), ", ")
	}
	return out
}

// servedModels is GET /v1/models: model id -> owner (the provider).
func servedModels(t *testing.T, base string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	for _, m := range gjson.GetBytes(b, "data").Array() {
		out[m.Get("id").String()] = m.Get("owned_by").String()
	}
	if len(out) == 0 {
		t.Fatalf("GET /v1/models: %s", b)
	}
	return out
}

// Every curl of the demo banner answers as its note says; the notes' claims hold at the mocks.
func TestDemoCurls(t *testing.T) {
	env := start(t, Options{})
	env.NoDefaultURL = "" // no second gateway in this process (one emulator per process)
	curls := env.Curls()
	if len(curls) < 4 {
		t.Fatalf("%d curls", len(curls))
	}
	llama := env.Mocks["llama"]
	for _, c := range curls {
		before := len(llama.Received())
		a := runCurl(t, c, nil)
		if strings.Contains(c.Note, "x-aidialect-dropped-params") {
			if got := a.header.Get("x-aidialect-dropped-params"); got != "user" || c.Flags != "i" {
				t.Errorf("dropped-params header %q (flags %q): the note promises user, shown by -i", got, c.Flags)
			}
			rec := llama.Received()[before:]
			if len(rec) != 1 || !gjson.GetBytes(rec[0].Body, "max_tokens").Exists() || gjson.GetBytes(rec[0].Body, "user").Exists() ||
				gjson.GetBytes(rec[0].Body, "max_completion_tokens").Exists() {
				t.Errorf("Azure AI received %v, the note promises max_tokens and no user", rec)
			}
		}
	}
	// The banner's claim about misspelt models under default_provider: 200, the name echoed.
	a := runCurl(t, Curl{URL: env.GatewayURL + "/v1/chat/completions", Header: [][2]string{{"Authorization", "Bearer k"}},
		Body: `{"model":"gpt-4o-mnii",` + hello + `}`, Status: 200}, nil)
	if gjson.Get(a.body, "model").String() != "gpt-4o-mnii" {
		t.Errorf("a misspelt model answered %s", a.body)
	}
	if !strings.Contains(env.Describe(), "a misspelt model is no error here") {
		t.Errorf("the banner does not say so:\n%s", env.Describe())
	}
}

// With a gateway without default_provider beside it, the banner names it and its curl is model_not_found.
func TestDemoBannerNamesTheNoDefaultGateway(t *testing.T) {
	env := &Env{GatewayURL: "http://127.0.0.1:8080", NoDefaultURL: "http://127.0.0.1:8081", Mocks: map[string]*mock.Provider{}, config: []byte(Config)}
	banner := env.Describe()
	if !strings.Contains(banner, "http://127.0.0.1:8081 serves the same demo without default_provider") {
		t.Errorf("banner:\n%s", banner)
	}
	last := env.Curls()[len(env.Curls())-1]
	if !strings.HasPrefix(last.URL, "http://127.0.0.1:8081/") || last.Status != 404 || last.Code != "model_not_found" ||
		!strings.Contains(banner, last.String()) {
		t.Errorf("last curl %+v", last)
	}
}

// The second gateway's configuration: the demo's without default_provider; its curls hold, 404 included.
func TestNoDefaultDemo(t *testing.T) {
	var with, without map[string]any
	json.Unmarshal([]byte(Config), &with)
	json.Unmarshal([]byte(NoDefaultConfig()), &without)
	delete(with, "default_provider")
	if !reflect.DeepEqual(with, without) || without == nil {
		t.Errorf("NoDefaultConfig is not Config without default_provider:\n%s", NoDefaultConfig())
	}
	env := start(t, Options{NoDefault: true})
	curls := env.Curls()
	notFound := 0
	for _, c := range curls {
		runCurl(t, c, nil)
		if c.Code == "model_not_found" {
			notFound++
		}
	}
	if notFound != 1 {
		t.Errorf("%d model_not_found curls", notFound)
	}
	if !strings.Contains(env.Describe(), "other models get 404 model_not_found") {
		t.Errorf("banner:\n%s", env.Describe())
	}
}

// The banner lists exactly the configured models: the exact names are what GET /v1/models answers, by
// provider; the patterns follow.
func TestBannerModelsAreWhatTheGatewayServes(t *testing.T) {
	env := start(t, Options{})
	listed := bannerModels(t, env.Describe())
	served := servedModels(t, env.GatewayURL)
	for id, owner := range served {
		if !slices.Contains(listed[owner], id) {
			t.Errorf("GET /v1/models serves %s (%s); the banner lists %v", id, owner, listed)
		}
	}
	for owner, models := range listed {
		for _, m := range models {
			if served[m] != owner && !strings.Contains(m, "*") {
				t.Errorf("the banner lists %s under %s; GET /v1/models says %q", m, owner, served[m])
			}
		}
	}
	for _, m := range []string{"text-embedding-3-large", "embed-v3", ModelOpenAI, ModelAzureOpenAI, ModelAzureEmbed, ModelAzureAI, ModelEternalAI} {
		if _, ok := served[m]; !ok {
			t.Errorf("demo model %s not served", m)
		}
	}
}

// A configuration of one's own: one curl per provider, for its models, in its dialect's client shape, under
// path_prefix; the passthrough provider's curl uses the client's key variable; no demo model appears; every
// curl answers (mocks stand in for the real hosts).
func TestConfigCurls(t *testing.T) {
	const clientKey = "sk-client-own-key"
	mocks := map[string]*mock.Provider{
		"azure-east": mock.New(mock.AzureOpenAI, mock.Options{APIKey: "k-azure", Deployments: []string{"gpt41-prod"}}),
		"ai":         mock.New(mock.AzureAI, mock.Options{APIKey: "k-ai"}),
		"chain":      mock.New(mock.EternalAI, mock.Options{APIKey: "k-eternal"}),
		"oai":        mock.New(mock.OpenAI, mock.Options{APIKey: clientKey}),
		"emb":        mock.New(mock.OpenAI, mock.Options{APIKey: "k-emb"}),
	}
	config := `{
	  "providers": [
	    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "k-azure",
	     "models": [{"name": "gpt-4.1", "deployment": "gpt41-prod"}, {"name": "gpt-35-*"}]},
	    {"name": "ai", "dialect": "azure-ai", "host": "ep.eastus2.models.ai.azure.com", "api_key": "k-ai",
	     "models": [{"name": "cohere-embed-english"}, {"name": "mistral-large"}]},
	    {"name": "chain", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "k-eternal",
	     "models": [{"name": "intellect-2", "model": "PrimeIntellect/INTELLECT-2", "chain_id": "8453"}]},
	    {"name": "oai", "dialect": "openai", "host": "api.openai.com", "auth": "passthrough", "models": [{"name": "o*"}]},
	    {"name": "emb", "dialect": "openai", "host": "emb.example.com", "api_key": "k-emb", "models": [{"name": "my-embed-large"}]}
	  ],
	  "path_prefix": "/llm"
	}`
	upstreams := map[string]string{}
	for name, p := range mocks {
		e := &Env{}
		addr, err := e.serve("127.0.0.1:0", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		upstreams[name] = "http://" + addr
	}
	env := start(t, Options{Config: []byte(config), Upstreams: upstreams})
	banner := env.Describe()
	for _, m := range []string{ModelOpenAI, ModelAzureOpenAI, ModelAzureEmbed, ModelAzureAI, ModelAzureAIEmbed, ModelEternalAI, "e2e/demo", "mock"} {
		if strings.Contains(banner, m) {
			t.Errorf("the banner of a configuration of one's own mentions the demo's %s:\n%s", m, banner)
		}
	}
	for _, secret := range []string{"k-azure", "k-ai", "k-eternal", "k-emb"} {
		if strings.Contains(banner, secret) {
			t.Errorf("the banner shows the key %s", secret)
		}
	}
	// Every provider is sent to a -upstream URL: the banner must not say the real providers are called.
	if !strings.Contains(banner, "every provider's requests go to its -upstream URL") || strings.Contains(banner, "real providers") {
		t.Errorf("the banner does not say where requests go:\n%s", banner)
	}
	if !strings.Contains(banner, "oai forwards the client's own key") || !strings.Contains(banner, "other models get 404 model_not_found") {
		t.Errorf("banner:\n%s", banner)
	}
	listed := bannerModels(t, banner)
	if fmt.Sprint(listed["azure-east"]) != "[gpt-4.1 gpt-35-*]" || fmt.Sprint(listed["ai"]) != "[cohere-embed-english mistral-large]" ||
		fmt.Sprint(listed["oai"]) != "[o*]" {
		t.Errorf("models %v", listed)
	}

	want := map[string]string{ // provider -> the start of its curl's path, after the prefix
		"azure-east": "/llm/openai/deployments/gpt-4.1/chat/completions?api-version=",
		"ai":         "/llm/chat/completions?api-version=",
		"chain":      "/llm/v1/chat/completions",
		"oai":        "/llm/v1/chat/completions",
		"emb":        "/llm/v1/embeddings",
	}
	curls := env.Curls()
	if len(curls) != len(want)+2 {
		t.Fatalf("%d curls, want one per provider, the model list and model_not_found:\n%s", len(curls), banner)
	}
	for _, c := range curls {
		if !strings.Contains(banner, c.String()) {
			t.Errorf("curl not in the banner: %s", c)
		}
		var provider string
		for name := range want {
			if strings.HasSuffix(c.Note, " on "+name) || strings.Contains(c.Note, " on "+name+" ") {
				provider = name
			}
		}
		before := 0
		if provider != "" {
			if !strings.HasPrefix(c.URL, env.GatewayURL+want[provider]) {
				t.Errorf("%s: %s, want %s...", provider, c.URL, want[provider])
			}
			before = len(mocks[provider].Received())
		}
		runCurl(t, c, map[string]string{KeyVariable: clientKey})
		if provider != "" && len(mocks[provider].Received()) != before+1 {
			t.Errorf("%s: the curl did not reach its provider", provider)
		}
	}
	if rec := mocks["chain"].Received(); len(rec) != 1 || gjson.GetBytes(rec[0].Body, "chain_id").String() != "8453" {
		t.Errorf("EternalAI got %v, want the model's chain_id", rec)
	}
	if c := curls[3]; !strings.Contains(c.String(), `"Authorization: Bearer $AIDIALECT_KEY"`) || !strings.Contains(c.Note, "matching o*") {
		t.Errorf("passthrough curl: # %s\n%s", c.Note, c)
	}
}

// With consumers every curl sends the consumer key; with default_provider there is no model_not_found curl.
func TestConfigCurlsWithConsumers(t *testing.T) {
	const key = "team-a-gateway-key"
	sum := sha256.Sum256([]byte(key))
	p := mock.New(mock.OpenAI, mock.Options{APIKey: "k-openai"})
	e := &Env{}
	addr, err := e.serve("127.0.0.1:0", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	config := `{"providers":[{"name":"openai","dialect":"openai","host":"api.openai.com","api_key":"k-openai","models":[{"name":"gpt-4.1-mini"}]}],
	  "default_provider":"openai","consumers":[{"name":"team-a","key_sha256":"` + hex.EncodeToString(sum[:]) + `"}]}`
	env := start(t, Options{Config: []byte(config), Upstreams: map[string]string{"openai": "http://" + addr}})
	banner := env.Describe()
	if !strings.Contains(banner, "consumers are configured") || !strings.Contains(banner, "other models go to openai (default_provider)") {
		t.Errorf("banner:\n%s", banner)
	}
	curls := env.Curls()
	if len(curls) != 2 {
		t.Fatalf("%d curls:\n%s", len(curls), banner)
	}
	for _, c := range curls {
		if !strings.Contains(c.String(), "$"+KeyVariable) {
			t.Errorf("without the consumer key: %s", c)
		}
		runCurl(t, c, map[string]string{KeyVariable: key})
	}
}

// The demo with consumers (local -consumer name=key): every banner curl sends $AIDIALECT_KEY, and works
// with a consumer's key in it.
func TestDemoCurlsWithConsumers(t *testing.T) {
	env := start(t, Options{Consumers: map[string]string{"alice": "key-of-alice"}})
	env.NoDefaultURL = ""
	for _, c := range env.Curls() {
		if !strings.Contains(c.String(), "$"+KeyVariable) {
			t.Errorf("without the consumer key: %s", c)
		}
		runCurl(t, c, map[string]string{KeyVariable: "key-of-alice"})
	}
}

// An upstream override naming no provider of the configuration is refused: that provider's traffic, with its
// key, would otherwise still go to the real host.
func TestUpstreamOverrideNamesAProvider(t *testing.T) {
	config := `{"providers":[{"name":"openai","dialect":"openai","host":"api.openai.com","api_key":"k","models":[{"name":"gpt-4.1"}]}]}`
	_, err := Start(Options{Config: []byte(config), Upstreams: map[string]string{"opnai": "http://127.0.0.1:1"}, Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), `"opnai"`) || !strings.Contains(err.Error(), "openai") {
		t.Fatalf("err %v, want the misspelt name and the configuration's providers", err)
	}
}

// TestDemoCurlsWithBudgets: make run-budgets' banner, against the real rate-limit service and Redis: every
// curl answers as its note says, team-a's second chat among them refused with 429 budget_exceeded.
func TestDemoCurlsWithBudgets(t *testing.T) {
	redis, err := services.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Stop()
	rl, err := services.StartRateLimit(redis.Addr, RateLimitConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Stop()
	env := start(t, Options{RateLimitURL: "http://" + rl.Addr})
	env.NoDefaultURL = ""
	banner := env.Describe()
	if !strings.Contains(banner, "token budgets are on") {
		t.Errorf("the banner does not say budgets are on:\n%s", banner)
	}
	refused := false
	for _, c := range env.Curls() {
		a := runCurl(t, c, nil)
		if c.Code == "budget_exceeded" {
			refused = true
			if ra, err := strconv.Atoi(a.header.Get("retry-after")); err != nil || ra < 1 || ra > 60 {
				t.Errorf("Retry-After %q, want the seconds left in the minute", a.header.Get("retry-after"))
			}
		}
	}
	if !refused {
		t.Error("no curl shows a spent budget")
	}
}

// TestDemoAdminPage: the admin page serves the filter's metrics as Envoy's /stats/prometheus does, tags
// extracted, and they move with the traffic.
func TestDemoAdminPage(t *testing.T) {
	env := start(t, Options{AdminListen: "127.0.0.1:0"})
	if !strings.Contains(env.Describe(), env.AdminURL+"/stats/prometheus") {
		t.Errorf("the banner does not show the admin page:\n%s", env.Describe())
	}
	runCurl(t, Curl{URL: env.GatewayURL + "/v1/chat/completions", Header: [][2]string{{"Authorization", "Bearer k"}},
		Body: `{"model":"gpt-4o",` + hello + `}`, Status: 200}, nil)
	resp, err := http.Get(env.AdminURL + "/stats/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`aidialect_requests_total{client_dialect="openai",provider="openai",status_class="2xx"} 1`,
		`gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o",gen_ai_token_type="input"} 1`,
		"# TYPE gen_ai_client_operation_duration_ms histogram",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("missing %q in\n%s", want, b)
		}
	}
}

// The banner names a failover model's providers in the order requests try them: by priority (0, the
// default, first), those of one priority sharing the requests by weight, as the filter does (README "Failover").
func TestBannerFailoverOrderFollowsPriority(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"the demo's long-context: llama's entry has priority 0, openai's 1", Config,
			"long-context fails over: served by llama, then openai, in order of priority"},
		{"the demo's gpt-4o-ha: priorities 0, 1, 2 in configuration order", Config,
			"gpt-4o-ha fails over: served by openai, then llama, then eternal, in order of priority"},
		{"one priority shares the requests, in configuration order", `{"providers": [
			{"name": "a", "dialect": "openai", "host": "a.example", "api_key": "k", "models": [{"name": "m", "priority": 2}]},
			{"name": "b", "dialect": "openai", "host": "b.example", "api_key": "k", "models": [{"name": "m"}]},
			{"name": "c", "dialect": "openai", "host": "c.example", "api_key": "k", "models": [{"name": "m", "priority": 2}]},
			{"name": "d", "dialect": "openai", "host": "d.example", "api_key": "k", "models": [{"name": "m"}]}]}`,
			"m fails over: served by b and d (shared by weight), then a and c (shared by weight), in order of priority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{GatewayURL: "http://127.0.0.1:8080", config: []byte(tc.config)}
			if banner := env.Describe(); !strings.Contains(banner, tc.want) {
				t.Errorf("the banner lacks %q:\n%s", tc.want, banner)
			}
		})
	}
}

// With a configuration of one's own, a provider that never sends its headers gets the 504 Envoy's shipped
// routes answer (per_try_idle_timeout), which the filter fails over, rather than a request left hanging
// until its client gives up: the default with Config, and -headers-timeout.
func TestConfigOfOnesOwnFailsOverASilentProvider(t *testing.T) {
	config := `{"providers": [
	    {"name": "first", "dialect": "openai", "host": "api.openai.com", "api_key": "k-first", "models": [{"name": "m"}]},
	    {"name": "second", "dialect": "azure-ai", "host": "ep.eastus2.models.ai.azure.com", "api_key": "k-second",
	     "models": [{"name": "m", "priority": 1}]}],
	  "failover": {"served_by_header": true}}`
	mocks := map[string]*mock.Provider{
		"first":  mock.New(mock.OpenAI, mock.Options{APIKey: "k-first"}),
		"second": mock.New(mock.AzureAI, mock.Options{APIKey: "k-second"}),
	}
	upstreams := map[string]string{}
	for name, p := range mocks {
		e := &Env{}
		addr, err := e.serve("127.0.0.1:0", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		upstreams[name] = "http://" + addr
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration // the gateway's stand-in for the route's timeout
	}{
		{"the default: the shipped routes' per_try_idle_timeout", 0, ConfigHeadersTimeout},
		{"-headers-timeout", 300 * time.Millisecond, 300 * time.Millisecond},
		{"negative: no limit", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := start(t, Options{Config: []byte(config), Upstreams: upstreams, HeadersTimeout: tc.timeout})
			if got := env.HeadersTimeout(); got != tc.want {
				t.Errorf("headers timeout %v, want %v", got, tc.want)
			}
			if tc.want == 0 || tc.want > time.Second {
				return // waiting for it proves nothing more
			}
			runCurl(t, Curl{URL: env.GatewayURL + "/v1/chat/completions", Flags: "i",
				Header: [][2]string{{"Authorization", "Bearer k"}, {"x-mock-fail", "hang"}},
				Body:   `{"model":"m","messages":[{"role":"user","content":"Say hello"}]}`, Status: 200, ServedBy: "second"}, nil)
		})
	}
}

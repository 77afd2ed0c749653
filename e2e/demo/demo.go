// Package demo starts the local stack `make run` shows and the end-to-end tests use: the four strict mock
// providers and the local gateway running the compiled filter, all on 127.0.0.1.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/aidialect/aidialect/e2e/gateway"
	"github.com/aidialect/aidialect/e2e/mock"
	"github.com/aidialect/aidialect/translate"
)

// Provider keys of the demo: the gateway holds them, clients never see them.
const (
	OpenAIKey      = "demo-openai-provider-key"
	AzureOpenAIKey = "demo-azure-openai-provider-key"
	AzureAIKey     = "demo-azure-ai-provider-key"
	EternalAIKey   = "demo-eternalai-provider-key"
)

// Models of the demo, one OpenAI-style endpoint in front of all four providers.
const (
	ModelOpenAI       = "gpt-4o"                 // openai
	ModelOpenAIChat   = "gpt-4o-chat"            // openai, model gpt-4o marked chat_only: Responses bridged to chat
	ModelAzureOpenAI  = "gpt-4o-mini"            // azure-openai, deployment gpt-4o-mini-prod
	ModelAzureEmbed   = "text-embedding-3-small" // azure-openai, deployment embed-prod
	ModelAzureAI      = "llama-3-70b"            // azure-ai, Meta-Llama-3-70B-Instruct
	ModelAzureAIEmbed = "embed-v3"               // azure-ai, Cohere-embed-v3-english
	ModelEternalAI    = "intellect-1"            // eternalai
	// ModelFailover is served by openai first, then Azure AI (llama), then EternalAI: README "Failover".
	ModelFailover = "gpt-4o-ha"
	// ModelLongContext is served by Azure AI's Llama (an 8k context window) first, then OpenAI's gpt-4o (128k):
	// a request too long for the first goes on to the second.
	ModelLongContext = "long-context"
)

// Config is the demo's filter configuration. Hosts are placeholders: the gateway sends each provider's
// traffic to its mock. The bridged models drop hosted tools, so the Codex CLI (web_search on by default)
// works against every demo model.
const Config = `{
  "providers": [
    {"name": "openai", "dialect": "openai", "host": "api.openai.mock", "api_key": "` + OpenAIKey + `",
     "models": [{"name": "gpt-4o"}, {"name": "text-embedding-3-large"},
                {"name": "gpt-4o-chat", "model": "gpt-4o", "chat_only": true, "hosted_tools": "drop"},
                {"name": "gpt-4o-ha", "model": "gpt-4o"},
                {"name": "long-context", "model": "gpt-4o", "priority": 1, "context_window": 128000}]},
    {"name": "azure", "dialect": "azure-openai", "host": "demo.openai.azure.mock", "api_key": "` + AzureOpenAIKey + `",
     "models": [{"name": "gpt-4o-mini", "deployment": "gpt-4o-mini-prod"},
                {"name": "text-embedding-3-small", "deployment": "embed-prod"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama.eastus2.models.ai.azure.mock", "api_key": "` + AzureAIKey + `", "hosted_tools": "drop",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct"},
                {"name": "embed-v3", "model": "Cohere-embed-v3-english"},
                {"name": "gpt-4o-ha", "model": "Meta-Llama-3-70B-Instruct", "priority": 1},
                {"name": "long-context", "model": "Meta-Llama-3-70B-Instruct", "context_window": 8192}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.mock", "api_key": "` + EternalAIKey + `", "hosted_tools": "drop",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"},
                {"name": "gpt-4o-ha", "model": "PrimeIntellect/INTELLECT-1-Instruct", "priority": 2}]}
  ],
  "default_provider": "openai",
  "failover": {"served_by_header": true}
}`

// DemoHeadersTimeout is the demo gateway's stand-in for an Envoy route timeout: how long a mock may take to
// answer with its headers (the banner's hang curl waits for it).
const DemoHeadersTimeout = 5 * time.Second

// ConfigHeadersTimeout is the same stand-in with a configuration of one's own: the shipped routes'
// per_try_idle_timeout (envoy/envoy.yaml), so that a provider that never answers is failed over here as it
// is in Envoy, not waited for until the client gives up.
const ConfigHeadersTimeout = 300 * time.Second

// NoDefaultConfig is Config without default_provider: a model no entry names gets 404 model_not_found.
// make run serves it on a second gateway, so the banner can show that error (with Config a misspelt model
// goes to the openai mock, which answers 200 and echoes it).
func NoDefaultConfig() string {
	out, err := sjson.Delete(Config, "default_provider")
	if err != nil {
		panic(err)
	}
	return out
}

// Env is a running stack.
type Env struct {
	// GatewayURL is the gateway's base URL, e.g. http://127.0.0.1:8080.
	GatewayURL string
	// AdminURL is the base URL of the gateway's admin page (Options.AdminListen), "" without one.
	AdminURL string
	Gateway  *gateway.Gateway
	// Mocks by provider name (openai, azure, llama, eternal); nil when running against real providers.
	Mocks map[string]*mock.Provider
	// NoDefaultURL, when set, is the base URL of a second gateway serving NoDefaultConfig in front of its own
	// mocks (make run starts it as a separate process: the emulator allows one VM host per process). Curls
	// then shows model_not_found against it.
	NoDefaultURL string

	config         []byte            // the filter configuration, as given
	upstreams      map[string]string // with a configuration of one's own: provider name -> -upstream URL
	noDefault      bool              // the demo without default_provider
	headersTimeout time.Duration     // the gateway's stand-in for the route's timeout (0: none)
	budgets        bool              // the demo with token budgets (Options.RateLimitURL)
	rateLimitURL   string
	servers        []*http.Server
}

// Options of Start.
type Options struct {
	Wasm   []byte
	Listen string // gateway address; "127.0.0.1:0" picks a free port
	// Config, when set, replaces the demo configuration and no mocks start: requests go to the real
	// providers named in it (https to each host), or to Upstreams.
	Config []byte
	// Upstreams, with Config: provider name -> base URL (e.g. http://127.0.0.1:18081) its traffic goes to
	// instead of https://<host>.
	Upstreams map[string]string
	// NoDefault runs the demo with NoDefaultConfig (ignored with Config).
	NoDefault bool
	// Consumers, without Config, adds consumers to the demo configuration: name -> key (the configuration
	// holds each key's SHA-256). Every request then needs one of the keys.
	Consumers map[string]string
	// ExtraModels, without Config, adds model entries (JSON objects of the configuration's models list) to
	// the demo's providers, by provider name: the agent-client suites give each provider a model name that
	// the Codex CLI has in its catalogue.
	ExtraModels map[string][]string
	// RateLimitURL, without Config, turns the demo's token budgets on: the base URL of Envoy's rate-limit
	// service (started with RateLimitConfig) that the budget callouts go to. The demo then has the
	// consumers of BudgetConsumers, unless Consumers names others.
	RateLimitURL string
	// AdminListen, when set, serves the filter's metrics as Envoy's admin does (/stats/prometheus) there.
	AdminListen string
	// HeadersTimeout is how long a provider may take to answer with its headers before the gateway answers 504,
	// as Envoy does when a route's per_try_idle_timeout fires (the filter fails that over). 0: the default,
	// DemoHeadersTimeout for the demo, ConfigHeadersTimeout with Config; negative: no limit.
	HeadersTimeout time.Duration
	Logger         *log.Logger
}

// The budget demo: team-a may spend BudgetTeamATokens tokens a minute, which one chat spends, so its second
// request is refused; team-b has plenty. Their keys are the demo's, not secrets.
const (
	BudgetTeamAKey    = "demo-team-a-key"
	BudgetTeamBKey    = "demo-team-b-key"
	BudgetTeamATokens = 10
)

// BudgetConsumers are the budget demo's consumers: name -> key.
var BudgetConsumers = map[string]string{"team-a": BudgetTeamAKey, "team-b": BudgetTeamBKey}

// RateLimitConfig is the rate-limit service's configuration for the budget demo (go run ./plugin
// ratelimit-config prints a starting one for any filter configuration).
var RateLimitConfig = `domain: aidialect
descriptors:
  - key: consumer
    value: team-a
    rate_limit: {unit: minute, requests_per_unit: ` + strconv.Itoa(BudgetTeamATokens) + `}
  - key: consumer
    value: team-b
    rate_limit: {unit: day, requests_per_unit: 1000000}
`

// budgetsConfig is the budgets object the demo gets with a rate-limit service.
const budgetsConfig = `{"cluster": "ratelimit", "per": ["consumer"], "timeout_ms": 500}`

// Start brings the stack up; Close takes it down.
func Start(opts Options) (*Env, error) {
	env := &Env{}
	upstreams := map[string]string{}
	config := opts.Config
	if config == nil {
		config = []byte(Config)
		if opts.NoDefault {
			config, env.noDefault = []byte(NoDefaultConfig()), true
		}
		var err error
		consumers := opts.Consumers
		if opts.RateLimitURL != "" {
			env.budgets, env.rateLimitURL = true, opts.RateLimitURL
			if len(consumers) == 0 {
				consumers = BudgetConsumers
			}
			if config, err = sjson.SetRawBytes(config, "budgets", []byte(budgetsConfig)); err != nil {
				return nil, err
			}
			upstreams["ratelimit"] = opts.RateLimitURL
		}
		if config, err = withConsumers(config, consumers); err != nil {
			return nil, err
		}
		if config, err = withModels(config, opts.ExtraModels); err != nil {
			return nil, err
		}
		env.Mocks = map[string]*mock.Provider{
			"openai":  mock.New(mock.OpenAI, mock.Options{APIKey: OpenAIKey}),
			"azure":   mock.New(mock.AzureOpenAI, mock.Options{APIKey: AzureOpenAIKey, Deployments: []string{"gpt-4o-mini-prod", "embed-prod"}}),
			"llama":   mock.New(mock.AzureAI, mock.Options{APIKey: AzureAIKey}),
			"eternal": mock.New(mock.EternalAI, mock.Options{APIKey: EternalAIKey}),
		}
		for name, p := range env.Mocks {
			addr, err := env.serve("127.0.0.1:0", p)
			if err != nil {
				env.Close()
				return nil, fmt.Errorf("starting mock %s: %w", name, err)
			}
			upstreams[name] = "http://" + addr
		}
	} else {
		// A misspelt name would leave that provider's traffic, with its key, going to the real host.
		known := map[string]bool{}
		var names []string
		for _, p := range readConfig(config).Providers {
			known[p.Name] = true
			names = append(names, p.Name)
		}
		// Callouts go to clusters: a provider's own (failover), the rate-limit service's (budgets).
		root := gjson.ParseBytes(config)
		for _, p := range root.Get("providers").Array() {
			if c := p.Get("cluster").String(); c != "" {
				known[c] = true
			}
		}
		if b := root.Get("budgets"); b.Exists() {
			c := b.Get("cluster").String()
			if c == "" {
				c = "ratelimit"
			}
			known[c] = true
			names = append(names, c+" (the budgets' rate-limit service)")
		}
		for name := range opts.Upstreams {
			if !known[name] {
				return nil, fmt.Errorf("-upstream names provider %q, which the configuration does not have (its providers: %s)",
					name, strings.Join(names, ", "))
			}
		}
		maps.Copy(upstreams, opts.Upstreams)
		env.upstreams = upstreams
	}
	env.config = config
	// A provider that never answers (a mock told x-mock-fail: hang) gets Envoy's 504 after this, modelled
	// here, and the failover model is served by its next provider.
	headersTimeout := opts.HeadersTimeout
	switch {
	case headersTimeout < 0:
		headersTimeout = 0 // the gateway's "no limit"
	case headersTimeout > 0:
	case opts.Config == nil:
		// The demo's mocks answer at once unless told to hang: the banner's hang curl waits this long.
		headersTimeout = DemoHeadersTimeout
	default:
		headersTimeout = ConfigHeadersTimeout
	}
	env.headersTimeout = headersTimeout
	gw, err := gateway.New(gateway.Options{Wasm: opts.Wasm, PluginConfig: config, Upstreams: upstreams, Logger: opts.Logger,
		HeadersTimeout: headersTimeout})
	if err != nil {
		env.Close()
		return nil, err
	}
	env.Gateway = gw
	addr, err := env.serve(opts.Listen, gw)
	if err != nil {
		env.Close()
		return nil, fmt.Errorf("starting the gateway on %s: %w", opts.Listen, err)
	}
	env.GatewayURL = "http://" + addr
	if opts.AdminListen != "" {
		addr, err := env.serve(opts.AdminListen, gw.AdminHandler())
		if err != nil {
			env.Close()
			return nil, fmt.Errorf("starting the admin page on %s: %w", opts.AdminListen, err)
		}
		env.AdminURL = "http://" + addr
	}
	return env, nil
}

// withConsumers adds the consumers (name -> key), in name order, to a configuration.
func withConsumers(config []byte, consumers map[string]string) ([]byte, error) {
	for i, name := range slices.Sorted(maps.Keys(consumers)) {
		sum := sha256.Sum256([]byte(consumers[name]))
		var err error
		if config, err = sjson.SetBytes(config, fmt.Sprintf("consumers.%d", i),
			map[string]string{"name": name, "key_sha256": hex.EncodeToString(sum[:])}); err != nil {
			return nil, err
		}
	}
	return config, nil
}

// withModels appends model entries to the named providers of a configuration.
func withModels(config []byte, models map[string][]string) ([]byte, error) {
	for _, name := range slices.Sorted(maps.Keys(models)) {
		index := -1
		for i, p := range gjson.GetBytes(config, "providers").Array() {
			if p.Get("name").String() == name {
				index = i
			}
		}
		if index < 0 {
			return nil, fmt.Errorf("extra models for provider %q, which the demo does not have", name)
		}
		for _, entry := range models[name] {
			if !gjson.Valid(entry) || !gjson.Parse(entry).IsObject() {
				return nil, fmt.Errorf("extra model for %s is not a JSON object: %s", name, entry)
			}
			var err error
			if config, err = sjson.SetRawBytes(config, fmt.Sprintf("providers.%d.models.-1", index), []byte(entry)); err != nil {
				return nil, err
			}
		}
	}
	return config, nil
}

func (e *Env) serve(addr string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	e.servers = append(e.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("serve %s: %v", addr, err)
		}
	}()
	return ln.Addr().String(), nil
}

// Close stops the servers and the gateway.
func (e *Env) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range e.servers {
		s.Shutdown(ctx)
	}
	if e.Gateway != nil {
		e.Gateway.Close()
	}
}

// Demo is whether the stack runs the demo configuration in front of its mocks.
func (e *Env) Demo() bool { return e.Mocks != nil }

// Curl is one command the banner prints, with the answer it should get (the tests run every one).
type Curl struct {
	Note   string      // what it shows, one line
	Flags  string      // curl flags beyond -s: "N" (stream), "i" (show the answer's headers)
	URL    string      // complete, query included
	Header [][2]string // besides Content-Type, which a body adds; values may name $AIDIALECT_KEY
	Body   string      // JSON; a POST when set, else a GET
	Status int         // expected status
	Code   string      // expected x-aidialect-error of an error answer
	// ServedBy is the x-aidialect-served-by the answer names ("": not checked); After is how long to wait
	// before running it (the note says so; the banner prints the command alone).
	ServedBy string
	After    time.Duration
}

// KeyVariable is the shell variable the curls use for the client key when the configuration needs a real
// one (consumers, or a provider with "auth": "passthrough").
const KeyVariable = "AIDIALECT_KEY"

func (c Curl) String() string {
	var b strings.Builder
	b.WriteString("curl -s" + c.Flags + " " + shellQuote(c.URL))
	for _, h := range c.Header {
		b.WriteString(" -H " + shellQuote(h[0]+": "+h[1]))
	}
	if c.Body != "" {
		b.WriteString(" -H 'Content-Type: application/json' -d " + shellQuote(c.Body))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell: in double quotes when it names $AIDIALECT_KEY (so the shell expands
// it; nothing else in such a value needs escaping), else in single quotes.
func shellQuote(s string) string {
	if strings.Contains(s, "$"+KeyVariable) && !strings.ContainsAny(s, "\"\\`") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const hello = `"messages":[{"role":"user","content":"Say hello"}]`

// Curls are copy-paste commands against the running gateway. The demo's show one OpenAI-style endpoint in
// front of all four providers (and an Azure OpenAI client), the model list, and, when a gateway without
// default_provider runs, model_not_found. With a configuration of one's own there is one curl per provider,
// for one of its models, in the shape of that provider's own clients (see ConfigCurls).
func (e *Env) Curls() []Curl {
	if !e.Demo() {
		return ConfigCurls(e.GatewayURL, e.config)
	}
	clientKey, consumers := "any-client-key", readConfig(e.config).Consumers
	switch {
	case e.budgets && readConfig(e.config).hasConsumer("team-b"):
		clientKey = BudgetTeamBKey // the budget demo's consumers: their keys are the demo's
	case consumers:
		clientKey = "$" + KeyVariable // the demo with consumers (local -consumer name=key): one of their keys
	}
	bearer := [][2]string{{"Authorization", "Bearer " + clientKey}}
	var listAuth [][2]string
	if consumers {
		listAuth = bearer
	}
	curls := []Curl{
		{Note: "an OpenAI client; " + ModelAzureOpenAI + " is served by Azure OpenAI (deployment gpt-4o-mini-prod)",
			URL: e.GatewayURL + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"` + ModelAzureOpenAI + `",` + hello + `}`, Status: 200},
		{Note: "streamed by EternalAI, answered as OpenAI server-sent events",
			Flags: "N", URL: e.GatewayURL + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"` + ModelEternalAI + `",` + hello + `,"stream":true}`, Status: 200},
		{Note: "Azure AI: max_completion_tokens is sent as max_tokens; user, which it lacks, is dropped (x-aidialect-dropped-params)",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"` + ModelAzureAI + `",` + hello + `,"max_completion_tokens":64,"user":"demo"}`, Status: 200},
		{Note: "an Azure OpenAI client (deployment in the path) embedding with Azure AI's " + ModelAzureAIEmbed,
			URL:    e.GatewayURL + "/openai/deployments/" + ModelAzureAIEmbed + "/embeddings?api-version=" + translate.AzureOpenAI.DefaultAPIVersion(),
			Header: [][2]string{{"api-key", clientKey}}, Body: `{"input":"Say hello"}`, Status: 200},
		{Note: "a Responses API client (the OpenAI SDKs' and the AI SDK's default); Azure AI has only chat completions, so the gateway bridges it",
			Flags: "N", URL: e.GatewayURL + "/v1/responses", Header: bearer,
			Body: `{"model":"` + ModelAzureAI + `","input":"Say hello","stream":true,"store":false}`, Status: 200},
		{Note: ModelOpenAIChat + " is marked chat_only: its Responses requests go to OpenAI as chat completions",
			URL: e.GatewayURL + "/v1/responses", Header: bearer,
			Body: `{"model":"` + ModelOpenAIChat + `","instructions":"Be brief.","input":"Say hello","store":false}`, Status: 200},
		{Note: "failover: the openai mock answers 429 (x-mock-fail; Retry-After: 2), so the gateway asks Azure AI (llama) and answers as OpenAI; see x-aidialect-served-by",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: append(slices.Clone(bearer), [2]string{"x-mock-fail", "429"}),
			Body: `{"model":"` + ModelFailover + `",` + hello + `}`, Status: 200, ServedBy: "llama"},
		{Note: "the bench: for the 2 s openai asked for, " + ModelFailover + " goes straight to Azure AI (x-aidialect-attempts: 1)",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"` + ModelFailover + `",` + hello + `}`, Status: 200, ServedBy: "llama"},
		{Note: "the recovery: 2 s later openai serves " + ModelFailover + " again (x-mock-fail: 503 makes it fail another way)",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"` + ModelFailover + `",` + hello + `}`, Status: 200, ServedBy: "openai", After: 2100 * time.Millisecond},
		{Note: "a provider that never answers (x-mock-fail: hang): after the route's timeout (5 s here) Envoy answers 504, and Azure AI serves the request",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: append(slices.Clone(bearer), [2]string{"x-mock-fail", "hang"}),
			Body: `{"model":"` + ModelFailover + `",` + hello + `}`, Status: 200, ServedBy: "llama"},
		{Note: "a prompt too long for Llama's 8k window (x-mock-fail: context-length): " + ModelLongContext + " goes on to the candidate declaring a larger context_window, gpt-4o's 128k",
			Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: append(slices.Clone(bearer), [2]string{"x-mock-fail", "context-length"}),
			Body: `{"model":"` + ModelLongContext + `",` + hello + `}`, Status: 200, ServedBy: "openai"},
		{Note: "the models this gateway serves", URL: e.GatewayURL + "/v1/models", Header: listAuth, Status: 200},
	}
	if e.budgets && readConfig(e.config).hasConsumer("team-a") {
		teamA := [][2]string{{"Authorization", "Bearer " + BudgetTeamAKey}}
		body := `{"model":"gpt-4o",` + hello + `}`
		curls = append(curls,
			Curl{Note: "token budgets: team-a may spend " + strconv.Itoa(BudgetTeamATokens) + " tokens a minute; this chat is admitted, and its answer's usage (about 8 tokens) is charged after it",
				Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: teamA, Body: body, Status: 200},
			Curl{Note: "team-a again: its budget is spent, 429 budget_exceeded (in the client's dialect) with Retry-After until the minute's window resets; the provider is not called",
				Flags: "i", URL: e.GatewayURL + "/v1/chat/completions", Header: teamA, Body: body, Status: 429, Code: "budget_exceeded",
				After: 500 * time.Millisecond},
			Curl{Note: "team-b has its own budget, shared by every gateway using this rate-limit service",
				URL: e.GatewayURL + "/v1/chat/completions", Header: [][2]string{{"Authorization", "Bearer " + BudgetTeamBKey}}, Body: body, Status: 200})
	}
	notFound := func(base, note string) Curl {
		return Curl{Note: note, Flags: "i", URL: base + "/v1/chat/completions", Header: bearer,
			Body: `{"model":"gpt-4o-mnii",` + hello + `}`, Status: 404, Code: "model_not_found"}
	}
	switch {
	case e.noDefault:
		curls = append(curls, notFound(e.GatewayURL, "a misspelt model: 404 model_not_found (no default_provider here)"))
	case e.NoDefaultURL != "":
		curls = append(curls, notFound(e.NoDefaultURL, "a misspelt model on the gateway without default_provider: 404 model_not_found"))
	}
	return curls
}

// provider is what the banner and ConfigCurls read from a configuration (never its keys).
type provider struct {
	Name, Dialect, ChainID string
	Passthrough            bool
	Exact, Globs           []string
	chainIDs               map[string]string // model name -> its chain_id
}

// candidates is a model name several providers serve (README "Failover"), its providers in the order
// requests try them.
type candidates struct {
	Model     string
	Providers []string
	// priorities[i] is the priority of Providers[i]'s entry, by which readConfig orders them.
	priorities []int
}

type configView struct {
	Providers       []provider
	DefaultProvider string
	Consumers       bool
	ConsumerNames   []string
	PathPrefix      string
	// Failover lists the exact names more than one provider serves; each is listed under its first
	// provider only, as GET /v1/models does.
	Failover []candidates
}

// hasConsumer reports whether the configuration has a consumer of that name.
func (v configView) hasConsumer(name string) bool { return slices.Contains(v.ConsumerNames, name) }

func readConfig(config []byte) configView {
	root := gjson.ParseBytes(config)
	v := configView{
		DefaultProvider: root.Get("default_provider").String(),
		Consumers:       len(root.Get("consumers").Array()) > 0,
		PathPrefix:      root.Get("path_prefix").String(),
	}
	for _, c := range root.Get("consumers").Array() {
		v.ConsumerNames = append(v.ConsumerNames, c.Get("name").String())
	}
	firstOwner := map[string]string{}
	firstPriority := map[string]int{} // the priority of firstOwner's entry
	for _, p := range root.Get("providers").Array() {
		pv := provider{Name: p.Get("name").String(), Dialect: p.Get("dialect").String(), ChainID: p.Get("chain_id").String(),
			Passthrough: p.Get("auth").String() == "passthrough", chainIDs: map[string]string{}}
		for _, m := range p.Get("models").Array() {
			name := m.Get("name").String()
			switch owner, seen := firstOwner[name]; {
			case strings.Contains(name, "*"):
				pv.Globs = append(pv.Globs, name)
			case seen:
				i := slices.IndexFunc(v.Failover, func(c candidates) bool { return c.Model == name })
				if i < 0 {
					v.Failover = append(v.Failover, candidates{Model: name, Providers: []string{owner}, priorities: []int{firstPriority[name]}})
					i = len(v.Failover) - 1
				}
				v.Failover[i].Providers = append(v.Failover[i].Providers, pv.Name)
				v.Failover[i].priorities = append(v.Failover[i].priorities, int(m.Get("priority").Int()))
			default:
				firstOwner[name] = pv.Name
				firstPriority[name] = int(m.Get("priority").Int())
				pv.Exact = append(pv.Exact, name)
			}
			if c := m.Get("chain_id").String(); c != "" {
				pv.chainIDs[name] = c
			}
		}
		v.Providers = append(v.Providers, pv)
	}
	for i := range v.Failover {
		v.Failover[i].sortByPriority()
	}
	return v
}

// describe names the providers in the order requests try them; those of one priority share the requests by
// weight, and the next priority comes after them.
func (c *candidates) describe() string {
	var groups []string
	for start := 0; start < len(c.Providers); {
		end := start + 1
		for end < len(c.Providers) && c.priorities[end] == c.priorities[start] {
			end++
		}
		if end-start == 1 {
			groups = append(groups, c.Providers[start])
		} else {
			groups = append(groups, strings.Join(c.Providers[start:end], " and ")+" (shared by weight)")
		}
		start = end
	}
	return strings.Join(groups, ", then ")
}

// sortByPriority orders the providers as the filter tries them: priority 0 (the default) first, ties in
// configuration order.
func (c *candidates) sortByPriority() {
	order := make([]int, len(c.Providers))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return c.priorities[a] - c.priorities[b] })
	providers, priorities := make([]string, len(order)), make([]int, len(order))
	for i, j := range order {
		providers[i], priorities[i] = c.Providers[j], c.priorities[j]
	}
	c.Providers, c.priorities = providers, priorities
}

func looksLikeEmbeddings(model string) bool { return strings.Contains(strings.ToLower(model), "embed") }

// ConfigCurls are one curl per provider of config, for one of its models, shaped as that provider's own
// clients send it (an Azure OpenAI client puts the deployment in the path, an EternalAI client names
// chain_id, ...), then the model list and, without default_provider, model_not_found. A chat model is
// preferred; a provider serving only names with "embed" gets an embeddings request; a provider with only
// patterns gets a name made from its first pattern, with MODEL for each '*'.
func ConfigCurls(gatewayURL string, config []byte) []Curl {
	v := readConfig(config)
	base := gatewayURL + v.PathPrefix
	key := func(p *provider) string {
		if v.Consumers || (p != nil && p.Passthrough) {
			return "$" + KeyVariable
		}
		return "any-client-key"
	}
	var curls []Curl
	for i := range v.Providers {
		p := &v.Providers[i]
		model, what := "", ""
		for _, m := range p.Exact {
			if !looksLikeEmbeddings(m) || p.Dialect == "eternalai" {
				model = m
				break
			}
		}
		if model == "" && len(p.Exact) > 0 {
			model = p.Exact[0]
		}
		what = model + " on " + p.Name
		if model == "" && len(p.Globs) > 0 {
			model = strings.ReplaceAll(p.Globs[0], "*", "MODEL")
			what = "a model matching " + p.Globs[0] + " on " + p.Name + " (put one in place of " + model + ")"
		}
		if model == "" {
			continue
		}
		embed := looksLikeEmbeddings(model) && p.Dialect != "eternalai"
		op, payload := "chat/completions", hello
		if embed {
			op, payload = "embeddings", `"input":"Say hello"`
		}
		c := Curl{Status: 200}
		switch p.Dialect {
		case "azure-openai":
			c.Note = "an Azure OpenAI client, " + what
			c.Header = [][2]string{{"api-key", key(p)}}
			version := translate.AzureOpenAI.DefaultAPIVersion()
			if translate.ValidDeployment(model) {
				c.URL = base + "/openai/deployments/" + model + "/" + op + "?api-version=" + version
				c.Body = "{" + payload + "}"
			} else { // not a path segment: the v1 surface names the model in the body
				c.URL = base + "/openai/v1/" + op
				c.Body = `{"model":` + jsonString(model) + "," + payload + "}"
			}
		case "azure-ai":
			c.Note = "an Azure AI client, " + what
			c.Header = [][2]string{{"api-key", key(p)}}
			c.URL = base + "/" + op + "?api-version=" + translate.AzureAI.DefaultAPIVersion()
			c.Body = `{"model":` + jsonString(model) + "," + payload + "}"
		case "eternalai":
			chain := p.chainIDs[model]
			if chain == "" {
				chain = p.ChainID
			}
			if chain == "" {
				chain = "45762" // EternalAI's own default chain
			}
			c.Note = "an EternalAI client (chain_id in the body), " + what
			c.Header = [][2]string{{"Authorization", "Bearer " + key(p)}}
			c.URL = base + "/v1/chat/completions"
			c.Body = `{"chain_id":` + jsonString(chain) + `,"model":` + jsonString(model) + "," + hello + "}"
		default:
			c.Note = "an OpenAI client, " + what
			c.Header = [][2]string{{"Authorization", "Bearer " + key(p)}}
			c.URL = base + "/v1/" + op
			c.Body = `{"model":` + jsonString(model) + "," + payload + "}"
		}
		curls = append(curls, c)
	}
	var auth [][2]string
	if v.Consumers {
		auth = [][2]string{{"Authorization", "Bearer " + key(nil)}}
	}
	curls = append(curls, Curl{Note: "the models this gateway serves (exact names)", URL: base + "/v1/models", Header: auth, Status: 200})
	if v.DefaultProvider == "" {
		curls = append(curls, Curl{Note: "a model no entry names: 404 model_not_found", Flags: "i", URL: base + "/v1/chat/completions",
			Header: [][2]string{{"Authorization", "Bearer " + key(nil)}}, Body: `{"model":"no-such-model",` + hello + `}`,
			Status: 404, Code: "model_not_found"})
	}
	return curls
}

// destinations says where a configuration of one's own sends requests: with -upstream, a user pointing
// their configuration at local stand-ins must not be told the real providers are called.
func (e *Env) destinations(v configView) string {
	var sent, direct []string
	for _, p := range v.Providers {
		if _, ok := e.upstreams[p.Name]; ok {
			sent = append(sent, p.Name)
		} else {
			direct = append(direct, p.Name)
		}
	}
	switch {
	case len(sent) == 0:
		return "configuration: yours, requests go to the real providers over https\n"
	case len(direct) == 0:
		return "configuration: yours, every provider's requests go to its -upstream URL\n"
	}
	return fmt.Sprintf("configuration: yours, requests for %s go to their -upstream URLs, for %s over https to the provider's host\n",
		strings.Join(sent, ", "), strings.Join(direct, ", "))
}

// HeadersTimeout is how long a provider may take to send its headers before the gateway answers 504 (0: no
// limit).
func (e *Env) HeadersTimeout() time.Duration { return e.headersTimeout }

// Describe is the banner make run prints: where the gateway listens, the providers and models of its
// configuration (read from it, so the list is what GET /v1/models answers), what happens to other models,
// and the curls.
func (e *Env) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aidialect local gateway on %s (development only: production runs on Envoy)\n", e.GatewayURL)
	v := readConfig(e.config)
	if e.Demo() {
		b.WriteString("configuration: the demo (e2e/demo), four strict mock providers on 127.0.0.1\n")
	} else {
		b.WriteString(e.destinations(v))
	}
	b.WriteString("\nproviders and models (GET /v1/models lists the exact names):\n")
	width := 0
	for _, p := range v.Providers {
		width = max(width, len(p.Name)+len(p.Dialect)+3)
	}
	for _, p := range v.Providers {
		models := append(slices.Clone(p.Exact), p.Globs...)
		fmt.Fprintf(&b, "  %-*s %s\n", width, p.Name+" ("+p.Dialect+")", strings.Join(models, ", "))
	}
	for _, c := range v.Failover {
		fmt.Fprintf(&b, "%s fails over: served by %s, in order of priority (README \"Failover\").\n", c.Model, c.describe())
	}
	switch {
	case v.DefaultProvider != "" && e.Demo():
		fmt.Fprintf(&b, "other models go to %s (default_provider): a misspelt model is no error here, the %s mock answers 200 and echoes its name.\n",
			v.DefaultProvider, v.DefaultProvider)
		if e.NoDefaultURL != "" {
			fmt.Fprintf(&b, "%s serves the same demo without default_provider: there a misspelt model gets 404 model_not_found.\n", e.NoDefaultURL)
		}
	case v.DefaultProvider != "":
		fmt.Fprintf(&b, "other models go to %s (default_provider): a misspelt model reaches that provider, which answers.\n", v.DefaultProvider)
	default:
		b.WriteString("other models get 404 model_not_found (no default_provider).\n")
	}
	switch {
	case e.budgets:
		fmt.Fprintf(&b, "token budgets are on (Envoy's rate-limit service at %s, its counters in Redis): consumers team-a (key %s, %d tokens a minute) and team-b (key %s); the curls use team-b's key.\n",
			e.rateLimitURL, BudgetTeamAKey, BudgetTeamATokens, BudgetTeamBKey)
	case v.Consumers:
		fmt.Fprintf(&b, "consumers are configured: every request needs a consumer's key (export %s=<the key>).\n", KeyVariable)
	}
	for _, p := range v.Providers {
		if p.Passthrough {
			fmt.Fprintf(&b, "%s forwards the client's own key (auth passthrough): export %s=<your %s key> for its curl.\n", p.Name, KeyVariable, p.Name)
		}
	}
	if e.AdminURL != "" {
		fmt.Fprintf(&b, "metrics, as Envoy's admin serves them (tokens, failovers, budgets, the GenAI histograms):\n  curl -s %s/stats/prometheus | grep -E '^(aidialect|gen_ai)_'\n",
			e.AdminURL)
	}
	b.WriteString("\ntry:\n")
	for _, c := range e.Curls() {
		b.WriteString("  # " + c.Note + "\n  " + c.String() + "\n\n")
	}
	b.WriteString("Ctrl-C stops everything.\n")
	return b.String()
}

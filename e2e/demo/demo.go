// Package demo starts the local stack `make run` shows and the end-to-end tests use: the four strict mock
// providers and the local gateway running the compiled filter, all on 127.0.0.1.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aidialect/aidialect/e2e/gateway"
	"github.com/aidialect/aidialect/e2e/mock"
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
	ModelAzureOpenAI  = "gpt-4o-mini"            // azure-openai, deployment gpt-4o-mini-prod
	ModelAzureEmbed   = "text-embedding-3-small" // azure-openai, deployment embed-prod
	ModelAzureAI      = "llama-3-70b"            // azure-ai, Meta-Llama-3-70B-Instruct
	ModelAzureAIEmbed = "embed-v3"               // azure-ai, Cohere-embed-v3-english
	ModelEternalAI    = "intellect-1"            // eternalai
)

// Config is the demo's filter configuration. Hosts are placeholders: the gateway sends each provider's
// traffic to its mock.
const Config = `{
  "providers": [
    {"name": "openai", "dialect": "openai", "host": "api.openai.mock", "api_key": "` + OpenAIKey + `",
     "models": [{"name": "gpt-4o"}, {"name": "text-embedding-3-large"}]},
    {"name": "azure", "dialect": "azure-openai", "host": "demo.openai.azure.mock", "api_key": "` + AzureOpenAIKey + `",
     "models": [{"name": "gpt-4o-mini", "deployment": "gpt-4o-mini-prod"},
                {"name": "text-embedding-3-small", "deployment": "embed-prod"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama.eastus2.models.ai.azure.mock", "api_key": "` + AzureAIKey + `",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct"},
                {"name": "embed-v3", "model": "Cohere-embed-v3-english"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.mock", "api_key": "` + EternalAIKey + `",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"}]}
  ],
  "default_provider": "openai"
}`

// Env is a running stack.
type Env struct {
	// GatewayURL is the gateway's base URL, e.g. http://127.0.0.1:8080.
	GatewayURL string
	Gateway    *gateway.Gateway
	// Mocks by provider name (openai, azure, llama, eternal); nil when running against real providers.
	Mocks   map[string]*mock.Provider
	servers []*http.Server
}

// Options of Start.
type Options struct {
	Wasm   []byte
	Listen string // gateway address; "127.0.0.1:0" picks a free port
	// Config, when set, replaces the demo configuration and no mocks start: requests go to the real
	// providers named in it (https to each host).
	Config []byte
	Logger *log.Logger
}

// Start brings the stack up; Close takes it down.
func Start(opts Options) (*Env, error) {
	env := &Env{}
	upstreams := map[string]string{}
	config := opts.Config
	if config == nil {
		config = []byte(Config)
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
	}
	gw, err := gateway.New(gateway.Options{Wasm: opts.Wasm, PluginConfig: config, Upstreams: upstreams, Logger: opts.Logger})
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
	return env, nil
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

// Curls are copy-paste commands against the demo: a plain answer, a stream, and an Azure AI upstream.
func (e *Env) Curls() []string {
	curl := func(flags, model, extra string) string {
		return fmt.Sprintf(`curl -s%s %s/v1/chat/completions -H 'Authorization: Bearer any-client-key' -H 'Content-Type: application/json' -d '{"model":"%s","messages":[{"role":"user","content":"Say hello"}]%s}'`,
			flags, e.GatewayURL, model, extra)
	}
	return []string{
		curl("", ModelAzureOpenAI, ""),
		curl("N", ModelEternalAI, `,"stream":true`),
		curl("", ModelAzureAI, `,"max_completion_tokens":64,"user":"demo"`),
	}
}

// Describe is the banner make run prints.
func (e *Env) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aidialect local gateway on %s (development only: production runs on Envoy)\n", e.GatewayURL)
	if e.Mocks != nil {
		fmt.Fprintf(&b, "models: %s (openai), %s and %s (azure-openai), %s (azure-ai), %s (eternalai)\n",
			ModelOpenAI, ModelAzureOpenAI, ModelAzureEmbed, ModelAzureAI, ModelEternalAI)
	}
	b.WriteString("\ntry:\n")
	for _, c := range e.Curls() {
		b.WriteString("  " + c + "\n\n")
	}
	b.WriteString("Ctrl-C stops everything.\n")
	return b.String()
}

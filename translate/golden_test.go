package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/goldencase"
)

var (
	update   = flag.Bool("update", false, "rewrite the expected files of the golden cases from the current output")
	generate = flag.Bool("generate", false, "create missing dialect-pair case folders from testdata/fixtures")
)

const casesDir = goldencase.Dir

// headers is an ordered header list with the edits the pipeline needs.
type headers [][2]string

func (h headers) del(name string) headers {
	return slices.DeleteFunc(h, func(kv [2]string) bool { return kv[0] == name })
}

func (h headers) set(name, value string) headers {
	return append(h.del(name), [2]string{name, value})
}

// exchangeResult is what the pipeline produced for one case.
type exchangeResult struct {
	upstream *goldencase.Message // nil when the filter answered locally
	client   goldencase.Message
	// streamChunks re-runs the stream translation with the upstream body cut into chunks of this size.
	streamWith func(chunkSize int) []byte
}

// runPipeline drives translate the way the plugin does: detect, parse, render, then translate the answer.
func runPipeline(t *testing.T, c goldencase.Case) exchangeResult {
	t.Helper()
	return runPipelineAfter(t, c, nil)
}

// otherTargets are a target of each dialect (and a chat_only one), which TestGoldenCasesAfterOtherAttempts
// renders each case's request for before its own.
var otherTargets = []Target{
	{Dialect: OpenAI, BasePath: "/v1", Model: "other-model"},
	{Dialect: OpenAI, BasePath: "/v1", Model: "other-model", ChatOnly: true, DropHostedTools: true},
	{Dialect: AzureOpenAI, BasePath: "/openai", Model: "other-model", Settings: Settings{deployment: "other"}},
	{Dialect: AzureAI, Model: "other-model", Settings: Settings{extraParameters: extraPassThrough, deployment: "other"}},
	{Dialect: EternalAI, BasePath: "/v1", Model: "other-model", Settings: Settings{chainID: "1"}, ForceStreamUsage: true},
}

// runPipelineAfter is runPipeline with attempts toward others made first, from the same parsed request: an
// attempt renders from the client's original, whatever attempts came before it.
func runPipelineAfter(t *testing.T, c goldencase.Case, others []Target) exchangeResult {
	t.Helper()
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	localError := func(client Dialect, e *Error) exchangeResult {
		h := headers{{"content-type", "application/json"}, {"x-aidialect-error", string(e.Code)}}
		return exchangeResult{client: goldencase.Message{First: strconv.Itoa(e.Status()), Headers: h, Body: e.Body(client)}}
	}
	creq, e := Detect(method, path, c.PathPrefix)
	if !creq.Known() {
		t.Fatalf("request %s %s not recognised", method, path)
	}
	if name := creq.Dialect.ModelHeader(); name != "" {
		creq.ModelHeader = req.Header(name)
	}
	if name := creq.Dialect.PolicyHeader(); name != "" {
		creq.PolicyHeader = req.Header(name)
	}
	if e != nil {
		return localError(creq.Dialect, e)
	}
	var body RequestBody
	if e := body.Parse(req.Body); e != nil {
		return localError(creq.Dialect, e)
	}
	creq.RefineWithBody(&body)
	model, ok := creq.ModelFromHeaders()
	if !ok {
		model = body.Model
	}
	providerDialect, err := ParseDialect(c.Provider.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	settings := caseSettings(t, &c, providerDialect)
	target := Target{
		Dialect:         providerDialect,
		BasePath:        c.Provider.BasePath,
		APIVersion:      c.Provider.APIVersion,
		Model:           firstNonEmpty(c.Provider.Model, model),
		Settings:        settings,
		ChatOnly:        c.Provider.ChatOnly,
		DropHostedTools: c.Provider.HostedTools == "drop",
	}
	if target.BasePath == "" {
		target.BasePath = providerDialect.DefaultBasePath()
	}
	for i := range others {
		other := NewAttempt(&creq, &others[i])
		if _, e := other.Head(&creq, nil); e == nil {
			other.Render(nil, &creq, &body)
		}
	}
	attempt := NewAttempt(&creq, &target)
	head, e := attempt.Head(&creq, nil)
	if e != nil {
		return localError(creq.Dialect, e)
	}
	ub, e := attempt.Render(nil, &creq, &body)
	if e != nil {
		return localError(creq.Dialect, e)
	}

	upHeaders := slices.Clone(headers(req.Headers))
	clientKey := ClientCredential(req.Header("authorization"), req.Header("api-key"))
	for _, name := range append(slices.Clone(ClientCredentialHeaders), "content-length", "accept-encoding") {
		upHeaders = upHeaders.del(name)
	}
	for _, name := range head.Remove {
		upHeaders = upHeaders.del(name)
	}
	key := c.Provider.Key
	if c.Provider.Auth == "passthrough" {
		key = clientKey
	} else {
		for _, name := range ClientAccountHeaders {
			upHeaders = upHeaders.del(name)
		}
	}
	for _, h := range ProviderAuthHeaders(providerDialect, key, &settings) {
		upHeaders = upHeaders.set(h.Name, h.Value)
	}
	for _, h := range head.Set {
		upHeaders = upHeaders.set(h.Name, h.Value)
	}
	upHeaders = upHeaders.set("content-length", strconv.Itoa(len(ub.Body)))
	up := goldencase.Message{First: method + " " + head.Path, Headers: upHeaders, Body: ub.Body}

	status, _ := strconv.Atoi(resp.First)
	outHeaders := slices.Clone(headers(resp.Headers)).del("content-length")
	if len(ub.Dropped) > 0 {
		outHeaders = outHeaders.set("x-aidialect-dropped-params", strings.Join(ub.Dropped, ","))
	}
	out := goldencase.Message{First: strconv.Itoa(status)}
	result := exchangeResult{upstream: &up}
	switch {
	case status >= 400:
		newStatus, b := attempt.ErrorAnswer(status, resp.Body)
		out.First, out.Body = strconv.Itoa(newStatus), b
		outHeaders = outHeaders.set("content-type", "application/json")
	case strings.Contains(resp.Header("content-type"), "text/event-stream"):
		result.streamWith = func(size int) []byte {
			var st Stream
			attempt.StartStream(&st, 0)
			var all []byte
			for rest := resp.Body; len(rest) > 0; {
				n := min(size, len(rest))
				chunk, err := st.Write(rest[:n])
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				all = append(all, chunk...)
				rest = rest[n:]
			}
			return append(all, st.Close()...)
		}
		out.Body = result.streamWith(len(resp.Body) + 1)
	default:
		b, hs, _, err := attempt.Answer(nil, resp.Body)
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		out.Body = b
		for _, h := range hs {
			outHeaders = outHeaders.set(h.Name, h.Value)
		}
	}
	out.Headers = outHeaders
	result.client = out
	return result
}

// TestGoldenCasesAfterOtherAttempts: every golden case gives its golden result when its request was first
// rendered for a target of every dialect (failover renders one request for several targets in turn).
func TestGoldenCasesAfterOtherAttempts(t *testing.T) {
	cases, err := goldencase.Load(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			fresh, after := runPipeline(t, c), runPipelineAfter(t, c, otherTargets)
			if (fresh.upstream == nil) != (after.upstream == nil) ||
				fresh.upstream != nil && !bytes.Equal(fresh.upstream.Render(), after.upstream.Render()) {
				t.Errorf("the upstream request differs after other attempts")
			}
			if !bytes.Equal(fresh.client.Render(), after.client.Render()) {
				t.Errorf("the client's answer differs after other attempts:\n--- fresh\n%s\n--- after\n%s",
					fresh.client.Render(), after.client.Render())
			}
		})
	}
}

func TestGoldenCases(t *testing.T) {
	if *generate {
		generateCases(t)
	}
	cases, err := goldencase.Load(casesDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got := runPipeline(t, c)
			upstreamPath := filepath.Join(c.Dir, "upstream_request.http")
			clientPath := filepath.Join(c.Dir, "client_response.http")
			if *update {
				if got.upstream != nil {
					writeFile(t, upstreamPath, got.upstream.Render())
				} else {
					os.Remove(upstreamPath)
				}
				writeFile(t, clientPath, got.client.Render())
				return
			}
			want, err := os.ReadFile(upstreamPath)
			switch {
			case got.upstream == nil && err == nil:
				t.Errorf("the filter answered locally, but %s expects an upstream request", upstreamPath)
			case got.upstream != nil && err != nil:
				t.Errorf("an upstream request was produced, but there is no %s:\n%s", upstreamPath, got.upstream.Render())
			case got.upstream != nil && !bytes.Equal(got.upstream.Render(), want):
				t.Errorf("upstream request differs from %s:\n--- got\n%s\n--- want\n%s", upstreamPath, got.upstream.Render(), want)
			}
			want, err = os.ReadFile(clientPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.client.Render(), want) {
				t.Errorf("client response differs from %s:\n--- got\n%s\n--- want\n%s", clientPath, got.client.Render(), want)
			}
			if got.streamWith != nil {
				whole := got.streamWith(len(c.UpstreamResponse.Body) + 1)
				for _, size := range []int{1, 2, 3, 7, 64, 333} {
					if split := got.streamWith(size); !bytes.Equal(split, whole) {
						t.Errorf("stream cut into %d-byte chunks gives different bytes:\n%s\n--- whole\n%s", size, split, whole)
					}
				}
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goldenProviders is the provider configuration each generated case uses for its provider dialect.
var goldenProviders = map[Dialect]goldencase.Provider{
	OpenAI:      {Dialect: "openai", Model: "gpt-4o-2024-08-06", Key: "sk-provider-openai"},
	AzureOpenAI: {Dialect: "azure-openai", Deployment: "gpt4o-prod", Key: "provider-azure-key"},
	AzureAI: {Dialect: "azure-ai", Model: "Meta-Llama-3-70B-Instruct", Deployment: "llama3-blue",
		ExtraParameters: "drop", Key: "provider-ai-key"},
	EternalAI: {Dialect: "eternalai", Model: "PrimeIntellect/INTELLECT-1-Instruct", Key: "provider-eternal-key"},
}

// generateCases creates a folder for every client x provider pair of every operation both sides have
// (plus embeddings toward EternalAI, which must be refused locally), then the Responses API's folders
// (generateResponsesCases). Existing folders are left alone.
func generateCases(t *testing.T) {
	const fixtures = "../testdata/fixtures"
	kinds := []struct {
		name, request, response string
		op                      Operation
	}{
		{"chat", "chat", "chat", OpChatCompletions},
		{"chat-stream", "chat-stream", "chat-stream", OpChatCompletions},
		{"error", "chat", "error", OpChatCompletions},
		{"completions", "completions", "completions", OpCompletions},
		{"embeddings", "embeddings", "embeddings", OpEmbeddings},
	}
	for _, k := range kinds {
		for _, client := range Dialects {
			for _, provider := range Dialects {
				req := filepath.Join(fixtures, "request-"+client.String()+"-"+k.request+".http")
				resp := filepath.Join(fixtures, "response-"+provider.String()+"-"+k.response+".http")
				if _, err := os.Stat(req); err != nil {
					continue // the client dialect has no such operation
				}
				dir := filepath.Join(casesDir, k.name+"-"+client.String()+"-to-"+provider.String())
				if _, err := os.Stat(dir); err == nil {
					continue
				}
				if _, err := os.Stat(resp); err != nil && provider.Supports(k.op) {
					t.Fatalf("%s: no answer fixture %s: write the provider's answer for this operation", dir, resp)
				} else if err != nil {
					resp = filepath.Join(fixtures, "response-openai-"+k.response+".http") // refused locally: unused
				}
				if _, ok := goldenProviders[provider]; !ok {
					t.Fatalf("%s: goldenProviders has no settings for %s: add the provider its generated cases use", dir, provider)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				c := goldencase.Case{
					Description: fmt.Sprintf("%s: a %s client, a %s provider", k.name, client, provider),
					Provider:    goldenProviders[provider],
				}
				raw, _ := json.MarshalIndent(c, "", "  ")
				writeFile(t, filepath.Join(dir, "case.json"), append(raw, '\n'))
				for src, dst := range map[string]string{req: "client_request.http", resp: "upstream_response.http"} {
					data, err := os.ReadFile(src)
					if err != nil {
						t.Fatal(err)
					}
					writeFile(t, filepath.Join(dir, dst), data)
				}
			}
		}
	}
	generateResponsesCases(t, fixtures)
}

// responsesSurfaces are the routes a Responses client posts to, each with its request fixtures
// (request-<surface>-<kind>.http): OpenAI's /v1/responses, Azure OpenAI's v1 surface, its classic surface
// (the deployment in the body) and the deployment route the AI SDK's useDeploymentBasedUrls builds.
var responsesSurfaces = []string{"openai", "azure-openai-v1", "azure-openai-classic", "azure-openai-deployment"}

// generateResponsesCases creates the Responses API's folders, <kind>-<surface>-to-<provider>: every
// surface x kind x provider dialect, the errors from two surfaces, and a model marked chat_only. The
// provider's answer is a Responses one where the request is forwarded natively (the provider's dialect
// has the API and the model is not chat_only), else the chat one the bridge converts.
func generateResponsesCases(t *testing.T, fixtures string) {
	type kind struct {
		name, request string
		// native and bridged are the answer fixture kinds (response-<provider>-<kind>.http) for a provider
		// with the Responses API and for one the request is bridged to chat for.
		native, bridged string
		surfaces        []string // nil: every surface
	}
	kinds := []kind{
		{"responses", "responses", "responses", "chat", nil},
		{"responses-stream", "responses-stream", "responses-stream", "chat-stream", nil},
		{"responses-tools", "responses-tools", "responses-tools", "chat-tools", nil},
		{"responses-tool-result", "responses-tool-result", "responses", "chat", nil},
		{"responses-tools-stream", "responses-tools-stream", "responses-tools-stream", "chat-tools-stream", nil},
		{"responses-error", "responses", "error", "error", []string{"openai", "azure-openai-v1"}},
	}
	type pair struct {
		kind     kind
		surface  string
		provider Dialect
		chatOnly bool
	}
	var pairs []pair
	for _, k := range kinds {
		surfaces := k.surfaces
		if surfaces == nil {
			surfaces = responsesSurfaces
		}
		for _, s := range surfaces {
			for _, p := range Dialects {
				pairs = append(pairs, pair{k, s, p, false})
			}
		}
	}
	// A model marked chat_only on a provider that has the Responses API: bridged all the same.
	pairs = append(pairs, pair{kinds[0], "openai", OpenAI, true}, pair{kinds[1], "openai", OpenAI, true})

	for _, pr := range pairs {
		k := pr.kind
		name := k.name + "-" + pr.surface + "-to-" + pr.provider.String()
		if pr.chatOnly {
			name += "-chat-only"
		}
		dir := filepath.Join(casesDir, name)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		provider, ok := goldenProviders[pr.provider]
		if !ok {
			t.Fatalf("%s: goldenProviders has no settings for %s: add the provider its generated cases use", dir, pr.provider)
		}
		provider.ChatOnly = pr.chatOnly
		native := pr.provider.Supports(OpResponses) && !pr.chatOnly
		answer, how := k.bridged, "bridged to chat completions"
		if native {
			answer, how = k.native, "forwarded natively"
		}
		if pr.chatOnly {
			how = "a model marked chat_only, " + how
		}
		req := filepath.Join(fixtures, "request-"+pr.surface+"-"+k.request+".http")
		resp := filepath.Join(fixtures, "response-"+pr.provider.String()+"-"+answer+".http")
		for _, f := range []string{req, resp} {
			if _, err := os.Stat(f); err != nil {
				t.Fatalf("%s: no fixture %s: write it", dir, f)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c := goldencase.Case{
			Description: fmt.Sprintf("%s: an OpenAI Responses client on the %s surface, a %s provider (%s)",
				k.name, pr.surface, pr.provider, how),
			Provider: provider,
		}
		raw, _ := json.MarshalIndent(c, "", "  ")
		writeFile(t, filepath.Join(dir, "case.json"), append(raw, '\n'))
		for src, dst := range map[string]string{req: "client_request.http", resp: "upstream_response.http"} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, dst), data)
		}
	}
}

// caseSettings are a case's dialect settings, as the plugin hands its configuration's keys to translate.
func caseSettings(t *testing.T, c *goldencase.Case, d Dialect) Settings {
	t.Helper()
	var s Settings
	levels := []struct {
		level SettingLevel
		keys  []Setting
	}{
		{GatewaySetting, []Setting{{"onchain_data", c.OnchainData}}},
		{ProviderSetting, []Setting{{"extra_parameters", c.Provider.ExtraParameters}, {"chain_id", c.Provider.DefaultChainID}}},
		{ModelSetting, []Setting{{"deployment", c.Provider.Deployment}, {"chain_id", c.Provider.ChainID}}},
	}
	if c.Provider.Auth == "bearer" {
		levels[1].keys = append(levels[1].keys, Setting{"auth", "bearer"})
	}
	for _, extra := range []struct {
		level int
		keys  map[string]string
	}{{1, c.Provider.ProviderSettings}, {2, c.Provider.ModelSettings}} {
		for _, key := range slices.Sorted(maps.Keys(extra.keys)) {
			levels[extra.level].keys = append(levels[extra.level].keys, Setting{key, extra.keys[key]})
		}
	}
	for _, l := range levels {
		var set []Setting
		for _, kv := range l.keys {
			if kv.Value != "" {
				set = append(set, kv)
			}
		}
		var err *SettingError
		if s, err = s.With(d, l.level, set); err != nil {
			t.Fatalf("case settings: %v", err)
		}
	}
	return s
}

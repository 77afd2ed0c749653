package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var (
	update   = flag.Bool("update", false, "rewrite the expected files of the golden cases from the current output")
	generate = flag.Bool("generate", false, "create missing dialect-pair case folders from testdata/fixtures")
)

const casesDir = "../testdata/cases"

// goldenCase is one folder under testdata/cases: case.json says who talks to whom; client_request.http and
// upstream_response.http are the inputs; upstream_request.http and client_response.http the expectations.
// A request the filter answers itself has no upstream_request.http.
type goldenCase struct {
	Description string         `json:"description"`
	PathPrefix  string         `json:"path_prefix,omitempty"`
	OnchainData string         `json:"onchain_data,omitempty"`
	Provider    goldenProvider `json:"provider"`
}

type goldenProvider struct {
	Dialect         string `json:"dialect"`
	BasePath        string `json:"base_path,omitempty"`
	APIVersion      string `json:"api_version,omitempty"`
	Deployment      string `json:"deployment,omitempty"`
	Model           string `json:"model,omitempty"`
	ChainID         string `json:"chain_id,omitempty"`
	DefaultChainID  string `json:"default_chain_id,omitempty"`
	ExtraParameters string `json:"extra_parameters,omitempty"`
	Auth            string `json:"auth,omitempty"`
	Key             string `json:"key"`
}

// httpMessage is a request or response in the fixtures' text form: a first line, headers, a blank line, the body.
type httpMessage struct {
	first   string
	headers http.Header
	body    []byte
}

func parseHTTPFile(t *testing.T, path string) httpMessage {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	m := httpMessage{first: lines[0], headers: http.Header{}, body: body}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("%s: header line without ':': %q", path, l)
		}
		m.headers.Add(name, strings.TrimSpace(value))
	}
	if !strings.Contains(m.headers.Get("content-type"), "event-stream") {
		m.body = bytes.TrimRight(m.body, "\n")
	}
	return m
}

func (m httpMessage) render() []byte {
	var b bytes.Buffer
	b.WriteString(m.first + "\n")
	names := make([]string, 0, len(m.headers))
	for name := range m.headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range m.headers[name] {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(name), v)
		}
	}
	b.WriteString("\n")
	b.Write(m.body)
	if len(m.body) > 0 && m.body[len(m.body)-1] != '\n' {
		b.WriteString("\n")
	}
	return b.Bytes()
}

// exchangeResult is what the pipeline produced for one case.
type exchangeResult struct {
	upstream *httpMessage // nil when the filter answered locally
	client   httpMessage
	// streamChunks re-runs the stream translation with the upstream body cut into chunks of this size.
	streamWith func(chunkSize int) []byte
}

// runPipeline drives translate the way the plugin does: detect, parse, render, then translate the answer.
func runPipeline(t *testing.T, c goldenCase, req httpMessage, resp httpMessage) exchangeResult {
	t.Helper()
	method, path, _ := strings.Cut(req.first, " ")
	localError := func(client Dialect, e *Error) exchangeResult {
		h := http.Header{}
		h.Set("content-type", "application/json")
		h.Set("x-aidialect-error", string(e.Code))
		return exchangeResult{client: httpMessage{first: strconv.Itoa(e.Status()), headers: h, body: e.Body(client)}}
	}
	creq, e := Detect(method, path, c.PathPrefix)
	if !creq.Known() {
		t.Fatalf("request %s %s not recognised", method, path)
	}
	creq.ModelDeploymentHeader = req.headers.Get("azureml-model-deployment")
	creq.ExtraParameters = req.headers.Get("extra-parameters")
	if e != nil {
		return localError(creq.Dialect, e)
	}
	var body RequestBody
	if e := body.Parse(req.body); e != nil {
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
	extra, ok := ParseExtraParameters(c.Provider.ExtraParameters)
	if !ok {
		t.Fatalf("bad extra_parameters %q", c.Provider.ExtraParameters)
	}
	target := Target{
		Dialect:         providerDialect,
		BasePath:        c.Provider.BasePath,
		APIVersion:      c.Provider.APIVersion,
		Deployment:      c.Provider.Deployment,
		Model:           firstNonEmpty(c.Provider.Model, model),
		ChainID:         c.Provider.ChainID,
		DefaultChainID:  c.Provider.DefaultChainID,
		ExtraParameters: extra,
	}
	if target.BasePath == "" {
		target.BasePath = providerDialect.DefaultBasePath()
	}
	head, e := RenderHead(&creq, &target)
	if e != nil {
		return localError(creq.Dialect, e)
	}
	ub, e := RenderBody(nil, &creq, &body, &target)
	if e != nil {
		return localError(creq.Dialect, e)
	}

	up := httpMessage{first: method + " " + head.Path, headers: req.headers.Clone(), body: ub.Body}
	clientKey := ClientCredential(req.headers.Get("authorization"), req.headers.Get("api-key"))
	for _, name := range append(slices.Clone(ClientCredentialHeaders), "content-length", "accept-encoding") {
		up.headers.Del(name)
	}
	for _, name := range head.Remove {
		up.headers.Del(name)
	}
	key := c.Provider.Key
	if c.Provider.Auth == "passthrough" {
		key = clientKey
	}
	for _, h := range ProviderAuthHeaders(providerDialect, key, c.Provider.Auth == "bearer") {
		up.headers.Set(h.Name, h.Value)
	}
	for _, h := range head.Set {
		up.headers.Set(h.Name, h.Value)
	}
	up.headers.Set("content-length", strconv.Itoa(len(ub.Body)))

	status, _ := strconv.Atoi(resp.first)
	x := Exchange{Client: creq.Dialect, Provider: providerDialect, Op: creq.Op, IncludeUsage: body.IncludeUsage}
	if x.Onchain, ok = ParseOnchainData(c.OnchainData); !ok {
		t.Fatalf("bad onchain_data %q", c.OnchainData)
	}
	out := httpMessage{first: strconv.Itoa(status), headers: resp.headers.Clone()}
	out.headers.Del("content-length")
	if len(ub.Dropped) > 0 {
		out.headers.Set("x-aidialect-dropped-params", strings.Join(ub.Dropped, ","))
	}
	result := exchangeResult{upstream: &up}
	switch {
	case status >= 400:
		newStatus, b := TranslateError(x.Client, x.Provider, status, resp.body)
		out.first, out.body = strconv.Itoa(newStatus), b
		out.headers.Set("content-type", "application/json")
	case strings.Contains(resp.headers.Get("content-type"), "text/event-stream"):
		result.streamWith = func(size int) []byte {
			st := NewStreamTranslator(x, 0)
			var all []byte
			for rest := resp.body; len(rest) > 0; {
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
		out.body = result.streamWith(len(resp.body) + 1)
	default:
		b, headers, err := TranslateJSON(nil, &x, resp.body)
		if err != nil {
			t.Fatalf("response: %v", err)
		}
		out.body = b
		for _, h := range headers {
			out.headers.Set(h.Name, h.Value)
		}
	}
	result.client = out
	return result
}

func TestGoldenCases(t *testing.T) {
	if *generate {
		generateCases(t)
	}
	dirs, err := filepath.Glob(filepath.Join(casesDir, "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases under %s (%v)", casesDir, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
			if err != nil {
				t.Fatal(err)
			}
			var c goldenCase
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("case.json: %v", err)
			}
			req := parseHTTPFile(t, filepath.Join(dir, "client_request.http"))
			resp := parseHTTPFile(t, filepath.Join(dir, "upstream_response.http"))
			got := runPipeline(t, c, req, resp)

			upstreamPath := filepath.Join(dir, "upstream_request.http")
			clientPath := filepath.Join(dir, "client_response.http")
			if *update {
				if got.upstream != nil {
					writeFile(t, upstreamPath, got.upstream.render())
				} else {
					os.Remove(upstreamPath)
				}
				writeFile(t, clientPath, got.client.render())
				return
			}
			want, err := os.ReadFile(upstreamPath)
			switch {
			case got.upstream == nil && err == nil:
				t.Errorf("the filter answered locally, but %s expects an upstream request", upstreamPath)
			case got.upstream != nil && err != nil:
				t.Errorf("an upstream request was produced, but there is no %s:\n%s", upstreamPath, got.upstream.render())
			case got.upstream != nil && !bytes.Equal(got.upstream.render(), want):
				t.Errorf("upstream request differs from %s:\n--- got\n%s\n--- want\n%s", upstreamPath, got.upstream.render(), want)
			}
			want, err = os.ReadFile(clientPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.client.render(), want) {
				t.Errorf("client response differs from %s:\n--- got\n%s\n--- want\n%s", clientPath, got.client.render(), want)
			}
			if got.streamWith != nil {
				whole := got.streamWith(len(resp.body) + 1)
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
var goldenProviders = map[Dialect]goldenProvider{
	OpenAI:      {Dialect: "openai", Model: "gpt-4o-2024-08-06", Key: "sk-provider-openai"},
	AzureOpenAI: {Dialect: "azure-openai", Deployment: "gpt4o-prod", Key: "provider-azure-key"},
	AzureAI: {Dialect: "azure-ai", Model: "Meta-Llama-3-70B-Instruct", Deployment: "llama3-blue",
		ExtraParameters: "drop", Key: "provider-ai-key"},
	EternalAI: {Dialect: "eternalai", Model: "PrimeIntellect/INTELLECT-1-Instruct", Key: "provider-eternal-key"},
}

// generateCases creates a folder for every client x provider pair of every operation both sides have
// (plus embeddings toward EternalAI, which must be refused locally). Existing folders are left alone.
func generateCases(t *testing.T) {
	const fixtures = "../testdata/fixtures"
	kinds := []struct{ name, request, response string }{
		{"chat", "chat", "chat"},
		{"chat-stream", "chat-stream", "chat-stream"},
		{"error", "chat", "error"},
		{"completions", "completions", "completions"},
		{"embeddings", "embeddings", "embeddings"},
	}
	for _, k := range kinds {
		for _, client := range Dialects {
			for _, provider := range Dialects {
				req := filepath.Join(fixtures, "request-"+client.String()+"-"+k.request+".http")
				resp := filepath.Join(fixtures, "response-"+provider.String()+"-"+k.response+".http")
				if _, err := os.Stat(req); err != nil {
					continue // the client dialect has no such operation
				}
				if _, err := os.Stat(resp); err != nil {
					resp = filepath.Join(fixtures, "response-openai-"+k.response+".http")
				}
				dir := filepath.Join(casesDir, k.name+"-"+client.String()+"-to-"+provider.String())
				if _, err := os.Stat(dir); err == nil {
					continue
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				c := goldenCase{
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
}

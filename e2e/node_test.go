package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/mock"
)

// TestNodeClientSDKs runs the npm suites against one local gateway, in one `node --test` run:
// node/clients.test.mjs (the client SDKs openai, AzureOpenAI and @azure-rest/ai-inference) and
// node/frameworks.test.mjs (the Vercel AI SDK and LangChain JS), both against every provider dialect. Then it
// checks which Azure OpenAI deployment each framework request reached at the azure mock.
func TestNodeClientSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the npm suites need Node.js >= 20")
	}
	// One package per suite family: an older node_modules lacks the newer ones.
	for _, pkg := range []string{"openai", "@azure-rest/ai-inference", "ai", "@ai-sdk/azure", "@langchain/openai"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Fatalf("e2e/node/node_modules lacks %s: run `make node-deps` (npm ci in e2e/node; make test does)", pkg)
		}
	}
	env := startDemo(t)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "clients.test.mjs", "frameworks.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+env.GatewayURL)
	out, err := cmd.CombinedOutput()
	if testing.Verbose() || err != nil {
		t.Logf("node --test output:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the npm suites failed: %v", err)
	}
	if azure := env.Mocks["azure"]; azure != nil { // nil against a remote Envoy: the mocks run in their own container
		checkFrameworkDeployments(t, azure.Received())
	}
}

// frameworkSurfaces are the x-e2e-surface values of node/frameworks.test.mjs. Each surface sends the azure-openai
// route (demo model gpt-4o-mini, embeddings text-embedding-3-small) six chat requests (chat, stream, and two for
// each tool round trip, plain and streamed) and its embeddings of two inputs: in one request, or in two from
// LangChain's AzureOpenAIEmbeddings (batchSize 1 by default).
var frameworkSurfaces = map[string]struct{ chat, embeddings int }{
	"vercel/openai":               {6, 1},
	"vercel/openai-compatible":    {6, 1},
	"vercel/azure-v1":             {6, 1},
	"vercel/azure-deployments":    {6, 1},
	"vercel/azure-ai":             {6, 1},
	"langchain/openai":            {6, 1},
	"langchain/azure-v1":          {6, 1},
	"langchain/azure-deployments": {6, 2},
}

// checkFrameworkDeployments checks the framework requests the azure mock received: each reached the deployment
// the demo configuration names for its model (gpt-4o-mini-prod for chat, embed-prod for embeddings; the mock
// answers any other with 404 DeploymentNotFound), in the path on the classic surface or in the body model on
// the v1 surface; requests from v1-surface clients stayed on the v1 surface (the provider sets no api_version),
// the others went to the classic one with an api-version; and every request of every surface arrived.
func checkFrameworkDeployments(t *testing.T, received []mock.Recorded) {
	t.Helper()
	wantDeployment := map[string]string{"chat/completions": "gpt-4o-mini-prod", "embeddings": "embed-prod"}
	counts := map[string]int{} // "surface op" -> requests
	for _, rec := range received {
		surface := rec.Header.Get("x-e2e-surface")
		if surface == "" {
			continue // clients.test.mjs
		}
		what := fmt.Sprintf("%s: %s %s?%s", surface, rec.Method, rec.Path, rec.RawQuery)
		var op, deployment string
		v1 := strings.HasPrefix(rec.Path, "/openai/v1/")
		switch {
		case v1:
			op, deployment = strings.TrimPrefix(rec.Path, "/openai/v1/"), gjson.GetBytes(rec.Body, "model").String()
			if rec.RawQuery != "" {
				t.Errorf("%s: the v1 surface without api-version (the provider sets none)", what)
			}
		case strings.HasPrefix(rec.Path, "/openai/deployments/"):
			deployment, op, _ = strings.Cut(strings.TrimPrefix(rec.Path, "/openai/deployments/"), "/")
			if !strings.Contains(rec.RawQuery, "api-version=") {
				t.Errorf("%s: the classic surface needs an api-version", what)
			}
		default:
			t.Errorf("%s: not an Azure OpenAI operation path", what)
			continue
		}
		if want, ok := wantDeployment[op]; !ok || deployment != want {
			t.Errorf("%s: reached deployment %q, want %q", what, deployment, want)
		}
		if wantV1 := strings.HasSuffix(surface, "/azure-v1"); v1 != wantV1 {
			t.Errorf("%s: v1 surface %v, want %v (a v1 client stays on it; the others go to the classic one)", what, v1, wantV1)
		}
		counts[surface+" "+op]++
	}
	for s, want := range frameworkSurfaces {
		for op, n := range map[string]int{"chat/completions": want.chat, "embeddings": want.embeddings} {
			if got := counts[s+" "+op]; got != n {
				t.Errorf("%s: the azure mock got %d %s requests, want %d", s, got, op, n)
			}
		}
	}
	for key := range counts {
		s, _, _ := strings.Cut(key, " ")
		if _, ok := frameworkSurfaces[s]; !ok {
			t.Errorf("x-e2e-surface %q is not in frameworkSurfaces", s)
		}
	}
}

// TestNodeResponses runs node/responses.test.mjs (the openai SDK's responses.create and responses.stream, and
// the Vercel AI SDK's openai(model) and azure(deployment), which use the Responses API) against one local
// gateway, then checks where the requests it sent reached the mocks (checkResponsesUpstream).
func TestNodeResponses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the npm suites need Node.js >= 20")
	}
	for _, pkg := range []string{"openai", "ai", "@ai-sdk/openai", "@ai-sdk/azure"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Fatalf("e2e/node/node_modules lacks %s: run `make node-deps` (npm ci in e2e/node; make test does)", pkg)
		}
	}
	env := startDemo(t)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "responses.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+env.GatewayURL)
	out, err := cmd.CombinedOutput()
	if testing.Verbose() || err != nil {
		t.Logf("node --test output:\n%s", out)
	}
	if err != nil {
		t.Errorf("the npm Responses suite failed: %v", err)
	}
	if env.Mocks != nil { // nil against a remote Envoy: the mocks run in their own container
		checkResponsesUpstream(t, env.Mocks, err != nil)
	}
}

// responsesSurfaces are the x-e2e-responses values of node/responses.test.mjs.
var responsesSurfaces = []string{"openai", "AzureOpenAI", "vercel/openai", "vercel/azure", "vercel/azure-deployments"}

// classicResponsesSurfaces are the surfaces of node/responses.test.mjs that use Azure OpenAI's classic surface
// (/openai/responses or /openai/deployments/{d}/responses, with api-version 2025-04-01-preview).
var classicResponsesSurfaces = []string{"AzureOpenAI", "vercel/azure-deployments"}

// checkResponsesUpstream checks the requests of node/responses.test.mjs at the mocks: at openai and azure (the
// Responses API) on the native path, the azure deployment in the body model; toward azure on the client's
// surface, as for chat (the demo's azure provider sets no api_version): the v1 one without api-version for
// the v1 clients, /openai/responses with the client's api-version for the classic ones (never a deployments
// path); the bridged ones as chat completions; every surface reaching every mock. With logAll (the suite
// failed) it logs what each mock got.
func checkResponsesUpstream(t *testing.T, mocks map[string]*mock.Provider, logAll bool) {
	t.Helper()
	counts := map[string]int{} // "surface mock" -> requests
	for name, m := range mocks {
		for _, rec := range m.Received() {
			surface := rec.Header.Get("x-e2e-responses")
			if surface == "" {
				continue
			}
			counts[surface+" "+name]++
			what := fmt.Sprintf("%s at %s: %s %s?%s %s", surface, name, rec.Method, rec.Path, rec.RawQuery, rec.Body)
			if logAll {
				t.Log(what)
			}
			model := gjson.GetBytes(rec.Body, "model").String()
			chat := gjson.GetBytes(rec.Body, "messages").IsArray()
			var ok bool
			switch name {
			case "openai":
				ok = (rec.Path == "/v1/responses" && !chat) || (rec.Path == "/v1/chat/completions" && chat)
			case "azure":
				path, query := "/openai/v1/responses", ""
				if slices.Contains(classicResponsesSurfaces, surface) {
					path, query = "/openai/responses", "api-version=2025-04-01-preview"
				}
				ok = rec.Path == path && rec.RawQuery == query && model == "gpt-4o-mini-prod"
			case "llama":
				ok = strings.HasSuffix(rec.Path, "/chat/completions") && chat
			case "eternal":
				ok = rec.Path == "/v1/chat/completions" && chat
			}
			if !ok {
				t.Errorf("unexpected upstream request: %s", what)
			}
		}
	}
	for _, s := range responsesSurfaces {
		for name := range mocks {
			if counts[s+" "+name] == 0 {
				t.Errorf("no request of surface %s reached the %s mock", s, name)
			}
		}
	}
}

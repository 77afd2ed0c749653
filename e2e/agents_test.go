package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/e2e/demo"
	"github.com/aidialect/aidialect/e2e/mock"
)

// The agent-client suites: the Codex CLI (codex_test.go) and the OpenAI Agents SDK (agents/agents.test.mjs),
// pinned in agents/package.json, against every provider dialect of the demo.

// agentsDir holds the agent clients' npm package (make node-deps runs npm ci there).
const agentsDir = "agents"

// agentTarget is one provider dialect as an agent client reaches it: a model name the Codex CLI finds in its
// catalogue (`codex debug models`), so that Codex sends the tools it sends a real model (the custom
// apply_patch and tool_search; a model outside the catalogue gets fallback metadata and other tools), added
// to the demo as an extra entry of that provider. Codex 0.171.0 matches a name by its catalogued prefix
// (gpt-5.5-llama has gpt-5.5's metadata). gpt-5.5 is the one catalogued model with plain Responses requests:
// the others (gpt-5.6-*, gpt-6*) have "use_responses_lite" and "tool_mode": "code_mode_only", for which
// Codex sends an input item of type additional_tools (a namespace of custom tools) that no public API
// documents.
type agentTarget struct {
	name     string // test name
	provider string // the demo provider (its mock)
	model    string // the model name the client sends
	entry    string // the model entry added to the demo configuration
	bridged  bool   // the gateway bridges Responses to chat completions toward it
}

var agentTargets = []agentTarget{
	{"openai", "openai", "gpt-5.5", `{"name":"gpt-5.5"}`, false},
	{"openai-chat_only", "openai", "gpt-5.5-chat", `{"name":"gpt-5.5-chat","model":"gpt-4o","chat_only":true,"hosted_tools":"drop"}`, true},
	{"azure-openai", "azure", "gpt-5.5-azure", `{"name":"gpt-5.5-azure","deployment":"gpt-4o-mini-prod"}`, false},
	{"azure-ai", "llama", "gpt-5.5-llama", `{"name":"gpt-5.5-llama","model":"Meta-Llama-3-70B-Instruct","hosted_tools":"drop"}`, true},
	{"eternalai", "eternal", "gpt-5.5-eternal", `{"name":"gpt-5.5-eternal","model":"PrimeIntellect/INTELLECT-1-Instruct","hosted_tools":"drop"}`, true},
}

// startAgentDemo starts the demo with the agent targets' model entries. Against a remote gateway
// (E2E_GATEWAY_URL) the entries must be in its configuration already.
func startAgentDemo(t *testing.T) *demo.Env {
	t.Helper()
	if url := os.Getenv("E2E_GATEWAY_URL"); url != "" {
		return &demo.Env{GatewayURL: strings.TrimSuffix(url, "/")}
	}
	wasm, err := os.ReadFile(wasmPath())
	if err != nil {
		t.Fatalf("reading the filter (make build): %v", err)
	}
	extra := map[string][]string{}
	for _, a := range append(agentTargets[:len(agentTargets):len(agentTargets)], codeModeTargets...) {
		extra[a.provider] = append(extra[a.provider], a.entry)
	}
	env, err := demo.Start(demo.Options{Wasm: wasm, Listen: "127.0.0.1:0", ExtraModels: extra, Logger: quietLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

// needAgentPackages fails the test when agents/node_modules lacks a package.
func needAgentPackages(t *testing.T, pkgs ...string) {
	t.Helper()
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(agentsDir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			t.Fatalf("e2e/agents/node_modules lacks %s: run `make node-deps` (npm ci in e2e/agents; make test does)", pkg)
		}
	}
}

// receivedWith returns the requests a mock received whose header name has value.
func receivedWith(m *mock.Provider, name, value string) []mock.Recorded {
	var out []mock.Recorded
	if m == nil {
		return nil
	}
	for _, rec := range m.Received() {
		if rec.Header.Get(name) == value {
			out = append(out, rec)
		}
	}
	return out
}

// TestAgentsSDK runs agents/agents.test.mjs (the OpenAI Agents SDK: a tool run to completion, a streamed run,
// structured output, a toolNamespace tool; Responses and chat-completions modes; the OpenAI and AzureOpenAI
// clients) against every agent target.
func TestAgentsSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the npm suites need Node.js >= 20")
	}
	needAgentPackages(t, "@openai/agents", "openai", "zod")
	env := startAgentDemo(t)
	targets := make([]map[string]any, len(agentTargets))
	for i, a := range agentTargets {
		targets[i] = map[string]any{"name": a.name, "model": a.model, "bridged": a.bridged}
	}
	b, _ := json.Marshal(targets)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "agents.test.mjs")
	cmd.Dir = agentsDir
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+env.GatewayURL, "AGENT_TARGETS="+string(b))
	out, err := cmd.CombinedOutput()
	if testing.Verbose() || err != nil {
		t.Logf("node --test output:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the Agents SDK suite failed: %v", err)
	}
	if env.Mocks == nil {
		return
	}
	// Every target got the suite's requests.
	for _, a := range agentTargets {
		if n := len(receivedWith(env.Mocks[a.provider], "x-e2e-agents", a.name)); n == 0 {
			t.Errorf("%s: the %s mock received no request of the suite", a.name, a.provider)
		}
	}
}

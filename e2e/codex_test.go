package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/mock"
)

// codexForms are the two ways to point the Codex CLI at the gateway (README "Codex and agent SDKs"): a
// custom OpenAI-style provider (Codex POSTs {base_url}/responses) and Codex's Azure form (POST
// /openai/v1/responses?api-version=preview).
var codexForms = []struct {
	name, provider, envKey string
	table                  func(gateway, caseName string) string
}{
	{"openai-style", "aidialect", "AIDIALECT_KEY", func(gw, c string) string {
		return `[model_providers.aidialect]
name = "aidialect gateway"
base_url = "` + gw + `/v1"
env_key = "AIDIALECT_KEY"
wire_api = "responses"
http_headers = { "x-e2e-codex" = "` + c + `" }
`
	}},
	{"azure", "azure", "AZURE_OPENAI_API_KEY", func(gw, c string) string {
		return `[model_providers.azure]
name = "Azure"
base_url = "` + gw + `/openai/v1"
env_key = "AZURE_OPENAI_API_KEY"
query_params = { api-version = "preview" }
wire_api = "responses"
http_headers = { "x-e2e-codex" = "` + c + `" }
`
	}},
}

// codexScenario is one `codex exec` prompt: a scripted tool call (mock-call, see e2e/mock/scripted.go), then
// the turn that uses its result.
type codexScenario struct {
	name   string
	prompt func(caseName string) string
	// check looks at the working directory and the final agent message.
	check func(t *testing.T, dir, caseName, final string)
	// output is what the tool's output, sent back in the second turn, must contain.
	output string
	// custom: the tool is Codex's custom (freeform) apply_patch, else a function tool.
	custom bool
	// reasoning: the model reasons before its call (mock-reasoning), and Codex must send the reasoning item
	// back, intact, before the call, to a provider that made one.
	reasoning bool
}

// execWait are exec_command's arguments that make Codex wait for the command to end: by default it yields
// after 10 s and answers "Process running with session ID ..." without the output, and on a loaded 2-core
// machine a plain echo (a login shell, by default) has taken longer than that.
const execWait = `"login":false,"yield_time_ms":120000`

var codexScenarios = []codexScenario{
	{
		name: "apply_patch",
		prompt: func(c string) string {
			return "Create hello.txt.\nmock-call apply_patch\n*** Begin Patch\n*** Add File: hello.txt\n+hello from " + c + "\n*** End Patch\n"
		},
		check: func(t *testing.T, dir, c, final string) {
			b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
			if err != nil || string(b) != "hello from "+c+"\n" {
				t.Errorf("hello.txt: %q, %v; want the patch's content", b, err)
			}
			if !strings.HasPrefix(final, "echo: ") || !strings.Contains(final, "hello.txt") {
				t.Errorf("final message %q does not echo apply_patch's output", final)
			}
		},
		output: "hello.txt",
		custom: true,
	},
	{
		name:   "exec_command",
		prompt: func(string) string { return `mock-call exec_command {"cmd":"echo hi-from-exec",` + execWait + `}` },
		check: func(t *testing.T, dir, c, final string) {
			if !strings.HasPrefix(final, "echo: ") || !strings.Contains(final, "hi-from-exec") {
				t.Errorf("final message %q does not echo the command's output", final)
			}
		},
		output: "hi-from-exec",
	},
	{
		name: "reasoning_then_exec_command",
		prompt: func(string) string {
			return "mock-reasoning weighing which command to run\n" + `mock-call exec_command {"cmd":"echo hi-after-thinking",` + execWait + `}`
		},
		check: func(t *testing.T, dir, c, final string) {
			if !strings.HasPrefix(final, "echo: ") || !strings.Contains(final, "hi-after-thinking") {
				t.Errorf("final message %q does not echo the command's output", final)
			}
		},
		output:    "hi-after-thinking",
		reasoning: true,
	},
}

// TestCodexCLI runs `codex exec` non-interactively (temporary CODEX_HOME and working directory, approval
// "never", no sandbox, Codex's defaults otherwise) against every agent target with both provider forms, for
// each scenario: a turn in which the model calls a tool, Codex runs it, and a turn that uses its result.
func TestCodexCLI(t *testing.T) {
	codex, err := filepath.Abs(filepath.Join(agentsDir, "node_modules", ".bin", "codex"))
	if err != nil {
		t.Fatal(err)
	}
	needAgentPackages(t, "@openai/codex")
	if _, err := os.Stat(codex); err != nil {
		t.Fatalf("%s is missing: run `make node-deps` (npm ci in e2e/agents; make test does)", codex)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: the Codex CLI's launcher needs Node.js >= 20")
	}
	env := startAgentDemo(t)
	// Runs in parallel, a few at a time: each is a separate process of a few seconds.
	slots := make(chan struct{}, 4)
	t.Run("cases", func(t *testing.T) {
		for _, a := range agentTargets {
			for _, form := range codexForms {
				for _, sc := range codexScenarios {
					caseName := a.name + "-" + form.name + "-" + sc.name
					t.Run(a.name+"/"+form.name+"/"+sc.name, func(t *testing.T) {
						t.Parallel()
						slots <- struct{}{}
						defer func() { <-slots }()
						runCodex(t, codex, env.GatewayURL, a, form.provider, form.envKey, form.table(env.GatewayURL, caseName), sc, caseName,
							env.Mocks[a.provider])
					})
				}
			}
		}
	})
}

// codeModeTargets are the providers with a model name Codex gives its default model's metadata (gpt-6.2-sol
// in 0.171.0: "code_mode_only"). For it Codex sends no tools member: its tools (namespaces of a
// custom JavaScript tool, exec, and functions) come in an additional_tools input item, and the model's calls
// must come back as custom_tool_call items with their namespace.
var codeModeTargets = []agentTarget{
	{"openai-code-mode", "openai", "gpt-6.2-sol", `{"name":"gpt-6.2-sol"}`, false},
	{"azure-openai-code-mode", "azure", "gpt-6.2-sol-azure", `{"name":"gpt-6.2-sol-azure","deployment":"gpt-4o-mini-prod"}`, false},
	{"azure-ai-code-mode", "llama", "gpt-6.2-sol-llama", `{"name":"gpt-6.2-sol-llama","model":"Meta-Llama-3-70B-Instruct","hosted_tools":"drop"}`, true},
	{"eternalai-code-mode", "eternal", "gpt-6.2-sol-eternal", `{"name":"gpt-6.2-sol-eternal","model":"PrimeIntellect/INTELLECT-1-Instruct","hosted_tools":"drop"}`, true},
}

// TestCodexCLICodeMode runs Codex's default model kind toward every provider dialect: the model calls exec (a
// custom tool in the namespace functions) with JavaScript, Codex runs it, and the next turn uses its text.
func TestCodexCLICodeMode(t *testing.T) {
	codex, err := filepath.Abs(filepath.Join(agentsDir, "node_modules", ".bin", "codex"))
	if err != nil {
		t.Fatal(err)
	}
	needAgentPackages(t, "@openai/codex")
	env := startAgentDemo(t)
	sc := codexScenario{
		name:   "exec",
		prompt: func(string) string { return "mock-call exec\ntext(\"hi-from-\" + \"code-mode\")\n" },
		check: func(t *testing.T, dir, c, final string) {
			if !strings.HasPrefix(final, "echo: ") || !strings.Contains(final, "hi-from-code-mode") {
				t.Errorf("final message %q does not echo exec's text", final)
			}
		},
		output: "hi-from-code-mode",
		custom: true,
	}
	for _, a := range codeModeTargets {
		for _, form := range codexForms {
			caseName := a.name + "-" + form.name
			t.Run(a.name+"/"+form.name, func(t *testing.T) {
				t.Parallel()
				runCodex(t, codex, env.GatewayURL, a, form.provider, form.envKey, form.table(env.GatewayURL, caseName), sc, caseName,
					env.Mocks[a.provider])
			})
		}
	}
}

// runCodex runs one case and checks it.
func runCodex(t *testing.T, codex, gateway string, a agentTarget, provider, envKey, table string, sc codexScenario,
	caseName string, m *mock.Provider) {
	home, dir := t.TempDir(), t.TempDir()
	config := `model = "` + a.model + `"
model_provider = "` + provider + `"
approval_policy = "never"
sandbox_mode = "danger-full-access"
` + codexExtraConfig(a) + "\n" + table
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral", "--json", sc.prompt(caseName))
	cmd.Dir = dir
	cmd.Stdin = nil // /dev/null: without it codex exec waits for more input on stdin
	// HOME is the case's too: Codex runs its commands in a login shell, which would otherwise read the user's
	// shell start-up files (a version manager's rehash there took over the command's 10 s on a loaded machine,
	// and the model got "Process running" without the output).
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+home, envKey+"=any-client-key", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	final, errs := codexEvents(stdout.Bytes())
	if err != nil || testing.Verbose() {
		t.Logf("codex exec: %v\nconfig.toml:\n%s\nstdout:\n%s\nstderr:\n%s", err, config, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil || testing.Verbose() {
		if m != nil {
			for _, rec := range receivedWith(m, "x-e2e-codex", caseName) {
				t.Logf("the %s mock received %s %s?%s, ending with:\n%s", a.provider, rec.Method, rec.Path, rec.RawQuery, lastItems(rec.Body, 3))
			}
		}
	}
	if err != nil {
		t.Fatalf("codex exec failed: %v (errors: %s)", err, strings.Join(errs, "; "))
	}
	if len(errs) > 0 {
		t.Errorf("codex reported errors: %s", strings.Join(errs, "; "))
	}
	sc.check(t, dir, caseName, final)
	if m != nil {
		checkCodexUpstream(t, receivedWith(m, "x-e2e-codex", caseName), a, sc)
	}
}

// codexExtraConfig is the config.toml lines a target needs beyond Codex's defaults: none. web_search, on by
// default, is a hosted tool no chat provider can run: the bridged models' entries set hosted_tools "drop", so
// the gateway leaves it out and Codex needs no change (README "Codex and agent SDKs").
func codexExtraConfig(agentTarget) string { return "" }

// codexEvents reads `codex exec --json` lines: the last agent message's text, and the text of every error
// item or turn failure, except the warning Codex gives for a model its catalogue lacks.
func codexEvents(out []byte) (final string, errs []string) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !gjson.ValidBytes(line) {
			continue
		}
		ev := gjson.ParseBytes(line)
		switch ev.Get("type").String() {
		case "item.completed":
			switch ev.Get("item.type").String() {
			case "agent_message":
				final = ev.Get("item.text").String()
			case "error":
				if msg := ev.Get("item.message").String(); !strings.Contains(msg, "Model metadata for") {
					errs = append(errs, msg)
				}
			}
		case "turn.failed", "error":
			errs = append(errs, ev.Raw)
		}
	}
	return final, errs
}

// checkCodexUpstream checks what the provider's mock received for one case: the first turn, then a second
// that carries the tool's call and its output, as a Responses item (native) or as a chat tool message
// (bridged).
func checkCodexUpstream(t *testing.T, received []mock.Recorded, a agentTarget, sc codexScenario) {
	t.Helper()
	if len(received) < 2 {
		t.Fatalf("the %s mock received %d requests of this case, want at least 2 (the tool turn and the turn using its result)", a.provider, len(received))
	}
	second := received[len(received)-1].Body
	what := fmt.Sprintf("the last request at the %s mock", a.provider)
	if !a.bridged {
		outputType := "function_call_output"
		if sc.custom {
			outputType = "custom_tool_call_output"
		}
		items := gjson.GetBytes(second, "input").Array()
		found := false
		for _, it := range items {
			if it.Get("type").String() == outputType && strings.Contains(it.Get("output").String(), sc.output) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s has no %s carrying %q: %.2000s", what, outputType, sc.output, second)
		}
		if sc.reasoning {
			checkReasoningReplayed(t, what, received[len(received)-2], items)
		}
		return
	}
	msgs := gjson.GetBytes(second, "messages").Array()
	if n := len(msgs); n == 0 || msgs[n-1].Get("role").String() != "tool" || !strings.Contains(msgs[n-1].Get("content").String(), sc.output) {
		t.Errorf("%s does not end with the tool message carrying %q: %.2000s", what, sc.output, second)
	}
	if sc.reasoning {
		checkBridgedCallReplayed(t, what, received[len(received)-2], msgs)
	}
}

// checkReasoningReplayed checks the turn after a reasoning model's call against the answer that made the call
// (first: the request before, with the mock's reply): the reasoning item comes back with its id, summary and
// encrypted_content, immediately followed by the call with its id and call_id, then somewhere after, the
// call's output (what the provider needs to go on from where it stopped).
func checkReasoningReplayed(t *testing.T, what string, first mock.Recorded, items []gjson.Result) {
	t.Helper()
	out := responsesOutput(first.Reply)
	if len(out) != 2 || out[0].Get("type").String() != "reasoning" || out[1].Get("type").String() != "function_call" {
		t.Fatalf("the answer before (status %d) has no reasoning item then function call: %.2000s", first.Status, first.Reply)
	}
	rs, call := out[0], out[1]
	if rs.Get("encrypted_content").String() != mock.EncryptedReasoning(rs.Get("id").String()) {
		t.Fatalf("the answer before gave no encrypted_content (Codex asks for it with include): %s", rs.Raw)
	}
	at := -1
	for i, it := range items {
		if it.Get("type").String() == "reasoning" && it.Get("id").String() == rs.Get("id").String() {
			at = i
		}
	}
	switch {
	case at < 0:
		t.Errorf("%s does not carry the reasoning item %s: %s", what, rs.Get("id"), lastItemsOf(items, 4))
		return
	case items[at].Get("encrypted_content").String() != rs.Get("encrypted_content").String() ||
		items[at].Get("summary").Raw != rs.Get("summary").Raw && items[at].Get("summary.0.text").String() != rs.Get("summary.0.text").String():
		t.Errorf("%s changed the reasoning item: sent %s, was given %s", what, items[at].Raw, rs.Raw)
	case at+1 == len(items) || items[at+1].Get("type").String() != "function_call" ||
		items[at+1].Get("call_id").String() != call.Get("call_id").String() ||
		items[at+1].Get("id").Exists() && items[at+1].Get("id").String() != call.Get("id").String():
		t.Errorf("%s does not follow the reasoning item with the call it was given (%s): %s", what, call.Raw, lastItemsOf(items, 4))
	default:
		for _, it := range items[at+2:] {
			if it.Get("type").String() == "function_call_output" && it.Get("call_id").String() == call.Get("call_id").String() {
				return
			}
		}
		t.Errorf("%s has no function_call_output for %s after the call: %s", what, call.Get("call_id"), lastItemsOf(items, 4))
	}
}

// checkBridgedCallReplayed checks the chat turn after a (reasoning) model's call against the chat answer that
// made it: the assistant message carries the call with the id the provider gave (the Response's call_id,
// which Codex sent back), the tool message answers that id, and no reasoning is sent back (a chat provider
// takes none).
func checkBridgedCallReplayed(t *testing.T, what string, first mock.Recorded, msgs []gjson.Result) {
	t.Helper()
	callID := chatCallID(first.Reply)
	if callID == "" {
		t.Fatalf("the answer before (status %d) has no tool call: %.2000s", first.Status, first.Reply)
	}
	at := -1
	for i, m := range msgs {
		if m.Get("role").String() == "assistant" && m.Get("tool_calls.0.id").String() == callID {
			at = i
		}
		if m.Get("reasoning_content").Exists() || m.Get("reasoning").Exists() {
			t.Errorf("%s sends reasoning back to a chat provider: %s", what, m.Raw)
		}
	}
	if at < 0 || at+1 == len(msgs) || msgs[at].Get("tool_calls.0.function.name").String() != "exec_command" ||
		msgs[at+1].Get("role").String() != "tool" || msgs[at+1].Get("tool_call_id").String() != callID {
		t.Errorf("%s lacks the assistant's call %s of exec_command answered by a tool message: %s", what, callID,
			lastItemsOf(msgs, 3))
	}
}

// responsesOutput is the output items of a Responses answer: its output member, or in a stream the
// response.completed event's.
func responsesOutput(reply []byte) []gjson.Result {
	if out := gjson.GetBytes(reply, "output"); out.IsArray() {
		return out.Array()
	}
	for _, data := range sseData(reply) {
		if data.Get("type").String() == "response.completed" {
			return data.Get("response.output").Array()
		}
	}
	return nil
}

// chatCallID is the id of the first tool call of a chat answer, JSON or streamed.
func chatCallID(reply []byte) string {
	if id := gjson.GetBytes(reply, "choices.0.message.tool_calls.0.id"); id.Exists() {
		return id.String()
	}
	for _, data := range sseData(reply) {
		if id := data.Get("choices.0.delta.tool_calls.0.id"); id.String() != "" {
			return id.String()
		}
	}
	return ""
}

// sseData is the JSON of an event stream's data: lines.
func sseData(stream []byte) []gjson.Result {
	var out []gjson.Result
	for line := range strings.Lines(string(stream)) {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok && gjson.Valid(data) {
			out = append(out, gjson.Parse(data))
		}
	}
	return out
}

func lastItemsOf(items []gjson.Result, n int) string {
	var b strings.Builder
	for _, it := range items[max(0, len(items)-n):] {
		b.WriteString(it.Raw + "\n")
	}
	return b.String()
}

// lastItems is the last n input items (Responses) or messages (chat) of a request body, one a line.
func lastItems(body []byte, n int) string {
	items := gjson.GetBytes(body, "input").Array()
	if len(items) == 0 {
		items = gjson.GetBytes(body, "messages").Array()
	}
	var b strings.Builder
	for _, it := range items[max(0, len(items)-n):] {
		b.WriteString(it.Raw + "\n")
	}
	return b.String()
}

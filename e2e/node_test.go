package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNodeClientSDKs runs the npm client suite (node/clients.test.mjs: openai, AzureOpenAI and
// @azure-rest/ai-inference against every provider dialect) against the local gateway.
func TestNodeClientSDKs(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the npm client suite needs Node.js >= 20")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "openai")); err != nil {
		t.Fatal("e2e/node/node_modules is missing: run `npm ci` in e2e/node (make test does)")
	}
	env := startDemo(t)
	cmd := exec.Command(node, "--test", "--test-reporter=spec", "clients.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+env.GatewayURL)
	out, err := cmd.CombinedOutput()
	if testing.Verbose() || err != nil {
		t.Logf("node --test output:\n%s", out)
	}
	if err != nil {
		t.Fatalf("the npm client suite failed: %v", err)
	}
}

package e2e_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/e2e/demo"
)

// TestComposeEnvoyRunsTheDemoConfig keeps the plugin configuration embedded in compose/envoy.yaml equal to
// demo.Config: the compose run must test what the local run tests.
func TestComposeEnvoyRunsTheDemoConfig(t *testing.T) {
	raw, err := os.ReadFile("compose/envoy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "# BEGIN demo.Config")
	block, _, ok2 := strings.Cut(after, "# END demo.Config")
	if !ok || !ok2 {
		t.Fatal("compose/envoy.yaml lacks the BEGIN/END demo.Config markers")
	}
	_, value, _ := strings.Cut(block, "value: |")
	var inYAML, inGo any
	if err := json.Unmarshal([]byte(value), &inYAML); err != nil {
		t.Fatalf("the embedded configuration is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(demo.Config), &inGo); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(inYAML, inGo) {
		t.Error("compose/envoy.yaml runs a different configuration than demo.Config: copy demo.Config into it")
	}
}

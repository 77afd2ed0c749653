package hostemu_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/hostemu/ruleguest"
)

// TestRuleTable holds hostemu to rules.json, the rule table the V8 host (internal/v8host) reads too: every
// check's scenario, played natively through hostemu, gets exactly the verdict the table names, and every
// allowed scenario gets none. TestRuleTableUnderV8 plays the same scenarios through the V8 host.
func TestRuleTable(t *testing.T) {
	for _, c := range hostemu.Rules.Checks {
		if c.Scenario == nil {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			if got := playNative(t, c.Scenario); got != c.Rule {
				t.Errorf("verdict %q, the table says %q (%s)", got, c.Rule, c.Text)
			}
		})
	}
	for _, c := range hostemu.Rules.Allowed {
		t.Run(c.ID, func(t *testing.T) {
			if got := playNative(t, c.Scenario); got != "" {
				t.Errorf("verdict %q, the table allows it (%s)", got, c.Text)
			}
		})
	}
}

func playNative(t *testing.T, sc *hostemu.Scenario) string {
	t.Helper()
	h, err := hostemu.New(ruleguest.VM(), sc.Guest)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = hostemu.PlayScenario(h, sc)
	return hostemu.Verdict(err)
}

// playAllowed plays the rule table's scenario id through hostemu and returns what the client got; it must
// break no rule.
func playAllowed(t *testing.T, id string) *hostemu.ScenarioOutcome {
	t.Helper()
	c, ok := hostemu.Rules.Check(id)
	if !ok {
		t.Fatalf("the rule table has no %s", id)
	}
	h, err := hostemu.New(ruleguest.VM(), c.Scenario.Guest)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o, err := hostemu.PlayScenario(h, c.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestReplaceThenAppend: in a body callback, a replacement followed by appends gives the client the
// replacement, then each append, in order (docs/envoy-host.md section 4: Envoy's Buffer::copyFrom drains and
// prepends from offset 0, adds from past the end).
func TestReplaceThenAppend(t *testing.T) {
	o := playAllowed(t, "stream-chunk-replaced-then-appended")
	// Three body callbacks: the two chunks, and the empty one that ends the stream.
	if want := strings.Repeat("data: 1\n\ndata: 2\n\ndata: 3\n\n", 3); string(o.ClientBody) != want {
		t.Errorf("client body %q, want %q", o.ClientBody, want)
	}
}

// TestRuleTableNamesEveryCheck: each place hostemu.go reports a broken rule is one check of the table, so a
// rule added to one host without the table (and so without the other host) fails here.
func TestRuleTableNamesEveryCheck(t *testing.T) {
	src, err := os.ReadFile("hostemu.go")
	if err != nil {
		t.Fatal(err)
	}
	sites := map[string]int{}
	for _, m := range regexp.MustCompile(`ruleErr\("(envoy-host \d+)"`).FindAllStringSubmatch(string(src), -1) {
		sites[m[1]]++
	}
	table := map[string]int{}
	for _, c := range hostemu.Rules.Checks {
		if c.Rule != "trap" {
			table[c.Rule]++
		}
	}
	for rule, n := range sites {
		if table[rule] != n {
			t.Errorf("hostemu.go reports %s in %d places, rules.json lists %d checks for it", rule, n, table[rule])
		}
	}
	for rule, n := range table {
		if sites[rule] == 0 {
			t.Errorf("rules.json lists %d checks for %s, hostemu.go reports it nowhere", n, rule)
		}
	}
	if _, ok := hostemu.Rules.Check("trap"); !ok {
		t.Error("rules.json has no trap check")
	}
}

// TestTrailersFinishPausedAnswer: a body the last body callback paused on is still Envoy's buffer in the
// trailers callback (buffering_response_body_): a replacement and an append there reach the client, in order.
func TestTrailersFinishPausedAnswer(t *testing.T) {
	o := playAllowed(t, "paused-answer-finished-in-trailers")
	if want := `{"b":22}`; string(o.ClientBody) != want {
		t.Errorf("client body %q, want %q", o.ClientBody, want)
	}
}

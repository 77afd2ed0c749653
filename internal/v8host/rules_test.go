package v8host

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/internal/hostemu/ruleguest"
)

const ruleGuestPkg = "github.com/aidialect/aidialect/internal/v8host/ruleguest"

// TestRuleTableUnderV8 holds the V8 host to the rule table hostemu embeds (internal/hostemu/rules.json):
// the scriptable guest (internal/hostemu/ruleguest) plays every scenario of the table compiled to wasm under
// V8 (host.mjs), and natively through hostemu. Each check must get the rule the table names from both hosts,
// and host.mjs must name the check itself; each allowed scenario must pass on both and leave the upstream
// and the client with the same bytes. (TestRuleTable in hostemu plays the table through hostemu alone; the
// plugin tests run hostemu's wasm mode beside its native one.) A host that drifts from the table, or from
// the other host, fails here.
func TestRuleTableUnderV8(t *testing.T) {
	h := sharedHost(t)
	load(t, h, "ruleguest", buildWasm(t, ruleGuestPkg))
	play := func(t *testing.T, sc *hostemu.Scenario) (*Outcome, *hostemu.ScenarioOutcome, string) {
		vm, err := h.NewVM("ruleguest", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		v8, err := vm.Run(string(sc.Guest), scenarioExchange(sc))
		if err != nil {
			t.Fatal(err)
		}
		if v8.StartError != "" {
			t.Fatalf("the guest did not start under V8: %s %v", v8.StartError, v8.Critical)
		}
		host, err := hostemu.New(ruleguest.VM(), sc.Guest)
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		out, err := hostemu.PlayScenario(host, sc)
		return v8, out, hostemu.Verdict(err)
	}
	for _, c := range hostemu.Rules.Checks {
		if c.Scenario == nil {
			continue
		}
		t.Run(c.ID, func(t *testing.T) {
			v8, _, emu := play(t, c.Scenario)
			if got := v8.Verdict(); got != c.Rule {
				t.Errorf("V8: verdict %q, the table says %q (%s); outcome %+v", got, c.Rule, c.Text, v8)
			} else if v8.Rule != nil && v8.Rule.Check != c.ID {
				t.Errorf("V8: reported check %s, the scenario is check %s", v8.Rule.Check, c.ID)
			}
			if emu != c.Rule {
				t.Errorf("hostemu: verdict %q, the table says %q", emu, c.Rule)
			}
		})
	}
	for _, c := range hostemu.Rules.Allowed {
		t.Run(c.ID, func(t *testing.T) {
			v8, emu, verdict := play(t, c.Scenario)
			if got := v8.Verdict(); got != "" {
				t.Fatalf("V8: verdict %q (%v), the table allows it (%s)", got, v8.Rule, c.Text)
			}
			if verdict != "" {
				t.Fatalf("hostemu: verdict %q, the table allows it", verdict)
			}
			sameOutcome(t, v8, emu)
		})
	}
}

// scenarioExchange turns a table scenario into the protocol's exchange.
func scenarioExchange(sc *hostemu.Scenario) *Exchange {
	x := &Exchange{Request: Message{Headers: sc.Request.Headers, Trailers: sc.Request.Trailers}}
	for _, c := range sc.Request.Body {
		x.Request.Chunks = append(x.Request.Chunks, []byte(c))
	}
	if r := sc.Response; r != nil {
		x.Response = &Message{Status: r.Status, Headers: r.Headers, Trailers: r.Trailers}
		if r.Body != nil {
			x.Response.Chunks = [][]byte{}
			for _, c := range r.Body {
				x.Response.Chunks = append(x.Response.Chunks, []byte(c))
			}
		}
	}
	return x
}

// sameOutcome compares what the upstream and the client got from the two hosts.
func sameOutcome(t *testing.T, v8 *Outcome, emu *hostemu.ScenarioOutcome) {
	t.Helper()
	if (v8.Local == nil) != (emu.Local == nil) {
		t.Fatalf("local reply: V8 %+v, hostemu %+v", v8.Local, emu.Local)
	}
	if (v8.Upstream == nil) != (emu.Upstream == nil) {
		t.Fatalf("upstream request: V8 %+v, hostemu %+v", v8.Upstream, emu.Upstream)
	}
	if v8.Upstream != nil {
		if !reflect.DeepEqual(v8.Upstream.Headers.Map(), Headers(emu.Upstream.Headers).Map()) {
			t.Errorf("upstream headers: V8 %v, hostemu %v", v8.Upstream.Headers, emu.Upstream.Headers)
		}
		if !bytes.Equal(v8.Upstream.Body, emu.Upstream.Body) {
			t.Errorf("upstream body: V8 %q, hostemu %q", v8.Upstream.Body, emu.Upstream.Body)
		}
		if !reflect.DeepEqual(v8.Upstream.Trailers.Map(), Headers(emu.Upstream.Trailers).Map()) {
			t.Errorf("upstream trailers: V8 %v, hostemu %v", v8.Upstream.Trailers, emu.Upstream.Trailers)
		}
	}
	client := v8.Client
	if client == nil {
		client = v8.Local
	}
	if client == nil {
		if emu.Status != 0 {
			t.Errorf("client: V8 got nothing, hostemu %d %q", emu.Status, emu.ClientBody)
		}
		return
	}
	if client.Status != emu.Status || !bytes.Equal(client.Body, emu.ClientBody) {
		t.Errorf("client: V8 %d %q, hostemu %d %q", client.Status, client.Body, emu.Status, emu.ClientBody)
	}
	if !reflect.DeepEqual(client.Headers.Map(), Headers(emu.ClientHeaders).Map()) {
		t.Errorf("client headers: V8 %v, hostemu %v", client.Headers, emu.ClientHeaders)
	}
	if !reflect.DeepEqual(client.Trailers.Map(), Headers(emu.ClientTrailers).Map()) {
		t.Errorf("client trailers: V8 %v, hostemu %v", client.Trailers, emu.ClientTrailers)
	}
}

// TestTrailersBodyEditRefusedUnderV8: in a trailers callback whose body Envoy no longer holds, the V8 host
// answers proxy_set_buffer_bytes with BadArgument, as Envoy does (docs/envoy-host.md section 4), and the
// client gets nothing of the change; a body the last body callback paused on changes there, and the client
// gets it as the callback left it.
func TestTrailersBodyEditRefusedUnderV8(t *testing.T) {
	h := sharedHost(t)
	load(t, h, "ruleguest", buildWasm(t, ruleGuestPkg))
	for _, tt := range []struct {
		id      string
		refused bool
		client  string
	}{
		{"response-trailers-body-edit-not-held", true, "data: {}\n\ndata: {}\n\n"},
		{"request-trailers-body-edit-not-held", true, ""},
		{"paused-answer-finished-in-trailers", false, `{"b":22}`},
	} {
		t.Run(tt.id, func(t *testing.T) {
			c, ok := hostemu.Rules.Check(tt.id)
			if !ok {
				t.Fatalf("the rule table has no %s", tt.id)
			}
			vm, err := h.NewVM("ruleguest", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close()
			o, err := vm.Run(string(c.Scenario.Guest), scenarioExchange(c.Scenario))
			if err != nil {
				t.Fatal(err)
			}
			refused := false
			for _, line := range o.Errors {
				refused = refused || strings.Contains(line, "bad argument")
			}
			if refused != tt.refused {
				t.Errorf("the guest's body edit answered bad argument: %v, want %v (errors %q)", refused, tt.refused, o.Errors)
			}
			if tt.client != "" && (o.Client == nil || string(o.Client.Body) != tt.client) {
				t.Errorf("client %+v, want the body %q", o.Client, tt.client)
			}
		})
	}
}

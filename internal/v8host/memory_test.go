package v8host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/goldencase"
)

// memoryCheckpoints are bench's TestMemory's: the request counts at which the guest's linear memory is read.
var memoryCheckpoints = []int{1_000, 10_000, 100_000}

// TestV8Memory is bench's TestMemory under V8: 100,000 mixed requests through one VM of the compiled filter
// (every golden case that fits one configuration, re-pointed at one provider per dialect, plus bench's two
// scenarios, rotating), and the same through the floor filter; it prints the guest's linear memory size
// before and after 1k, 10k and 100k requests, and fails when the filter's grew more than 10% from 10k to
// 100k. The mix and configuration are TestMemory's (restated: that package's are unexported test code),
// so the figures sit beside TestMemory's wazero ones. It runs when AIDIALECT_V8_MEMORY=1 (make bench sets
// it): 200,000 exchanges are no unit test.
func TestV8Memory(t *testing.T) {
	if os.Getenv("AIDIALECT_V8_MEMORY") != "1" {
		t.Skip("skipped: set AIDIALECT_V8_MEMORY=1 (make bench does) to run 100,000 requests under V8")
	}
	filterWasm(t)
	h := sharedHost(t)
	mix, cfg := memoryMix(t)
	sizes := map[string][]uint64{}
	for _, name := range []string{filterName, floorName} {
		v8Module(t, h, name)
		vm, err := h.NewVM(name, nil) // a VM of its own: memory starts at the module's initial size
		if err != nil {
			t.Fatal(err)
		}
		plugin, err := vm.Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		start, err := vm.MemoryBytes()
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = append(sizes[name], start)
		var refs []Ref
		for _, m := range mix {
			// The first round checks the routing reaches the intended provider and dialect.
			o, err := plugin.Exchange(m.x)
			if err != nil {
				t.Fatal(err)
			}
			if v := o.Verdict(); v != "" {
				t.Fatalf("%s, %s: %s %v", name, m.name, v, o.Rule)
			}
			if name == filterName {
				got := o.Client
				if o.Local != nil {
					got = o.Local
				}
				if got == nil || got.Status != m.status || !m.anyBody && !bytes.Equal(got.Body, m.want) {
					t.Fatalf("%s: client got %+v\nwant %d %s", m.name, got, m.status, m.want)
				}
			}
			ref, err := h.Define(m.x)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
		// That first round was requests 1 to len(mix) of the count, as in TestMemory; the loop goes on from
		// mix[0] with request len(mix)+1.
		last := memoryCheckpoints[len(memoryCheckpoints)-1]
		res, err := plugin.Loop(refs, last-len(mix), shift(memoryCheckpoints, -len(mix)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, m := range res.Memory {
			sizes[name] = append(sizes[name], m.Bytes)
		}
		if len(sizes[name]) != len(memoryCheckpoints)+1 {
			t.Fatalf("%s: %d memory readings", name, len(sizes[name]))
		}
		t.Logf("%s: %d requests in %.1f s under V8", name, last, float64(res.NS)/1e9)
		plugin.Stop()
		vm.Close()
	}
	var table strings.Builder
	fmt.Fprintf(&table, "V8 (node %s, V8 %s, %s): linear memory (MiB) over %d request kinds, rotating:\n%10s %10s %10s\n",
		h.Info.Node, h.Info.V8, strings.Join(h.Info.ExecArgv, " "), len(mix), "requests", filterName, floorName)
	for i, n := range append([]int{0}, memoryCheckpoints...) {
		fmt.Fprintf(&table, "%10d %10.2f %10.2f\n", n, mib(sizes[filterName][i]), mib(sizes[floorName][i]))
	}
	t.Log("\n" + table.String())
	at10k, at100k := sizes[filterName][2], sizes[filterName][3]
	if float64(at100k) > float64(at10k)*1.10 {
		t.Errorf("the filter's linear memory grew after warm-up under V8: %.2f MiB at 10k requests, %.2f MiB at 100k (limit +10%%)",
			mib(at10k), mib(at100k))
	}
}

func shift(xs []int, by int) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = x + by
	}
	return out
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// mixed is one request kind, with the client status and body the filter must produce.
type mixed struct {
	name    string
	x       *Exchange
	status  int
	want    []byte
	anyBody bool
}

// memoryMix is bench's: one provider per dialect with its golden-case settings and one model, "m-<dialect>";
// every golden request is re-pointed at the model of its case's provider.
func memoryMix(t *testing.T) ([]mixed, string) {
	cases, err := goldencase.Load("../" + goldencase.Dir)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]goldencase.Provider{}
	var order []string
	var mix []mixed
	for _, c := range cases {
		p := c.Provider
		if c.PathPrefix != "" || c.OnchainData != "" {
			continue
		}
		if prev, ok := providers[p.Dialect]; !ok {
			providers[p.Dialect] = p
			order = append(order, p.Dialect)
		} else if prev != p {
			continue
		}
		want, _, err := c.Expected("client_response.http")
		if err != nil {
			t.Fatal(err)
		}
		status, _ := strconv.Atoi(want.First)
		mix = append(mix, mixed{name: c.Name, x: goldenExchange(t, c, "m-"+p.Dialect), status: status, want: want.Body})
	}
	if len(mix) < 64 {
		t.Fatalf("only %d golden cases usable for the memory mix", len(mix))
	}
	for _, sc := range []scenario{jsonScenario("m-azure-ai"), streamScenario("m-azure-ai", 0)} {
		mix = append(mix, mixed{name: sc.name, x: sc.x, status: 200, anyBody: true})
	}
	var list []any
	for _, d := range order {
		list = append(list, providers[d].PluginProvider("p-"+d, d+".provider.test", "m-"+d))
	}
	raw, err := json.Marshal(map[string]any{"providers": list})
	if err != nil {
		t.Fatal(err)
	}
	return mix, string(raw)
}

// goldenExchange is bench's goldenRequest: the case's request for model, its body in two chunks, the answer
// in 512-byte chunks.
func goldenExchange(t *testing.T, c goldencase.Case, model string) *Exchange {
	req, resp := c.ClientRequest, c.UpstreamResponse
	method, path, _ := strings.Cut(req.First, " ")
	body := req.Body
	old := ""
	if m := gjson.GetBytes(body, "model"); m.Type == gjson.String {
		old = m.Str
		body = bytes.Replace(body, []byte(`"model":"`+old+`"`), []byte(`"model":"`+model+`"`), 1)
	}
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		d, tail, _ := strings.Cut(rest, "/")
		old = d
		path = "/openai/deployments/" + model + "/" + tail
	}
	var headers Headers
	for _, h := range req.Headers {
		switch {
		case h[0] == "content-length":
			continue
		case h[0] == "azureml-model-deployment":
			old = h[1]
			h[1] = model
		}
		headers = append(headers, h)
	}
	if old == "" {
		t.Fatalf("%s: no model in the request to re-point", c.Name)
	}
	status, err := strconv.Atoi(resp.First)
	if err != nil {
		t.Fatalf("%s: upstream status %q", c.Name, resp.First)
	}
	// bench relays every answer through a reader, so an empty one is a body with no data: never body-less.
	chunks := split(resp.Body, 512)
	if chunks == nil {
		chunks = [][]byte{}
	}
	return newExchange(method, path, headers, body, 2).answer(status, Headers(resp.Headers), chunks)
}

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/goldencase"
)

// memoryCheckpoints are the request counts at which TestMemory reads the guest's linear memory.
var memoryCheckpoints = []int{1_000, 10_000, 100_000}

// TestMemory runs 100,000 mixed requests through one VM (one hostemu.Host) of the compiled filter: every
// golden case (chat, streamed chat, completions, embeddings and errors over all 16 client x provider dialect
// pairs, including the local replies) plus the two benchmark scenarios (a 4 KiB request, a 100-event
// stream), rotating. It prints the linear memory after 1k, 10k and 100k requests, beside the floor module
// given the same requests, and asserts no growth after warm-up: 100k within 10% of 10k. Linear memory
// never shrinks, so a leak, or garbage collected too late, shows as growth.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests through the compiled module: run without -short")
	}
	mix, cfg := memoryMix(t)
	sizes := map[string][]uint32{}
	for _, name := range []string{filterName, floorName} {
		// A VM of its own, so its memory starts from the module's initial size.
		g, err := loadGuest(name, moduleBytes(name))
		if err != nil {
			t.Fatal(err)
		}
		s, err := g.start(cfg)
		if err != nil {
			g.close()
			t.Fatal(err)
		}
		sizes[name] = append(sizes[name], g.memoryBytes())
		next := 0
		for i := 1; i <= memoryCheckpoints[len(memoryCheckpoints)-1]; i++ {
			m := mix[(i-1)%len(mix)]
			x, err := s.exchange(m.req)
			if err != nil {
				t.Fatalf("%s, request %d (%s): %v", name, i, m.req.name, err)
			}
			if i <= len(mix) && name == filterName {
				// The first round checks the routing really reaches the intended provider and dialect.
				got, status := s.client.body, s.client.status
				if x.Local != nil {
					got, status = x.Local.Body, x.Local.Status
				}
				if status != m.status || !m.anyBody && !bytes.Equal(got, m.want) {
					t.Fatalf("%s: client got %d %s\nwant %d %s", m.req.name, status, got, m.status, m.want)
				}
			}
			if i == memoryCheckpoints[next] {
				sizes[name] = append(sizes[name], g.memoryBytes())
				next++
			}
		}
		s.close()
		g.close()
	}
	var table strings.Builder
	fmt.Fprintf(&table, "linear memory (MiB) over %d request kinds, rotating:\n%10s %10s %10s\n", len(mix), "requests", filterName, floorName)
	for i, n := range append([]int{0}, memoryCheckpoints...) {
		fmt.Fprintf(&table, "%10d %10.2f %10.2f\n", n, mib(sizes[filterName][i]), mib(sizes[floorName][i]))
	}
	t.Log("\n" + table.String())
	at10k, at100k := sizes[filterName][2], sizes[filterName][3]
	if float64(at100k) > float64(at10k)*1.10 {
		t.Errorf("the filter's linear memory grew after warm-up: %.2f MiB at 10k requests, %.2f MiB at 100k (limit +10%%)",
			mib(at10k), mib(at100k))
	}
}

func mib(n uint32) float64 { return float64(n) / (1 << 20) }

// mixed is one request kind of TestMemory, with the client status and body the filter must produce.
type mixed struct {
	req     *request
	status  int
	want    []byte
	anyBody bool // only the status is checked
}

// memoryMix builds the request kinds and a configuration with one provider per dialect, each with its
// golden-case settings and one model, "m-<dialect>"; every golden request is re-pointed at the model of its
// case's provider (body "model", Azure OpenAI deployment path, azureml-model-deployment header).
func memoryMix(t *testing.T) ([]mixed, string) {
	cases, err := goldencase.Load(goldencase.Dir)
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]goldencase.Provider{}
	var order []string
	var mix []mixed
	for _, c := range cases {
		p := c.Provider
		if c.PathPrefix != "" || c.OnchainData != "" {
			continue // needs a configuration of its own
		}
		if prev, ok := providers[p.Dialect]; !ok {
			providers[p.Dialect] = p
			order = append(order, p.Dialect)
		} else if prev != p {
			continue // another setting of the same dialect: would need a second provider
		}
		want, _, err := c.Expected("client_response.http")
		if err != nil {
			t.Fatal(err)
		}
		status, _ := strconv.Atoi(want.First)
		mix = append(mix, mixed{req: goldenRequest(t, c, "m-"+p.Dialect), status: status, want: want.Body})
	}
	if len(mix) < 64 {
		t.Fatalf("only %d golden cases usable for the memory mix", len(mix))
	}
	if providers["azure-ai"].Model != "Meta-Llama-3-70B-Instruct" {
		t.Fatalf("the golden azure-ai provider changed (%+v): the benchmark scenarios expect its model", providers["azure-ai"])
	}
	for _, r := range []*request{jsonScenario("m-azure-ai"), streamScenario("m-azure-ai")} {
		// In the mix for their size; TestScenarios checks what the filter makes of them.
		mix = append(mix, mixed{req: r, status: 200, anyBody: true})
	}
	var list []any
	for _, d := range order {
		provider := providers[d].PluginProvider("p-"+d, d+".provider.test", "m-"+d)
		list = append(list, provider)
	}
	raw, err := json.Marshal(map[string]any{"providers": list})
	if err != nil {
		t.Fatal(err)
	}
	return mix, string(raw)
}

// goldenRequest turns a golden case into a request for model, its body in two chunks and the answer in
// 512-byte chunks.
func goldenRequest(t *testing.T, c goldencase.Case, model string) *request {
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
	var headers [][2]string
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
	return newRequest(c.Name, method, path, headers, body, 2).answerWith(status, resp.Headers, split(resp.Body, 512))
}

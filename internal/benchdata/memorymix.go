package benchdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/goldencase"
)

// Mixed is one request kind of the memory tests, with the client status and body the filter must produce.
type Mixed struct {
	X       *Exchange
	Status  int
	Want    []byte
	AnyBody bool // only the status is checked
}

// MemoryMix is the request mix of bench's TestMemory (wazero) and internal/v8host's TestV8Memory (V8), so
// that both engines' memory figures come from the same requests: every golden case under casesDir that
// one configuration can serve, plus JSONScenario and StreamScenario (for their size). The configuration has
// one provider per dialect, "p-<dialect>", with its golden-case settings and one model, "m-<dialect>"; every
// golden request is re-pointed at the model of its case's provider (body "model", Azure OpenAI deployment
// path, azureml-model-deployment header), its body in two chunks and the answer in 512-byte chunks.
func MemoryMix(casesDir string) ([]Mixed, string, error) {
	cases, err := goldencase.Load(casesDir)
	if err != nil {
		return nil, "", err
	}
	providers := map[string]goldencase.Provider{}
	var order []string
	var mix []Mixed
	for _, c := range cases {
		p := c.Provider
		if c.PathPrefix != "" || c.OnchainData != "" {
			continue // needs a configuration of its own
		}
		if prev, ok := providers[p.Dialect]; !ok {
			providers[p.Dialect] = p
			order = append(order, p.Dialect)
		} else if !reflect.DeepEqual(prev, p) {
			continue // another setting of the same dialect: would need a second provider
		}
		want, _, err := c.Expected("client_response.http")
		if err != nil {
			return nil, "", err
		}
		status, _ := strconv.Atoi(want.First)
		x, err := goldenExchange(c, "m-"+p.Dialect)
		if errors.Is(err, errNoModel) {
			if _, upstream, _ := c.Expected("upstream_request.http"); !upstream {
				continue // refused before any routing (a stored-response route): nothing to re-point
			}
		}
		if err != nil {
			return nil, "", err
		}
		mix = append(mix, Mixed{X: x, Status: status, Want: want.Body})
	}
	if len(mix) < 64 {
		return nil, "", fmt.Errorf("only %d golden cases usable for the memory mix", len(mix))
	}
	if providers["azure-ai"].Model != "Meta-Llama-3-70B-Instruct" {
		return nil, "", fmt.Errorf("the golden azure-ai provider changed (%+v): the benchmark scenarios expect its model", providers["azure-ai"])
	}
	for _, x := range []*Exchange{JSONScenario("m-azure-ai"), StreamScenario("m-azure-ai", 0)} {
		// In the mix for their size; the scenario checks say what the filter makes of them.
		mix = append(mix, Mixed{X: x, Status: 200, AnyBody: true})
	}
	var list []any
	for _, d := range order {
		list = append(list, providers[d].PluginProvider("p-"+d, d+".provider.test", "m-"+d))
	}
	// Health off: the mix replays its 429 and 5xx cases on purpose, each time through the provider.
	raw, err := json.Marshal(map[string]any{"providers": list, "failover": map[string]any{"health": "off"}})
	if err != nil {
		return nil, "", err
	}
	return mix, string(raw), nil
}

var errNoModel = errors.New("no model in the request to re-point")

// goldenExchange turns a golden case into a request for model, its body in two chunks and the answer in
// 512-byte chunks.
func goldenExchange(c goldencase.Case, model string) (*Exchange, error) {
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
		return nil, fmt.Errorf("%s: %w", c.Name, errNoModel)
	}
	status, err := strconv.Atoi(resp.First)
	if err != nil {
		return nil, fmt.Errorf("%s: upstream status %q", c.Name, resp.First)
	}
	return NewExchange(c.Name, method, path, headers, body, 2).AnswerWith(status, resp.Headers, Split(resp.Body, 512)), nil
}

package mock

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/goldencase"
)

// goldenCases is the filter's golden-case folder (testdata/cases at the repository root).
const goldenCases = "../../testdata/cases"

// mockFor is the strict mock standing for a golden case's provider: it knows only the entry's deployment
// (azure-openai: the classic path segment or the v1 body model; azure-ai: azureml-model-deployment) and
// model, so a request naming anything else is refused as the real service refuses it.
func mockFor(p goldencase.Provider) *Provider {
	opts := Options{APIKey: p.Key, BasePath: p.BasePath, Bearer: p.Auth == "bearer"}
	if p.Auth == "passthrough" {
		opts.APIKey = "" // the client's own key goes upstream
	}
	switch p.Dialect {
	case AzureOpenAI:
		// Without a deployment the entry's model (else the client's name) is the deployment.
		d := p.Deployment
		if d == "" {
			d = p.Model
		}
		if d != "" {
			opts.Deployments = []string{d}
		}
	case AzureAI:
		if p.Deployment != "" {
			opts.Deployments = []string{p.Deployment}
		}
		if p.Model != "" {
			opts.Models = []string{p.Model}
		}
	default:
		if p.Model != "" {
			opts.Models = []string{p.Model}
		}
	}
	return New(p.Dialect, opts)
}

// specOf turns a golden request into the mock tests' request form.
func specOf(m goldencase.Message) spec {
	method, target, _ := strings.Cut(m.First, " ")
	s := spec{method: method, target: target, header: http.Header{}, body: string(m.Body)}
	for _, h := range m.Headers {
		s.header.Add(h[0], h[1])
	}
	return s
}

// TestGoldenUpstreamRequestsAccepted replays every upstream request the golden cases expect the filter to
// send against the strict mock of that provider: an expected request the real service would refuse (a path
// its api-version lacks, a body model that names no deployment on the Azure OpenAI v1 surface, ...) fails
// here, so a golden case cannot encode a request that only works against the filter's own expectations.
func TestGoldenUpstreamRequestsAccepted(t *testing.T) {
	cases, err := goldencase.Load(goldenCases)
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases under %s: %v", goldenCases, err)
	}
	for _, c := range cases {
		up, ok, err := c.Expected("upstream_request.http")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue // answered by the filter itself
		}
		t.Run(c.Name, func(t *testing.T) {
			rec := serve(mockFor(c.Provider), specOf(up))
			if refersToUnseenState(rec) {
				// A Responses request continuing an exchange the case does not contain: the fresh mock never
				// stored the response or item it names, and rightly refuses it; the rest of it was accepted.
				t.Logf("the %s mock does not know the stored response or item the request names: %s", c.Provider.Dialect, rec.body())
				return
			}
			if rec.status >= 300 {
				t.Fatalf("the %s mock refuses the expected upstream request: %d %s", c.Provider.Dialect, rec.status, rec.body())
			}
		})
	}
}

// refersToUnseenState reports a refusal that is only about the mock's Responses store: previous_response_id
// (400 previous_response_not_found) or an item_reference (404 "Item with id ... not found"), the last checks
// before the answer.
func refersToUnseenState(rec *chunkRecorder) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(rec.body(), &e) != nil {
		return false
	}
	return (rec.status == 400 && e.Error.Code == "previous_response_not_found") ||
		(rec.status == 404 && strings.HasPrefix(e.Error.Message, "Item with id "))
}

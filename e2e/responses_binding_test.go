package e2e_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/demo"
)

// boundForm is the form of the response ids the gateway hands a consumer: resp_ and the hex of a 16-byte tag
// and the provider's id encrypted; providerForm is the mock's own (resp_ and 50 hex digits).
var (
	boundForm    = regexp.MustCompile(`^resp_[0-9a-f]{64,}$`)
	providerForm = regexp.MustCompile(`^resp_[0-9a-f]{50}$`)
)

// TestResponsesBoundToConsumers: with two consumers in front of the mock providers, which keep every
// response stored under the gateway's one provider key, each consumer continues its own responses (JSON and
// streamed, OpenAI and Azure OpenAI surfaces) and the other cannot: team-b sending team-a's id, or the
// provider's raw id, gets 400 previous_response_not_found and the provider is never asked.
func TestResponsesBoundToConsumers(t *testing.T) {
	if os.Getenv("E2E_GATEWAY_URL") != "" {
		t.Skip("needs the local gateway with consumers configured")
	}
	wasm, err := os.ReadFile(wasmPath())
	if err != nil {
		t.Fatalf("reading the filter (make build): %v", err)
	}
	env, err := demo.Start(demo.Options{Wasm: wasm, Listen: "127.0.0.1:0", Logger: quietLogger(t),
		Consumers: map[string]string{"team-a": "team-a-key", "team-b": "team-b-key"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	common := []option.RequestOption{option.WithMaxRetries(0), option.WithRequestTimeout(30 * time.Second)}
	clientsOf := func(key string) []respClient {
		return []respClient{
			{"openai-go", openai.NewClient(append(common, option.WithBaseURL(env.GatewayURL+"/v1/"), option.WithAPIKey(key))...), ""},
			{"openai-go-azure", openai.NewClient(append(common, azure.WithEndpoint(env.GatewayURL, azureResponsesVersion),
				azure.WithAPIKey(key), azure.WithUnsafeAllowHTTP())...), azureResponsesVersion},
		}
	}
	teamA, teamB := clientsOf("team-a-key"), clientsOf("team-b-key")
	for _, r := range respRoutes {
		if r.bridged {
			continue // nothing is stored: previous_response_id is refused for everyone (TestResponsesStatefulRefused)
		}
		m := env.Mocks[r.mock]
		for i := range teamA {
			a, b := teamA[i].c, teamB[i].c
			t.Run(r.name+"/"+teamA[i].name, func(t *testing.T) {
				// team-a's first turn, stored at the provider (store defaults to true)
				first, err := a.Responses.New(ctx, responses.ResponseNewParams{
					Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Remember me")},
				})
				if err != nil {
					st, code, msg := respStatus(err)
					t.Fatalf("first turn: %d %s: %s", st, code, msg)
				}
				if !boundForm.MatchString(first.ID) || providerForm.MatchString(first.ID) {
					t.Errorf("team-a got the id %q, not bound to it", first.ID) // and team-b's attempts below show why it matters
				}

				// team-b tries team-a's id: refused, the provider never asked
				before := len(m.Received())
				for _, id := range []string{first.ID} {
					_, err := b.Responses.New(ctx, responses.ResponseNewParams{
						Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What did they say?")},
						PreviousResponseID: openai.String(id),
					})
					if st, code, msg := respStatus(err); st != 400 || code != "previous_response_not_found" || !strings.Contains(msg, "not issued to your key") {
						t.Errorf("team-b continuing %q: %d %q %q, want 400 previous_response_not_found", id, st, code, msg)
					}
				}
				if n := len(m.Received()) - before; n != 0 {
					t.Errorf("the refused requests reached the %s mock:%s", r.mock, upstreamLog(m, before))
				}

				// team-a continues, streamed: the provider gets its own id, every lifecycle event a bound one
				before = len(m.Received())
				s := a.Responses.NewStreaming(ctx, responses.ResponseNewParams{
					Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And then?")},
					PreviousResponseID: openai.String(first.ID),
				})
				var ids []string
				var completed responses.Response
				for s.Next() {
					switch ev := s.Current(); ev.Type {
					case "response.created", "response.in_progress", "response.completed":
						ids = append(ids, ev.Response.ID)
						if ev.Type == "response.completed" {
							completed = ev.Response
						}
					}
				}
				if err := s.Err(); err != nil {
					st, code, msg := respStatus(err)
					t.Fatalf("team-a continuing: %d %s: %s%s", st, code, msg, upstreamLog(m, before))
				}
				if completed.OutputText() != "echo: And then?" || completed.PreviousResponseID != first.ID {
					t.Errorf("continued: text %q, previous_response_id %q (want %q)", completed.OutputText(), completed.PreviousResponseID, first.ID)
				}
				if len(ids) != 3 || ids[0] != ids[1] || ids[1] != ids[2] || !boundForm.MatchString(ids[0]) || ids[0] == first.ID {
					t.Errorf("lifecycle ids %q: want one new id, bound, in each", ids)
				}
				recs := m.Received()[before:]
				providerID := ""
				if len(recs) == 1 {
					providerID = gjson.GetBytes(recs[0].Body, "previous_response_id").String()
				}
				if !providerForm.MatchString(providerID) || strings.Contains(first.ID, providerID[min(len(providerID), len("resp_")):]) {
					t.Fatalf("the provider did not get its own id (%q), or it can be read in the bound one %q:%s", providerID, first.ID, upstreamLog(m, before))
				}

				// team-b tries the provider's own id (which no client sees): refused, the provider never asked
				before = len(m.Received())
				_, err = b.Responses.New(ctx, responses.ResponseNewParams{
					Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What did they say?")},
					PreviousResponseID: openai.String(providerID),
				})
				if st, code, _ := respStatus(err); st != 400 || code != "previous_response_not_found" || len(m.Received()) != before {
					t.Errorf("team-b continuing the provider's id: %d %q, the mock asked %d times", st, code, len(m.Received())-before)
				}

				// the streamed response is team-a's too
				if len(ids) > 0 {
					_, err := b.Responses.New(ctx, responses.ResponseNewParams{
						Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And?")},
						PreviousResponseID: openai.String(ids[0]),
					})
					if st, code, _ := respStatus(err); st != 400 || code != "previous_response_not_found" {
						t.Errorf("team-b continuing team-a's streamed response: %d %q", st, code)
					}
					res, err := a.Responses.New(ctx, responses.ResponseNewParams{
						Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And?")},
						PreviousResponseID: openai.String(ids[0]), Store: openai.Bool(false),
					})
					if err != nil || res.OutputText() != "echo: And?" {
						st, code, msg := respStatus(err)
						t.Errorf("team-a continuing its streamed response: %d %s %s", st, code, msg)
					}
				}
			})
		}
	}
}

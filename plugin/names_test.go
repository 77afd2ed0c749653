package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/aidialect/aidialect/translate"
)

// TestNamesReadAsTheProviderReads: the filter routes, allows and refuses on the model name the provider's
// parser will read (encoding/json's reading). gjson, which decoded it before, swallowed the escape after a
// lone surrogate: "gpt-4o\ud800\u002dmini" was gpt-4o<U+FFFD>mini to the filter and gpt-4o<U+FFFD>-mini to
// the provider, so an allow-list entry for the first let a client reach the second.
func TestNamesReadAsTheProviderReads(t *testing.T) {
	const (
		model       = `gpt-4o\ud800\u002dmini`
		decoded     = "gpt-4o\uFFFD-mini" // encoding/json's reading
		gjsonReads  = "gpt-4o\uFFFDmini"
		consumerKey = "team-a-key"
	)
	body := `{"model":"` + model + `",` + userMessages + `}`
	// consumerMayUse is a configuration whose one consumer may use the models of globJSON (a JSON string).
	consumerMayUse := func(globJSON string) string {
		return strings.TrimSuffix(strings.TrimSpace(hardeningConfig), "}") + `,
  "consumers": [{"name": "team-a", "key_sha256": "` + hexSum(consumerKey) + `", "models": [` + globJSON + `]}]}`
	}
	asConsumer := func(config, body string) exchange {
		ex := clientShapes[0].request(body)
		ex.config = config
		ex.headers = [][2]string{{"content-type", "application/json"}, {"authorization", "Bearer " + consumerKey}}
		return ex
	}
	withoutDefault := clientShapes[0].request(body)
	withoutDefault.config = noDefaultConfig
	upstreamModel := func(t *testing.T, o *outcome) {
		t.Helper()
		var sent struct{ Model string }
		if err := json.Unmarshal(o.upstreamBody, &sent); err != nil || sent.Model != decoded {
			t.Errorf("the provider reads the model %q (%v), want %q", sent.Model, err, decoded)
		}
	}
	tests := []struct {
		name    string
		ex      exchange
		status  int    // a local refusal's status; 0: the request goes upstream
		code    string // the refusal's code
		message string // a text the refusal's message holds
		param   string
	}{
		{"model_not_found names the model the provider would read", withoutDefault, 404, "model_not_found",
			strconv.Quote(decoded), "model"},
		{"an allow-list glob matching the provider's reading lets it through", asConsumer(consumerMayUse(`"*-mini"`), body),
			0, "", "", ""},
		// The configuration is read as requests are: the same text names the same model.
		{"an allow-list glob written with the same escapes lets it through", asConsumer(consumerMayUse(`"`+model+`"`), body),
			0, "", "", ""},
		{"an allow-list entry for gjson's reading does not", asConsumer(consumerMayUse(strconv.Quote(gjsonReads)), body),
			403, "model_not_allowed", strconv.Quote(decoded), "model"},
		{"keys one to the provider are one to the filter", clientShapes[0].request(
			`{"model":"gpt-4.1","\ud800\u0041":1,"\ud800A":2,` + userMessages + `}`), 400, "invalid_json", "", "\uFFFDA"},
		{"keys two to the provider are two to the filter", clientShapes[0].request(
			`{"model":"gpt-4.1","\ud800\u0041":1,"\ud800\u0042":2,` + userMessages + `}`), 0, "", "", ""},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ex := tt.ex
					if tt.status == 0 {
						ex.upstream = &upstreamAnswer{status: 200, headers: jsonHeaders, chunks: []string{chatOK}}
					}
					o := run(t, md, ex)
					o.assertRules(t)
					if tt.status == 0 {
						if o.upstreamCalls != 1 || o.status != 200 {
							t.Fatalf("refused: %d %s", o.status, o.clientBody)
						}
						if strings.Contains(tt.name, "glob") {
							upstreamModel(t, o)
						}
						return
					}
					checkRefusal(t, o, translate.OpenAI, tt.status, tt.code, tt.param)
					var answer struct{ Error struct{ Message string } }
					if err := json.Unmarshal(o.clientBody, &answer); err != nil || !strings.Contains(answer.Error.Message, tt.message) {
						t.Errorf("the message does not name %s: %s", tt.message, o.clientBody)
					}
				})
			}
		})
	}
}

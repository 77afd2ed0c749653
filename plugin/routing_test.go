package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/translate"
)

// routingConfig exercises model resolution (routing.go): provider a lists only globs, b an exact name a's
// first glob also matches, a glob a's first glob overlaps, and the same glob as a; c serves the rest by
// default. Each models entry has its own token metric, which tells which entry served a request.
const routingConfig = `{
  "providers": [
    {"name": "a", "dialect": "openai", "host": "a.example", "api_key": "ka",
     "models": [{"name": "gpt-*"}, {"name": "shared-*"}, {"name": "*"}]},
    {"name": "b", "dialect": "openai", "host": "b.example", "api_key": "kb",
     "models": [{"name": "gpt-4o", "model": "gpt-4o-2024-08-06"}, {"name": "*-mini"}, {"name": "shared-*"}, {"name": "zeta"}]},
    {"name": "c", "dialect": "openai", "host": "c.example", "api_key": "kc",
     "models": [{"name": "c-only"}]}
  ],
  "default_provider": "c"
}`

// routingNoCatchAll is routingConfig without a's catch-all glob, so that unmatched names reach the default.
var routingNoCatchAll = strings.Replace(routingConfig, `, {"name": "*"}]`, `]`, 1)

// TestResolve: an exact name on any provider, then globs in configuration order (first match), then
// default_provider, else nothing. label names the models entry chosen.
func TestResolve(t *testing.T) {
	tests := []struct {
		name, config, model string
		provider, label     string // "" provider: not resolved
	}{
		{"exact beats an earlier provider's glob", routingConfig, "gpt-4o", "b", "gpt-4o"},
		{"exact on a later provider beats a catch-all", routingConfig, "zeta", "b", "zeta"},
		{"exact on the last provider", routingConfig, "c-only", "c", "c-only"},
		{"glob in configuration order", routingConfig, "gpt-4.1", "a", "gpt-any"},
		{"first matching glob, not the most specific", routingConfig, "gpt-4o-mini", "a", "gpt-any"},
		{"a later provider's glob when no earlier one matches", routingNoCatchAll, "o3-mini", "b", "any-mini"},
		{"the same glob on two providers: the first", routingConfig, "shared-x", "a", "shared-any"},
		{"the star matches the empty run", routingConfig, "gpt-", "a", "gpt-any"},
		{"an earlier catch-all shadows later globs", routingConfig, "o3-mini", "a", "any"},
		{"a catch-all shadows default_provider", routingConfig, "llama", "a", "any"},
		{"no entry: default_provider", routingNoCatchAll, "llama", "c", "default"},
		{"names are case-sensitive", routingNoCatchAll, "GPT-4o", "c", "default"},
		{"an exact name is not a prefix", routingNoCatchAll, "gpt-4o ", "a", "gpt-any"},
		{"a glob needs its literal suffix", routingNoCatchAll, "o3-minis", "c", "default"},
		{"the empty name goes to the default", routingNoCatchAll, "", "c", "default"},
		{"no entry and no default", strings.Replace(routingNoCatchAll, `,
  "default_provider": "c"`, ``, 1), "llama", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tt.config), func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			candidates := c.resolve(tt.model)
			if ok := len(candidates) > 0; ok != (tt.provider != "") {
				t.Fatalf("resolve(%q) = %d candidates, want some: %v", tt.model, len(candidates), tt.provider != "")
			}
			if len(candidates) == 0 {
				return
			}
			if len(candidates) != 1 {
				t.Fatalf("resolve(%q) = %d candidates, want 1 (one provider per models entry)", tt.model, len(candidates))
			}
			r := candidates[0]
			if r.provider.name != tt.provider || r.label != tt.label {
				t.Errorf("resolve(%q) = provider %q entry %q, want %q entry %q", tt.model, r.provider.name, r.label, tt.provider, tt.label)
			}
			if target := c.metricTargets[r.metricID]; target != (metricTarget{tt.provider, tt.label}) {
				t.Errorf("metric target %+v, want {%s %s}", target, tt.provider, tt.label)
			}
		})
	}
}

// TestResolveThroughTheFilter: the same resolution, in both modes, seen where it matters: the provider the
// request is sent to, the model it receives, and the token metric of the entry that served it.
func TestResolveThroughTheFilter(t *testing.T) {
	tests := []struct {
		name, config, model string
		provider, host      string // "" provider: answered locally with model_not_found
		upstreamModel       string
		label               string
	}{
		{"exact beats an earlier provider's glob, and renames", routingConfig, "gpt-4o", "b", "b.example", "gpt-4o-2024-08-06", "gpt-4o"},
		{"first matching glob", routingConfig, "gpt-4o-mini", "a", "a.example", "gpt-4o-mini", "gpt-any"},
		{"a later provider's glob", routingNoCatchAll, "o3-mini", "b", "b.example", "o3-mini", "any-mini"},
		{"the same glob on two providers", routingConfig, "shared-x", "a", "a.example", "shared-x", "shared-any"},
		{"default_provider", routingNoCatchAll, "GPT-4o", "c", "c.example", "GPT-4o", "default"},
		{"no entry and no default", strings.Replace(routingNoCatchAll, `,
  "default_provider": "c"`, ``, 1), "llama", "", "", "", ""},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ex := answered(openAIChat(tt.model, ""), 200, jsonHeaders, chatOK)
					ex.config = tt.config
					tokens := map[string]uint64{}
					ex.onDone = func(o *outcome) {
						if tt.provider == "" {
							return
						}
						// The entries both configurations define.
						for _, target := range []metricTarget{{"a", "gpt-any"}, {"a", "shared-any"}, {"b", "gpt-4o"},
							{"b", "any-mini"}, {"b", "shared-any"}, {"b", "zeta"}, {"c", "c-only"}, {"c", "default"}} {
							tokens[target.provider+"/"+target.label] = o.counter(metricPromptTokens + ".provider." +
								target.provider + ".model." + target.label)
						}
					}
					o := run(t, md, ex)
					o.assertRules(t)
					if tt.provider == "" {
						wantLocal(404, "model_not_found")(t, o)
						if got := gjson.GetBytes(o.clientBody, "error.param").String(); got != "model" {
							t.Errorf("error.param %q, want model", got)
						}
						return
					}
					if o.upstreamCalls != 1 {
						t.Fatalf("not sent upstream: %d %s", o.status, o.clientBody)
					}
					if got := o.upstreamHead["x-aidialect-provider"]; got != tt.provider {
						t.Errorf("routing header %q, want %q", got, tt.provider)
					}
					if got := o.upstreamHead[":authority"]; got != tt.host {
						t.Errorf(":authority %q, want %q", got, tt.host)
					}
					if got := gjson.GetBytes(o.upstreamBody, "model").String(); got != tt.upstreamModel {
						t.Errorf("upstream model %q, want %q", got, tt.upstreamModel)
					}
					if len(tokens) != 8 {
						t.Fatalf("read %d token metrics, want 8", len(tokens))
					}
					for entry, v := range tokens {
						want := uint64(0)
						if entry == tt.provider+"/"+tt.label {
							want = 7
						}
						if v != want {
							t.Errorf("prompt tokens of %s: %d, want %d", entry, v, want)
						}
					}
				})
			}
		})
	}
}

// TestRouteTarget: what a route hands to translate: the model entry's settings over the provider's, the
// client's model when the entry renames nothing.
func TestRouteTarget(t *testing.T) {
	c, err := parseConfig([]byte(`{"providers":[
		{"name":"az","dialect":"azure-openai","host":"r.openai.azure.com","api_key":"k","api_version":"2024-06-01",
		 "models":[{"name":"gpt-4o","deployment":"prod"},{"name":"gpt-*","model":"gpt-x"}]},
		{"name":"ai","dialect":"azure-ai","host":"m.services.ai.azure.com","api_key":"k","extra_parameters":"pass-through",
		 "models":[{"name":"llama","model":"Meta-Llama","deployment":"blue"}]},
		{"name":"et","dialect":"eternalai","host":"api.eternalai.org","api_key":"k","chain_id":"8453",
		 "models":[{"name":"i1","chain_id":"1"},{"name":"*"}]},
		{"name":"oa","dialect":"openai","host":"api.openai.com","api_key":"k","base_path":"","models":[{"name":"o3"}]}],
		"default_provider":"az"}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model string
		want  translate.Target
	}{
		{"gpt-4o", translate.Target{Dialect: translate.AzureOpenAI, BasePath: "/openai", APIVersion: "2024-06-01",
			Model: "gpt-4o", Settings: settingsOf(t, translate.AzureOpenAI, nil, "deployment", "prod")}},
		{"gpt-4.1", translate.Target{Dialect: translate.AzureOpenAI, BasePath: "/openai", APIVersion: "2024-06-01",
			Model: "gpt-x"}},
		{"llama", translate.Target{Dialect: translate.AzureAI, BasePath: "/models", Model: "Meta-Llama",
			Settings: settingsOf(t, translate.AzureAI, []string{"extra_parameters", "pass-through"}, "deployment", "blue")}},
		{"i1", translate.Target{Dialect: translate.EternalAI, BasePath: "/v1", Model: "i1",
			Settings: settingsOf(t, translate.EternalAI, []string{"chain_id", "8453"}, "chain_id", "1")}},
		{"anything", translate.Target{Dialect: translate.EternalAI, BasePath: "/v1", Model: "anything",
			Settings: settingsOf(t, translate.EternalAI, []string{"chain_id", "8453"})}},
		{"o3", translate.Target{Dialect: translate.OpenAI, BasePath: "", Model: "o3"}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			candidates := c.resolve(tt.model)
			if len(candidates) != 1 {
				t.Fatalf("%d candidates", len(candidates))
			}
			if got := c.target(&candidates[0], tt.model); got != tt.want {
				t.Errorf("target\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestAuthenticate: a key matches the consumer whose digest is its SHA-256; nothing else matches, not even
// the empty key against the digest of the empty string.
func TestAuthenticate(t *testing.T) {
	const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	c, err := parseConfig([]byte(`{"providers":[`+minimalProvider+`],"consumers":[
		{"name":"a","key_sha256":"`+hexSum("key-a")+`"},
		{"name":"b","key_sha256":"`+strings.ToUpper(hexSum("key-b"))+`"},
		{"name":"empty","key_sha256":"`+emptyDigest+`"}]}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ key, want string }{
		{"key-a", "a"},
		{"key-b", "b"}, // the digest was configured in upper case
		{"", ""},
		{"key-c", ""},
		{"key-a ", ""},
		{"Key-a", ""},
		{hexSum("key-a"), ""}, // the digest itself is not the key
	} {
		t.Run(tt.key, func(t *testing.T) {
			got := ""
			if cons := c.authenticate(tt.key); cons != nil {
				got = cons.name
			}
			if got != tt.want {
				t.Errorf("authenticate(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

// TestConsumerAllows: a consumer without models may use every model; with models, those its globs match.
func TestConsumerAllows(t *testing.T) {
	c, err := parseConfig([]byte(`{"providers":[`+minimalProvider+`],"consumers":[
		{"name":"all","key_sha256":"`+hexSum("1")+`"},
		{"name":"empty-list","key_sha256":"`+hexSum("2")+`","models":[]},
		{"name":"some","key_sha256":"`+hexSum("3")+`","models":["gpt-*","o3","*-mini"]}]}`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		consumer, model string
		want            bool
	}{
		{"all", "gpt-4o", true}, {"all", "", true}, {"all", "anything at all", true},
		{"empty-list", "gpt-4o", true},
		{"some", "gpt-4o", true}, {"some", "gpt-", true}, {"some", "o3", true}, {"some", "o3-mini", true},
		{"some", "o3 ", false}, {"some", "GPT-4o", false}, {"some", "llama", false}, {"some", "", false},
	} {
		t.Run(tt.consumer+"/"+tt.model, func(t *testing.T) {
			var cons *consumer
			for i := range c.consumers {
				if c.consumers[i].name == tt.consumer {
					cons = &c.consumers[i]
				}
			}
			if got := cons.allows(tt.model); got != tt.want {
				t.Errorf("%s allows %q = %v, want %v", tt.consumer, tt.model, got, tt.want)
			}
		})
	}
}

// TestRenderHeadCache: a models entry remembers its last request line, and hands it out only for inputs equal
// to the last ones: in any order of requests, each gets what translate.RenderHead renders for it.
func TestRenderHeadCache(t *testing.T) {
	c, err := parseConfig([]byte(`{"providers":[
		{"name":"az","dialect":"azure-openai","host":"r.openai.azure.com","api_key":"k","models":[{"name":"gpt-*"}]},
		{"name":"ai","dialect":"azure-ai","host":"m.services.ai.azure.com","api_key":"k","models":[{"name":"llama","deployment":"blue"}]}]}`),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	request := func(method, path string) translate.ClientRequest {
		req, rerr := translate.Detect(method, path, "")
		if rerr != nil {
			t.Fatalf("%s %s: %v", method, path, rerr)
		}
		return req
	}
	chat := request("POST", "/v1/chat/completions")
	embeddings := request("POST", "/v1/embeddings")
	azureChat := request("POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01")
	azureOld := request("POST", "/openai/deployments/gpt-4o/chat/completions?api-version=2024-02-01")
	aiChat := request("POST", "/chat/completions?api-version=2024-05-01-preview")
	aiHeader := aiChat
	aiHeader.ModelHeader = "blue-2"
	aiPolicy := aiChat
	aiPolicy.PolicyHeader = "pass-through"
	steps := []struct {
		name  string
		model string
		req   translate.ClientRequest
	}{
		{"first", "gpt-4o", chat},
		{"the same again", "gpt-4o", chat},
		{"another model on the same entry", "gpt-4.1", chat},
		{"back to the first", "gpt-4o", chat},
		{"another operation", "gpt-4o", embeddings},
		{"an azure client with an api-version", "gpt-4o", azureChat},
		{"another api-version", "gpt-4o", azureOld},
		{"another entry", "llama", aiChat},
		{"a model header", "llama", aiHeader},
		{"a policy header", "llama", aiPolicy},
		{"the first entry again", "gpt-4o", chat},
		{"an invalid deployment is refused, not remembered", "gpt-4o/../x", chat},
		{"and the next request is rendered", "gpt-4o", chat},
	}
	for _, st := range steps {
		candidates := c.resolve(st.model)
		if len(candidates) == 0 {
			t.Fatalf("%s: %q not resolved", st.name, st.model)
		}
		r := candidates[0]
		target := c.target(&r, st.model)
		req := st.req
		got, gotErr := r.head.Render(&req, &target)
		want, wantErr := translate.RenderHead(&req, &target)
		if refused := strings.HasPrefix(st.name, "an invalid"); refused != (wantErr != nil) {
			t.Fatalf("%s: RenderHead error %v", st.name, wantErr)
		}
		if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && *gotErr != *wantErr) {
			t.Errorf("%s: renderHead %+v %v\nRenderHead %+v %v", st.name, got, gotErr, want, wantErr)
		}
	}
}

// settingsOf is what translate makes of a provider's dialect settings (key, value pairs) and one model key
// and value.
func settingsOf(t *testing.T, d translate.Dialect, provider []string, model ...string) translate.Settings {
	t.Helper()
	pairs := func(kv []string) (list []translate.Setting) {
		for i := 0; i+1 < len(kv); i += 2 {
			list = append(list, translate.Setting{Key: kv[i], Value: kv[i+1]})
		}
		return list
	}
	s, err := (translate.Settings{}).With(d, translate.ProviderSetting, pairs(provider))
	if err == nil {
		s, err = s.With(d, translate.ModelSetting, pairs(model))
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

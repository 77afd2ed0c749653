package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/hostemu"
	"github.com/aidialect/aidialect/translate"
)

// metricsConfig has two providers, a glob and a name that needs a metric label, and a default route.
const metricsConfig = `{
  "providers": [
    {"name": "az", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "az-key",
     "models": [{"name": "gpt-4o"}, {"name": "gpt-35-*"}]},
    {"name": "oa", "dialect": "openai", "host": "api.openai.com", "api_key": "oa-key",
     "models": [{"name": "gpt-4.1"}]}
  ],
  "default_provider": "oa"
}`

// The metric names metricsConfig must define, spelled out rather than derived from metrics.go.
var (
	metricsDialects   = []string{"openai", "azure-openai", "azure-ai", "eternalai"}
	metricsProviders  = []string{"az", "oa", "none"}
	metricsClasses    = []string{"1xx", "2xx", "3xx", "4xx", "5xx"}
	metricsTokenPairs = []string{"provider.az.model.gpt-4o", "provider.az.model.gpt-35-any", "provider.oa.model.gpt-4_1",
		"provider.oa.model.default"}
	metricsCodes = []string{"panic", "upstream_content_encoding", "upstream_invalid_json", "stream_event_too_large",
		"upstream_stream_cut", "stream_end_lost_in_trailers", "model_not_found", "model_not_allowed", "unauthorized", "invalid_api_version",
		"invalid_deployment", "invalid_json", "invalid_parameter", "extra_parameters_not_allowed", "body_too_large",
		"unsupported_operation", "unsupported_content_encoding", "unknown_path", "method_not_allowed", "internal_error",
		"upstream_redirect", "body_never_arrived", "unsupported_parameter", "upstream_answered_early",
		"previous_response_not_found", "all_providers_rate_limited", "all_providers_unavailable", "upstream_unreachable",
		"budget_exceeded", "budget_unavailable"}
)

func requestMetric(dialect, provider, class string) string {
	return "aidialect_requests_total.client_dialect." + dialect + ".provider." + provider + ".status_class." + class
}

func requestMetricNames() []string {
	var names []string
	for _, d := range metricsDialects {
		for _, p := range metricsProviders {
			for _, c := range metricsClasses {
				names = append(names, requestMetric(d, p, c))
			}
		}
	}
	return names
}

func expectedMetricNames() []string {
	names := requestMetricNames()
	for _, pair := range metricsTokenPairs {
		names = append(names, "aidialect_prompt_tokens_total."+pair, "aidialect_completion_tokens_total."+pair)
	}
	for _, code := range metricsCodes {
		names = append(names, "aidialect_filter_errors_total.code."+code)
	}
	for _, p := range metricsProviders[:len(metricsProviders)-1] {
		names = append(names, "aidialect_attempts_total.provider."+p)
	}
	return names
}

// recordingVM is the native filter, keeping hold of its plugin context so a test can reach its metrics.
type recordingVM struct {
	vmContext
	plugin *pluginContext
}

func (v *recordingVM) NewPluginContext(uint32) types.PluginContext {
	v.plugin = &pluginContext{}
	return v.plugin
}

// TestMetricsDefinedAtStart: in both modes, every metric the configuration can produce exists at zero before
// the first request; natively, the names defined are exactly those, each once, and every one is kept.
func TestMetricsDefinedAtStart(t *testing.T) {
	want := expectedMetricNames()
	if n := len(want); n != 4*3*5+2*4+30+2 {
		t.Fatalf("the test lists %d names", n)
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			host, err := hostemu.New(md.vm(t), []byte(metricsConfig))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			for _, name := range want {
				if v, err := host.Counter(name); err != nil || v != 0 {
					t.Errorf("%s = %d, %v; want 0, defined", name, v, err)
				}
			}
			for _, name := range []string{
				requestMetric("unknown", "none", "2xx"),
				requestMetric("openai", "default", "2xx"),
				requestMetric("openai", "az", "6xx"),
				"aidialect_prompt_tokens_total.provider.az.model.gpt-4_1",     // a model of another provider
				"aidialect_prompt_tokens_total.provider.az.model.default",     // not the default provider
				"aidialect_prompt_tokens_total.provider.oa.model.gpt-4.1",     // the label is sanitised
				"aidialect_filter_errors_total.code.upstream_stream_error",    // never counted: see TestEveryErrorCodeIsCounted
				"aidialect_filter_errors_total.code.model_not_found.provider", // no labels past the code
			} {
				if _, err := host.Counter(name); err == nil {
					t.Errorf("%s is defined", name)
				}
			}
		})
	}
	t.Run("names kept", func(t *testing.T) {
		vm := &recordingVM{}
		host, err := hostemu.New(vm, []byte(metricsConfig))
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		got := slices.Clone(vm.plugin.metrics.names)
		sort.Strings(got)
		sorted := slices.Clone(want)
		sort.Strings(sorted)
		if !slices.Equal(got, sorted) {
			t.Errorf("names kept alive:\n%q\nwant\n%q", got, sorted)
		}
	})
}

// TestMetricNamesSurviveCollections: the host keeps the name of a metric as the guest passed it. Envoy copies
// it; proxytest's wasm mode keeps a view into the guest's linear memory, so a name the guest did not keep would
// be collected, its memory reused, and the host's metric table would lose it. (A view into memory that grew
// since is a stale copy, safe by luck: so the VM is warmed up first, and the plugin under test starts in a
// memory that no longer grows.) Three hundred exchanges (the filter collects every 256) leave every name
// readable, with exact counts.
func TestMetricNamesSurviveCollections(t *testing.T) {
	const exchanges = 300
	// Every exchange allocates strings of the names' sizes (header values), which reuse whatever a
	// collection freed.
	var fill [][2]string
	for n := 48; n <= 160; n += 2 {
		fill = append(fill, [2]string{"x-fill-" + strconv.Itoa(n), strings.Repeat("f", n)})
	}
	serve := func(t *testing.T, md mode) *hostemu.Host {
		host, err := hostemu.New(md.vm(t), []byte(metricsConfig))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < exchanges; i++ {
			x := host.Begin()
			body := `{"model":"gpt-4.1","user":"` + strconv.Itoa(i) + `","messages":[{"role":"user","content":"hi"}]}`
			headers := append([][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "gateway.local"},
				{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))}}, fill...)
			err := x.SendRequest(headers, [][]byte{[]byte(body)})
			if err == nil && x.Upstream == nil {
				t.Fatalf("exchange %d was not sent upstream: %+v", i, x.Local)
			}
			if err == nil {
				err = x.RelayResponse(200, jsonHeaders, strings.NewReader(chatOK), nil, &recorder{})
			}
			x.Finish()
			if err != nil {
				t.Fatalf("exchange %d: %v", i, err)
			}
		}
		return host
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			serve(t, md).Close() // warm-up
			host := serve(t, md)
			defer host.Close()
			counts := map[string]uint64{
				requestMetric("openai", "oa", "2xx"):                          exchanges,
				"aidialect_prompt_tokens_total.provider.oa.model.gpt-4_1":     7 * exchanges,
				"aidialect_completion_tokens_total.provider.oa.model.gpt-4_1": 2 * exchanges,
				"aidialect_attempts_total.provider.oa":                        exchanges,
			}
			for _, name := range expectedMetricNames() {
				v, err := host.Counter(name)
				if err != nil || v != counts[name] {
					t.Errorf("%s = %d, %v; want %d", name, v, err, counts[name])
				}
			}
		})
	}
}

// TestRequestsCounted: each exchange the filter places in a dialect is counted once, by that dialect, the
// provider that answered ("none" when the filter answered before choosing one) and the status class the client
// got; exchanges on paths the filter does not know are not counted at all.
func TestRequestsCounted(t *testing.T) {
	openai, azureDeployment, azureAI, eternal := clientShapes[0], clientShapes[1], clientShapes[3], clientShapes[4]
	chat := func(s clientShape) exchange { return s.request(s.body("")) }
	tests := []struct {
		name string
		ex   exchange
		want string // the one counter at 1; "" none
	}{
		{"openai client, openai provider, 200", answered(chat(openai), 200, jsonHeaders, chatOK), requestMetric("openai", "openai", "2xx")},
		{"azure-openai client on a deployment path", answered(chat(azureDeployment), 200, jsonHeaders, chatOK), requestMetric("azure-openai", "azure-east", "2xx")},
		{"azure-ai client", answered(chat(azureAI), 200, jsonHeaders, chatOK), requestMetric("azure-ai", "llama", "2xx")},
		{"eternalai client", answered(chat(eternal), 200, jsonHeaders, chatOK), requestMetric("eternalai", "eternal", "2xx")},
		{"an upstream 404 is 4xx", answered(chat(openai), 404, jsonHeaders, `{"error":{"message":"no"}}`), requestMetric("openai", "openai", "4xx")},
		{"an upstream 429 is 4xx", answered(chat(openai), 429, jsonHeaders, `{"error":{"message":"slow"}}`), requestMetric("openai", "openai", "4xx")},
		{"an upstream 503 is 5xx", answered(chat(openai), 503, jsonHeaders, `{"error":{"message":"down"}}`), requestMetric("openai", "openai", "5xx")},
		{"the client's status, not the upstream's: azure-ai 422 to openai is 400",
			answered(openai.request(`{"model":"llama-3-70b",`+userMessages+`}`), 422, jsonHeaders, `{"status":422,"message":"bad"}`),
			requestMetric("openai", "llama", "4xx")},
		{"a redirect, answered 502 by the filter, under the provider", answered(chat(openai), 302,
			[][2]string{{"location", "https://elsewhere.example/"}}, ""), requestMetric("openai", "openai", "5xx")},
		{"a status past 599 counts as 5xx", answered(chat(openai), 600, jsonHeaders, `{}`), requestMetric("openai", "openai", "5xx")},
		{"refused before routing: none", func() exchange {
			ex := chat(openai)
			ex.body = []string{`{"model":"gpt-4.1",`}
			return ex
		}(), requestMetric("openai", "none", "4xx")},
		{"unknown model: none", func() exchange {
			ex := openai.request(`{"model":"nope",` + userMessages + `}`)
			ex.config = noDefaultConfig
			return ex
		}(), requestMetric("openai", "none", "4xx")},
		{"refused after routing on the request line: under the provider", func() exchange {
			ex := chat(azureDeployment)
			ex.body = []string{`{"messages":`}
			return ex
		}(), requestMetric("azure-openai", "azure-east", "4xx")},
		{"model list: none, 2xx", exchange{config: hardeningConfig, method: "GET", path: "/v1/models"}, requestMetric("openai", "none", "2xx")},
		{"unknown path passed through: not counted", answered(exchange{config: hardeningConfig, method: "GET", path: "/healthz"}, 200,
			[][2]string{{"content-type", "text/plain"}}, "ok"), ""},
		{"unknown path refused: not counted", exchange{config: rejectConfig, method: "GET", path: "/healthz"}, ""},
	}
	var names []string
	for _, d := range metricsDialects {
		for _, p := range []string{"azure-east", "llama", "eternal", "openai", "none"} {
			for _, c := range metricsClasses {
				names = append(names, requestMetric(d, p, c))
			}
		}
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got := map[string]uint64{}
					ex := tt.ex
					ex.onDone = func(o *outcome) {
						for _, name := range names {
							got[name] = o.counter(name)
						}
					}
					o := run(t, md, ex)
					o.assertRules(t)
					if len(got) != len(names) {
						t.Fatalf("read %d counters, want %d", len(got), len(names))
					}
					for _, name := range names {
						want := uint64(0)
						if name == tt.want {
							want = 1
						}
						if got[name] != want {
							t.Errorf("%s = %d, want %d (client got %d)", name, got[name], want, o.status)
						}
					}
				})
			}
		})
	}
}

// TestErrorCodesCounted: a local refusal counts its code once, and nothing else; a success counts none.
func TestErrorCodesCounted(t *testing.T) {
	openai, azureDeployment, azureAI := clientShapes[0], clientShapes[1], clientShapes[3]
	withHeader := func(ex exchange, k, v string) exchange {
		ex.headers = append(slices.Clone(ex.headers), [2]string{k, v})
		return ex
	}
	tests := []struct {
		name string
		ex   exchange
		code string // "" none
	}{
		{"a success", answered(openai.request(openai.body("")), 200, jsonHeaders, chatOK), ""},
		{"model_not_found", func() exchange {
			ex := openai.request(`{"model":"nope",` + userMessages + `}`)
			ex.config = noDefaultConfig
			return ex
		}(), "model_not_found"},
		{"model_not_allowed", func() exchange {
			ex := openai.request(`{"model":"llama-3-70b",` + userMessages + `}`)
			ex.config = withConsumers(hardeningConfig)
			ex.headers = [][2]string{{"authorization", "Bearer team-a-key"}}
			return ex
		}(), "model_not_allowed"},
		{"unauthorized", func() exchange {
			ex := openai.request(openai.body(""))
			ex.config = withConsumers(hardeningConfig)
			return ex
		}(), "unauthorized"},
		{"invalid_json", openai.request(`{"model":`), "invalid_json"},
		{"invalid_parameter", openai.request(`{` + userMessages + `}`), "invalid_parameter"},
		{"invalid_api_version", func() exchange {
			ex := azureDeployment.request(azureDeployment.body(""))
			ex.path = "/openai/deployments/gpt-4o/chat/completions?api-version=yesterday"
			return ex
		}(), "invalid_api_version"},
		{"invalid_deployment", withHeader(azureAI.request(`{`+userMessages+`}`), "azureml-model-deployment", "a/b"), "invalid_deployment"},
		{"body_too_large", withHeader(openai.request(openai.body("")), "content-length", "262145"), "body_too_large"},
		{"unsupported_content_encoding", withHeader(openai.request(openai.body("")), "content-encoding", "br"), "unsupported_content_encoding"},
		{"method_not_allowed", func() exchange { ex := openai.request(openai.body("")); ex.method = "GET"; return ex }(), "method_not_allowed"},
		{"unknown_path", exchange{config: rejectConfig, method: "GET", path: "/healthz"}, "unknown_path"},
		{"upstream_redirect", answered(openai.request(openai.body("")), 307, [][2]string{{"location", "/x"}}, ""), "upstream_redirect"},
		{"upstream_invalid_json", answered(openai.request(openai.body("")), 200, jsonHeaders, "<html>"), "upstream_invalid_json"},
		{"upstream_content_encoding", answered(openai.request(openai.body("")), 200,
			[][2]string{{"content-type", "application/json"}, {"content-encoding", "gzip"}}, "\x1f\x8b"), "upstream_content_encoding"},
		{"upstream_stream_cut", answered(openai.request(openai.body(`,"stream":true`)), 200, eventHeaders,
			`data: {"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"h"}}]}`+"\n\n"), "upstream_stream_cut"},
		{"stream_end_lost_in_trailers", func() exchange {
			ex := answered(openai.request(openai.body(`,"stream":true`)), 200, eventHeaders,
				`data: {"id":"a","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			ex.trailers = true
			return ex
		}(), "stream_end_lost_in_trailers"},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got := map[string]uint64{}
					ex := tt.ex
					ex.onDone = func(o *outcome) {
						for _, code := range metricsCodes {
							got[code] = o.counter(metricFilterErrors + ".code." + code)
						}
					}
					o := run(t, md, ex)
					o.assertRules(t)
					if refusal := tt.code != "" && !strings.HasPrefix(tt.code, "upstream_") && tt.code != codeStreamEndLost; refusal &&
						(o.local == nil || o.clientHead["x-aidialect-error"] != tt.code) {
						t.Errorf("answered %d %q (local %v), want a local refusal %q", o.status, o.clientHead["x-aidialect-error"], o.local != nil, tt.code)
					}
					if len(got) != len(metricsCodes) {
						t.Fatalf("read %d counters, want %d", len(got), len(metricsCodes))
					}
					for _, code := range metricsCodes {
						want := uint64(0)
						if code == tt.code {
							want = 1
						}
						if got[code] != want {
							t.Errorf("%s.code.%s = %d, want %d", metricFilterErrors, code, got[code], want)
						}
					}
				})
			}
		})
	}
}

// TestEveryErrorCodeIsCounted: every translate.ErrorCode the filter can answer with has its counter, and
// countedCodes lists nothing twice. upstream_stream_error only names the error event that ends a stream; the
// filter counts those as stream_event_too_large.
func TestEveryErrorCodeIsCounted(t *testing.T) {
	files, err := filepath.Glob("../translate/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("translate sources: %v %v", files, err)
	}
	var codes []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ErrorCode" {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						codes = append(codes, s)
					}
				}
			}
		}
	}
	if len(codes) < 17 {
		t.Fatalf("found %d ErrorCode constants in translate: %q", len(codes), codes)
	}
	for _, code := range codes {
		if code == string(translate.ErrUpstreamStream) {
			if slices.Contains(countedCodes, code) {
				t.Errorf("%s is counted, though the filter never answers with it", code)
			}
			continue
		}
		if !slices.Contains(countedCodes, code) {
			t.Errorf("translate's %s has no aidialect_filter_errors_total counter", code)
		}
	}
	seen := map[string]bool{}
	for _, code := range countedCodes {
		if seen[code] {
			t.Errorf("%s is listed twice", code)
		}
		seen[code] = true
	}
	if !slices.Equal(countedCodes, metricsCodes) {
		t.Errorf("countedCodes %q\nthe tests expect %q", countedCodes, metricsCodes)
	}
}

// TestMetricsCounting calls the counting functions directly, natively, with the arguments the filter never
// passes today: each either lands on its bounded counter or is dropped, never out of range.
func TestMetricsCounting(t *testing.T) {
	tests := []struct {
		name  string
		count func(m *metrics)
		want  map[string]uint64 // every other expected metric stays 0
	}{
		{"a request", func(m *metrics) { m.countRequest(translate.AzureAI, 1, 201) },
			map[string]uint64{requestMetric("azure-ai", "oa", "2xx"): 1}},
		{"provider -1 is none", func(m *metrics) { m.countRequest(translate.OpenAI, -1, 404) },
			map[string]uint64{requestMetric("openai", "none", "4xx"): 1}},
		{"a provider past the table is none", func(m *metrics) { m.countRequest(translate.OpenAI, 7, 500) },
			map[string]uint64{requestMetric("openai", "none", "5xx"): 1}},
		{"status class edges", func(m *metrics) {
			for _, s := range []int{100, 199, 200, 299, 300, 399, 400, 499, 500, 599} {
				m.countRequest(translate.EternalAI, 0, s)
			}
		}, map[string]uint64{requestMetric("eternalai", "az", "1xx"): 2, requestMetric("eternalai", "az", "2xx"): 2,
			requestMetric("eternalai", "az", "3xx"): 2, requestMetric("eternalai", "az", "4xx"): 2, requestMetric("eternalai", "az", "5xx"): 2}},
		{"statuses outside 100-599 are 5xx", func(m *metrics) {
			for _, s := range []int{0, 99, 600, 1000, -200} {
				m.countRequest(translate.OpenAI, 0, s)
			}
		}, map[string]uint64{requestMetric("openai", "az", "5xx"): 5}},
		{"an unknown dialect is not counted", func(m *metrics) {
			m.countRequest(translate.DialectUnknown, 0, 200)
			m.countRequest(translate.DialectLimit, 0, 200)
		}, nil},
		{"a counted code", func(m *metrics) { m.countError("invalid_json"); m.countError("invalid_json") },
			map[string]uint64{"aidialect_filter_errors_total.code.invalid_json": 2}},
		{"an uncounted code is dropped", func(m *metrics) {
			m.countError(string(translate.ErrUpstreamStream))
			m.countError("")
			m.countError("INVALID_JSON")
		}, nil},
		{"tokens", func(m *metrics) {
			m.countTokens(1, translate.Usage{Seen: true, PromptTokens: 11, CompletionTokens: 3})
		}, map[string]uint64{"aidialect_prompt_tokens_total.provider.az.model.gpt-35-any": 11,
			"aidialect_completion_tokens_total.provider.az.model.gpt-35-any": 3}},
		{"tokens of the default route", func(m *metrics) {
			m.countTokens(3, translate.Usage{Seen: true, PromptTokens: 1, CompletionTokens: 0})
		}, map[string]uint64{"aidialect_prompt_tokens_total.provider.oa.model.default": 1}},
		{"usage not seen is not counted", func(m *metrics) {
			m.countTokens(0, translate.Usage{PromptTokens: 5, CompletionTokens: 5})
		}, nil},
		{"a metric id out of range is dropped", func(m *metrics) {
			m.countTokens(-1, translate.Usage{Seen: true, PromptTokens: 5})
			m.countTokens(4, translate.Usage{Seen: true, PromptTokens: 5})
		}, nil},
		{"a nil table counts nothing and does not panic", func(*metrics) {
			var m *metrics
			m.countRequest(translate.OpenAI, 0, 200)
			m.countError("invalid_json")
			m.countTokens(0, translate.Usage{Seen: true, PromptTokens: 1})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &recordingVM{}
			host, err := hostemu.New(vm, []byte(metricsConfig))
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			tt.count(vm.plugin.metrics)
			for _, name := range expectedMetricNames() {
				v, err := host.Counter(name)
				if err != nil || v != tt.want[name] {
					t.Errorf("%s = %d, %v; want %d", name, v, err, tt.want[name])
				}
			}
		})
	}
}

// TestMetricLabel: a configured name becomes one label of [A-Za-z0-9_-], '*' spelled "any".
func TestMetricLabel(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"gpt-4o", "gpt-4o"},
		{"gpt-4.1", "gpt-4_1"},
		{"*", "any"},
		{"gpt-35-*", "gpt-35-any"},
		{"*-mini*", "any-miniany"},
		{"Meta/Llama 3:70b", "Meta_Llama_3_70b"},
		{"a_b-C9", "a_b-C9"},
		{"é", "__"}, // bytes, not runes
		{"", ""},
	} {
		if got := metricLabel(tt.name); got != tt.want {
			t.Errorf("metricLabel(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestTokenMetricsApart: each models entry, and the default route, has a token metric of its own, or the
// configuration is refused; two entries never share one silently.
func TestTokenMetricsApart(t *testing.T) {
	tests := []struct {
		name, models, defaultProvider string
		bug                           string
	}{
		{"distinct labels", `[{"name":"gpt-4.1"},{"name":"gpt-4o"},{"name":"gpt-*"}]`, `"oa"`, ""},
		{"the same glob on two providers", `[{"name":"gpt-*"}]`, `""`, ""},
		{"'.' and '_' meet", `[{"name":"gpt-4.1"},{"name":"gpt-4_1"}]`, `""`, ""},
		{"'*' and \"any\" meet", `[{"name":"o-*"},{"name":"o-any"}]`, `""`, ""},
		{"a model named default on the default provider", `[{"name":"default"}]`, `"oa"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip(tt.bug)
			}
			cfg := `{"providers":[{"name":"oa","dialect":"openai","host":"h","api_key":"k","models":` + tt.models + `},` +
				`{"name":"ob","dialect":"openai","host":"h","api_key":"k","models":[{"name":"gpt-*"}]}]`
			if tt.defaultProvider != `""` {
				cfg += `,"default_provider":` + tt.defaultProvider
			}
			c, err := parseConfig([]byte(cfg+"}"), func(string) string { return "" })
			if err != nil {
				return // refused: acceptable
			}
			seen := map[metricTarget]int{}
			for i, target := range c.metricTargets {
				if j, dup := seen[target]; dup {
					t.Errorf("metric targets %d and %d share provider %q label %q", j, i, target.provider, target.label)
				}
				seen[target] = i
			}
		})
	}
}

// TestGenAIMetrics: the OpenTelemetry GenAI histograms of a chat, a stream and an embeddings request, named
// with the conventions' attributes and the provider's registry value, both modes.
func TestGenAIMetrics(t *testing.T) {
	config := `{"providers":[
	  {"name":"oa","dialect":"openai","host":"api.openai.com","api_key":"k","models":[{"name":"gpt-4.1"}]},
	  {"name":"az","dialect":"azure-openai","host":"r.openai.azure.com","api_key":"k","models":[{"name":"emb","deployment":"emb"}]}]}`
	const series = ".gen_ai_operation_name.chat.gen_ai_request_model.gpt-4_1"
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			s := newFailoverSession(t, md, config)
			ex := chatRequest("gpt-4.1", false)
			ex.upstream = upstreamReply(200, nil, chatUsage70)
			ex.onDone = func(o *outcome) {
				for name, want := range map[string]uint64{
					"gen_ai_client_token_usage" + series + ".gen_ai_token_type.input.gen_ai_provider_name.openai":  50,
					"gen_ai_client_token_usage" + series + ".gen_ai_token_type.output.gen_ai_provider_name.openai": 20,
				} {
					if got, err := o.histogram(name); err != nil || got != want {
						t.Errorf("%s = %d (%v), want %d", name, got, err, want)
					}
				}
				if _, err := o.histogram("gen_ai_client_operation_duration_ms" + series + ".gen_ai_provider_name.openai"); err != nil {
					t.Errorf("no duration: %v", err)
				}
			}
			s.do(ex)
			stream := chatRequest("gpt-4.1", true)
			stream.upstream = &upstreamAnswer{status: 200, headers: [][2]string{{"content-type", "text/event-stream"}},
				chunks: []string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n", "data: [DONE]\n\n"}}
			stream.onDone = func(o *outcome) {
				if _, err := o.histogram("gen_ai_client_time_to_first_chunk_ms" + series + ".gen_ai_provider_name.openai"); err != nil {
					t.Errorf("no time to first chunk: %v", err)
				}
			}
			s.do(stream)
			emb := exchange{method: "POST", path: "/openai/deployments/emb/embeddings?api-version=2024-10-21",
				headers: jsonHead, body: []string{`{"input":"hi"}`}}
			emb.upstream = upstreamReply(200, nil, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"model":"emb","usage":{"prompt_tokens":3,"total_tokens":3}}`)
			emb.onDone = func(o *outcome) {
				name := "gen_ai_client_token_usage.gen_ai_operation_name.embeddings.gen_ai_request_model.emb.gen_ai_token_type.input.gen_ai_provider_name.azure.ai.openai"
				if got, err := o.histogram(name); err != nil || got != 3 {
					t.Errorf("%s = %d (%v), want 3", name, got, err)
				}
			}
			s.do(emb)
			// As the local gateway's admin page lists them: the histogram's observations, the counters' values.
			all, err := s.host.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, m := range all {
				switch m.Name {
				case "gen_ai_client_token_usage" + series + ".gen_ai_token_type.input.gen_ai_provider_name.openai":
					found++
					if m.Kind != hostemu.Histogram || m.Count != 1 || m.Sum != 50 || m.Buckets[len(m.Buckets)-1] != 1 {
						t.Errorf("%s: %+v, want one observation of 50", m.Name, m)
					}
				case "aidialect_requests_total.client_dialect.openai.provider.oa.status_class.2xx":
					found++
					if m.Kind != hostemu.Counter || m.Value != 2 {
						t.Errorf("%s: %+v, want 2", m.Name, m)
					}
				}
			}
			if found != 2 {
				t.Errorf("Metrics listed %d of the 2 metrics looked for", found)
			}
		})
	}
}

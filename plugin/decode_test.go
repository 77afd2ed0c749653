package main

import (
	"github.com/aidialect/aidialect/translate"

	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The strict configuration decoder (decode.go): every key it knows lands in its field, anything else is
// refused with the exact path of the offending key, in document order, whatever the nesting.

// unknownKeyProblem is what decode.go says of a key it does not know.
const unknownKeyProblem = `is not a known key: remove it or check its spelling against README "Configuration"`

// TestDecodeRefusals: each configuration fails the plugin start, in both modes, with exactly this critical log
// line (the path first, then the provider's name when it was read before the mistake).
func TestDecodeRefusals(t *testing.T) {
	p := `{"name":"p","dialect":"openai","host":"h","api_key":"k","models":[{"name":"*"}]}`
	withP := func(rest string) string { return `{"providers":[` + p + `]` + rest + `}` }
	tests := []struct {
		name, config, want string
	}{
		// Shapes.
		{"root is an array", `[]`, "(root): must be a JSON object"},
		{"root is a string", `"providers"`, "(root): must be a JSON object"},
		{"root is null", `null`, "(root): must be a JSON object"},
		{"providers is an object", `{"providers":{}}`, "providers: must be a JSON array"},
		{"a provider is a string", `{"providers":["p"]}`, "providers[0]: must be a JSON object"},
		{"the second provider is null", `{"providers":[` + p + `,null]}`, "providers[1]: must be a JSON object"},
		{"models is a string", `{"providers":[{"name":"p","models":"*"}]}`, "providers[0].models (provider p): must be a JSON array"},
		{"a models entry is a string", `{"providers":[{"name":"p","models":["*"]}]}`, "providers[0].models[0] (provider p): must be a JSON object"},
		{"consumers is an object", withP(`,"consumers":{}`), "consumers: must be a JSON array"},
		{"a consumer is an array", withP(`,"consumers":[[]]`), "consumers[0]: must be a JSON object"},
		{"consumer models is a string", withP(`,"consumers":[{"name":"a","models":"gpt-*"}]`), "consumers[0].models: must be a JSON array"},

		// Unknown keys, at every level, by their exact path.
		{"unknown top-level key", withP(`,"routing_heder":"x"`), "routing_heder: " + unknownKeyProblem},
		{"keys are case-sensitive", `{"Providers":[]}`, "Providers: " + unknownKeyProblem},
		{"a dotted unknown key", withP(`,"usage.mode":"off"`), "usage.mode: " + unknownKeyProblem},
		{"unknown provider key before its name", `{"providers":[{"modles":[],"name":"p"}]}`, "providers[0].modles: " + unknownKeyProblem},
		{"unknown provider key after its name", `{"providers":[{"name":"p","modles":[]}]}`, "providers[0].modles (provider p): " + unknownKeyProblem},
		{"unknown key in the second provider", `{"providers":[` + p + `,{"name":"q","apikey":"k"}]}`, "providers[1].apikey (provider q): " + unknownKeyProblem},
		{"unknown models entry key", `{"providers":[{"name":"p","models":[{"name":"a"},{"name":"b","deploy":"x"}]}]}`, "providers[0].models[1].deploy (provider p): " + unknownKeyProblem},
		{"unknown consumer key", withP(`,"consumers":[{"name":"a","key":"k"}]`), "consumers[0].key: " + unknownKeyProblem},
		{"a consumer key of the provider vocabulary", withP(`,"consumers":[{"name":"a","api_key":"k"}]`), "consumers[0].api_key: " + unknownKeyProblem},
		{"a provider key at the top level", withP(`,"api_key":"k"`), "api_key: " + unknownKeyProblem},

		// Duplicates: compared after unescaping, refused at the second occurrence.
		{"duplicate top-level key", withP(`,"usage":"off","usage":"force"`), "usage: is given twice"},
		{"duplicate key written with an escape", withP(`,"usage":"off","us\u0061ge":"force"`), "usage: is given twice"},
		{"duplicate providers", `{"providers":[` + p + `],"providers":[` + p + `]}`, "providers: is given twice"},
		{"duplicate provider key", `{"providers":[{"name":"p","host":"a","host":"b"}]}`, "providers[0].host (provider p): is given twice"},
		{"duplicate provider name", `{"providers":[{"name":"p","name":"q"}]}`, "providers[0].name (provider p): is given twice"},
		{"duplicate models entry key", `{"providers":[{"name":"p","models":[{"name":"a","name":"b"}]}]}`, "providers[0].models[0].name (provider p): is given twice"},
		{"duplicate consumer key", withP(`,"consumers":[{"name":"a","name":"b"}]`), "consumers[0].name: is given twice"},

		// Types of the leaves.
		{"a number where a string belongs", `{"providers":[{"name":1}]}`, "providers[0].name: must be a string"},
		{"null is not a string", withP(`,"default_provider":null`), "default_provider: must be a string"},
		{"a boolean is not a string", withP(`,"usage":true`), "usage: must be a string"},
		{"an object is not a string", withP(`,"routing_header":{}`), "routing_header: must be a string"},
		{"base_path as a number", `{"providers":[{"name":"p","base_path":1}]}`, "providers[0].base_path (provider p): must be a string"},
		{"models entry field as an array", `{"providers":[{"name":"p","models":[{"name":"a","chain_id":[8453]}]}]}`, "providers[0].models[0].chain_id (provider p): must be a string"},
		{"a consumer model as a number", withP(`,"consumers":[{"name":"a","models":["gpt-*",4]}]`), "consumers[0].models[1]: must be a string"},
		{"an integer as a string", withP(`,"max_request_bytes":"8MB"`), "max_request_bytes: must be an integer"},
		{"a fraction", withP(`,"max_event_bytes":1024.5`), "max_event_bytes: must be an integer"},
		{"null is not an integer", withP(`,"body_wait_seconds":null`), "body_wait_seconds: must be an integer"},
		{"a boolean is not an integer", withP(`,"max_request_bytes":true`), "max_request_bytes: must be an integer"},
		{"a number beyond float64", withP(`,"max_request_bytes":1e400`), "max_request_bytes: must be an integer"},
		{"a number beyond int64", withP(`,"max_request_bytes":1e19`), "max_request_bytes: must be an integer"},

		// Order: the first mistake in the document is the one named.
		{"the first mistake wins", `{"zzz":1,"providers":5}`, "zzz: " + unknownKeyProblem},
		{"a type error before an unknown key", withP(`,"usage":1,"zzz":1`), "usage: must be a string"},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					o := run(t, md, exchange{config: tt.config, method: "GET", path: "/v1/models"})
					want := "the plugin refused to start: aidialect: configuration " + tt.want
					if len(o.criticalLogs) != 1 || o.criticalLogs[0] != want {
						t.Errorf("critical logs %q\nwant [%q]", o.criticalLogs, want)
					}
				})
			}
		})
	}
}

// TestDecodeIntegersAtTheInt64Edge: integers that fill int64 are integers, refused for their range, the same
// in both modes (check-config runs natively, Envoy runs the module).
func TestDecodeIntegersAtTheInt64Edge(t *testing.T) {
	tests := []struct {
		name, value, want string
		bug               string
	}{
		{"the largest int64", `9223372036854775807`, "max_request_bytes: must be between 1 and 268435456", ""},
		{"2^63", `9223372036854775808`, "max_request_bytes: must be between 1 and 268435456", ""},
		{"the smallest int64", `-9223372036854775808`, "max_request_bytes: must be between 1 and 268435456", ""},
		{"2^53+1", `9007199254740993`, "max_request_bytes: must be between 1 and 268435456", ""},
		{"-1e19, below int64", `-1e19`, "max_request_bytes: must be an integer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip(tt.bug)
			}
			for _, md := range modes {
				o := run(t, md, exchange{config: `{"providers":[` + minimalProvider + `],"max_request_bytes":` + tt.value + `}`,
					method: "GET", path: "/v1/models"})
				want := "the plugin refused to start: aidialect: configuration " + tt.want
				if len(o.criticalLogs) != 1 || o.criticalLogs[0] != want {
					t.Errorf("%s: critical logs %q\nwant [%q]", md.name, o.criticalLogs, want)
				}
			}
		})
	}
}

// TestDecodeIntegers: what decodeInt accepts as an integer, in both modes (the wasm module's float-to-int
// conversion is the one that runs in Envoy): the plugin starts, and the limit it read is the one enforced.
func TestDecodeIntegers(t *testing.T) {
	tests := []struct {
		name, value string
		limit       int // the max_request_bytes the plugin must enforce
	}{
		{"plain", `2000`, 2000},
		{"with an exponent", `2e3`, 2000},
		{"with a zero fraction", `2000.0`, 2000},
		{"with a fraction and an exponent", `2.5e3`, 2500},
		{"with a capital exponent and sign", `25E+2`, 2500},
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					cfg := strings.Replace(testConfig, `"max_request_bytes": 4096`, `"max_request_bytes": `+tt.value, 1)
					for _, size := range []int{tt.limit, tt.limit + 1} {
						ex := openAIChat("gpt-4o", "")
						ex.config = cfg
						ex.headers = append(ex.headers, [2]string{"content-length", strconv.Itoa(size)})
						o := run(t, md, ex)
						o.assertRules(t)
						if len(o.criticalLogs) != 0 {
							t.Fatalf("refused: %q", o.criticalLogs)
						}
						tooLarge := o.local != nil && o.clientHead["x-aidialect-error"] == "body_too_large"
						if tooLarge != (size > tt.limit) {
							t.Errorf("declared %d bytes: body_too_large %v, want %v (limit %d)", size, tooLarge, size > tt.limit, tt.limit)
						}
					}
				})
			}
		})
	}
}

// TestDecodeValues: every key the decoder knows lands in its own field; absent keys stay zero (nil for the
// optional ones, so "given as empty" and "not given" stay apart).
func TestDecodeValues(t *testing.T) {
	intp := func(n int) *int { return &n }
	strp := func(s string) *string { return &s }
	tests := []struct {
		name, config string
		want         rawConfig
	}{
		{"empty object", `{}`, rawConfig{}},
		{"every top-level key", `{"providers":[],"consumers":[],"default_provider":"d","routing_header":"r","path_prefix":"/x",
			"max_request_bytes":1,"max_event_bytes":2,"body_wait_seconds":0,"onchain_data":"strip","unknown_paths":"reject","usage":"force"}`,
			rawConfig{DefaultProvider: "d", RoutingHeader: "r", PathPrefix: "/x", MaxRequestBytes: intp(1), MaxEventBytes: intp(2),
				BodyWaitSeconds: intp(0), UnknownPaths: "reject", Usage: "force",
				Settings: []translate.Setting{{Key: "onchain_data", Value: "strip"}}}},
		{"every provider and models key", `{"providers":[{"name":"n","dialect":"azure-ai","host":"h","base_path":"/b","api_key":"k",
			"api_key_env":"E","auth":"bearer","api_version":"v","extra_parameters":"drop","chain_id":"1",
			"models":[{"name":"m","model":"M","deployment":"D","chain_id":"2"},{"name":"g-*"}]}]}`,
			rawConfig{Providers: []rawProvider{{Name: "n", Dialect: "azure-ai", Host: "h", BasePath: strp("/b"), APIKey: "k",
				APIKeyEnv: "E", Auth: "bearer", APIVersion: "v",
				Settings: []translate.Setting{{Key: "extra_parameters", Value: "drop"}, {Key: "chain_id", Value: "1"}},
				Models: []rawModel{{Name: "m", Model: "M", Settings: []translate.Setting{{Key: "deployment", Value: "D"},
					{Key: "chain_id", Value: "2"}}}, {Name: "g-*"}}}}}},
		{"base_path given empty is not base_path absent", `{"providers":[{"name":"a","base_path":""},{"name":"b"}]}`,
			rawConfig{Providers: []rawProvider{{Name: "a", BasePath: strp("")}, {Name: "b"}}}},
		{"every consumer key, in order", `{"consumers":[{"name":"a","key_sha256":"00","models":["x","y-*"]},{"name":"b"}]}`,
			rawConfig{Consumers: []rawConsumer{{Name: "a", KeySHA256: "00", Models: []string{"x", "y-*"}}, {Name: "b"}}}},
		{"escapes are decoded", `{"routing_header":"x-\u0061","providers":[{"name":"\u00e9\n"}]}`,
			rawConfig{RoutingHeader: "x-a", Providers: []rawProvider{{Name: "é\n"}}}},
		{"negative and exponent integers", `{"max_request_bytes":-5,"max_event_bytes":1e3,"body_wait_seconds":-0}`,
			rawConfig{MaxRequestBytes: intp(-5), MaxEventBytes: intp(1000), BodyWaitSeconds: intp(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRawConfig(gjson.Parse(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decoded\n%s\nwant\n%s", describeRaw(got), describeRaw(tt.want))
			}
		})
	}
}

// describeRaw prints a rawConfig with its pointers followed.
func describeRaw(c rawConfig) string {
	deref := func(p *int) string {
		if p == nil {
			return "<nil>"
		}
		return strconv.Itoa(*p)
	}
	s := fmt.Sprintf("top: %q %q %q %v %q %q ints: %s %s %s", c.DefaultProvider, c.RoutingHeader, c.PathPrefix,
		c.Settings, c.UnknownPaths, c.Usage, deref(c.MaxRequestBytes), deref(c.MaxEventBytes), deref(c.BodyWaitSeconds))
	for _, p := range c.Providers {
		bp := "<nil>"
		if p.BasePath != nil {
			bp = strconv.Quote(*p.BasePath)
		}
		p.BasePath = nil
		s += fmt.Sprintf("\n  provider base_path=%s %+v", bp, p)
	}
	for _, rc := range c.Consumers {
		s += fmt.Sprintf("\n  consumer %+v", rc)
	}
	return s
}

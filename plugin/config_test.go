package main

import (
	"strings"
	"testing"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

const minimalProvider = `{"name":"p","dialect":"openai","host":"api.openai.com","api_key":"k","models":[{"name":"*"}]}`

func TestConfigRejects(t *testing.T) {
	tests := []struct {
		name, config, field string
	}{
		{"empty", ``, "(root)"},
		{"not JSON", `{"providers":`, "(root)"},
		{"unknown top-level key", `{"providers":[` + minimalProvider + `],"routing_heder":"x"}`, "routing_heder"},
		{"unknown provider key", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","modles":[]}]}`, "providers[0].modles (provider p)"},
		{"unknown provider key before its name", `{"providers":[{"modles":[],"name":"p"}]}`, "providers[0].modles:"},
		{"unknown model key", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","models":[{"name":"*","deploy":"x"}]}]}`, "providers[0].models[0].deploy"},
		{"wrong type", `{"providers":[` + minimalProvider + `],"max_request_bytes":"8MB"}`, "max_request_bytes"},
		{"duplicate key", `{"providers":[` + minimalProvider + `],"usage":"off","usage":"force"}`, "usage"},
		{"no providers", `{"providers":[]}`, "providers"},
		{"bad provider name", `{"providers":[{"name":"P_1","dialect":"openai","host":"h","api_key":"k","models":[{"name":"*"}]}]}`, "providers[0].name"},
		{"duplicate provider", `{"providers":[` + minimalProvider + `,` + minimalProvider + `]}`, "providers[1].name"},
		{"bad dialect", `{"providers":[{"name":"p","dialect":"anthropic","host":"h","api_key":"k","models":[{"name":"*"}]}]}`, "dialect"},
		{"host with scheme", `{"providers":[{"name":"p","dialect":"openai","host":"https://api.openai.com","api_key":"k","models":[{"name":"*"}]}]}`, "host"},
		{"no credential", `{"providers":[{"name":"p","dialect":"openai","host":"h","models":[{"name":"*"}]}]}`, "providers[0] (p)"},
		{"two credentials", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","api_key_env":"K","models":[{"name":"*"}]}]}`, "providers[0] (p)"},
		{"unset api_key_env", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key_env":"NOPE_NOT_SET","models":[{"name":"*"}]}]}`, "api_key_env"},
		{"bearer on openai", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","auth":"bearer","models":[{"name":"*"}]}]}`, "auth"},
		{"an auth no dialect takes names passthrough", `{"providers":[{"name":"p","dialect":"azure-openai","host":"h","api_key":"k","auth":"token","models":[{"name":"*"}]}]}`,
			`providers[0] (p).auth: "token" is not one of bearer; or "passthrough"`},
		{"a provider key in a models entry", `{"providers":[{"name":"p","dialect":"azure-ai","host":"h","api_key":"k","models":[{"name":"*","extra_parameters":"drop"}]}]}`,
			"providers[0].models[0].extra_parameters (provider p): is a provider key, not a model one: move it there"},
		{"a model key at the top level", `{"providers":[` + minimalProvider + `],"deployment":"d"}`, "deployment: is a model key, not a top-level one"},
		{"a top-level key in a provider", `{"providers":[{"name":"p","dialect":"eternalai","host":"h","api_key":"k","onchain_data":"strip","models":[{"name":"*"}]}]}`,
			"providers[0].onchain_data (provider p): is a top-level key, not a provider one"},
		{"a key at two levels, written at the third", `{"providers":[` + minimalProvider + `],"chain_id":"1"}`, "chain_id: is a provider or model key, not a top-level one"},
		{"a dialect key given twice", `{"providers":[{"name":"p","dialect":"eternalai","host":"h","api_key":"k","chain_id":"1","chain_id":"2","models":[{"name":"*"}]}]}`,
			"providers[0].chain_id (provider p): is given twice"},
		{"bad onchain_data", `{"providers":[` + minimalProvider + `],"onchain_data":"drop"}`, `onchain_data: "drop" is not one of headers, strip, keep`},
		{"api_version on openai", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","api_version":"2024-10-21","models":[{"name":"*"}]}]}`, "api_version"},
		{"malformed api_version", `{"providers":[{"name":"p","dialect":"azure-ai","host":"h","api_key":"k","api_version":"2024-5-1","models":[{"name":"*"}]}]}`, "api_version"},
		{"bad extra_parameters", `{"providers":[{"name":"p","dialect":"azure-ai","host":"h","api_key":"k","extra_parameters":"allow-all","models":[{"name":"*"}]}]}`, "extra_parameters"},
		{"extra_parameters on azure openai", `{"providers":[{"name":"p","dialect":"azure-openai","host":"h","api_key":"k","extra_parameters":"drop","models":[{"name":"*"}]}]}`, "extra_parameters"},
		{"bad chain_id", `{"providers":[{"name":"p","dialect":"eternalai","host":"h","api_key":"k","chain_id":"base","models":[{"name":"*"}]}]}`, "chain_id"},
		{"no models", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","models":[]}]}`, "models"},
		{"bad hosted_tools", `{"providers":[{"name":"p","dialect":"azure-ai","host":"h","api_key":"k","hosted_tools":"ignore","models":[{"name":"*"}]}]}`, "providers[0] (p).hosted_tools"},
		{"hosted_tools where the provider runs them", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","hosted_tools":"drop","models":[{"name":"*"}]}]}`, "providers[0] (p).hosted_tools"},
		{"hosted_tools on a model not bridged", `{"providers":[{"name":"p","dialect":"azure-openai","host":"h","api_key":"k","models":[{"name":"*","hosted_tools":"drop"}]}]}`, "providers[0].models[0].hosted_tools"},
		{"bad glob", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"k","models":[{"name":"gpt-[45]"}]}]}`, "providers[0].models[0].name"},
		{"bad deployment", `{"providers":[{"name":"p","dialect":"azure-openai","host":"h","api_key":"k","models":[{"name":"m","deployment":"a/b"}]}]}`, "deployment"},
		{"duplicate exact model", `{"providers":[` + minimalProvider + `,{"name":"q","dialect":"openai","host":"h","api_key":"k","models":[{"name":"m"},{"name":"m"}]}]}`, `providers[1].models[1].name (provider q): "m" is listed twice for this provider`},
		{"unknown default_provider", `{"providers":[` + minimalProvider + `],"default_provider":"azure"}`, "default_provider"},
		{"bad consumer key", `{"providers":[` + minimalProvider + `],"consumers":[{"name":"a","key_sha256":"abc"}]}`, "consumers[0].key_sha256"},
		{"bad routing header", `{"providers":[` + minimalProvider + `],"routing_header":"X Provider"}`, "routing_header"},
		{"bad path prefix", `{"providers":[` + minimalProvider + `],"path_prefix":"llm/"}`, "path_prefix"},
		{"bad onchain_data", `{"providers":[` + minimalProvider + `],"onchain_data":"body"}`, "onchain_data"},
		{"bad unknown_paths", `{"providers":[` + minimalProvider + `],"unknown_paths":"drop"}`, "unknown_paths"},
		{"max_request_bytes zero", `{"providers":[` + minimalProvider + `],"max_request_bytes":0}`, "max_request_bytes"},
		// Issue 10: a key pasted where a variable name belongs is never echoed; keys become header values.
		{"api_key_env holding a key", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key_env":"sk-proj-Abc123-pasted","models":[{"name":"*"}]}]}`, "api_key_env"},
		{"api_key_env naming an unset variable", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key_env":"a0b1c2d3e4f5a6b7c8d9","models":[{"name":"*"}]}]}`, "api_key_env"},
		{"api_key with a control character", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"sk-secret\u0001tail","models":[{"name":"*"}]}]}`, "providers[0] (p)"},
		{"api_key with DEL", `{"providers":[{"name":"p","dialect":"openai","host":"h","api_key":"sk-secret\u007ftail","models":[{"name":"*"}]}]}`, "providers[0] (p)"},
		{"consumers with a passthrough provider", `{"providers":[{"name":"p","dialect":"openai","host":"h","auth":"passthrough","models":[{"name":"*"}]}],` +
			`"consumers":[{"name":"a","key_sha256":"` + strings.Repeat("ab", 32) + `"}]}`, "consumers"},
		{"body_wait_seconds negative", `{"providers":[` + minimalProvider + `],"body_wait_seconds":-1}`, "body_wait_seconds"},
		{"body_wait_seconds over an hour", `{"providers":[` + minimalProvider + `],"body_wait_seconds":3601}`, "body_wait_seconds"},
		{"nested 100,000 deep", `{"providers":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, "(root)"},
		{"response_binding_key_env without consumers", `{"providers":[` + minimalProvider + `],"response_binding_key_env":"BINDING_KEY"}`, "response_binding_key_env"},
		{"response_binding_key_env holding a key", `{"providers":[` + minimalProvider + `],"response_binding_key_env":"sk-proj-Abc123-pasted",` +
			`"consumers":[{"name":"a","key_sha256":"` + strings.Repeat("ab", 32) + `"}]}`, "response_binding_key_env"},
		{"response_binding_key_env unset", `{"providers":[` + minimalProvider + `],"response_binding_key_env":"BINDING_KEY",` +
			`"consumers":[{"name":"a","key_sha256":"` + strings.Repeat("ab", 32) + `"}]}`, "response_binding_key_env"},
		// A consumer's name is its identity for its stored responses: one name, two consumers, would share them.
		{"duplicate consumer name", `{"providers":[` + minimalProvider + `],"consumers":[{"name":"team-a","key_sha256":"` + strings.Repeat("ab", 32) +
			`"},{"name":"team-a","key_sha256":"` + strings.Repeat("cd", 32) + `"}]}`, `consumers[1].name: "team-a" is also consumers[0]'s name`},
		{"consumer names one once decoded", `{"providers":[` + minimalProvider + `],"consumers":[{"name":"team-\ud800","key_sha256":"` + strings.Repeat("ab", 32) +
			`"},{"name":"team-\udbff","key_sha256":"` + strings.Repeat("cd", 32) + `"}]}`, "consumers[0].name"},
		{"consumer name with U+FFFD", `{"providers":[` + minimalProvider + `],"consumers":[{"name":"team-\ufffd","key_sha256":"` + strings.Repeat("ab", 32) + `"}]}`,
			"identity for the responses it stores"},
		{"response_binding_key_env not a string", `{"providers":[` + minimalProvider + `],"response_binding_key_env":1}`, "response_binding_key_env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tt.config), func(string) string { return "" })
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %q", err, tt.field)
			}
			for _, secret := range []string{"sk-proj-Abc123-pasted", "a0b1c2d3e4f5a6b7c8d9", "sk-secret"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q echoes a secret", err)
				}
			}
		})
	}
}

// TestBindingKeyTooShort: a binding key shorter than 32 bytes stops the start, without being echoed.
func TestBindingKeyTooShort(t *testing.T) {
	config := `{"providers":[` + minimalProvider + `],"response_binding_key_env":"BINDING_KEY",` +
		`"consumers":[{"name":"a","key_sha256":"` + strings.Repeat("ab", 32) + `"}]}`
	_, err := parseConfig([]byte(config), func(string) string { return "short-secret-value" })
	if err == nil || !strings.Contains(err.Error(), "response_binding_key_env") || strings.Contains(err.Error(), "short-secret-value") {
		t.Fatalf("error %v", err)
	}
	c, err := parseConfig([]byte(config), func(string) string { return strings.Repeat("k", 32) })
	if err != nil || c.providers[0].bindingKey == nil {
		t.Fatalf("a 32-byte key: %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := parseConfig([]byte(`{"providers":[
		{"name":"svc","dialect":"azure-ai","host":"res.services.ai.azure.com","api_key_env":"AI_KEY","models":[{"name":"*"}]},
		{"name":"eai","dialect":"eternalai","host":"api.eternalai.org","auth":"passthrough","models":[{"name":"x"}]}]}`),
		func(k string) string { return map[string]string{"AI_KEY": "secret"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	svc := c.byName["svc"]
	if svc.basePath != "/models" || svc.key != "secret" || c.routingHeader != "x-aidialect-provider" ||
		c.maxRequestBytes != 8<<20 || !c.byName["eai"].passthrough || c.byName["eai"].basePath != "/v1" {
		t.Errorf("defaults: %+v %+v", svc, c)
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true}, {"gpt-*", "gpt-4o", true}, {"gpt-*", "o3", false}, {"*-mini", "o3-mini", true},
		{"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false}, {"a*a", "a", false}, {"exact", "exact", true}, {"exact", "exactly", false},
	} {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if g.match(tt.s) != tt.want {
			t.Errorf("%q ~ %q = %v", tt.pattern, tt.s, !tt.want)
		}
	}
}

// TestBadConfigFailsPluginStart: in both modes the plugin refuses to start and the log names the field.
func TestBadConfigFailsPluginStart(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			opt := proxytest.NewEmulatorOption().WithVMContext(md.vm(t)).
				WithPluginConfiguration([]byte(`{"providers":[` + minimalProvider + `],"routing_heder":"x"}`))
			host, reset := proxytest.NewHostEmulator(opt)
			defer reset()
			if host.StartPlugin() != types.OnPluginStartStatusFailed {
				t.Fatal("plugin started with an unknown key")
			}
			logs := strings.Join(host.GetCriticalLogs(), "\n")
			if !strings.Contains(logs, "routing_heder") || !strings.Contains(logs, "spelling") {
				t.Errorf("log does not name the field and the fix: %q", logs)
			}
		})
	}
}

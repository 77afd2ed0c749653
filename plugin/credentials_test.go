package main

import (
	"bytes"
	"encoding/hex"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/internal/redact"
	"github.com/aidialect/aidialect/internal/sha256"
	"github.com/aidialect/aidialect/translate"
)

// Credential hygiene (issue 6 item 3): the client's key never reaches a provider unless the provider is
// configured with "auth": "passthrough" (then only in that provider's credential header); a provider key
// never reaches a client (bodies, headers, errors, local replies, streams), even when an upstream echoes the
// request's credentials back; neither appears in any log line at any level.

const (
	clientKey      = "client-secret-0123456789"
	otherClientKey = "client-other-secret-9876543210"
	entraToken     = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-provider-token"
)

// credConfig has one provider per dialect, plus an azure-openai provider that sends an Entra token.
const credConfig = `{
  "providers": [
    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "az-provider-key",
     "models": [{"name": "gpt-4o", "deployment": "gpt4o-prod"}]},
    {"name": "azure-entra", "dialect": "azure-openai", "host": "entra.openai.azure.com", "api_key": "` + entraToken + `", "auth": "bearer",
     "models": [{"name": "gpt-4o-entra", "deployment": "gpt4o-entra"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama.eastus2.models.ai.azure.com", "api_key": "ai-provider-key",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct", "deployment": "llama3-blue"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "et-provider-key",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"}]},
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-provider-openai",
     "models": [{"name": "gpt-4.1"}]}
  ],
  "max_request_bytes": 65536
}`

// providerKeys are every provider key of credConfig, hardeningConfig and faultConfig.
var providerKeys = []string{"az-provider-key", entraToken, "ai-provider-key", "et-provider-key", "sk-provider-openai"}

// credProvider is one provider of credConfig: the model that reaches it, its dialect and the credential
// headers it must receive (with the key given).
type credProvider struct {
	name, model, key string
	dialect          translate.Dialect
	auth             func(key string) map[string]string
}

var credProviders = []credProvider{
	{"azure-east", "gpt-4o", "az-provider-key", translate.AzureOpenAI, func(k string) map[string]string { return map[string]string{"api-key": k} }},
	{"azure-entra", "gpt-4o-entra", entraToken, translate.AzureOpenAI, func(k string) map[string]string { return map[string]string{"authorization": "Bearer " + k} }},
	{"llama", "llama-3-70b", "ai-provider-key", translate.AzureAI, func(k string) map[string]string {
		return map[string]string{"api-key": k, "authorization": "Bearer " + k}
	}},
	{"eternal", "intellect-1", "et-provider-key", translate.EternalAI, func(k string) map[string]string { return map[string]string{"authorization": "Bearer " + k} }},
	{"openai", "gpt-4.1", "sk-provider-openai", translate.OpenAI, func(k string) map[string]string { return map[string]string{"authorization": "Bearer " + k} }},
}

// credRequest asks for the provider's model in the client dialect's own shape, with the given client
// credential headers.
func credRequest(client translate.Dialect, p credProvider, stream bool, creds ...[2]string) exchange {
	ex := pairRequest(client, p.model)(stream)
	ex.config = credConfig
	var headers [][2]string
	for _, h := range ex.headers {
		if h[0] != "authorization" && h[0] != "api-key" {
			headers = append(headers, h)
		}
	}
	ex.headers = append(headers, creds...)
	return ex
}

var clientCredentials = []struct {
	name    string
	headers [][2]string
	key     string // the key the filter reads
}{
	{"Authorization: Bearer", [][2]string{{"authorization", "Bearer " + clientKey}}, clientKey},
	{"api-key", [][2]string{{"api-key", clientKey}}, clientKey},
	{"both, different keys", [][2]string{{"authorization", "Bearer " + clientKey}, {"api-key", otherClientKey}}, clientKey},
	{"Authorization: Basic and api-key", [][2]string{{"authorization", "Basic " + otherClientKey}, {"api-key", clientKey}}, clientKey},
}

// checkNoSecret fails when any header or body byte holds one of the secrets.
func checkNoSecret(t *testing.T, where string, head map[string]string, body []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for k, v := range head {
			if strings.Contains(v, s) || strings.Contains(k, s) {
				t.Errorf("%s header %s carries the secret %q: %q", where, k, s, v)
			}
		}
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("%s body carries the secret %q: %.300s", where, s, body)
		}
	}
}

// checkLogs fails when a log line at any level holds one of the secrets.
func checkLogs(t *testing.T, logs map[string][]string, secrets ...string) {
	t.Helper()
	for level, lines := range logs {
		for _, l := range lines {
			for _, s := range secrets {
				if strings.Contains(l, s) {
					t.Errorf("a %s log line carries the secret %q: %s", level, s, l)
				}
			}
		}
	}
}

var clientDialects = []translate.Dialect{translate.OpenAI, translate.AzureOpenAI, translate.AzureAI, translate.EternalAI}

// TestClientKeyNeverReachesProviders: every provider dialect (and the Entra form), every client dialect,
// both client credential headers: only the provider's own credential goes upstream.
func TestClientKeyNeverReachesProviders(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, p := range credProviders {
				for _, client := range clientDialects {
					for _, cred := range clientCredentials {
						t.Run(p.name+"/"+client.String()+" client/"+cred.name, func(t *testing.T) {
							stop := hostLogs()
							o := run(t, md, answer(credRequest(client, p, false, cred.headers...), 200, jsonHeaders, chatOK))
							logs := stop()
							o.assertRules(t)
							if o.upstreamCalls != 1 {
								t.Fatalf("no upstream request: %d %s", o.status, o.clientBody)
							}
							checkNoSecret(t, "upstream", o.upstreamHead, o.upstreamBody, clientKey, otherClientKey)
							for name, want := range p.auth(p.key) {
								if got := o.upstreamHead[name]; got != want {
									t.Errorf("upstream %s = %q, want %q", name, got, want)
								}
							}
							for _, name := range []string{"authorization", "api-key"} {
								if _, want := p.auth(p.key)[name]; !want && o.upstreamHead[name] != "" {
									t.Errorf("upstream %s = %q: not this provider's credential header", name, o.upstreamHead[name])
								}
							}
							checkNoSecret(t, "client", o.clientHead, o.clientBody, providerKeys...)
							checkLogs(t, logs, append([]string{clientKey, otherClientKey}, providerKeys...)...)
						})
					}
				}
			}
		})
	}
}

// passthroughConfig is credConfig with every provider forwarding the client's key.
func passthroughConfig() string {
	cfg := credConfig
	for _, k := range providerKeys {
		cfg = strings.Replace(cfg, `"api_key": "`+k+`"`, `"auth": "passthrough"`, 1)
	}
	// azure-entra cannot be both bearer and passthrough: it forwards the client's key as api-key like any
	// passthrough azure-openai provider.
	return strings.Replace(cfg, `"auth": "passthrough", "auth": "bearer"`, `"auth": "passthrough"`, 1)
}

// TestPassthroughForwardsClientKeyOnlyInProviderHeader: with "auth": "passthrough" the client's key arrives
// in the provider's credential header(s), and nowhere else.
func TestPassthroughForwardsClientKeyOnlyInProviderHeader(t *testing.T) {
	cfg := passthroughConfig()
	if strings.Contains(cfg, "api_key") {
		t.Fatalf("config still names keys: %s", cfg)
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, p := range credProviders {
				auth := p.auth
				if p.name == "azure-entra" {
					auth = credProviders[0].auth
				}
				for _, client := range clientDialects {
					for _, cred := range clientCredentials {
						t.Run(p.name+"/"+client.String()+" client/"+cred.name, func(t *testing.T) {
							ex := answer(credRequest(client, p, false, cred.headers...), 200, jsonHeaders, chatOK)
							ex.config = cfg
							stop := hostLogs()
							o := run(t, md, ex)
							logs := stop()
							o.assertRules(t)
							if o.upstreamCalls != 1 {
								t.Fatalf("no upstream request: %d %s", o.status, o.clientBody)
							}
							want := auth(cred.key)
							var carrying []string
							for name, v := range o.upstreamHead {
								if strings.Contains(v, cred.key) {
									carrying = append(carrying, name)
									if v != want[name] {
										t.Errorf("upstream %s = %q, want %q", name, v, want[name])
									}
								}
							}
							sort.Strings(carrying)
							var wantNames []string
							for name := range want {
								wantNames = append(wantNames, name)
							}
							sort.Strings(wantNames)
							if strings.Join(carrying, ",") != strings.Join(wantNames, ",") {
								t.Errorf("the client key went upstream in %v, want exactly %v", carrying, wantNames)
							}
							other := otherClientKey
							if cred.key == otherClientKey {
								other = clientKey
							}
							checkNoSecret(t, "upstream", o.upstreamHead, o.upstreamBody, other)
							if bytes.Contains(o.upstreamBody, []byte(cred.key)) {
								t.Errorf("the client key is in the upstream body")
							}
							checkLogs(t, logs, clientKey, otherClientKey)
						})
					}
				}
			}
		})
	}
}

// echoRow is an upstream that echoes the credentials it received back to the client.
type echoRow struct {
	name   string
	client translate.Dialect
	p      credProvider
	stream bool
	// answer builds the upstream's answer from the credential header values it received.
	answer func(received string) *upstreamAnswer
	status int
	// kept is text of the echo that must survive (the key inside it replaced), "" to skip.
	kept string
}

// echoed is what the upstream writes back: every credential header it got, as "name: value".
func echoed(p credProvider) string {
	auth := p.auth(p.key)
	names := make([]string, 0, len(auth))
	for n := range auth {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+": "+auth[n])
	}
	return strings.Join(parts, "; ")
}

func echoRows() []echoRow {
	var rows []echoRow
	for _, p := range credProviders {
		envelope := func(msg string) string {
			if p.dialect == translate.AzureAI {
				return `{"error":{"code":"Unauthorized","message":` + string(translate.JSONString(msg)) + `,"status":401,"details":[]}}`
			}
			return `{"error":{"message":` + string(translate.JSONString(msg)) + `,"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
		}
		for _, client := range clientDialects {
			rows = append(rows,
				echoRow{name: p.name + "/" + client.String() + " client/401 in the provider's envelope", client: client, p: p, status: 401,
					kept: "Incorrect API key provided", answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 401, headers: jsonHeaders, chunks: []string{envelope("Incorrect API key provided: " + received)}}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/500 plain text", client: client, p: p, status: 500,
					kept: "upstream saw", answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 500, headers: [][2]string{{"content-type", "text/plain"}}, chunks: []string{"upstream saw " + received}}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/200 with a debug field, key cut across chunks", client: client, p: p, status: 200,
					kept: "debug", answer: func(received string) *upstreamAnswer {
						body := strings.TrimSuffix(chatOK, "}") + `,"debug":` + string(translate.JSONString(received)) + `}`
						return &upstreamAnswer{status: 200, headers: jsonHeaders, chunks: split([]byte(body), 7)}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/echo in response headers", client: client, p: p, status: 200,
					answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 200, chunks: []string{chatOK}, headers: [][2]string{{"content-type", "application/json"},
							{"x-echo-credentials", received}, {"www-authenticate", `Bearer realm="` + received + `"`}}}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/stream event, key cut across chunks", client: client, p: p, stream: true, status: 200,
					kept: "the key was", answer: func(received string) *upstreamAnswer {
						ev := `{"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` +
							string(translate.JSONString("the key was "+received)) + `},"finish_reason":null}]}`
						return &upstreamAnswer{status: 200, headers: eventHeaders, chunks: split([]byte(events(ev, chunkStop, "[DONE]")), 11)}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/stream cut after an echo", client: client, p: p, stream: true, status: 200,
					answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 200, headers: eventHeaders, chunks: []string{events(`{"id":"a","choices":[],"x":` +
							string(translate.JSONString(received)) + `}`), "data: " + string(translate.JSONString(received))}}
					}},
				echoRow{name: p.name + "/" + client.String() + " client/stream error event", client: client, p: p, stream: true, status: 200,
					answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 200, headers: eventHeaders, chunks: []string{events(envelope("bad key " + received))}}
					}},
			)
			if p.dialect == translate.EternalAI {
				rows = append(rows, echoRow{name: p.name + "/" + client.String() + " client/onchain_data echo", client: client, p: p, status: 200,
					answer: func(received string) *upstreamAnswer {
						return &upstreamAnswer{status: 200, headers: jsonHeaders, chunks: []string{`{"id":"e","object":"chat.completion","choices":[],` +
							`"onchain_data":{"infer_tx":` + string(translate.JSONString(received)) + `,"infer_id":1}}`}}
					}})
			}
		}
	}
	return rows
}

// TestProviderKeyNeverReachesClients: upstreams that echo the credentials they received, in every place an
// answer has, for every provider and client dialect.
func TestProviderKeyNeverReachesClients(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, r := range echoRows() {
				t.Run(r.name, func(t *testing.T) {
					ex := credRequest(r.client, r.p, r.stream, [2]string{"authorization", "Bearer " + clientKey})
					ex.upstream = r.answer(echoed(r.p))
					stop := hostLogs()
					o := run(t, md, ex)
					logs := stop()
					o.assertRules(t)
					if o.upstreamCalls != 1 {
						t.Fatalf("no upstream request: %d %s", o.status, o.clientBody)
					}
					// The echo is faithful: the upstream did receive these credentials.
					for name, want := range r.p.auth(r.p.key) {
						if o.upstreamHead[name] != want {
							t.Fatalf("upstream %s = %q, want %q", name, o.upstreamHead[name], want)
						}
					}
					if o.status != r.status {
						t.Errorf("status %d, want %d: %s", o.status, r.status, o.clientBody)
					}
					checkNoSecret(t, "client", o.clientHead, o.clientBody, providerKeys...)
					if r.kept != "" && (!bytes.Contains(o.clientBody, []byte(r.kept)) || !bytes.Contains(o.clientBody, []byte(redact.Placeholder))) {
						t.Errorf("the echo should reach the client with the key replaced by %s: %s", redact.Placeholder, o.clientBody)
					}
					if r.status >= 400 {
						checkErrorEnvelope(t, r.client, r.status, o.clientBody, "")
					}
					if r.stream {
						checkStreamEnd(t, r.client, o.clientBody, !bytes.Contains(o.clientBody, []byte(`"finish_reason":"stop"`)))
					} else if r.status < 400 && !gjson.ValidBytes(o.clientBody) {
						t.Errorf("redaction broke the JSON: %s", o.clientBody)
					}
					checkLogs(t, logs, providerKeys...)
				})
			}
		})
	}
}

// TestSecretsNeverLogged: the plugin's log lines at every level, from a start, a refused start, local
// replies and broken upstreams, never hold a provider or client key. The capture itself is checked.
func TestSecretsNeverLogged(t *testing.T) {
	secrets := append([]string{clientKey, otherClientKey}, providerKeys...)
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			stop := hostLogs()
			ex := credRequest(translate.OpenAI, credProviders[4], false, [2]string{"authorization", "Bearer " + clientKey})
			o := run(t, md, answer(ex, 200, [][2]string{{"content-type", "application/json"}, {"content-encoding", "br"}}, "\x00br"))
			o.assertRules(t)
			ex = credRequest(translate.OpenAI, credProviders[2], true, [2]string{"api-key", clientKey})
			ex.config = withSetting(credConfig, `"max_event_bytes": 1024`)
			o = run(t, md, answer(ex, 200, eventHeaders, split([]byte(events(strings.Repeat("x", 7000))), 512)...))
			o.assertRules(t)
			ex = credRequest(translate.AzureAI, credProviders[0], false, [2]string{"api-key", clientKey})
			ex.body = []string{`{"model":`}
			run(t, md, ex).assertRules(t)
			logs := stop()
			if !containsLine(logs["info"], "aidialect: started") || !containsLine(logs["warn"], "content-encoding") ||
				!containsLine(logs["warn"], "max_event_bytes") {
				t.Fatalf("the log capture missed the plugin's lines: %q", logs)
			}
			checkLogs(t, logs, secrets...)
		})
	}
	// A refused start names the field, never the key (native mode: api_key_env needs an environment).
	for _, c := range []struct{ name, config string }{
		{"key with a line break", strings.Replace(credConfig, `"api_key": "sk-provider-openai"`, `"api_key": "sk-provider-openai\nx"`, 1)},
		{"key in the wrong place", strings.Replace(credConfig, `"api_key": "sk-provider-openai"`, `"api_key": "sk-provider-openai", "apikey": "sk-provider-openai"`, 1)},
		{"key from an environment with a NUL", strings.Replace(credConfig, `"api_key": "sk-provider-openai"`, `"api_key_env": "OPENAI_KEY"`, 1)},
	} {
		t.Run("refused start/"+c.name, func(t *testing.T) {
			stop := hostLogs()
			o := run(t, modes[0], exchange{config: c.config, env: map[string]string{"OPENAI_KEY": "sk-provider-openai\x00"},
				method: "GET", path: "/v1/models"})
			logs := stop()
			if len(o.criticalLogs) == 0 {
				t.Fatalf("the plugin started")
			}
			checkLogs(t, logs, secrets...)
			checkLogs(t, map[string][]string{"start": o.criticalLogs}, secrets...)
		})
	}
}

// TestConsumerKeysByDigest: consumers are configured by the SHA-256 of their key; a key matches by its
// digest, and a key that differs in its last byte does not. (The comparison is constant-time by
// construction: config.authenticate compares every consumer's digest with subtle.ConstantTimeCompare and
// never stops early; timing is not measured here.)
func TestConsumerKeysByDigest(t *testing.T) {
	const key = "team-key-0123456789abcdef"
	sum := sha256.Sum256([]byte(key))
	lower := hex.EncodeToString(sum[:])
	cfg := withSetting(credConfig, `"consumers": [
    {"name": "decoy", "key_sha256": "`+hexSum(key[:len(key)-1]+"e")+`"},
    {"name": "team", "key_sha256": "`+lower+`", "models": ["gpt-*"]}]`)
	upper := strings.Replace(cfg, lower, strings.ToUpper(lower), 1)
	last := key[:len(key)-1] + string(key[len(key)-1]^1)
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, c := range []struct {
				name   string
				config string
				creds  [][2]string
				status int
			}{
				{"matching key as Bearer", cfg, [][2]string{{"authorization", "Bearer " + key}}, 200},
				{"matching key as api-key", cfg, [][2]string{{"api-key", key}}, 200},
				{"digest written in upper case", upper, [][2]string{{"api-key", key}}, 200},
				{"lower-case bearer scheme", cfg, [][2]string{{"authorization", "bearer " + key}}, 200},
				{"last byte differs", cfg, [][2]string{{"authorization", "Bearer " + last}}, 401},
				{"a key one last byte away is another consumer's", cfg, [][2]string{{"authorization", "Bearer " + key[:len(key)-1] + "e"}}, 200},
				{"one byte short", cfg, [][2]string{{"authorization", "Bearer " + key[:len(key)-1]}}, 401},
				{"one byte more", cfg, [][2]string{{"authorization", "Bearer " + key + "0"}}, 401},
				{"first byte differs", cfg, [][2]string{{"api-key", "u" + key[1:]}}, 401},
				{"the digest itself as the key", cfg, [][2]string{{"api-key", lower}}, 401},
				{"no key", cfg, nil, 401},
				{"empty Bearer", cfg, [][2]string{{"authorization", "Bearer "}}, 401},
			} {
				t.Run(c.name, func(t *testing.T) {
					ex := answer(credRequest(translate.OpenAI, credProviders[4], false, c.creds...), 200, jsonHeaders, chatOK)
					ex.config = c.config
					o := run(t, md, ex)
					o.assertRules(t)
					if c.status == 401 {
						checkRefusal(t, o, translate.OpenAI, 401, "unauthorized", "")
						return
					}
					if o.upstreamCalls != 1 || o.status != 200 {
						t.Fatalf("%d %s", o.status, o.clientBody)
					}
					checkNoSecret(t, "upstream", o.upstreamHead, o.upstreamBody, key)
					if o.upstreamHead["authorization"] != "Bearer sk-provider-openai" {
						t.Errorf("%q", o.upstreamHead)
					}
				})
			}
		})
	}
}

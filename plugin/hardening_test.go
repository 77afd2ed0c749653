package main

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/translate"
)

// The bad-input catalogue (issue 6 item 1): requests a careless or hostile client can send. Each row runs in
// both modes and asserts the client's answer (status, envelope of its dialect, x-aidialect-error) and that
// nothing went upstream; the few rows that are meant to pass through assert what went upstream instead.

// hardeningConfig is testConfig with room for large bodies (10,000-deep nesting, 10 KiB model names) and a
// glob that sends any llama-* name to the azure-ai provider without a configured deployment.
const hardeningConfig = `{
  "providers": [
    {"name": "azure-east", "dialect": "azure-openai", "host": "res.openai.azure.com", "api_key": "az-provider-key",
     "models": [{"name": "gpt-4o", "deployment": "gpt4o-prod"}, {"name": "gpt-35-*"}]},
    {"name": "llama", "dialect": "azure-ai", "host": "llama.eastus2.models.ai.azure.com", "api_key": "ai-provider-key",
     "models": [{"name": "llama-3-70b", "model": "Meta-Llama-3-70B-Instruct", "deployment": "llama3-blue"}, {"name": "llama-*"}]},
    {"name": "eternal", "dialect": "eternalai", "host": "api.eternalai.org", "api_key": "et-provider-key",
     "models": [{"name": "intellect-1", "model": "PrimeIntellect/INTELLECT-1-Instruct"}]},
    {"name": "openai", "dialect": "openai", "host": "api.openai.com", "api_key": "sk-provider-openai",
     "models": [{"name": "gpt-4.1"}, {"name": "text-embedding-3-small"}]}
  ],
  "default_provider": "openai",
  "max_request_bytes": 262144
}`

// smallLimit is the request limit of the over-limit rows.
const smallLimit = 4096

var (
	// azureDefaultConfig makes the azure-openai provider the default: any model name a client invents becomes
	// a deployment path segment, unless the filter refuses it.
	azureDefaultConfig = strings.Replace(hardeningConfig, `"default_provider": "openai"`, `"default_provider": "azure-east"`, 1)
	// noDefaultConfig has no default provider: unknown names are 404 model_not_found.
	noDefaultConfig = strings.Replace(hardeningConfig, `"default_provider": "openai",`, ``, 1)
	smallConfig     = strings.Replace(hardeningConfig, `262144`, `4096`, 1)
	rejectConfig    = withSetting(hardeningConfig, `"unknown_paths": "reject"`)
	passthroughAuth = strings.Replace(hardeningConfig, `"api_key": "az-provider-key"`, `"auth": "passthrough"`, 1)
)

const userMessages = `"messages":[{"role":"user","content":"hi"}]`

// clientShape is how one client dialect asks for chat completions; body(extra) is a valid body with extra
// members appended (extra starts with a comma).
type clientShape struct {
	name    string
	client  translate.Dialect
	path    string // with the query the dialect needs
	azure   bool   // the path carries api-version
	headers [][2]string
	body    func(extra string) string
}

var clientShapes = []clientShape{
	{"openai", translate.OpenAI, "/v1/chat/completions", false,
		[][2]string{{"authorization", "Bearer client-key"}},
		func(extra string) string { return `{"model":"gpt-4.1",` + userMessages + extra + `}` }},
	{"azure-openai deployment path", translate.AzureOpenAI, "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", true,
		[][2]string{{"api-key", "client-key"}},
		func(extra string) string { return `{` + userMessages + extra + `}` }},
	{"azure-openai v1 path", translate.AzureOpenAI, "/openai/v1/chat/completions", false,
		[][2]string{{"api-key", "client-key"}},
		func(extra string) string { return `{"model":"gpt-4o",` + userMessages + extra + `}` }},
	{"azure-ai", translate.AzureAI, "/chat/completions?api-version=2024-05-01-preview", true,
		[][2]string{{"authorization", "Bearer client-key"}},
		func(extra string) string { return `{"model":"llama-3-70b",` + userMessages + extra + `}` }},
	{"eternalai", translate.EternalAI, "/v1/chat/completions", false,
		[][2]string{{"authorization", "Bearer client-key"}},
		func(extra string) string {
			return `{"model":"intellect-1","chain_id":"8453",` + userMessages + extra + `}`
		}},
}

func (s clientShape) request(body ...string) exchange {
	return exchange{config: hardeningConfig, method: "POST", path: s.path,
		headers: append([][2]string{{"content-type", "application/json"}}, s.headers...), body: body}
}

// badInput is one catalogue row.
type badInput struct {
	name   string
	ex     exchange
	client translate.Dialect // whose envelope the answer must be in
	status int
	code   string
	param  string // when set: the envelope's param (openai family) or target (azure-ai)
	// passes marks a row meant to go upstream; it asserts what went there instead of a refusal.
	passes func(t *testing.T, o *outcome)
}

func refused(name string, ex exchange, client translate.Dialect, status int, code, param string) badInput {
	return badInput{name: name, ex: ex, client: client, status: status, code: code, param: param}
}

func badInputs() []badInput {
	var rows []badInput
	add := func(r ...badInput) { rows = append(rows, r...) }
	openai := clientShapes[0]
	azureDeployment := clientShapes[1]
	azureAI := clientShapes[3]
	eternal := clientShapes[4]
	chat := func(body ...string) exchange { return openai.request(body...) }
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }

	// Every client dialect, the same mistakes in its own shape.
	for _, s := range clientShapes {
		valid := s.body("")
		withHeaders := func(ex exchange, h ...[2]string) exchange { ex.headers = append(ex.headers, h...); return ex }
		add(
			refused(s.name+": truncated JSON", s.request(valid[:len(valid)-1]), s.client, 400, "invalid_json", ""),
			refused(s.name+": body is an array", s.request(`[`+valid+`]`), s.client, 400, "invalid_json", ""),
			refused(s.name+": escaped duplicate key", s.request(s.body(`,"stream":false,"str\u0065am":true`)), s.client, 400, "invalid_json", "stream"),
			refused(s.name+": stream is a string", s.request(s.body(`,"stream":"true"`)), s.client, 400, "invalid_parameter", "stream"),
			refused(s.name+": max_tokens is a string", s.request(s.body(`,"max_tokens":"16"`)), s.client, 400, "invalid_parameter", "max_tokens"),
			refused(s.name+": invalid UTF-8 in a string", s.request(strings.Replace(valid, `"hi"`, "\"h\xffi\"", 1)), s.client, 400, "invalid_json", ""),
			refused(s.name+": 10,000-deep arrays", s.request(s.body(`,"tools":`+deep("[", "]", 10000))), s.client, 400, "invalid_json", ""),
			refused(s.name+": declared body over max_request_bytes", func() exchange {
				ex := s.request(valid)
				ex.config = smallConfig
				return withHeaders(ex, [2]string{"content-length", "4097"})
			}(), s.client, 413, "body_too_large", ""),
			refused(s.name+": gzip request body", withHeaders(s.request("\x1f\x8b\x08\x00binary"), [2]string{"content-encoding", "gzip"}),
				s.client, 415, "unsupported_content_encoding", ""),
			refused(s.name+": GET with a body", func() exchange { ex := s.request(valid); ex.method = "GET"; return ex }(),
				s.client, 405, "method_not_allowed", ""),
		)
		if s.azure {
			ex := s.request(valid)
			ex.path = strings.Replace(ex.path, "api-version=", "api-version=%0D%0Ax-evil:%201%0D%0A", 1)
			add(refused(s.name+": api-version with encoded CR/LF", ex, s.client, 400, "invalid_api_version", "api-version"))
		} else {
			ex := s.request(valid)
			ex.path += "?api-version=2024-10-21"
			// The v1 surface takes an api-version; the OpenAI paths take none.
			if s.path == "/openai/v1/chat/completions" {
				ex.path = s.path + "?api-version=2024-10-21"
			}
			add(refused(s.name+": api-version the path does not take", ex, s.client, 400, "invalid_api_version", "api-version"))
		}
	}

	// Bodies that are not one JSON object.
	for _, b := range []struct{ name, body string }{
		{"empty", ""}, {"whitespace", " \r\n\t "}, {"a string", `"gpt-4.1"`}, {"a number", `42`}, {"null", `null`},
		{"true", `true`}, {"two objects", `{"model":"gpt-4.1"}{"model":"gpt-4o"}`}, {"trailing comma", `{"model":"gpt-4.1",}`},
		{"single quotes", `{'model':'gpt-4.1'}`}, {"unterminated string", `{"model":"gpt-4.1`}, {"bare word", `{"model":gpt}`},
		{"NaN", `{"model":"gpt-4.1","temperature":NaN}`}, {"comment", `{"model":"gpt-4.1" /* hi */}`},
		{"raw control character", "{\"model\":\"gpt-4.1\",\"user\":\"a\x01b\"}"}, {"bad escape", `{"model":"gpt-\q"}`},
		{"lone NUL", "\x00"}, {"UTF-8 BOM", "\xef\xbb\xbf{\"model\":\"gpt-4.1\"}"},
	} {
		add(refused("body: "+b.name, chat(b.body), translate.OpenAI, 400, "invalid_json", ""))
	}
	add(refused("body: none at all (POST without a body)", chat(), translate.OpenAI, 400, "invalid_json", ""))

	// Duplicate keys: upstream parsers disagree on which wins, so the filter refuses them.
	add(
		refused("duplicate model", chat(`{"model":"gpt-4.1","model":"gpt-4o",`+userMessages+`}`), translate.OpenAI, 400, "invalid_json", "model"),
		refused(`duplicate model as "mod\u0065l"`, chat(`{"model":"gpt-4.1","mod\u0065l":"gpt-4o",`+userMessages+`}`), translate.OpenAI, 400, "invalid_json", "model"),
		refused(`duplicate model, both escaped`, chat(`{"\u006dodel":"gpt-4.1","mod\u0065l":"gpt-4o",`+userMessages+`}`), translate.OpenAI, 400, "invalid_json", "model"),
		refused("duplicate chain_id", chat(eternal.body(`,"chain_id":"1"`)), translate.OpenAI, 400, "invalid_json", "chain_id"),
		refused("duplicate include_usage inside stream_options", chat(openai.body(`,"stream":true,"stream_options":{"include_usage":false,"include_usage":true}`)),
			translate.OpenAI, 400, "invalid_json", "stream_options.include_usage"),
		refused("duplicate escaped include_usage inside stream_options", chat(openai.body(`,"stream":true,"stream_options":{"include_usage":false,"include_\u0075sage":true}`)),
			translate.OpenAI, 400, "invalid_json", "stream_options.include_usage"),
	)

	// Wrong types for every field the filter reads.
	for _, v := range []string{`42`, `null`, `["gpt-4.1"]`, `{"name":"gpt-4.1"}`, `true`, `""`} {
		add(refused("model is "+v, chat(`{"model":`+v+`,`+userMessages+`}`), translate.OpenAI, 400, "invalid_parameter", "model"))
	}
	add(refused("model missing", chat(`{`+userMessages+`}`), translate.OpenAI, 400, "invalid_parameter", "model"))
	for _, c := range []struct{ field, value, param string }{
		{"stream", `1`, "stream"},
		{"stream", `{}`, "stream"},
		{"stream_options", `"include_usage"`, "stream_options"},
		{"stream_options", `[true]`, "stream_options"},
		{"stream_options", `{"include_usage":"true"}`, "stream_options.include_usage"},
		{"stream_options", `{"include_usage":1}`, "stream_options.include_usage"},
		{"max_tokens", `true`, "max_tokens"},
		{"max_tokens", `[16]`, "max_tokens"},
		{"max_tokens", `16.5`, "max_tokens"},
		{"max_tokens", `1e3`, "max_tokens"},
		{"max_completion_tokens", `"64"`, "max_completion_tokens"},
		{"max_completion_tokens", `{}`, "max_completion_tokens"},
	} {
		add(refused(c.field+" is "+c.value, chat(openai.body(`,"`+c.field+`":`+c.value)), translate.OpenAI, 400, "invalid_parameter", c.param))
	}
	for _, v := range []string{`true`, `{"id":"8453"}`, `["8453"]`, `84.53`, `-8453`} {
		add(refused("chain_id is "+v, chat(`{"model":"intellect-1","chain_id":`+v+`,`+userMessages+`}`), translate.OpenAI, 400, "invalid_parameter", "chain_id"))
	}
	// stop and input are read where the filter rewrites them: for an azure-ai provider a string becomes an
	// array; any other type is refused rather than forwarded for the provider to reject.
	for _, v := range []string{`5`, `{"seq":"x"}`, `true`} {
		add(refused("stop is "+v+" (azure-ai provider)", chat(`{"model":"llama-3-70b",`+userMessages+`,"stop":`+v+`}`), translate.OpenAI, 400, "invalid_parameter", "stop"))
		ex := chat(`{"model":"llama-3-70b","input":` + v + `}`)
		ex.path = "/v1/embeddings"
		add(refused("embeddings input is "+v+" (azure-ai provider)", ex, translate.OpenAI, 400, "invalid_parameter", "input"))
	}
	for _, v := range []string{`5`, `"int8"`, `["float"]`} {
		ex := chat(`{"model":"text-embedding-3-small","input":"hi","encoding_format":` + v + `}`)
		ex.path = "/v1/embeddings"
		add(refused("encoding_format is "+v+" (openai provider)", ex, translate.OpenAI, 400, "invalid_parameter", "encoding_format"))
	}
	add(refused("10,000-deep objects", chat(openai.body(`,"metadata":`+strings.Repeat(`{"a":`, 10000)+`1`+strings.Repeat(`}`, 10000))),
		translate.OpenAI, 400, "invalid_json", ""))
	add(refused("10,000-deep stream_options", chat(openai.body(`,"stream_options":`+strings.Repeat(`{"a":`, 10000)+`1`+strings.Repeat(`}`, 10000))),
		translate.OpenAI, 400, "invalid_json", ""))
	add(refused("invalid UTF-8 in the model", chat("{\"model\":\"gpt-\xc0\xaf4.1\","+userMessages+"}"), translate.OpenAI, 400, "invalid_json", ""))
	add(refused("invalid UTF-8 in a key", chat("{\"model\":\"gpt-4.1\",\"\xed\xa0\x80\":1,"+userMessages+"}"), translate.OpenAI, 400, "invalid_json", ""))

	// Bodies over max_request_bytes.
	big := openai.body(`,"user":"` + strings.Repeat("x", smallLimit) + `"`)
	add(
		refused("streamed body over the limit, content-length understated", func() exchange {
			ex := chat()
			ex.config, ex.body = smallConfig, split([]byte(big), 1000)
			ex.headers = append(ex.headers, [2]string{"content-length", "100"})
			return ex
		}(), translate.OpenAI, 413, "body_too_large", ""),
		refused("streamed body over the limit, no usable content-length", func() exchange {
			ex := chat()
			ex.config, ex.body = smallConfig, split([]byte(big), 1000)
			ex.headers = append(ex.headers, [2]string{"transfer-encoding", "chunked"}, [2]string{"content-length", ""})
			return ex
		}(), translate.OpenAI, 413, "body_too_large", ""),
		refused("streamed body over the limit on a deployment path (routed before the body)", func() exchange {
			ex := azureDeployment.request(split([]byte(azureDeployment.body(`,"user":"`+strings.Repeat("x", smallLimit)+`"`)), 700)...)
			ex.config = smallConfig
			ex.headers = append(ex.headers, [2]string{"content-length", "10"})
			return ex
		}(), translate.AzureOpenAI, 413, "body_too_large", ""),
		refused("declared body over the limit, azure-ai", func() exchange {
			ex := azureAI.request(azureAI.body(""))
			ex.config = smallConfig
			ex.headers = append(ex.headers, [2]string{"content-length", "999999999"})
			return ex
		}(), translate.AzureAI, 413, "body_too_large", ""),
	)

	// Content encodings the filter cannot read.
	for _, enc := range []string{"gzip", "GZIP", "br", "deflate", "gzip, identity", "x-unknown"} {
		ex := chat(openai.body(""))
		ex.headers = append(ex.headers, [2]string{"content-encoding", enc})
		add(refused("content-encoding "+enc, ex, translate.OpenAI, 415, "unsupported_content_encoding", ""))
	}

	// Model names that would be injected into a path segment: to an azure-openai provider (the default here,
	// so any name reaches it) they must be refused, never rendered into :path.
	tenKiB := "gpt-" + strings.Repeat("x", 10<<10)
	for _, name := range []struct{ label, json string }{
		{"with /", `gpt/../../admin`}, {"..", `..`}, {".", `.`}, {"with %2F", `gpt%2F..%2Fadmin`},
		{"with CR/LF", `gpt\r\nx-evil: 1`}, {"with a space", `gpt 4o`}, {"with ?", `gpt?api-version=1`},
		{"with #", `gpt#frag`}, {"with a NUL", `gpt\u0000x`}, {"10 KiB long", tenKiB}, {"non-ASCII", `gpt-4o\u2028`},
	} {
		ex := chat(`{"model":"` + name.json + `",` + userMessages + `}`)
		ex.config = azureDefaultConfig
		add(refused("azure-openai provider, model "+name.label, ex, translate.OpenAI, 400, "invalid_deployment", "model"))
	}
	for _, name := range []struct{ label, path string }{
		{"..", "/openai/deployments/../chat/completions?api-version=2024-10-21"},
		{"%2F", "/openai/deployments/gpt%2F..%2Fx/chat/completions?api-version=2024-10-21"},
		{"a space", "/openai/deployments/gpt 4o/chat/completions?api-version=2024-10-21"},
		{"CR/LF", "/openai/deployments/gpt\r\nx/chat/completions?api-version=2024-10-21"},
		{"65 characters", "/openai/deployments/" + strings.Repeat("d", 65) + "/chat/completions?api-version=2024-10-21"},
		{"empty", "/openai/deployments//chat/completions?api-version=2024-10-21"},
	} {
		ex := azureDeployment.request(azureDeployment.body(""))
		ex.path = name.path
		add(refused("deployment path segment "+name.label, ex, translate.AzureOpenAI, 400, "invalid_deployment", "deployment"))
	}
	// To an openai provider a strange name is just a model name: default-routed, it travels JSON-escaped in the
	// body and nowhere else; without a default provider it is a 404 whose message quotes it escaped and short.
	for _, name := range []struct{ label, json, decoded string }{
		{"with / and ..", `org/../model`, "org/../model"},
		{"with %2F", `a%2Fb`, "a%2Fb"},
		{"with CR/LF", `gpt\r\nx-evil: 1`, "gpt\r\nx-evil: 1"},
		{"with spaces", `my model`, "my model"},
		{"10 KiB long", tenKiB, tenKiB},
	} {
		body := `{"model":"` + name.json + `",` + userMessages + `}`
		decoded := name.decoded
		add(badInput{name: "openai default provider, model " + name.label, ex: chat(body), passes: func(t *testing.T, o *outcome) {
			if o.upstreamHead["x-aidialect-provider"] != "openai" || o.upstreamHead[":path"] != "/v1/chat/completions" {
				t.Errorf("routed to %q %q", o.upstreamHead["x-aidialect-provider"], o.upstreamHead[":path"])
			}
			if got := gjson.GetBytes(o.upstreamBody, "model").String(); got != decoded {
				t.Errorf("model upstream %q", got)
			}
			if string(o.upstreamBody) != body {
				t.Errorf("an untouched body was rewritten: %s", o.upstreamBody)
			}
			for k, v := range o.upstreamHead {
				if strings.Contains(v, decoded) || strings.ContainsAny(v, "\r\n") {
					t.Errorf("the model reached upstream header %s = %.100q", k, v)
				}
			}
		}})
		ex := chat(body)
		ex.config = noDefaultConfig
		add(refused("no default provider, model "+name.label, ex, translate.OpenAI, 404, "model_not_found", "model"))
	}

	// api-version: one dated value, nothing smuggled.
	for _, q := range []struct{ label, query string }{
		{"with an encoded &", "api-version=2024-10-21%26x%3D1"},
		{"with #", "api-version=2024-10-21#frag"},
		{"with a bad escape", "api-version=2024-10-21%zz"},
		{"with a truncated escape", "api-version=2024-10-21%2"},
		{"with encoded CR/LF", "api-version=2024-10-21%0D%0AX-Evil:%201"},
		{"given twice", "api-version=2024-10-21&api-version=2024-02-01"},
		{"given twice, once encoded", "api-version=2024-10-21&api%2Dversion=2024-02-01"},
		{"empty", "api-version="},
		{"without =", "api-version"},
		{"undated", "api-version=latest"},
	} {
		ex := azureDeployment.request(azureDeployment.body(""))
		ex.path = "/openai/deployments/gpt-4o/chat/completions?" + q.query
		add(refused("azure-openai api-version "+q.label, ex, translate.AzureOpenAI, 400, "invalid_api_version", "api-version"))
		ex = azureAI.request(azureAI.body(""))
		ex.path = "/chat/completions?" + q.query
		add(refused("azure-ai api-version "+q.label, ex, translate.AzureAI, 400, "invalid_api_version", "api-version"))
	}
	for _, q := range []struct {
		shape clientShape
		path  string
	}{
		{azureDeployment, "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21&x=1&api-version2=2"},
		{azureAI, "/chat/completions?x=%zz&api-version=2024-05-01-preview&y"},
	} {
		ex := q.shape.request(q.shape.body(""))
		ex.path = q.path
		add(badInput{name: "other query parameters are not forwarded: " + q.path, ex: ex, passes: func(t *testing.T, o *outcome) {
			p := o.upstreamHead[":path"]
			if strings.Count(p, "api-version=") != 1 || strings.ContainsAny(p, "&% ") || strings.Contains(p, "x=") {
				t.Errorf("upstream :path %q", p)
			}
		}})
	}
	for _, q := range []string{"api-version=v2", "api-version=v1%0D%0A", "api-version=v1&api-version=latest"} {
		ex := clientShapes[2].request(clientShapes[2].body(""))
		ex.path = "/openai/v1/chat/completions?" + q
		add(refused("azure-openai v1 path, "+q, ex, translate.AzureOpenAI, 400, "invalid_api_version", "api-version"))
	}

	// Headers the filter copies or acts on.
	add(
		refused("azureml-model-deployment with CR/LF", func() exchange {
			ex := azureAI.request(`{` + userMessages + `}`)
			ex.headers = append(ex.headers, [2]string{"azureml-model-deployment", "llama-x\r\nx-evil: 1"})
			return ex
		}(), translate.AzureAI, 400, "invalid_deployment", "azureml-model-deployment"),
		refused("azureml-model-deployment with a NUL", func() exchange {
			ex := azureAI.request(`{` + userMessages + `}`)
			ex.headers = append(ex.headers, [2]string{"azureml-model-deployment", "llama-x\x00"})
			return ex
		}(), translate.AzureAI, 400, "invalid_deployment", "azureml-model-deployment"),
		refused("extra-parameters with CR/LF (azure-ai client, azure-ai provider)", func() exchange {
			ex := azureAI.request(azureAI.body(""))
			ex.headers = append(ex.headers, [2]string{"extra-parameters", "drop\r\nx-evil: 1"})
			return ex
		}(), translate.AzureAI, 400, "invalid_parameter", "extra-parameters"),
		refused("extra-parameters with an unknown value", func() exchange {
			ex := azureAI.request(azureAI.body(""))
			ex.headers = append(ex.headers, [2]string{"extra-parameters", "allow-everything"})
			return ex
		}(), translate.AzureAI, 400, "invalid_parameter", "extra-parameters"),
		badInput{name: "extra-parameters with CR/LF from an openai client is not copied",
			ex: func() exchange {
				ex := chat(`{"model":"llama-3-70b",` + userMessages + `}`)
				ex.headers = append(ex.headers, [2]string{"extra-parameters", "pass-through\r\nx-evil: 1"})
				return ex
			}(), passes: func(t *testing.T, o *outcome) {
				if o.upstreamHead["extra-parameters"] != "drop" {
					t.Errorf("extra-parameters upstream %q", o.upstreamHead["extra-parameters"])
				}
			}},
		badInput{name: "azureml-model-deployment from an openai client is not copied",
			ex: func() exchange {
				ex := chat(`{"model":"gpt-4.1",` + userMessages + `}`)
				ex.headers = append(ex.headers, [2]string{"azureml-model-deployment", "x\r\nx-evil: 1"})
				return ex
			}(), passes: func(t *testing.T, o *outcome) {
				if _, has := o.upstreamHead["azureml-model-deployment"]; has || o.upstreamHead["x-aidialect-provider"] != "openai" {
					t.Errorf("upstream head %q", o.upstreamHead)
				}
			}},
		badInput{name: "azureml-model-deployment from an openai client never steers an azure-ai provider",
			ex: func() exchange {
				ex := chat(`{"model":"llama-guard",` + userMessages + `}`)
				ex.headers = append(ex.headers, [2]string{"azureml-model-deployment", "gpt-4o-expensive"})
				return ex
			}(), passes: func(t *testing.T, o *outcome) {
				if _, has := o.upstreamHead["azureml-model-deployment"]; has || o.upstreamHead["x-aidialect-provider"] != "llama" {
					t.Errorf("upstream head %q", o.upstreamHead)
				}
			}},
		refused("client key with CR/LF, passthrough provider", func() exchange {
			ex := chat(`{"model":"gpt-4o",` + userMessages + `}`)
			ex.config = passthroughAuth
			ex.headers = [][2]string{{"authorization", "Bearer client-key\r\nx-evil: 1"}}
			return ex
		}(), translate.OpenAI, 401, "unauthorized", ""),
		refused("api-key with a NUL, passthrough provider", func() exchange {
			ex := azureDeployment.request(azureDeployment.body(""))
			ex.config = passthroughAuth
			ex.headers = [][2]string{{"api-key", "client-key\x00"}}
			return ex
		}(), translate.AzureOpenAI, 401, "unauthorized", ""),
	)

	// Issue 10: a header that decides routing or authorisation, sent twice, could be read one way here and
	// another way upstream; the routing header follows the deployment-name rule; client JSON keys never
	// reach a response header unchecked; a client never picks the organization billed with the gateway's key.
	withHeader := func(ex exchange, h ...[2]string) exchange { ex.headers = append(ex.headers, h...); return ex }
	add(
		refused("azureml-model-deployment sent twice", withHeader(azureAI.request(`{`+userMessages+`}`),
			[2]string{"azureml-model-deployment", "llama-3-70b"}, [2]string{"azureml-model-deployment", "gpt-4o-expensive"}),
			translate.AzureAI, 400, "invalid_parameter", "azureml-model-deployment"),
		refused("azureml-model-deployment as a list", withHeader(azureAI.request(`{`+userMessages+`}`),
			[2]string{"azureml-model-deployment", "llama-3-70b,gpt-4o-expensive"}),
			translate.AzureAI, 400, "invalid_deployment", "azureml-model-deployment"),
		refused("azureml-model-deployment walking a path", withHeader(azureAI.request(`{`+userMessages+`}`),
			[2]string{"azureml-model-deployment", "../llama"}),
			translate.AzureAI, 400, "invalid_deployment", "azureml-model-deployment"),
		refused("authorization sent twice", withHeader(chat(`{"model":"gpt-4.1",`+userMessages+`}`),
			[2]string{"authorization", "Bearer other-key"}), translate.OpenAI, 400, "invalid_parameter", "authorization"),
		refused("api-key sent twice", withHeader(azureDeployment.request(azureDeployment.body("")),
			[2]string{"api-key", "other-key"}), translate.AzureOpenAI, 400, "invalid_parameter", "api-key"),
		refused("extra-parameters sent twice", withHeader(azureAI.request(azureAI.body("")),
			[2]string{"extra-parameters", "drop"}, [2]string{"extra-parameters", "pass-through"}),
			translate.AzureAI, 400, "invalid_parameter", "extra-parameters"),
		refused("content-length sent twice", withHeader(chat(`{"model":"gpt-4.1",`+userMessages+`}`),
			[2]string{"content-length", "63"}, [2]string{"content-length", "12"}), translate.OpenAI, 400, "invalid_parameter", "content-length"),
		badInput{name: "the routing header sent twice on an unknown path is removed, every copy",
			ex: func() exchange {
				ex := withHeader(chat(""), [2]string{"x-aidialect-provider", "openai"}, [2]string{"x-aidialect-provider", "openai"})
				ex.path, ex.method, ex.body = "/v1/files", "GET", nil
				return ex
			}(),
			passes: func(t *testing.T, o *outcome) {
				if _, has := o.upstreamHead["x-aidialect-provider"]; has {
					t.Errorf("a client-sent routing header survived: %q", o.upstreamHead)
				}
			}},
		refused("content-encoding sent twice", withHeader(chat(`{"model":"gpt-4.1",`+userMessages+`}`),
			[2]string{"content-encoding", "identity"}, [2]string{"content-encoding", "gzip"}),
			translate.OpenAI, 400, "invalid_parameter", "content-encoding"),
		badInput{name: "a dropped parameter named with CR/LF stays inside its header",
			ex: chat(`{"model":"llama-3-70b",` + userMessages + `,"x\r\nSet-Cookie: a=1":1,"plain_extra":2}`),
			passes: func(t *testing.T, o *outcome) {
				got := o.clientHead["x-aidialect-dropped-params"]
				if !translate.HeaderSafe(got) || !strings.Contains(got, "plain_extra") || !strings.Contains(got, `"x\r\nSet-Cookie: a=1"`) {
					t.Errorf("x-aidialect-dropped-params %q", got)
				}
				if _, has := o.clientHead["set-cookie"]; has {
					t.Errorf("a client's key became a response header")
				}
			}},
		badInput{name: "thousands of dropped parameters make a bounded header",
			ex: chat(`{"model":"llama-3-70b",` + userMessages + manyParams(3000) + `}`),
			passes: func(t *testing.T, o *outcome) {
				if got := o.clientHead["x-aidialect-dropped-params"]; len(got) > 1100 || !strings.HasSuffix(got, ",...") {
					t.Errorf("x-aidialect-dropped-params has %d bytes: %.80q...", len(got), got)
				}
			}},
		badInput{name: "OpenAI-Organization and OpenAI-Project are not forwarded with the gateway's key",
			ex: withHeader(chat(`{"model":"gpt-4.1",`+userMessages+`}`), [2]string{"openai-organization", "org-client"},
				[2]string{"openai-project", "proj-client"}),
			passes: func(t *testing.T, o *outcome) {
				if o.upstreamHead["openai-organization"] != "" || o.upstreamHead["openai-project"] != "" {
					t.Errorf("the client chose the billed account: %q", o.upstreamHead)
				}
			}},
		badInput{name: "the upstream's OpenAI-Organization and OpenAI-Project (the operator's account) do not reach the client",
			ex: answered(chat(`{"model":"gpt-4.1",`+userMessages+`}`), 200, append([][2]string{{"openai-organization", "org-operator"},
				{"openai-project", "proj-operator"}, {"openai-processing-ms", "12"}}, jsonHeaders...), chatOK),
			passes: func(t *testing.T, o *outcome) {
				if o.status != 200 || o.clientHead["openai-organization"] != "" || o.clientHead["openai-project"] != "" ||
					o.clientHead["openai-processing-ms"] != "12" {
					t.Errorf("client got %d %q", o.status, o.clientHead)
				}
			}},
		badInput{name: "OpenAI-Organization is forwarded with the client's own key (passthrough)",
			ex: func() exchange {
				ex := withHeader(chat(`{"model":"gpt-4.1",`+userMessages+`}`), [2]string{"openai-organization", "org-client"})
				ex.config = strings.Replace(hardeningConfig, `"api_key": "sk-provider-openai"`, `"auth": "passthrough"`, 1)
				return ex
			}(),
			passes: func(t *testing.T, o *outcome) {
				if o.upstreamHead["openai-organization"] != "org-client" {
					t.Errorf("upstream head %q", o.upstreamHead)
				}
			}},
	)

	// Unknown paths and methods.
	unknownPaths := []string{"/healthz", "/v1/assistants", "/v1/chat/completions/extra", "/V1/chat/completions",
		"/v1/../admin", "/openai/deployments/x/../../v1/chat/completions", "/v1/chat/completions%00", ""}
	for _, p := range unknownPaths {
		path := p
		ex := exchange{config: hardeningConfig, method: "POST", path: path,
			headers: [][2]string{{"authorization", "Bearer client-key"}, {"x-aidialect-provider", "openai"}, {"accept-encoding", "gzip"}},
			body:    []string{`{"model":`}}
		add(badInput{name: "passthrough: unknown path " + strings.ToValidUTF8(path, "?"), ex: ex, passes: func(t *testing.T, o *outcome) {
			h := o.upstreamHead
			if _, has := h["x-aidialect-provider"]; has {
				t.Errorf("a client-sent routing header went upstream")
			}
			if h[":path"] != path || h[":authority"] != "gateway.local" || h["authorization"] != "Bearer client-key" ||
				h["api-key"] != "" || h["accept-encoding"] != "gzip" || string(o.upstreamBody) != `{"model":` {
				t.Errorf("not untouched: %q %s", h, o.upstreamBody)
			}
		}})
		ex.config = rejectConfig
		add(refused("reject: unknown path "+strings.ToValidUTF8(path, "?"), ex, translate.OpenAI, 404, "unknown_path", ""))
	}
	for _, m := range []string{"PATCH", "DELETE", "OPTIONS", "CONNECT"} {
		method := m
		add(badInput{name: "passthrough: " + method + " on an unknown path",
			ex: exchange{config: hardeningConfig, method: method, path: "/admin"}, passes: func(t *testing.T, o *outcome) {
				if o.upstreamHead[":method"] != method || o.upstreamHead[":path"] != "/admin" {
					t.Errorf("%q", o.upstreamHead)
				}
			}})
	}
	add(refused("path outside path_prefix, reject", exchange{config: withSetting(rejectConfig, `"path_prefix": "/llm"`),
		method: "POST", path: "/llmx/v1/chat/completions", body: []string{openai.body("")}}, translate.OpenAI, 404, "unknown_path", ""))

	// HEAD and GET (and other methods) on operation paths, with and without bodies.
	for _, c := range []struct {
		method string
		shape  clientShape
		body   bool
	}{
		{"GET", openai, false}, {"HEAD", openai, false}, {"GET", azureAI, true}, {"HEAD", azureDeployment, true},
		{"PUT", openai, true}, {"DELETE", eternal, false}, {"OPTIONS", azureDeployment, false}, {"get", openai, true},
	} {
		ex := c.shape.request()
		if c.body {
			ex.body = []string{c.shape.body("")}
		}
		ex.method = c.method
		with := "without"
		if c.body {
			with = "with"
		}
		client := c.shape.client
		if client == translate.EternalAI {
			client = translate.OpenAI // the body that would say EternalAI is never read
		}
		add(refused(c.method+" on "+c.shape.name+" "+with+" a body", ex, client, 405, "method_not_allowed", ""))
	}
	for _, m := range []string{"POST", "HEAD", "DELETE"} {
		add(refused(m+" on /v1/models", exchange{config: hardeningConfig, method: m, path: "/v1/models", body: []string{`{}`}},
			translate.OpenAI, 405, "method_not_allowed", ""))
	}
	return rows
}

// checkRefusal asserts a local answer in the client's dialect, with nothing sent upstream.
func checkRefusal(t *testing.T, o *outcome, client translate.Dialect, status int, code, param string) {
	t.Helper()
	if o.upstreamCalls != 0 {
		t.Fatalf("went upstream (want a local %d %s): %q %.200s", status, code, o.upstreamHead, o.upstreamBody)
	}
	if o.local == nil {
		t.Fatalf("no answer at all (want a local %d %s)", status, code)
	}
	if o.status != status || o.clientHead["x-aidialect-error"] != code {
		t.Fatalf("answered %d %q, want %d %s: %.300s", o.status, o.clientHead["x-aidialect-error"], status, code, o.clientBody)
	}
	if o.clientHead["content-type"] != "application/json" {
		t.Errorf("content-type %q", o.clientHead["content-type"])
	}
	body := o.clientBody
	if !gjson.ValidBytes(body) || !utf8.Valid(body) {
		t.Fatalf("the error body is not valid JSON: %q", body)
	}
	if len(body) > 2048 {
		t.Errorf("the error body is %d bytes: client input must be quoted bounded", len(body))
	}
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		t.Fatalf("no error object: %s", body)
	}
	if m := e.Get("message"); m.Type != gjson.String || m.Str == "" {
		t.Errorf("error.message missing: %s", body)
	}
	gotParam := e.Get("param")
	if client == translate.AzureAI {
		if e.Get("code").String() != code || e.Get("status").Type != gjson.Number || e.Get("status").Int() != int64(status) ||
			e.Get("type").Exists() {
			t.Errorf("not the azure-ai envelope for %d %s: %s", status, code, body)
		}
		gotParam = e.Get("target")
	} else {
		if e.Get("code").String() != code || e.Get("type").Type != gjson.String || e.Get("type").Str == "" ||
			!e.Get("param").Exists() || e.Get("status").Exists() {
			t.Errorf("not the openai-family envelope for %s: %s", code, body)
		}
	}
	if param != "" && gotParam.String() != param {
		t.Errorf("param %q, want %q: %s", gotParam.String(), param, body)
	}
}

// manyParams is n extra parameters an azure-ai provider does not know (",p0000000001":1,...).
func manyParams(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(`,"unknown_parameter_` + strconv.Itoa(i) + `":1`)
	}
	return b.String()
}

// TestBadInputCatalogue is issue 6 item 1.
func TestBadInputCatalogue(t *testing.T) {
	rows := badInputs()
	if len(rows) < 60 {
		t.Fatalf("the catalogue has %d rows, want at least 60", len(rows))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.name] {
			t.Fatalf("duplicate row name %q", r.name)
		}
		seen[r.name] = true
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			for _, r := range rows {
				t.Run(r.name, func(t *testing.T) {
					ex := r.ex
					if r.passes != nil && ex.upstream == nil {
						ex.upstream = &upstreamAnswer{status: 200, headers: jsonHeaders, chunks: []string{chatOK}}
					}
					stop := hostLogs()
					o := run(t, md, ex)
					logs := stop()
					o.assertRules(t)
					checkNoSecret(t, "client", o.clientHead, o.clientBody, providerKeys...)
					checkLogs(t, logs, append([]string{"client-key"}, providerKeys...)...)
					if r.passes != nil {
						if o.upstreamCalls != 1 {
							t.Fatalf("meant to pass through, answered locally %d %s", o.status, o.clientBody)
						}
						r.passes(t, o)
						return
					}
					checkRefusal(t, o, r.client, r.status, r.code, r.param)
				})
			}
		})
	}
}

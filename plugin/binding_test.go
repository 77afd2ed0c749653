package main

import (
	"crypto/hmac"
	stdsha256 "crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// boundID is the id a consumer gets for a provider's response id, computed here from the documented
// construction (SECURITY.md, translate/binding.go) with the standard library: "resp_" and the hex of a
// 128-bit tag, HMAC-SHA256(k_mac, len(name) || name || len(provider) || provider || id), and the id XOR a keystream of
// HMAC-SHA256(k_enc, tag || counter) blocks, where k_mac and k_enc are HMAC-SHA256 under SHA-256(label ||
// secret) of "tag" and "keystream".
func boundID(secret, consumer, provider, id string) string {
	root := stdsha256.Sum256([]byte("aidialect response binding\x00" + secret))
	derive := func(label string) []byte {
		mac := hmac.New(stdsha256.New, root[:])
		mac.Write([]byte(label))
		return mac.Sum(nil)
	}
	mac := hmac.New(stdsha256.New, derive("tag"))
	var length [4]byte
	binary.BigEndian.PutUint32(length[:], uint32(len(consumer)))
	mac.Write(length[:])
	mac.Write([]byte(consumer))
	binary.BigEndian.PutUint32(length[:], uint32(len(provider)))
	mac.Write(length[:])
	mac.Write([]byte(provider))
	mac.Write([]byte(id))
	tag := mac.Sum(nil)[:16]
	out := append([]byte(nil), tag...)
	for n := 0; n*32 < len(id); n++ {
		ks := hmac.New(stdsha256.New, derive("keystream"))
		ks.Write(tag)
		binary.BigEndian.PutUint32(length[:], uint32(n))
		ks.Write(length[:])
		block := ks.Sum(nil)
		for i := n * 32; i < min(len(id), (n+1)*32); i++ {
			out = append(out, id[i]^block[i-n*32])
		}
	}
	return "resp_" + hex.EncodeToString(out)
}

const (
	openAIKey = "sk-provider-openai" // testConfig's openai provider
	azureKey  = "az-provider-key"    // testConfig's azure-east provider
)

// A native Response as the provider sends it, and a stream of its lifecycle.
const (
	storedResponse = `{"id":"resp_A1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1",` +
		`"output":[{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],` +
		`"previous_response_id":null,"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`
	continuedResponse = `{"id":"resp_A2","object":"response","status":"completed","model":"gpt-4.1","output":[],` +
		`"previous_response_id":"resp_A1","usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}`
	storedStream = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_A1\",\"status\":\"in_progress\"}}\n\n" +
		"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_A1\",\"status\":\"in_progress\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"delta\":\"hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_A1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":5,\"output_tokens\":2,\"total_tokens\":7}}}\n\n"
)

// responsesAs is a Responses request by the consumer with key on path (an OpenAI or an Azure OpenAI route).
func responsesAs(key, path, body string) exchange {
	header := [2]string{"authorization", "Bearer " + key}
	if strings.HasPrefix(path, "/openai/") {
		header = [2]string{"api-key", key}
	}
	return exchange{config: withConsumers(testConfig), method: "POST", path: path,
		headers: [][2]string{header, {"content-type", "application/json"}}, body: []string{body}}
}

// wantNotIssued: 400 previous_response_not_found in the client's envelope, param previous_response_id, and
// the provider never called.
func wantNotIssued(t *testing.T, o *outcome) {
	t.Helper()
	wantLocal(400, "previous_response_not_found")(t, o)
	if o.upstreamCalls != 0 {
		t.Fatalf("the provider was called")
	}
	if gjson.GetBytes(o.clientBody, "error.type").String() != "invalid_request_error" ||
		gjson.GetBytes(o.clientBody, "error.param").String() != "previous_response_id" ||
		!strings.Contains(gjson.GetBytes(o.clientBody, "error.message").String(), "not issued to your key") {
		t.Errorf("error body %s", o.clientBody)
	}
}

// wantRefused: 400 code naming param, the provider never called.
func wantRefused(code, param string) func(*testing.T, *outcome) {
	return func(t *testing.T, o *outcome) {
		t.Helper()
		wantLocal(400, code)(t, o)
		if got := gjson.GetBytes(o.clientBody, "error.param").String(); got != param {
			t.Errorf("param %q, want %q: %s", got, param, o.clientBody)
		}
	}
}

// TestConsumersCannotReachEachOthersResponses: with consumers configured, team-a's responses are team-a's:
// the ids it gets are bound to it, it continues them (the provider gets its own id), and ops, sending
// team-a's id, the provider's raw id, a forged tag or a tag for another id, is refused in its own dialect
// without the provider being called; on create, input_tokens and compact, JSON and streams, OpenAI and
// Azure OpenAI routes. Without consumers nothing is bound or refused.
func TestConsumersCannotReachEachOthersResponses(t *testing.T) {
	mineOpenAI := boundID(openAIKey, "team-a", "openai", "resp_A1")
	mineAzure := boundID(azureKey, "team-a", "azure-east", "resp_A1")
	continueWith := func(id string) string {
		return `{"model":"gpt-4.1","input":"and then?","previous_response_id":"` + id + `"}`
	}
	rows := []behaviour{
		{"team-a creates a response: its id comes back bound to team-a",
			answered(responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4.1","input":"hi"}`), 200, jsonHeaders, storedResponse),
			func(t *testing.T, o *outcome) {
				if got := gjson.GetBytes(o.clientBody, "id").String(); got != mineOpenAI || strings.Contains(got, "A1") {
					t.Fatalf("id %q, want %q (the provider's id not readable in it): %s", got, mineOpenAI, o.clientBody)
				}
				if strings.Replace(string(o.clientBody), mineOpenAI, "resp_A1", 1) != storedResponse {
					t.Errorf("more than the id changed: %s", o.clientBody)
				}
			}},
		{"team-a continues its response: the provider gets its own id, the answer names both bound",
			answered(responsesAs("team-a-key", "/v1/responses", continueWith(mineOpenAI)), 200, jsonHeaders, continuedResponse),
			func(t *testing.T, o *outcome) {
				if got := gjson.GetBytes(o.upstreamBody, "previous_response_id").String(); got != "resp_A1" {
					t.Fatalf("the provider got previous_response_id %q: %s", got, o.upstreamBody)
				}
				if gjson.GetBytes(o.clientBody, "previous_response_id").String() != mineOpenAI ||
					gjson.GetBytes(o.clientBody, "id").String() != boundID(openAIKey, "team-a", "openai", "resp_A2") {
					t.Errorf("answer %s", o.clientBody)
				}
			}},
		{"team-a continues on the Azure OpenAI route",
			answered(responsesAs("team-a-key", "/openai/v1/responses", `{"model":"gpt-4o","input":"x","previous_response_id":"`+mineAzure+`"}`),
				200, jsonHeaders, storedResponse),
			func(t *testing.T, o *outcome) {
				if got := gjson.GetBytes(o.upstreamBody, "previous_response_id").String(); got != "resp_A1" {
					t.Fatalf("the provider got previous_response_id %q", got)
				}
				if got := gjson.GetBytes(o.clientBody, "id").String(); got != mineAzure {
					t.Errorf("id %q, want %q", got, mineAzure)
				}
			}},
		{"ops sends team-a's id", responsesAs("ops-key", "/v1/responses", continueWith(mineOpenAI)), wantNotIssued},
		{"ops sends team-a's id on the Azure OpenAI route",
			responsesAs("ops-key", "/openai/v1/responses", `{"model":"gpt-4o","input":"x","previous_response_id":"`+mineAzure+`"}`), wantNotIssued},
		{"ops sends team-a's id to input_tokens", responsesAs("ops-key", "/v1/responses/input_tokens", continueWith(mineOpenAI)), wantNotIssued},
		{"ops sends team-a's id to compact", responsesAs("ops-key", "/v1/responses/compact", continueWith(mineOpenAI)), wantNotIssued},
		{"ops sends team-a's id in a stream request",
			responsesAs("ops-key", "/v1/responses", `{"model":"gpt-4.1","stream":true,"input":"x","previous_response_id":"`+mineOpenAI+`"}`), wantNotIssued},
		{"ops sends the provider's raw id", responsesAs("ops-key", "/v1/responses", continueWith("resp_A1")), wantNotIssued},
		{"team-a sends the provider's raw id", responsesAs("team-a-key", "/v1/responses", continueWith("resp_A1")), wantNotIssued},
		{"ops sends a forged tag", responsesAs("ops-key", "/v1/responses", continueWith("resp_"+strings.Repeat("0", 32)+mineOpenAI[len("resp_")+32:])), wantNotIssued},
		{"ops sends its own tag for another id", responsesAs("ops-key", "/v1/responses",
			continueWith(boundID(openAIKey, "ops", "openai", "resp_B1")[:len("resp_")+32]+mineOpenAI[len("resp_")+32:])), wantNotIssued},
		{"the old format (the provider's id and a tag)", responsesAs("team-a-key", "/v1/responses",
			continueWith("resp_A1_"+mineOpenAI[len("resp_"):len("resp_")+32])), wantNotIssued},
		// A provider that names a response after the client's request_id (vLLM) would make one under any id:
		// refused while binding (and no client sees a provider's id to ask for).
		{"ops asks the provider to name its response", responsesAs("ops-key", "/v1/responses",
			`{"model":"gpt-4.1","input":"hi","store":false,"request_id":"resp_A1"}`), wantRefused("unsupported_parameter", "request_id")},
		{"a message with an id and no content", responsesAs("team-a-key", "/v1/responses",
			`{"model":"gpt-4.1","input":[{"type":"message","id":"msg_A1"},{"role":"user","content":"go on"}]}`),
			wantRefused("unsupported_parameter", "input[0].content")},
		{"an assistant message with an id and no content", responsesAs("team-a-key", "/v1/responses",
			`{"model":"gpt-4.1","input":[{"id":"msg_A1","role":"assistant"}]}`), wantRefused("unsupported_parameter", "input[0].content")},
		{"a reasoning item with an empty encrypted_content", responsesAs("team-a-key", "/v1/responses",
			`{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_A1","summary":[],"encrypted_content":""}]}`),
			wantRefused("unsupported_parameter", "input[0].encrypted_content")},
		{"a data-only stream: its lifecycle events carry the bound id",
			answered(responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4.1","input":"hi","stream":true}`), 200, eventHeaders,
				"data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_A1\",\"status\":\"in_progress\"}}\n\n"+
					"id: 2\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_A1\",\"status\":\"completed\"}}\n\n"),
			func(t *testing.T, o *outcome) {
				if body := string(o.clientBody); strings.Count(body, mineOpenAI) != 2 || strings.Contains(body, `"resp_A1"`) {
					t.Errorf("client got:\n%s", body)
				}
			}},
		{"team-a's id under another provider's key", responsesAs("team-a-key", "/openai/v1/responses",
			`{"model":"gpt-4o","input":"x","previous_response_id":"`+mineOpenAI+`"}`), wantNotIssued},
		{"team-a streams a response: every lifecycle event carries its bound id",
			answered(responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4.1","input":"hi","stream":true}`), 200, eventHeaders,
				split([]byte(storedStream), 37)...),
			func(t *testing.T, o *outcome) {
				body := string(o.clientBody)
				if n := strings.Count(body, `"id":"`+mineOpenAI+`"`); n != 3 || strings.Contains(body, `"resp_A1"`) {
					t.Fatalf("%d bound ids (want 3: created, in_progress, completed):\n%s", n, body)
				}
				if strings.ReplaceAll(body, mineOpenAI, "resp_A1") != storedStream {
					t.Errorf("more than the ids changed:\n%s", body)
				}
			}},
		{"team-a counts its response's input tokens", answered(responsesAs("team-a-key", "/v1/responses/input_tokens", continueWith(mineOpenAI)),
			200, jsonHeaders, `{"object":"response.input_tokens","input_tokens":12}`),
			func(t *testing.T, o *outcome) {
				if gjson.GetBytes(o.upstreamBody, "previous_response_id").String() != "resp_A1" ||
					string(o.clientBody) != `{"object":"response.input_tokens","input_tokens":12}` {
					t.Errorf("upstream %s, client %s", o.upstreamBody, o.clientBody)
				}
			}},
		{"team-a compacts its response", answered(responsesAs("team-a-key", "/v1/responses/compact", continueWith(mineOpenAI)),
			200, jsonHeaders, `{"id":"resp_C1","object":"response.compaction","output":[],"usage":{"input_tokens":3,"output_tokens":1}}`),
			func(t *testing.T, o *outcome) {
				if gjson.GetBytes(o.upstreamBody, "previous_response_id").String() != "resp_A1" ||
					gjson.GetBytes(o.clientBody, "id").String() != boundID(openAIKey, "team-a", "openai", "resp_C1") {
					t.Errorf("upstream %s, client %s", o.upstreamBody, o.clientBody)
				}
			}},
		{"a conversation", responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4.1","input":"x","conversation":"conv_1"}`),
			wantRefused("unsupported_parameter", "conversation")},
		{"a conversation on the Azure OpenAI route", responsesAs("team-a-key", "/openai/v1/responses", `{"model":"gpt-4o","input":"x","conversation":{"id":"conv_1"}}`),
			wantRefused("unsupported_parameter", "conversation")},
		{"a conversation to compact", responsesAs("team-a-key", "/v1/responses/compact", `{"model":"gpt-4.1","conversation":"conv_1"}`),
			wantRefused("unsupported_parameter", "conversation")},
		{"an item_reference", responsesAs("team-a-key", "/v1/responses",
			`{"model":"gpt-4.1","input":[{"role":"user","content":"x"},{"type":"item_reference","id":"msg_1"}]}`),
			wantRefused("unsupported_parameter", "input[1]")},
		{"a reasoning item by id alone", responsesAs("team-a-key", "/v1/responses/input_tokens",
			`{"model":"gpt-4.1","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`),
			wantRefused("unsupported_parameter", "input[0].encrypted_content")},
	}
	// Without consumers (one tenant), the same requests go to the provider as they came, and answers come back
	// as they went.
	plain := func(ex exchange) exchange {
		ex.config = testConfig
		ex.headers = [][2]string{{"authorization", "Bearer client-key"}, {"content-type", "application/json"}}
		return ex
	}
	for _, body := range []string{continueWith("resp_A1"), `{"model":"gpt-4.1","input":"x","conversation":"conv_1"}`,
		`{"model":"gpt-4.1","input":[{"type":"item_reference","id":"msg_1"}]}`} {
		rows = append(rows, behaviour{"without consumers: " + body,
			answered(plain(responsesAs("", "/v1/responses", body)), 200, jsonHeaders, continuedResponse),
			func(t *testing.T, o *outcome) {
				if string(o.upstreamBody) != body || string(o.clientBody) != continuedResponse {
					t.Errorf("upstream %s, client %s", o.upstreamBody, o.clientBody)
				}
			}})
	}
	rows = append(rows, behaviour{"without consumers: a stream passes as it came",
		answered(plain(responsesAs("", "/v1/responses", `{"model":"gpt-4.1","input":"hi","stream":true}`)), 200, eventHeaders,
			split([]byte(storedStream), 37)...),
		func(t *testing.T, o *outcome) {
			if string(o.clientBody) != storedStream {
				t.Errorf("client got:\n%s", o.clientBody)
			}
		}})
	for _, b := range rows {
		for _, md := range modes {
			t.Run(b.name+"/"+md.name, func(t *testing.T) {
				o := run(t, md, b.ex)
				o.assertRules(t)
				b.check(t, o)
			})
		}
	}
}

// TestBindingKeyFromTheEnvironment: response_binding_key_env replaces the provider keys as the binding
// key, so rotating a provider key leaves the ids handed out valid. (Natively only: the compiled module's
// host sets no environment.)
func TestBindingKeyFromTheEnvironment(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef-binding"
	config := withSetting(withConsumers(testConfig), `"response_binding_key_env": "AIDIALECT_BINDING_KEY"`)
	ex := answered(responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4.1","input":"x","previous_response_id":"`+
		boundID(secret, "team-a", "openai", "resp_A1")+`"}`), 200, jsonHeaders, storedResponse)
	ex.config, ex.env = config, map[string]string{"AIDIALECT_BINDING_KEY": secret}
	o := run(t, modes[0], ex)
	o.assertRules(t)
	if got := gjson.GetBytes(o.upstreamBody, "previous_response_id").String(); got != "resp_A1" {
		t.Fatalf("the provider got previous_response_id %q (%d %s)", got, o.status, o.clientBody)
	}
	if got := gjson.GetBytes(o.clientBody, "id").String(); got != boundID(secret, "team-a", "openai", "resp_A1") {
		t.Errorf("id %q", got)
	}
	// One binding key for every provider: an id the openai provider minted is not sent to another provider
	// (gpt-4o is served by azure-east), which would learn the consumer's id at openai.
	ex = answered(responsesAs("team-a-key", "/v1/responses", `{"model":"gpt-4o","input":"x","previous_response_id":"`+
		boundID(secret, "team-a", "openai", "resp_A1")+`"}`), 200, jsonHeaders, storedResponse)
	ex.config, ex.env = config, map[string]string{"AIDIALECT_BINDING_KEY": secret}
	o = run(t, modes[0], ex)
	if o.upstreamCalls > 0 || o.clientHead["x-aidialect-error"] != "previous_response_not_found" {
		t.Errorf("an id of another provider went upstream (%d calls, %d %s)", o.upstreamCalls, o.status, o.clientBody)
	}
}

// TestConsumerNamesAreIdentities: the name keys a consumer's stored responses, so two consumers of one name,
// in the file or once decoded (lone surrogates are U+FFFD both), would share them: the plugin does not start,
// and the intruder's request never reaches a provider.
func TestConsumerNamesAreIdentities(t *testing.T) {
	for _, tc := range []struct{ name, a, b, decoded, log string }{
		{"the same name", `"team-a"`, `"team-a"`, "team-a", "is also consumers[0]'s name"},
		{"names one once decoded", `"team-\ud800"`, `"team-\udbff"`, "team-\uFFFD", "U+FFFD"},
	} {
		config := strings.TrimSuffix(strings.TrimSpace(testConfig), "}") + `,
  "consumers": [
    {"name": ` + tc.a + `, "key_sha256": "` + hexSum("team-a-key") + `"},
    {"name": ` + tc.b + `, "key_sha256": "` + hexSum("intruder-key") + `"}
  ]}`
		for _, md := range modes {
			t.Run(tc.name+"/"+md.name, func(t *testing.T) {
				ex := responsesAs("intruder-key", "/v1/responses", `{"model":"gpt-4.1","input":"x","previous_response_id":"`+
					boundID(openAIKey, tc.decoded, "openai", "resp_A1")+`"}`)
				ex.config = config
				o := run(t, md, answered(ex, 200, jsonHeaders, continuedResponse))
				if o.upstreamCalls > 0 || !strings.Contains(strings.Join(o.criticalLogs, "\n"), tc.log) ||
					!strings.Contains(strings.Join(o.criticalLogs, "\n"), "identity for the responses it stores") {
					t.Errorf("configuration accepted or not explained (upstream calls %d, upstream got %s): %q", o.upstreamCalls, o.upstreamBody, o.criticalLogs)
				}
			})
		}
	}
}

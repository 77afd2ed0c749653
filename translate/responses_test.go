//go:build !aidialect_no_bridge

package translate

import (
	"strings"
	"testing"

	"github.com/aidialect/aidialect/internal/jsonscan"
	"github.com/tidwall/gjson"
)

// TestResponsesUpstreamLines: a Responses request goes natively to a provider that has the API (its path
// and api-version rules), and as chat completions to one that has not, or to a model marked chat_only.
func TestResponsesUpstreamLines(t *testing.T) {
	tests := []struct {
		name, path   string
		target       Target
		wantPath     string
		wantErr      ErrorCode
		wantBridged  bool
		wantBodyName bool // the upstream body names the model (for Azure OpenAI, the deployment)
	}{
		{name: "openai to openai", path: "/v1/responses", target: Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o"},
			wantPath: "/v1/responses", wantBodyName: true},
		{name: "openai to azure-openai, no version: the v1 surface", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "gpt4o-prod"}},
			wantPath: "/openai/v1/responses", wantBodyName: true},
		{name: "openai to azure-openai preview", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "preview", Settings: Settings{deployment: "d"}},
			wantPath: "/openai/v1/responses?api-version=preview", wantBodyName: true},
		{name: "openai to azure-openai dated: the classic surface, deployment in the body", path: "/v1/responses",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "2025-04-01-preview", Settings: Settings{deployment: "d"}},
			wantPath: "/openai/responses?api-version=2025-04-01-preview", wantBodyName: true},
		{name: "azure-openai version before the Responses API", path: "/v1/responses",
			target:  Target{Dialect: AzureOpenAI, BasePath: "/openai", APIVersion: "2024-10-21", Settings: Settings{deployment: "d"}},
			wantErr: ErrUnsupportedOperation},
		{name: "azure classic client keeps its version", path: "/openai/responses?api-version=2025-03-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "d"}},
			wantPath: "/openai/responses?api-version=2025-03-01-preview", wantBodyName: true},
		{name: "azure classic client with an old version", path: "/openai/responses?api-version=2025-01-01-preview",
			target:  Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "d"}},
			wantErr: ErrUnsupportedOperation},
		{name: "azure deployment route", path: "/openai/deployments/d/responses?api-version=2025-04-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "d"}},
			wantPath: "/openai/responses?api-version=2025-04-01-preview", wantBodyName: true},
		{name: "azure v1 client to openai", path: "/openai/v1/responses", target: Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o"},
			wantPath: "/v1/responses", wantBodyName: true},
		{name: "bridged to azure-ai", path: "/v1/responses",
			target:   Target{Dialect: AzureAI, BasePath: "", Model: "Llama", Settings: Settings{deployment: "llama-blue"}},
			wantPath: "/chat/completions?api-version=2024-05-01-preview", wantBridged: true, wantBodyName: true},
		{name: "bridged to eternalai", path: "/openai/v1/responses",
			target:   Target{Dialect: EternalAI, BasePath: "/v1", Model: "m", Settings: Settings{defaultChainID: "8453"}},
			wantPath: "/v1/chat/completions", wantBridged: true, wantBodyName: true},
		{name: "bridged to a chat_only openai model", path: "/v1/responses",
			target:   Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-3.5-turbo", ChatOnly: true},
			wantPath: "/v1/chat/completions", wantBridged: true, wantBodyName: true},
		{name: "bridged to a chat_only azure-openai model on the classic surface", path: "/openai/deployments/d/responses?api-version=2025-04-01-preview",
			target:   Target{Dialect: AzureOpenAI, BasePath: "/openai", ChatOnly: true, Settings: Settings{deployment: "d"}},
			wantPath: "/openai/deployments/d/chat/completions?api-version=2025-04-01-preview", wantBridged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, e := Detect("POST", tt.path, "")
			if e != nil || req.Op != OpResponses {
				t.Fatalf("Detect: %+v, %v", req, e)
			}
			head, e := RenderHead(&req, &tt.target)
			if tt.wantErr != "" {
				if e == nil || e.Code != tt.wantErr {
					t.Fatalf("RenderHead error %v, want %s", e, tt.wantErr)
				}
				return
			}
			if e != nil {
				t.Fatalf("RenderHead: %v", e)
			}
			if head.Path != tt.wantPath {
				t.Errorf("path %q, want %q", head.Path, tt.wantPath)
			}
			if got := bridges(&req, &tt.target); got != tt.wantBridged {
				t.Errorf("bridged %v, want %v", got, tt.wantBridged)
			}
			op := req.Op
			if tt.wantBridged {
				op = OpChatCompletions
			}
			version, _ := resolveAPIVersion(&ClientRequest{Dialect: req.Dialect, Op: op, APIVersion: req.APIVersion,
				SurfaceVersion: req.SurfaceVersion}, op, &tt.target)
			if _, named := tt.target.Dialect.spec().bodyModel(&ClientRequest{Op: op}, &tt.target, version); named != tt.wantBodyName {
				t.Errorf("body names the model: %v, want %v", named, tt.wantBodyName)
			}
		})
	}
}

// TestResponsesSubRoutes: input_tokens and compact go natively where the provider has the Responses API,
// and are refused toward chat completions, which have nothing like them.
func TestResponsesSubRoutes(t *testing.T) {
	tests := []struct {
		path     string
		target   Target
		wantPath string
		wantErr  ErrorCode
	}{
		{"/v1/responses/input_tokens", Target{Dialect: OpenAI, BasePath: "/v1", Model: "gpt-4o"}, "/v1/responses/input_tokens", ""},
		{"/v1/responses/compact", Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "d"}}, "/openai/v1/responses/compact", ""},
		{"/openai/responses/input_tokens?api-version=2025-04-01-preview", Target{Dialect: AzureOpenAI, BasePath: "/openai", Settings: Settings{deployment: "d"}},
			"/openai/responses/input_tokens?api-version=2025-04-01-preview", ""},
		{"/v1/responses/input_tokens", Target{Dialect: AzureAI, Model: "m"}, "", ErrUnsupportedOperation},
		{"/v1/responses/compact", Target{Dialect: EternalAI, BasePath: "/v1", Model: "m"}, "", ErrUnsupportedOperation},
		{"/v1/responses/input_tokens", Target{Dialect: OpenAI, BasePath: "/v1", Model: "m", ChatOnly: true}, "", ErrUnsupportedOperation},
	}
	for _, tt := range tests {
		req, e := Detect("POST", tt.path, "")
		if e != nil {
			t.Fatalf("%s: %v", tt.path, e)
		}
		head, e := RenderHead(&req, &tt.target)
		switch {
		case tt.wantErr != "" && (e == nil || e.Code != tt.wantErr):
			t.Errorf("%s to %s: error %v, want %s", tt.path, tt.target.Dialect, e, tt.wantErr)
		case tt.wantErr == "" && (e != nil || head.Path != tt.wantPath):
			t.Errorf("%s to %s: %q, %v; want %q", tt.path, tt.target.Dialect, head.Path, e, tt.wantPath)
		}
	}
}

// bridgedExchange renders a Responses request for an Azure AI target and returns the exchange its answer
// is translated with.
func bridgedExchange(t *testing.T, body *RequestBody, stream bool) Exchange {
	t.Helper()
	req, e := Detect("POST", "/v1/responses", "")
	if e != nil {
		t.Fatal(e)
	}
	src := `{"model":"m","input":"hi"}`
	if stream {
		src = `{"model":"m","input":"hi","stream":true}`
	}
	if e := body.Parse([]byte(src)); e != nil {
		t.Fatal(e)
	}
	target := Target{Dialect: AzureAI, Model: "m"}
	out, e := RenderBody(nil, &req, body, &target)
	if e != nil || out.surface == nil {
		t.Fatalf("RenderBody: %v, bridge %v", e, out.surface)
	}
	return Exchange{Client: OpenAI, Provider: AzureAI, Op: OpResponses, surface: out.surface}
}

// TestBridgedAnswerThatCannotBecomeAResponse: a chat answer that is not JSON, or past the item bound (an
// upstream's "[{},{},...]" would otherwise grow 50-fold), reaches the Responses client as a failed Response
// it can read, not as the chat body its SDK cannot parse.
func TestBridgedAnswerThatCannotBecomeAResponse(t *testing.T) {
	calls := strings.Repeat(`{},`, maxBridgedItems) + `{}`
	for name, answer := range map[string]string{
		"not JSON":       `<html>busy</html>`,
		"too many calls": `{"id":"c","choices":[{"message":{"tool_calls":[` + calls + `]},"finish_reason":"tool_calls"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var body RequestBody
			x := bridgedExchange(t, &body, false)
			out, _, _, err := Answer(nil, &x, []byte(answer))
			if err == nil {
				t.Fatal("no error reported (the caller counts it)")
			}
			if !jsonscan.Valid(out) || gjson.GetBytes(out, "status").Str != "failed" ||
				gjson.GetBytes(out, "error.code").Str != "server_error" || gjson.GetBytes(out, "object").Str != "response" {
				t.Fatalf("want a failed Response, got %s", out)
			}
			if len(out) > 4<<10 {
				t.Errorf("the failed Response is %d bytes", len(out))
			}
		})
	}
}

// TestBridgeStateIsCountedAndReleased: a bridged stream's buffers (its converted output, the text the .done
// and terminal events repeat) count in the footprints the plugin's pool judges, and Release lets go of the
// bridge: a pooled state keeps none of a bridged answer.
func TestBridgeStateIsCountedAndReleased(t *testing.T) {
	var body RequestBody
	x := bridgedExchange(t, &body, true)
	before := body.Footprint()
	s := NewStream(x, 0)
	delta := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` +
		strings.Repeat("x", 4000) + `"},"finish_reason":null}]}` + "\n\n"
	for range 500 { // 2 MB of text
		if _, err := s.Write([]byte(delta)); err != nil {
			t.Fatal(err)
		}
	}
	s.Write([]byte(`data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	s.Close()
	if got := body.Footprint() + s.Footprint(); got < 2<<20 {
		t.Errorf("footprint after a 2 MB bridged answer: %d bytes (was %d before it)", got, before)
	}
	s.Release()
	body.Release()
	if body.bridge != nil || s.surface != nil {
		t.Error("Release kept the bridge, and with it the answer's buffers")
	}
	if got := body.Footprint() + s.Footprint(); got < 2<<20 {
		t.Errorf("footprint after Release: %d bytes: the stream's converted output must still count", got)
	}
}

// TestNativeResponsesStreamEnds: a native Responses stream is finished by its terminal event only; a [DONE]
// instead of it, or an end without it, gets an error event, never a [DONE] added.
func TestNativeResponsesStreamEnds(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{}}\n\n"
	completed := "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}}\n\n"
	for _, tt := range []struct {
		name, upstream string
		truncated      bool
	}{
		{"completed", created + completed, false},
		{"a [DONE] without a terminal event", created + "data: [DONE]\n\n", true},
		{"cut before the terminal event", created, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpResponses}, 0)
			out, err := s.Write([]byte(tt.upstream))
			if err != nil {
				t.Fatal(err)
			}
			all := string(out) + string(s.Close())
			if s.Truncated() != tt.truncated || strings.Contains(all, "event: error") != tt.truncated {
				t.Errorf("truncated %v, output:\n%s", s.Truncated(), all)
			}
			if strings.Count(all, "[DONE]") != strings.Count(tt.upstream, "[DONE]") {
				t.Errorf("a [DONE] was added:\n%s", all)
			}
			if !tt.truncated && (s.Usage() != Usage{PromptTokens: 3, CompletionTokens: 2, Seen: true}) {
				t.Errorf("usage %+v", s.Usage())
			}
		})
	}
}

// TestBridgeRefusesNestedValuesWhereScalarsBelong: values the bridge copies one level deeper than they were
// sent must be the scalars the API defines; nested, they could pass the request's depth bound yet exceed it
// in the chat body.
func TestBridgeRefusesNestedValuesWhereScalarsBelong(t *testing.T) {
	deep := strings.Repeat("[", 253) + strings.Repeat("]", 253)
	for _, tt := range []struct{ body, param string }{
		{`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","description":` + deep + `}]}`, "tools[0].description"},
		{`{"model":"m","input":"hi","tools":[{"type":"function","name":"f","strict":` + deep + `}]}`, "tools[0].strict"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png","detail":` + deep + `}]}]}`,
			"input[0].content[0].detail"},
	} {
		var echo responsesEcho
		if _, e := bridgeRequest(nil, []byte(tt.body), &openAIChatBridge, &echo); e == nil || e.Param != tt.param || e.Status() != 400 {
			t.Errorf("%s: %v, want a 400 naming %s", tt.param, e, tt.param)
		}
	}
}

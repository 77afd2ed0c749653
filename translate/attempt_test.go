package translate

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestHeadCacheKeepsNoHostMemory: the cache keeps copies of every string of a request it remembers (the host
// may reuse the memory its strings were read from), and of the target's model (the client's, for an entry
// without one). A string field added to ClientRequest and left out of cloned fails here.
func TestHeadCacheKeepsNoHostMemory(t *testing.T) {
	req := ClientRequest{Dialect: AzureAI, Op: OpChatCompletions}
	fields := reflect.ValueOf(&req).Elem()
	for i := 0; i < fields.NumField(); i++ {
		if f := fields.Field(i); f.Kind() == reflect.String {
			f.SetString("v" + fields.Type().Field(i).Name)
		}
	}
	req.APIVersion, req.SurfaceVersion = "2024-05-01-preview", ""
	req.ModelHeader, req.PolicyHeader, req.Deployment = "blue", "drop", ""
	target := Target{Dialect: AzureAI, Model: string([]byte("model"))}
	var cache HeadCache
	if _, e := cache.Render(&req, &target); e != nil {
		t.Fatal(e)
	}
	kept := reflect.ValueOf(&cache.req).Elem()
	for i := 0; i < fields.NumField(); i++ {
		if f := fields.Field(i); f.Kind() == reflect.String && f.Len() > 0 &&
			unsafe.StringData(f.String()) == unsafe.StringData(kept.Field(i).String()) {
			t.Errorf("ClientRequest.%s is kept as the caller's memory", fields.Type().Field(i).Name)
		}
	}
	if unsafe.StringData(cache.target.Model) == unsafe.StringData(target.Model) {
		t.Error("Target.Model is kept as the caller's memory")
	}
}

// TestHeadCacheRendersWhatRenderHeadRenders: for any sequence of requests and targets, the cache hands out
// what RenderHead renders for each; only the response binding, which the request line never reads, is left
// out of the comparison.
func TestHeadCacheRendersWhatRenderHeadRenders(t *testing.T) {
	azure := ClientRequest{Dialect: AzureOpenAI, Op: OpChatCompletions, Deployment: "d", APIVersion: "2024-06-01"}
	steps := []struct {
		name   string
		req    ClientRequest
		target Target
	}{
		{"first", ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}, Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "m"}},
		{"another model", ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}, Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n"}},
		{"a deployment setting", ClientRequest{Dialect: OpenAI, Op: OpChatCompletions},
			Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n", Settings: Settings{deployment: "prod"}}},
		{"another operation", ClientRequest{Dialect: OpenAI, Op: OpEmbeddings},
			Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n", Settings: Settings{deployment: "prod"}}},
		{"an azure client", azure, Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n"}},
		{"its api-version changes", ClientRequest{Dialect: AzureOpenAI, Op: OpChatCompletions, Deployment: "d", APIVersion: "2024-02-01"},
			Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n"}},
		{"a bound consumer, the same line", azure, Target{Dialect: AzureOpenAI, BasePath: "/openai", Model: "n",
			Binding: ResponseBinding{Consumer: "a"}}},
		{"an extra-parameters policy", ClientRequest{Dialect: OpenAI, Op: OpChatCompletions},
			Target{Dialect: AzureAI, Model: "m", Settings: Settings{extraParameters: extraPassThrough}}},
		{"another policy", ClientRequest{Dialect: OpenAI, Op: OpChatCompletions},
			Target{Dialect: AzureAI, Model: "m", Settings: Settings{extraParameters: extraError}}},
		{"chat_only bridges a Responses request", ClientRequest{Dialect: OpenAI, Op: OpResponses},
			Target{Dialect: OpenAI, BasePath: "/v1", Model: "m", ChatOnly: true}},
		{"not chat_only", ClientRequest{Dialect: OpenAI, Op: OpResponses}, Target{Dialect: OpenAI, BasePath: "/v1", Model: "m"}},
	}
	var cache HeadCache
	for _, st := range steps {
		got, gotErr := cache.Render(&st.req, &st.target)
		want, wantErr := RenderHead(&st.req, &st.target)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Errorf("%s: cache %+v %v\nRenderHead %+v %v", st.name, got, gotErr, want, wantErr)
		}
	}
}

// TestBridgedHeadAllocatesAsChat: a Responses request bridged to chat renders its request line as the chat
// request it becomes, with the operation passed along rather than the request copied (the copy would escape
// through the dialect's hooks and be allocated per request) or changed and restored: it allocates what the
// chat request's line allocates.
func TestBridgedHeadAllocatesAsChat(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for _, target := range []Target{{Dialect: AzureAI, Model: "m"}, {Dialect: EternalAI, BasePath: "/v1", Model: "m"},
		{Dialect: OpenAI, BasePath: "/v1", Model: "m", ChatOnly: true}} {
		allocs := func(op Operation) float64 {
			req := ClientRequest{Dialect: OpenAI, Op: op}
			return testing.AllocsPerRun(20, func() {
				if _, e := RenderHead(&req, &target); e != nil {
					t.Fatal(e)
				}
				if req.Op != op {
					t.Fatalf("the request's operation became %v", req.Op)
				}
			})
		}
		if bridged, chat := allocs(OpResponses), allocs(OpChatCompletions); bridged > chat {
			t.Errorf("toward %v: the bridged request line allocates %.0f times, the chat one %.0f", target.Dialect, bridged, chat)
		}
	}
}

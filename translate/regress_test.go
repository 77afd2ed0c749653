package translate

// Regressions found by attacking the dialect tables (rules.go, render.go, stream.go, footprint.go): each test
// names the input and the property it keeps.

import (
	"fmt"
	"strings"
	"testing"
)

// A hostile (or merely chatty) upstream streams many events that need edits for the client: every event goes
// through Stream.editChunk, which hands its eventParts to the provider's hooks through function values. A
// local handed so would escape to the heap once per event (204 allocations for 200 events, once); the parts
// live in the Stream instead, and a stream allocates a constant few times whatever its length.
func TestEditedStreamAllocationsDoNotGrowWithEvents(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	event := `data: {"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"
	for _, r := range []struct {
		x      Exchange
		events int
	}{
		{Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpChatCompletions}, 200},
		{Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 200},
		{Exchange{Client: AzureAI, Provider: EternalAI, Op: OpChatCompletions}, 200},
		{Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions, IncludeUsage: true, Tools: true}, 2000},
	} {
		t.Run(fmt.Sprintf("%v-to-%v-%d", r.x.Provider, r.x.Client, r.events), func(t *testing.T) {
			chunk := []byte(strings.Repeat(event, r.events))
			s := NewStream(r.x, 0)
			run := func() {
				s.Reset(r.x, 0)
				if _, err := s.Write(chunk); err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			run() // grow the buffers once
			if allocs := testing.AllocsPerRun(10, run); allocs > 10 {
				t.Errorf("a %d-event stream allocates %.0f times: the work per event allocates (base: 3 per stream)", r.events, allocs)
			}
		})
	}
}

// A client body of many top-level members (the parser allows 4096): plan() hands each member's plan to a rule
// through a function value. Local plans would escape, one allocation per member (1008 for 1000 members,
// once); they are planned in place in the body's reused slice, and the context lives in the body, so a
// 10-member body renders with no allocation and a 4000-member one with the duplicate-key map's few.
func TestRenderAllocationsDoNotGrowWithMembers(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	req, derr := Detect("POST", "/v1/chat/completions", "")
	if derr != nil {
		t.Fatal(derr)
	}
	for _, r := range []struct {
		members   int
		target    Target
		maxAllocs float64
	}{
		{10, Target{Dialect: OpenAI, Model: "m"}, 2},
		{10, Target{Dialect: AzureAI, Model: "m", Settings: Settings{extraParameters: extraPassThrough}}, 2},
		{1000, Target{Dialect: OpenAI, Model: "m"}, 10},
		{4000, Target{Dialect: AzureOpenAI, Model: "m", Settings: Settings{deployment: "d"}}, 25}, // base: 17
	} {
		t.Run(fmt.Sprintf("%d-members-to-%v", r.members, r.target.Dialect), func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"model":"m","messages":[]`)
			for i := 0; i < r.members; i++ {
				fmt.Fprintf(&b, `,"k%d":1`, i)
			}
			b.WriteString("}")
			src := []byte(b.String())
			var body RequestBody
			dst := make([]byte, 0, 2*len(src))
			run := func() {
				if e := body.Parse(src); e != nil {
					t.Fatal(e)
				}
				if _, e := RenderBody(dst, &req, &body, &r.target); e != nil {
					t.Fatal(e)
				}
			}
			run()
			if allocs := testing.AllocsPerRun(10, run); allocs > r.maxAllocs {
				t.Errorf("rendering a %d-member body allocates %.0f times (want <= %.0f): one heap object per member", r.members, allocs, r.maxAllocs)
			}
		})
	}
}

// docs/contract.md: "encoding_format other than float, base64 or null, toward a provider other than Azure AI:
// 400". Toward Azure AI nothing is refused locally: the value goes to the provider to judge, or is dropped by
// the extra-parameters policy on operations that do not know the field.
func TestEncodingFormatTowardAzureAIIsTheProvidersToJudge(t *testing.T) {
	for _, r := range []struct {
		path, body string
		policy     extraParametersPolicy
	}{
		// Embeddings toward a pass-through provider: the base forwarded the value for Azure AI to judge.
		{"/v1/embeddings", `{"model":"m","input":["x"],"encoding_format":"int16"}`, extraPassThrough},
		{"/embeddings?api-version=2024-05-01-preview", `{"model":"m","input":["x"],"encoding_format":"Float"}`, extraDrop},
		// Chat, where encoding_format is an extra parameter: the base dropped it (drop policy); now a 400.
		{"/v1/chat/completions", `{"model":"m","messages":[],"encoding_format":5}`, extraDrop},
		{"/v1/chat/completions", `{"model":"m","messages":[],"encoding_format":"bogus"}`, extraDrop},
	} {
		t.Run(r.path+" "+r.body, func(t *testing.T) {
			req, derr := Detect("POST", r.path, "")
			if derr != nil {
				t.Fatal(derr)
			}
			var body RequestBody
			if e := body.Parse([]byte(r.body)); e != nil {
				t.Fatal(e)
			}
			target := Target{Dialect: AzureAI, Model: "m", Settings: Settings{extraParameters: r.policy}}
			if _, e := RenderBody(nil, &req, &body, &target); e != nil {
				t.Errorf("toward Azure AI: %s %q (the contract refuses odd encoding_format values only toward other providers)", e.Code, e.Message)
			}
		})
	}
}

// Answer and event members are matched on their decoded keys: a provider that escapes a character of its own
// key ("onchain\u005fdata", "prompt\u005ffilter_results") would otherwise keep it in the answer for clients
// of other dialects, whatever onchain_data says, since every JSON client decodes the key back.
func TestEscapedAnswerKeysMeetTheirFate(t *testing.T) {
	for _, r := range []struct {
		x    Exchange
		body string
		key  string
	}{
		{Exchange{Client: OpenAI, Provider: EternalAI, Op: OpChatCompletions, onchain: onchainStrip},
			`{"id":"x","onchain\u005fdata":{"infer_tx":"0xabc"},"choices":[]}`, "infer_tx"},
		{Exchange{Client: OpenAI, Provider: AzureOpenAI, Op: OpChatCompletions},
			`{"id":"x","prompt\u005ffilter_results":[{"prompt_index":0}],"choices":[]}`, "prompt_index"},
	} {
		out, _, _, err := Answer(nil, &r.x, []byte(r.body))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), r.key) {
			t.Errorf("%v provider, %v client: the member survived under an escaped key: %s", r.x.Provider, r.x.Client, out)
		}
	}
}

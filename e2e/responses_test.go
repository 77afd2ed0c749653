package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/aidialect/aidialect/e2e/demo"
	"github.com/aidialect/aidialect/e2e/mock"
)

// The OpenAI Responses API (POST /v1/responses and its Azure OpenAI surfaces) through the gateway, with
// openai-go. Toward openai and azure-openai the filter forwards the request as it is; toward azure-ai,
// eternalai and a model marked chat_only it bridges it to Chat Completions and turns the answer back into a
// Response or its event stream. The mocks echo (see e2e/mock): "echo: <last user text>", or "echo: <tool
// output>" after a function_call_output; with function tools they call the first one with {"text": <last
// user text>}.

// respRoute is one Responses route of the demo: a model, the mock serving it, and how.
type respRoute struct {
	name    string
	mock    string // demo provider name (mock key)
	model   string
	served  string // the model the answer names (each provider's own way, as for chat)
	bridged bool   // served by Chat Completions: the filter builds the Response
	// upstream is the path suffix the mock must receive the request on (azure-openai: on the v1 surface).
	upstream string
}

var respRoutes = []respRoute{
	{"openai", "openai", demo.ModelOpenAI, "gpt-4o", false, "/v1/responses"},
	{"openai chat_only", "openai", demo.ModelOpenAIChat, "gpt-4o", true, "/v1/chat/completions"},
	{"azure-openai", "azure", demo.ModelAzureOpenAI, "gpt-4o-2024-08-06", false, "/openai/v1/responses"},
	{"azure-ai", "llama", demo.ModelAzureAI, "Meta-Llama-3-70B-Instruct", true, "/chat/completions"},
	{"eternalai", "eternal", demo.ModelEternalAI, "PrimeIntellect/INTELLECT-1-Instruct", true, "/v1/chat/completions"},
}

// respClient is openai-go pointed at one of the gateway's Responses surfaces.
type respClient struct {
	name string
	c    openai.Client
	// apiVersion is the api-version of a client of Azure OpenAI's classic surface: the gateway keeps a
	// request on the client's surface toward azure-openai, whose demo provider sets no api_version (as for
	// chat, see checkFrameworkDeployments), so the azure mock gets it at /openai/responses?api-version=….
	apiVersion string
}

// azureResponsesVersion is the first api-version of Azure OpenAI's classic Responses surface.
const azureResponsesVersion = "2025-03-01-preview"

func respClients(gatewayURL string) []respClient {
	common := []option.RequestOption{option.WithMaxRetries(0), option.WithRequestTimeout(30 * time.Second)}
	return []respClient{
		// POST {gateway}/v1/responses
		{"openai-go", openai.NewClient(append(common, option.WithBaseURL(gatewayURL+"/v1/"), option.WithAPIKey("client-key"))...), ""},
		// POST {gateway}/openai/responses?api-version=2025-03-01-preview, the body model naming the deployment
		// (openai-go's Azure option rewrites no Responses path to /deployments/...)
		{"openai-go-azure", openai.NewClient(append(common, azure.WithEndpoint(gatewayURL, azureResponsesVersion),
			azure.WithAPIKey("client-key"), azure.WithUnsafeAllowHTTP())...), azureResponsesVersion},
	}
}

var lookupParams = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"text": map[string]any{"type": "string"}},
	"required":             []string{"text"},
	"additionalProperties": false,
}

func lookupTool() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "lookup", Description: openai.String("Looks a text up"), Parameters: lookupParams, Strict: openai.Bool(true),
	}}}
}

// upstreamLog shows what a mock received since before: the request line and the body, for failure reports.
func upstreamLog(m *mock.Provider, before int) string {
	if m == nil {
		return "(remote mocks)"
	}
	var b strings.Builder
	for _, r := range m.Received()[before:] {
		q := ""
		if r.RawQuery != "" {
			q = "?" + r.RawQuery
		}
		fmt.Fprintf(&b, "\n  %s %s%s auth=%q api-key=%q\n  %s", r.Method, r.Path, q, r.Header.Get("Authorization"),
			r.Header.Get("Api-Key"), r.Body)
	}
	if b.Len() == 0 {
		return "(nothing reached the mock)"
	}
	return b.String()
}

// checkUpstream holds what reached the route's mock since before: each request on the route's path (the
// native Responses path, or chat completions for a bridged model; toward azure-openai, the client's surface:
// the classic one with the client's api-version when apiVersion is set, else the v1 one without), with the
// provider's key, never the client's, and, for a bridged model, a chat body.
func checkUpstream(t *testing.T, env *demo.Env, r respRoute, apiVersion string, before int) {
	t.Helper()
	m := env.Mocks[r.mock]
	if m == nil {
		return
	}
	got := m.Received()[before:]
	if len(got) == 0 {
		t.Errorf("nothing reached the %s mock", r.mock)
	}
	path, query := r.upstream, ""
	if r.mock == "azure" && apiVersion != "" {
		path, query = "/openai/responses", "api-version="+apiVersion
	}
	for _, rec := range got {
		if !strings.HasSuffix(rec.Path, path) || (r.mock == "azure" && rec.RawQuery != query) {
			t.Errorf("the %s mock got %s %s?%s, want a request on ...%s?%s", r.mock, rec.Method, rec.Path, rec.RawQuery, path, query)
		}
		for _, h := range []string{"Authorization", "Api-Key"} {
			if strings.Contains(rec.Header.Get(h), "client-key") {
				t.Errorf("the client's key reached %s in %s", r.mock, h)
			}
		}
		if r.bridged && !gjson.GetBytes(rec.Body, "messages").IsArray() {
			t.Errorf("a bridged request without messages: %s", rec.Body)
		}
		if r.mock == "azure" && gjson.GetBytes(rec.Body, "model").String() != "gpt-4o-mini-prod" {
			t.Errorf("the azure mock got body model %q, want the deployment gpt-4o-mini-prod", gjson.GetBytes(rec.Body, "model").String())
		}
	}
}

// checkUsage holds a Response's usage: counts that add up, and both details objects.
func checkUsage(t *testing.T, raw string) {
	t.Helper()
	u := gjson.Get(raw, "usage")
	in, out, total := u.Get("input_tokens"), u.Get("output_tokens"), u.Get("total_tokens")
	if in.Int() <= 0 || out.Int() <= 0 || total.Int() != in.Int()+out.Int() {
		t.Errorf("usage %s: want input and output tokens > 0 adding up to the total", u.Raw)
	}
	if !u.Get("input_tokens_details.cached_tokens").Exists() || !u.Get("output_tokens_details.reasoning_tokens").Exists() {
		t.Errorf("usage %s: want input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens", u.Raw)
	}
}

// checkResponse holds a completed Response and returns its output items (raw JSON).
func checkResponse(t *testing.T, r respRoute, raw string) []gjson.Result {
	t.Helper()
	res := gjson.Parse(raw)
	if res.Get("object").String() != "response" || !strings.HasPrefix(res.Get("id").String(), "resp_") ||
		res.Get("status").String() != "completed" || res.Get("error").Type != gjson.Null {
		t.Errorf("not a completed response: %.600s", raw)
	}
	if got := res.Get("model").String(); got != r.served {
		t.Errorf("model %q, want %q (the provider that answered)", got, r.served)
	}
	checkUsage(t, raw)
	return res.Get("output").Array()
}

// streamCheck is what checkEvents found in a well-formed stream.
type streamCheck struct {
	text  string // the output_text deltas, in order
	args  string // the function_call_arguments deltas, in order
	final string // the terminal event's response
	names []string
}

// checkEvents holds a Responses event sequence (raw data of each event, and their event: names when known)
// to what OpenAI sends and the strict clients require: created then in_progress, sequence_number counting
// from 0, items added at the next output_index, every part-level event naming the item at its output_index
// (openai-node's accumulator refuses anything else), .done events carrying the whole text, arguments and
// item, and one terminal event whose output holds every item (clients take the answer from it) with usage.
func checkEvents(t *testing.T, names, datas []string) streamCheck {
	t.Helper()
	var sc streamCheck
	type item struct {
		id, typ, callID string
		parts           int
		text, args      string
		done            string
	}
	var items []*item
	respID := ""
	for i, d := range datas {
		ev := gjson.Parse(d)
		typ := ev.Get("type").String()
		sc.names = append(sc.names, typ)
		if names != nil && names[i] != typ {
			t.Errorf("event %d: event: %s, data type %s", i, names[i], typ)
		}
		if ev.Get("sequence_number").Type != gjson.Number || ev.Get("sequence_number").Int() != int64(i) {
			t.Errorf("event %d (%s): sequence_number %s, want %d", i, typ, ev.Get("sequence_number").Raw, i)
		}
		if ev.Get("error").Exists() {
			t.Errorf("event %d (%s) has a top-level error (openai-go ends the stream on it): %s", i, typ, d)
		}
		oi := int(ev.Get("output_index").Int())
		var it *item
		if ev.Get("output_index").Exists() && oi >= 0 && oi < len(items) {
			it = items[oi]
		}
		partOf := func(want string) bool { // a part-level event on the item at output_index
			if it == nil || ev.Get("item_id").String() != it.id || it.typ != want {
				t.Errorf("event %d (%s) names item %q at output_index %d: not the %s added there", i, typ, ev.Get("item_id").String(), oi, want)
				return false
			}
			return true
		}
		switch {
		case i == 0 && typ != "response.created", i == 1 && typ != "response.in_progress":
			t.Fatalf("the stream starts with %v, want response.created, response.in_progress", sc.names)
		case i == len(datas)-1 && typ != "response.completed":
			t.Fatalf("the stream ends with %s, want response.completed: %.600s", typ, d)
		}
		switch typ {
		case "response.created", "response.in_progress":
			if ev.Get("response.status").String() != "in_progress" || len(ev.Get("response.output").Array()) != 0 {
				t.Errorf("%s: %.400s", typ, d)
			}
			if respID == "" {
				respID = ev.Get("response.id").String()
			}
			if ev.Get("response.id").String() != respID || !strings.HasPrefix(respID, "resp_") {
				t.Errorf("%s: response id %q, want one resp_ id through the stream", typ, ev.Get("response.id").String())
			}
			if i > 1 {
				t.Errorf("%s at %d: a late lifecycle event resets the clients' snapshot", typ, i)
			}
		case "response.output_item.added":
			id := ev.Get("item.id").String()
			if oi != len(items) || id == "" || ev.Get("item.status").String() != "in_progress" {
				t.Errorf("output_item.added at output_index %d (%d items so far), id %q: %s", oi, len(items), id, d)
			}
			items = append(items, &item{id: id, typ: ev.Get("item.type").String(), callID: ev.Get("item.call_id").String()})
		case "response.content_part.added":
			if partOf("message") {
				if int(ev.Get("content_index").Int()) != it.parts || ev.Get("part.type").String() != "output_text" {
					t.Errorf("content_part.added: %s", d)
				}
				it.parts++
			}
		case "response.output_text.delta":
			if partOf("message") && it.parts > 0 {
				it.text += ev.Get("delta").String()
				sc.text += ev.Get("delta").String()
			}
		case "response.output_text.done":
			if partOf("message") && ev.Get("text").String() != it.text {
				t.Errorf("output_text.done text %q, the deltas made %q", ev.Get("text").String(), it.text)
			}
		case "response.content_part.done":
			if partOf("message") && ev.Get("part.text").String() != it.text {
				t.Errorf("content_part.done part %s, the deltas made %q", ev.Get("part").Raw, it.text)
			}
		case "response.function_call_arguments.delta":
			if partOf("function_call") {
				it.args += ev.Get("delta").String()
				sc.args += ev.Get("delta").String()
			}
		case "response.function_call_arguments.done":
			if partOf("function_call") && ev.Get("arguments").String() != it.args {
				t.Errorf("function_call_arguments.done arguments %q, the deltas made %q", ev.Get("arguments").String(), it.args)
			}
		case "response.output_item.done":
			if it == nil || ev.Get("item.id").String() != it.id || ev.Get("item.type").String() != it.typ ||
				ev.Get("item.call_id").String() != it.callID || ev.Get("item.status").String() != "completed" {
				t.Errorf("output_item.done does not finish the item added at %d: %s", oi, d)
				break
			}
			if it.typ == "message" && ev.Get("item.content.0.text").String() != it.text {
				t.Errorf("output_item.done message text %q, the deltas made %q", ev.Get("item.content.0.text").String(), it.text)
			}
			if it.typ == "function_call" && ev.Get("item.arguments").String() != it.args {
				t.Errorf("output_item.done arguments %q, the deltas made %q", ev.Get("item.arguments").String(), it.args)
			}
			it.done = ev.Get("item").Raw
		case "response.completed":
			sc.final = ev.Get("response").Raw
			if ev.Get("response.id").String() != respID || ev.Get("response.status").String() != "completed" {
				t.Errorf("response.completed: id %q status %q", ev.Get("response.id").String(), ev.Get("response.status").String())
			}
			out := ev.Get("response.output").Array()
			if len(out) != len(items) {
				t.Fatalf("response.completed has %d output items, the stream added %d (clients take the answer from it)", len(out), len(items))
			}
			for k, o := range out {
				if !jsonEqual(o.Raw, items[k].done) {
					t.Errorf("response.completed output[%d] %s, output_item.done said %s", k, o.Raw, items[k].done)
				}
			}
			checkUsage(t, sc.final)
		case "response.failed", "response.incomplete", "error":
			t.Errorf("event %d: %s", i, d)
		}
	}
	if sc.final == "" {
		t.Errorf("no response.completed in %v", sc.names)
	}
	return sc
}

// idsOf lists the ids of output items.
func idsOf(output gjson.Result) []string {
	var ids []string
	for _, o := range output.Array() {
		ids = append(ids, o.Get("id").String())
	}
	return ids
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// respStatus extracts the HTTP status, the error code and its message from an openai-go error.
func respStatus(err error) (int, string, string) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode, apiErr.Code, apiErr.Message
	}
	if err == nil {
		return 200, "", ""
	}
	return 0, "", err.Error()
}

// TestResponsesGo runs client.Responses.New and NewStreaming with openai-go, on the /v1 and the Azure classic
// surface, against every Responses route of the demo: a text answer, a streamed one, a function call and its
// output sent back (store false), and the function call streamed.
func TestResponsesGo(t *testing.T) {
	env := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range respClients(env.GatewayURL) {
		for _, r := range respRoutes {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				m := env.Mocks[r.mock]
				before := 0
				if m != nil {
					before = len(m.Received())
				}
				defer func() {
					if t.Failed() {
						t.Logf("the %s mock received:%s", r.mock, upstreamLog(m, before))
					}
				}()
				// Every response and every output item has an id of its own (clients key their state on them).
				ids := map[string]string{}
				unique := func(t *testing.T, what, raw string) {
					t.Helper()
					for _, id := range append([]string{gjson.Get(raw, "id").String()}, idsOf(gjson.Get(raw, "output"))...) {
						if prev, dup := ids[id]; dup {
							t.Errorf("%s repeats id %s of %s", what, id, prev)
						}
						ids[id] = what
					}
				}

				t.Run("text", func(t *testing.T) {
					prompt := "Say hello from the Responses suite"
					res, err := c.c.Responses.New(ctx, responses.ResponseNewParams{
						Model:        r.model,
						Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
						Instructions: openai.String("Be terse."),
						Store:        openai.Bool(false),
					})
					if err != nil {
						st, code, msg := respStatus(err)
						t.Fatalf("%d %s: %s", st, code, msg)
					}
					out := checkResponse(t, r, res.RawJSON())
					unique(t, "the text response", res.RawJSON())
					if res.OutputText() != "echo: "+prompt {
						t.Errorf("OutputText %q, want the echo", res.OutputText())
					}
					if len(out) != 1 || out[0].Get("type").String() != "message" || !strings.HasPrefix(out[0].Get("id").String(), "msg_") ||
						out[0].Get("role").String() != "assistant" || out[0].Get("content.0.type").String() != "output_text" {
						t.Errorf("output %s", gjson.Get(res.RawJSON(), "output").Raw)
					}
					if res.Usage.TotalTokens != res.Usage.InputTokens+res.Usage.OutputTokens || res.Usage.InputTokens == 0 {
						t.Errorf("usage %+v", res.Usage)
					}
					if store := gjson.Get(res.RawJSON(), "store"); res.Instructions.OfString != "Be terse." || store.Bool() {
						t.Errorf("echoes: instructions %q store %s", res.Instructions.OfString, store.Raw)
					}
				})

				t.Run("stream", func(t *testing.T) {
					prompt := "Stream hello"
					s := c.c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
						Model: r.model,
						Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
						Store: openai.Bool(false),
					})
					var datas []string
					var completed responses.Response
					for s.Next() {
						ev := s.Current()
						datas = append(datas, ev.RawJSON())
						if ev.Type == "response.completed" {
							completed = ev.Response
						}
					}
					if err := s.Err(); err != nil {
						st, code, msg := respStatus(err)
						t.Fatalf("stream: %d %s: %s (events %d)", st, code, msg, len(datas))
					}
					sc := checkEvents(t, nil, datas)
					if sc.text != "echo: "+prompt || completed.OutputText() != sc.text {
						t.Errorf("deltas %q, final OutputText %q, want the echo", sc.text, completed.OutputText())
					}
					if strings.Count(strings.Join(sc.names, " "), "response.output_text.delta") < 2 {
						t.Errorf("the text arrived in one piece: %v", sc.names)
					}
					if sc.final != "" {
						checkResponse(t, r, sc.final)
						unique(t, "the streamed response", sc.final)
					}
				})

				t.Run("function call round trip", func(t *testing.T) {
					prompt := "Look up Paris"
					params := responses.ResponseNewParams{
						Model: r.model,
						Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
							responses.ResponseInputItemParamOfMessage(prompt, responses.EasyInputMessageRoleUser),
						}},
						Tools: lookupTool(),
						Store: openai.Bool(false),
					}
					first, err := c.c.Responses.New(ctx, params)
					if err != nil {
						st, code, msg := respStatus(err)
						t.Fatalf("first turn: %d %s: %s", st, code, msg)
					}
					out := checkResponse(t, r, first.RawJSON())
					unique(t, "the function call", first.RawJSON())
					if len(out) != 1 || first.Output[0].Type != "function_call" {
						t.Fatalf("first turn: want one function_call, got %s", gjson.Get(first.RawJSON(), "output").Raw)
					}
					call := first.Output[0].AsFunctionCall()
					if call.Name != "lookup" || !strings.HasPrefix(call.CallID, "call_") || !strings.HasPrefix(call.ID, "fc_") ||
						call.Status != "completed" || gjson.Get(call.Arguments, "text").String() != prompt {
						t.Errorf("function_call %s", call.RawJSON())
					}
					result := fmt.Sprintf(`{"chars":%d}`, len(prompt))
					output := responses.ResponseInputItemParamOfFunctionCallOutput(result)
					output.OfFunctionCallOutput.CallID = openai.String(call.CallID)
					replay := call.ToParam()
					params.Input.OfInputItemList = append(params.Input.OfInputItemList,
						responses.ResponseInputItemUnionParam{OfFunctionCall: &replay}, output)
					second, err := c.c.Responses.New(ctx, params)
					if err != nil {
						st, code, msg := respStatus(err)
						t.Fatalf("second turn: %d %s: %s", st, code, msg)
					}
					checkResponse(t, r, second.RawJSON())
					unique(t, "the answer to the function output", second.RawJSON())
					if second.OutputText() != "echo: "+result {
						t.Errorf("second turn %q, want the echo of the tool output", second.OutputText())
					}
				})

				t.Run("streamed function call", func(t *testing.T) {
					prompt := "Look up Lisbon"
					s := c.c.Responses.NewStreaming(ctx, responses.ResponseNewParams{
						Model: r.model,
						Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
						Tools: lookupTool(),
						Store: openai.Bool(false),
					})
					var datas []string
					for s.Next() {
						datas = append(datas, s.Current().RawJSON())
					}
					if err := s.Err(); err != nil {
						st, code, msg := respStatus(err)
						t.Fatalf("stream: %d %s: %s", st, code, msg)
					}
					sc := checkEvents(t, nil, datas)
					unique(t, "the streamed function call", sc.final)
					if gjson.Get(sc.args, "text").String() != prompt {
						t.Errorf("streamed arguments %q", sc.args)
					}
					if out := gjson.Get(sc.final, "output").Array(); len(out) != 1 || out[0].Get("type").String() != "function_call" ||
						out[0].Get("name").String() != "lookup" || !strings.HasPrefix(out[0].Get("call_id").String(), "call_") {
						t.Errorf("final output %s", gjson.Get(sc.final, "output").Raw)
					}
				})

				checkUpstream(t, env, r, c.apiVersion, before)
			})
		}
	}
}

// TestResponsesStreamWire reads the streams off the wire: text/event-stream, an event: line naming each
// event, and no [DONE] after the terminal event (OpenAI sends none on Responses streams), on every route.
func TestResponsesStreamWire(t *testing.T) {
	env := startDemo(t)
	for _, r := range respRoutes {
		t.Run(r.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"input":"Wire hello","stream":true,"store":false}`, r.model)
			req, err := http.NewRequest(http.MethodPost, env.GatewayURL+"/v1/responses", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer client-key")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var names, datas []string
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<22)
			var name string
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					name = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: "):
					d := strings.TrimPrefix(line, "data: ")
					if d == "[DONE]" {
						t.Errorf("[DONE] after %v: a Responses stream ends with its terminal event", names)
						continue
					}
					if name == "" {
						t.Errorf("event %d without an event: line: %.200s", len(datas), d)
					}
					names, datas = append(names, name), append(datas, d)
					name = ""
				case line == "" || strings.HasPrefix(line, ":"):
				default:
					t.Errorf("unexpected line %q", line)
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if got := checkEvents(t, names, datas); got.text != "echo: Wire hello" {
				t.Errorf("text %q", got.text)
			}
		})
	}
}

// TestResponsesStatefulRefused: previous_response_id needs the provider's stored response. Toward a native
// provider it reaches the provider (the mocks keep what they answered with store true); toward a bridged
// model the gateway cannot serve it and answers 400 naming previous_response_id and the fix, store: false.
func TestResponsesStatefulRefused(t *testing.T) {
	env := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := respClients(env.GatewayURL)[0].c
	for _, r := range respRoutes {
		t.Run(r.name, func(t *testing.T) {
			m := env.Mocks[r.mock]
			before := 0
			if m != nil {
				before = len(m.Received())
			}
			params := responses.ResponseNewParams{
				Model:              r.model,
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And then?")},
				PreviousResponseID: openai.String("resp_0123456789abcdef0123456789abcdef0123456789abcdef01"),
			}
			if !r.bridged {
				// a response the provider stored (store defaults to true), then its continuation
				first, err := c.Responses.New(ctx, responses.ResponseNewParams{
					Model: r.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Remember me")},
				})
				if err != nil {
					st, code, msg := respStatus(err)
					t.Fatalf("first turn: %d %s: %s%s", st, code, msg, upstreamLog(m, before))
				}
				params.PreviousResponseID = openai.String(first.ID)
				res, err := c.Responses.New(ctx, params)
				if err != nil {
					st, code, msg := respStatus(err)
					t.Fatalf("continued: %d %s: %s%s", st, code, msg, upstreamLog(m, before))
				}
				if res.PreviousResponseID != first.ID || res.OutputText() != "echo: And then?" {
					t.Errorf("continued: previous_response_id %q, text %q", res.PreviousResponseID, res.OutputText())
				}
				return
			}
			_, err := c.Responses.New(ctx, params)
			st, code, msg := respStatus(err)
			if st != 400 || !strings.Contains(msg, "previous_response_id") || !strings.Contains(msg, "store: false") {
				t.Errorf("previous_response_id toward %s: %d %q %q, want 400 naming previous_response_id and store: false%s",
					r.name, st, code, msg, upstreamLog(m, before))
			}
			if m != nil && len(m.Received()) != before {
				t.Errorf("the refused request reached the %s mock:%s", r.mock, upstreamLog(m, before))
			}
		})
	}
}

package benchdata

import (
	"bytes"
	"fmt"
	"strings"
)

// The adversarial family: inputs built to hit one pass's worst case, each beside a normal twin of the same
// size that goes through the same operation. translate's linearity tests count the operations each costs
// (internal/opcount); its BenchmarkAdversarial times them natively, and internal/v8host's
// BenchmarkV8Adversarial and BenchmarkWazeroAdversarial time them in the compiled module.

// PaddedChatRequest is ChatRequest padded to exactly size bytes (a metadata note), the request-side twin.
func PaddedChatRequest(model string, size int) []byte {
	body := ChatRequest(model, size-64)
	pad := size - len(body) - len(`,"metadata":{"note":""}`)
	if pad < 0 {
		panic("PaddedChatRequest: the chat body overshoots")
	}
	return append(body[:len(body)-1], `,"metadata":{"note":"`+strings.Repeat("x", pad)+`"}}`...)
}

// ManyKeysRequest is a chat request for model with n top-level keys, short and all different.
func ManyKeysRequest(model string, n int) []byte {
	b := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]`)
	for i := 2; i < n; i++ {
		b = fmt.Appendf(b, `,"param_%05d":%d`, i, i)
	}
	return append(b, '}')
}

// SharedPrefixKeysRequest is a request for model of n top-level keys, all but the model keyLen bytes long
// and differing only in their last bytes: each comparison of two of them costs their whole length. With
// escaped, each key spells its first letter as a \u escape, so it must be decoded before it is compared.
func SharedPrefixKeysRequest(model string, keyLen, n int, escaped bool) []byte {
	first := "k"
	if escaped {
		first = `\u006b`
	}
	prefix := first + strings.Repeat("k", keyLen-7)
	b := []byte(`{"model":"` + model + `"`)
	for i := 1; i < n; i++ {
		b = fmt.Appendf(b, `,"%s%06d":0`, prefix, i)
	}
	return append(b, '}')
}

// DeepRequest is a request for model whose extra field holds arrays nested levels deep (the object itself is
// level 1, the field's array level 2, so levels is at most jsonscan.MaxDepth-2), repeated to about size bytes.
func DeepRequest(model string, levels, size int) []byte {
	nest := strings.Repeat("[", levels) + strings.Repeat("]", levels)
	b := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"x":[` + nest)
	for len(b) < size-len(nest)-3 {
		b = append(append(b, ','), nest...)
	}
	return append(b, "]}"...)
}

// AzureAIEvent is a typical Azure AI stream event: its object "chat.completion" becomes
// "chat.completion.chunk" for an OpenAI client, so every one is edited.
var AzureAIEvent = []byte("data: {\"id\":\"9c1d2e3f\",\"object\":\"chat.completion\",\"created\":1732000000,\"model\":\"Meta-Llama-3-70B-Instruct\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the quick brown fox jumps over\"},\"finish_reason\":null}]}\n\n")

// OpenAIEvent is a typical OpenAI stream event, which an OpenAI client gets unchanged.
func OpenAIEvent(i int) []byte {
	return fmt.Appendf(nil, "data: {\"id\":\"chatcmpl-S1\",\"object\":\"chat.completion.chunk\",\"created\":1732000000,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", i)
}

// doneEvent ends every stream of the family.
const doneEvent = "data: [DONE]\n\n"

// EventsTo repeats event to a stream of exactly size bytes, ended by a finish event and [DONE]; the space
// left over is padding inside the finish event's id.
func EventsTo(size int, event []byte) []byte {
	end := func(pad int) string {
		return `data: {"id":"x` + strings.Repeat("x", pad) + `","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	}
	n := (size - len(end(0)) - len(doneEvent)) / len(event)
	b := bytes.Repeat(event, n)
	b = append(b, end(size-len(b)-len(end(0))-len(doneEvent))...)
	return append(b, doneEvent...)
}

// TinyEvents is a stream of the smallest JSON data events, size bytes (EventsTo).
func TinyEvents(size int) []byte { return EventsTo(size, []byte("data:{}\n\n")) }

// MultiLineEvents is a stream of Azure AI events whose data comes on several data lines (one per member),
// size bytes: an edited event's data must be split into as many lines again, over that event alone.
func MultiLineEvents(size int) []byte {
	event := []byte("data: {\"id\":\"9c1d2e3f\",\ndata: \"object\":\"chat.completion\",\ndata: \"created\":1,\ndata: \"choices\":[{\"index\":0,\"delta\":{\"content\":\" fox\"},\"finish_reason\":null}]}\n\n")
	return EventsTo(size, event)
}

// ManyToolCalls is an Azure AI stream of events of about 256 KiB, each carrying thousands of index-less
// tool-call deltas, to about size bytes: each call gets an index, located in one pass over the event.
func ManyToolCalls(size int) []byte {
	calls := strings.Repeat(`{"id":"c","type":"function","function":{"arguments":""}},`, (256<<10)/56)
	event := []byte(`data: {"id":"a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[` +
		calls[:len(calls)-1] + `]},"finish_reason":null}]}` + "\n\n")
	return EventsTo(size, event)
}

// ResponsesEventsTo repeats event to a native Responses stream of exactly size bytes with CRLF line ends
// (every chunk goes through the framer), ended by a response.completed event whose response carries an id;
// the space left over is padding in that response's instructions.
func ResponsesEventsTo(size int, event []byte) []byte {
	end := func(pad int) string {
		return "event: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"instructions\":\"" +
			strings.Repeat("x", pad) + "\"}}\r\n\r\n"
	}
	n := (size - len(end(0))) / len(event)
	b := bytes.Repeat(event, n)
	return append(b, end(size-len(b)-len(end(0)))...)
}

// UnchangedLifecycleEvents is a native Responses stream (ResponsesEventsTo) of size bytes of lifecycle
// events without a response object: with consumers, the filter reads each to bind its ids and leaves it as it
// came, so each must cost its own bytes, not those forwarded before it in its chunk. The events are 64 bytes,
// so chunks of a power of two bytes from 64 up start with an event: the framer then forwards them as views of
// the chunk, the path where a chunk's forwarded events are copied only when one is rewritten.
func UnchangedLifecycleEvents(size int) []byte {
	return ResponsesEventsTo(size, []byte("event: response.created\r\ndata: {\"p\":\""+strings.Repeat("x", 21)+"\"}\r\n\r\n"))
}

// ResponsesDeltaEvent is a typical text delta of a native Responses stream, CRLF.
var ResponsesDeltaEvent = []byte("event: response.output_text.delta\r\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":7,\"item_id\":\"msg_68af4031\",\"output_index\":0,\"content_index\":0,\"delta\":\" the quick brown fox\",\"logprobs\":[]}\r\n\r\n")

// ManyToolCallIDs is a chat completion (a JSON answer) of about size bytes whose message calls n tools, each
// with a distinct id idLen bytes long that differs from the others only in its last bytes: a bridged
// Responses answer checks the ids for repeats.
func ManyToolCallIDs(size, idLen int) []byte {
	head := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`
	tail := `]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	prefix := strings.Repeat("i", idLen-8)
	var b strings.Builder
	b.WriteString(head)
	for i := 0; b.Len() < size-len(tail)-idLen-96; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%s%08d","type":"function","function":{"name":"f","arguments":"{}"}}`, prefix, i)
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// ToolCallsAnswer is ManyToolCallIDs' normal twin: a chat completion of about size bytes with one tool call
// whose arguments are long.
func ToolCallsAnswer(size int) []byte {
	head := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"text\":\"`
	tail := `\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	return []byte(head + strings.Repeat("y", max(size-len(head)-len(tail), 0)) + tail)
}

// AdversarialPair is a hostile exchange and its normal twin of the same size through the whole filter (the
// compiled module): request-side shapes are the request body, upstream-side shapes the answer.
type AdversarialPair struct {
	Name            string
	Hostile, Normal *Exchange
	// Note says what to expect of the ratio when it is not the family's goal (<= 3x).
	Note string
}

// AdversarialPairs is the adversarial family as exchanges with the filter configured by Config: requests
// for llama-3-70b (the azure-ai provider: rendered, unknown fields dropped) answered with a small JSON
// answer; streams from the azure-ai provider (every event edited) or from openai (forwarded unchanged);
// JSON answers bridged to a Responses client; and an answer full of near misses of the openai provider's
// key, which redaction reads.
func AdversarialPairs() []AdversarialPair {
	const mib = 1 << 20
	request := func(name string, body []byte) *Exchange {
		x := NewExchange(name, "POST", "/v1/chat/completions", ClientHeaders(), body, (len(body)+(16<<10)-1)/(16<<10))
		return x.AnswerWith(200, [][2]string{{"content-type", "application/json"}}, JSONScenario("llama-3-70b").Answer)
	}
	requestPair := func(name string, hostile []byte) AdversarialPair {
		return AdversarialPair{Name: name, Hostile: request(name+"/hostile", hostile),
			Normal: request(name+"/normal", PaddedChatRequest("llama-3-70b", len(hostile)))}
	}
	stream := func(name, model string, tools bool, answer []byte) *Exchange {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"Tell me a story."}],"stream":true`
		if tools {
			body += `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`
		}
		x := NewExchange(name, "POST", "/v1/chat/completions", append(ClientHeaders(), [2]string{"accept", "text/event-stream"}),
			[]byte(body+"}"), 1)
		return x.AnswerWith(200, [][2]string{{"content-type", "text/event-stream"}}, Split(answer, 16<<10))
	}
	streamPair := func(name, model string, tools bool, hostile, normal []byte) AdversarialPair {
		return AdversarialPair{Name: name, Hostile: stream(name+"/hostile", model, tools, hostile),
			Normal: stream(name+"/normal", model, tools, normal)}
	}
	answer := func(name, path, model string, reply []byte) *Exchange {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"Call the tools."}]}`
		if path == "/v1/responses" {
			body = `{"model":"` + model + `","input":"Call the tools.","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`
		}
		x := NewExchange(name, "POST", path, ClientHeaders(), []byte(body), 1)
		return x.AnswerWith(200, [][2]string{{"content-type", "application/json"}}, Split(reply, 16<<10))
	}
	answerPair := func(name, path, model string, hostile, normal []byte, note string) AdversarialPair {
		return AdversarialPair{Name: name, Hostile: answer(name+"/hostile", path, model, hostile),
			Normal: answer(name+"/normal", path, model, normal), Note: note}
	}
	const llama, openai = "llama-3-70b", "o1-mini" // o1-mini: only the openai provider's "*" serves it
	ids := ManyToolCallIDs(mib, 256)
	nearMisses := chatAnswer(strings.Repeat("sk-opena ", mib/9))
	return []AdversarialPair{
		requestPair("many-keys", ManyKeysRequest(llama, 4096)),
		requestPair("shared-prefix-keys", SharedPrefixKeysRequest(llama, 2<<10, 512, false)),
		requestPair("shared-prefix-keys-at-cap", SharedPrefixKeysRequest(llama, 1<<10, 4096, false)),
		requestPair("escaped-keys", SharedPrefixKeysRequest(llama, 2<<10, 512, true)),
		requestPair("deep-nesting", DeepRequest(llama, 254, mib)),
		streamPair("tiny-sse-events", llama, false, TinyEvents(mib), EventsTo(mib, AzureAIEvent)),
		streamPair("tiny-sse-events-zero-edit", openai, false, TinyEvents(mib), EventsTo(mib, OpenAIEvent(0))),
		streamPair("multi-line-events", llama, false, MultiLineEvents(mib), EventsTo(mib, AzureAIEvent)),
		streamPair("many-tool-calls", llama, true, ManyToolCalls(mib), EventsTo(mib, AzureAIEvent)),
		answerPair("key-near-misses", "/v1/chat/completions", openai, nearMisses,
			chatAnswer(strings.Repeat("The quick brown fox jumps over the lazy dog. ", mib/45)), ""),
		answerPair("bridged-tool-call-ids", "/v1/responses", llama, ids, ToolCallsAnswer(len(ids)),
			"the Responses bridge checks tool-call ids for repeats pairwise: quadratic until the wt-bridge fix is merged"),
	}
}

// chatAnswer is an OpenAI chat completion whose message is content.
func chatAnswer(content string) []byte {
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"o1-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

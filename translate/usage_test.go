package translate

import (
	"testing"

	"github.com/tidwall/gjson"
)

// gjsonUsage is how usage was read before plainUsage: gjson's Get and Int on the usage object. plainUsage
// must answer the same for every input, or hand it to this reading.
func gjsonUsage(u gjson.Result) Usage {
	if !u.IsObject() {
		return Usage{}
	}
	prompt, completion := u.Get("prompt_tokens"), u.Get("completion_tokens")
	if !prompt.Exists() && !completion.Exists() {
		prompt, completion = u.Get("input_tokens"), u.Get("output_tokens")
	}
	if !prompt.Exists() && !completion.Exists() {
		return Usage{}
	}
	return Usage{PromptTokens: prompt.Int(), CompletionTokens: completion.Int(), Seen: true}
}

// FuzzUsageMatchesGJSON: the usage read from an answer's usage member (usageOfValue) and from a chunk
// (ReadUsage) is gjson's, whatever the bytes: valid or not, plain integers or not.
func FuzzUsageMatchesGJSON(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":918,"completion_tokens":412,"total_tokens":1330}`,
		`{"prompt_tokens":918,"completion_tokens":412,"total_tokens":1330,"prompt_tokens_details":{"cached_tokens":0}}`,
		`{"total_tokens":1,"prompt_tokens_details":{"cached_tokens":0,"x":[1,{"a":"b\"}"}]},"prompt_tokens":-0,"completion_tokens":007}`,
		`{"prompt_tokens":1.5}`, `{"prompt_tokens":"3"}`, `{"prompt_tokens":null,"prompt_tokens":4}`, `{"prompt_tokens":4,"prompt_tokens":5}`,
		`{"prompt_tokens":9007199254740993,"completion_tokens":999999999999999999}`, `{"prompt_tokens":9999999999999999999}`,
		`{"a":truex,"prompt_tokens":1}`, `{"a":1e5,"prompt_tokens":1}`, `{"a":{]},"prompt_tokens":1}`, `{"pr\u006fmpt_tokens":3}`,
		` {"prompt_tokens" : 3 , "completion_tokens" : 4 } `, "\x04{\"prompt_tokens\"0", `{"prompt_tokens"0}`,
		`[1]`, `null`, `{}`, ``, `{"prompt_tokens":1`, `{"prompt_tokens":1]`, `{"prompt_tokens":1,}`, `{"a":"\`, `{"prompt_tokens":-}`,
		`{"input_tokens":9,"output_tokens":2,"total_tokens":11}`, `{"output_tokens":2}`, `{"input_tokens":1,"prompt_tokens":2}`,
		`{"input_tokens":9,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":11}`,
		`{"completion_tokens":5}`, `{"prompt_tokens":true}`, `{"x":-1.2e-3,"completion_tokens":2,"prompt_tokens":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := usageOfValue(b), gjsonUsage(gjson.ParseBytes(b)); got != want {
			t.Fatalf("usageOfValue(%q) = %+v, gjson reads %+v", b, got, want)
		}
		chunk := append(append([]byte(`{"id":"c","usage":`), b...), '}')
		if got, want := ReadUsage(chunk), gjsonUsage(gjson.GetBytes(chunk, "usage")); got != want {
			t.Fatalf("ReadUsage(%q) = %+v, gjson reads %+v", chunk, got, want)
		}
	})
}

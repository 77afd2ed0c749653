package gjsonpretty

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestModifiers: the expected results are what gjson v1.20.0 returns with tidwall/pretty v1.2.0.
func TestModifiers(t *testing.T) {
	const doc = `{"model":"gpt-4o", "messages":[{"role":"user","content":"hi \"there\""}],"n":[1,2,3],"b":{"y":true,"x":null}}`
	for _, c := range []struct{ path, want string }{
		{"@pretty", "{\n  \"model\": \"gpt-4o\",\n  \"messages\": [\n    {\n      \"role\": \"user\",\n      \"content\": \"hi \\\"there\\\"\"\n    }\n  ],\n  \"n\": [1, 2, 3],\n  \"b\": {\n    \"y\": true,\n    \"x\": null\n  }\n}\n"},
		{"@ugly", "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi \\\"there\\\"\"}],\"n\":[1,2,3],\"b\":{\"y\":true,\"x\":null}}"},
		{`@pretty:{"sortKeys":true}`, "{\n  \"b\": {\n    \"x\": null,\n    \"y\": true\n  },\n  \"messages\": [\n    {\n      \"content\": \"hi \\\"there\\\"\",\n      \"role\": \"user\"\n    }\n  ],\n  \"model\": \"gpt-4o\",\n  \"n\": [1, 2, 3]\n}\n"},
		{`@pretty:{"indent":"\t","prefix":" ","width":10}`, "{\n \t\"model\": \"gpt-4o\",\n \t\"messages\": [\n \t\t{\n \t\t\t\"role\": \"user\",\n \t\t\t\"content\": \"hi \\\"there\\\"\"\n \t\t}\n \t],\n \t\"n\": [\n \t\t1,\n \t\t2,\n \t\t3\n \t],\n \t\"b\": {\n \t\t\"y\": true,\n \t\t\"x\": null\n \t}\n }\n"},
		{`@pretty:{"sortKeys":true,"indent":"x y","width":4}`, "{\n \"b\": {\n  \"x\": null,\n  \"y\": true\n },\n \"messages\": [\n  {\n   \"content\": \"hi \\\"there\\\"\",\n   \"role\": \"user\"\n  }\n ],\n \"model\": \"gpt-4o\",\n \"n\": [\n  1,\n  2,\n  3\n ]\n}\n"},
		{"messages.0|@pretty", "{\n  \"role\": \"user\",\n  \"content\": \"hi \\\"there\\\"\"\n}\n"},
		{"b|@ugly", "{\"y\":true,\"x\":null}"},
	} {
		if got := gjson.Get(doc, c.path).String(); got != c.want {
			t.Errorf("gjson.Get(doc, %q)\n got %q\nwant %q", c.path, got, c.want)
		}
	}
}

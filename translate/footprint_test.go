package translate

import (
	"strconv"
	"strings"
	"testing"
)

// TestFootprintFollowsTheBuffers: a body's and a stream's footprint grows with what they kept from their
// largest input, so the caller can refuse to pool one that a huge request inflated.
func TestFootprintFollowsTheBuffers(t *testing.T) {
	var small, large RequestBody
	if err := small.Parse([]byte(`{"model":"m"}`)); err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	many.WriteString(`{"model":"m"`)
	for i := 0; i < 1000; i++ {
		many.WriteString(`,"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i) + `":1`)
	}
	many.WriteString("}")
	if err := large.Parse([]byte(many.String())); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderBody(nil, &ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}, &large,
		&Target{Dialect: AzureAI, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if s, l := small.Footprint(), large.Footprint(); l < 1000*40 || l <= s {
		t.Errorf("footprint of a 1000-member body %d, of a 1-member one %d: want the large one at least 40 KB", l, s)
	}

	quiet, busy := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 0), NewStream(
		Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 0)
	event := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 64<<10) + "\"}}]}\n\n"
	if _, err := busy.Write([]byte(event[:len(event)/2])); err != nil { // carried over: the framer keeps it
		t.Fatal(err)
	}
	if _, err := busy.Write([]byte(event[len(event)/2:])); err != nil {
		t.Fatal(err)
	}
	if q, b := quiet.Footprint(), busy.Footprint(); b < 32<<10 || b <= q {
		t.Errorf("footprint after a 64 KiB event carried over %d, of a fresh stream %d", b, q)
	}

	// A bound stream's cache of the last id it bound (and of its bound form) is kept too.
	bound := NewStream(Exchange{Client: OpenAI, Provider: OpenAI, Op: OpResponses, Binding: bindingA}, 0)
	id := strings.Repeat("r", maxBindableID)
	if _, err := bound.Write([]byte("event: response.created\ndata: {\"response\":{\"id\":\"" + id + "\"}}\n\n")); err != nil {
		t.Fatal(err)
	}
	bound.Close()
	bound.Release()
	kept := cap(bound.tags.id) + cap(bound.tags.bound)
	if kept < 3*maxBindableID {
		t.Fatalf("the cache keeps %d bytes after binding a %d-byte id", kept, maxBindableID)
	}
	before := bound.Footprint()
	bound.tags = tagCache{}
	if after := bound.Footprint(); before-after != kept {
		t.Errorf("the bound stream's footprint counts %d of the %d bytes its id cache keeps", before-after, kept)
	}
}

// TestReleaseDropsTheSource: a released body or stream keeps its buffers but no view of the last input, so a
// pooled one does not keep a request's bytes alive.
func TestReleaseDropsTheSource(t *testing.T) {
	var b RequestBody
	src := []byte(`{"model":"m","mo\u0064el2":1,"stream_options":{"include_usage":false},"stream":true}`)
	if err := b.Parse(src); err != nil {
		t.Fatal(err)
	}
	if _, err := RenderBody(nil, &ClientRequest{Dialect: OpenAI, Op: OpChatCompletions}, &b,
		&Target{Dialect: OpenAI, Model: "m", ForceStreamUsage: true}); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if b.src != nil || b.Model != "" || len(b.members) != 0 || b.render.req != nil {
		t.Errorf("released body still holds its request: src %q model %q members %d", b.src, b.Model, len(b.members))
	}
	for i, v := range b.planValues[:cap(b.planValues)] {
		if v.raw != nil || v.str != "" {
			t.Errorf("released plan value %d still holds %q / %q", i, v.raw, v.str)
		}
	}
	if cap(b.planValues) == 0 {
		t.Error("the rendering kept no rewritten value: the check above checks nothing")
	}
	for i, name := range b.names[:cap(b.names)] {
		if name != "" {
			t.Errorf("released name %d still holds %q", i, name)
		}
	}
	if cap(b.members) == 0 {
		t.Error("Release dropped the member buffer it should keep")
	}

	s := NewStream(Exchange{Client: OpenAI, Provider: AzureAI, Op: OpChatCompletions}, 0)
	if _, err := s.Write([]byte("data: {\"choices\":[]}\n\ndata: {\"cho")); err != nil {
		t.Fatal(err)
	}
	if s.parts.choices == nil {
		t.Fatal("the test's event was not looked at")
	}
	s.Release()
	if s.parts.choices != nil || s.parts.object != nil || s.parts.usage != nil {
		t.Error("released stream still holds its last event")
	}
}

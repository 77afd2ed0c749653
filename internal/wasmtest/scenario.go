package wasmtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aidialect/aidialect/internal/benchdata"
	"github.com/aidialect/aidialect/internal/hostemu"
)

// Client is the downstream side of an exchange played through hostemu: what the filter releases.
type Client struct {
	Status  int
	Headers [][2]string
	Body    []byte
}

// WriteHeaders implements hostemu.ClientWriter.
func (c *Client) WriteHeaders(status int, headers [][2]string) { c.Status, c.Headers = status, headers }

// WriteBody implements hostemu.ClientWriter.
func (c *Client) WriteBody(p []byte) error {
	c.Body = append(c.Body, p...)
	return nil
}

// Reset forgets the last answer, keeping the body's buffer.
func (c *Client) Reset() { c.Status, c.Headers, c.Body = 0, nil, c.Body[:0] }

// ChunkReader hands out one chunk per Read, like network reads.
type ChunkReader struct {
	Chunks [][]byte
	i, off int
}

func (r *ChunkReader) Read(p []byte) (int, error) {
	if r.i >= len(r.Chunks) {
		return 0, io.EOF
	}
	n := copy(p, r.Chunks[r.i][r.off:])
	if r.off += n; r.off == len(r.Chunks[r.i]) {
		r.i, r.off = r.i+1, 0
	}
	return n, nil
}

// Play plays x through host: the request, and the upstream's answer back (through r, into c, both reused
// from one exchange to the next), then ends the stream the way Envoy does: Finish runs proxy_on_log, then
// proxy_on_delete, and the host forgets the stream's state (hostemu does what proxytest does not).
func Play(host *hostemu.Host, x *benchdata.Exchange, c *Client, r *ChunkReader) (*hostemu.Exchange, error) {
	c.Reset()
	hx := host.Begin()
	err := hx.SendRequest(x.Headers, x.Chunks)
	if err == nil && hx.Local == nil && hx.Upstream != nil {
		*r = ChunkReader{Chunks: x.Answer}
		err = hx.RelayResponse(x.Status, x.AnswerHeaders, r, nil, c)
	}
	hx.Finish()
	return hx, errors.Join(err, host.Dead())
}

// Outcome is what one exchange of a lifecycle scenario produced, whichever engine ran it.
type Outcome struct {
	Local        *hostemu.Response // the filter answered itself
	UpstreamHead [][2]string       // nil: no upstream request
	UpstreamBody []byte
	Status       int // the client's answer
	ClientHead   [][2]string
	ClientBody   []byte
}

// HostemuOutcome is a Play's outcome.
func HostemuOutcome(x *hostemu.Exchange, c *Client) Outcome {
	o := Outcome{Local: x.Local, Status: c.Status, ClientHead: c.Headers, ClientBody: c.Body}
	if x.Upstream != nil {
		o.UpstreamHead, o.UpstreamBody = x.Upstream.Headers, x.Upstream.Body
	}
	return o
}

// CheckScenario checks what module (FilterName or FloorName) made of a lifecycle scenario
// (benchdata.JSONScenario, benchdata.StreamScenario under benchdata.Config), so that a benchmark measures the
// intended work: the filter routed the request to the azure-ai provider and translated both ways, the floor
// changed nothing.
func CheckScenario(module string, x *benchdata.Exchange, o Outcome) error {
	if o.Local != nil {
		return fmt.Errorf("%s answered locally: %d %s", module, o.Local.Status, o.Local.Body)
	}
	if o.UpstreamHead == nil || o.Status != 200 {
		return fmt.Errorf("%s: no upstream request or client status %d", module, o.Status)
	}
	up, down := o.UpstreamBody, o.ClientBody
	if module == FloorName {
		if !bytes.Equal(up, x.Body()) || !bytes.Equal(down, x.Reply()) {
			return fmt.Errorf("the floor changed a body:\n%s\n%s", up, down)
		}
		return nil
	}
	if bytes.Contains(up, []byte(`"user":`)) || bytes.Contains(up, []byte(`"logit_bias":`)) ||
		!bytes.Contains(up, []byte(`"model":"Meta-Llama-3-70B-Instruct"`)) {
		return fmt.Errorf("the upstream body was not rendered for azure-ai: %.300s", up)
	}
	if got := header(o.UpstreamHead, "x-aidialect-provider"); got != "llama" {
		return fmt.Errorf("routed to %q, want llama", got)
	}
	if !strings.Contains(header(o.UpstreamHead, ":path"), "api-version=") {
		return fmt.Errorf("upstream path %q has no api-version", header(o.UpstreamHead, ":path"))
	}
	if x.Streams() {
		if n := bytes.Count(down, []byte(`"object":"chat.completion.chunk"`)); n != benchdata.StreamEvents {
			return fmt.Errorf("%d of %d events edited:\n%s", n, benchdata.StreamEvents, down)
		}
		if !bytes.HasSuffix(down, []byte("data: [DONE]\n\n")) {
			return fmt.Errorf("the stream does not end with [DONE]: %s", down)
		}
		return nil
	}
	if got := header(o.ClientHead, "x-aidialect-dropped-params"); got != "user,logit_bias" {
		return fmt.Errorf("x-aidialect-dropped-params %q, want user,logit_bias", got)
	}
	if !bytes.Contains(down, []byte(`"total_tokens":1330`)) {
		return fmt.Errorf("answer not relayed: %s", down)
	}
	return nil
}

// header is the first value of name (case-insensitive), "" when absent.
func header(headers [][2]string, name string) string {
	for _, kv := range headers {
		if strings.EqualFold(kv[0], name) {
			return kv[1]
		}
	}
	return ""
}

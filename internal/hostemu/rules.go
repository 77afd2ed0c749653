package hostemu

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RulesJSON is rules.json: the host rules as data, the one definition both test hosts read. hostemu's code
// enforces them (TestRuleTable plays every scenario through it and fails on any other verdict); the V8 host
// (internal/v8host/host.mjs) reads the same bytes and takes its data from them (which rule each check
// reports, the event-stream media type, the headers a local reply needs, the foreign functions, the read
// size), and TestRuleTableUnderV8 plays the same scenarios through it.
//
//go:embed rules.json
var RulesJSON []byte

// Rules is RulesJSON decoded.
var Rules = mustRules(RulesJSON)

// RuleTable is the shape of rules.json.
type RuleTable struct {
	About   string `json:"about"`
	Actions struct {
		Continue int `json:"continue"`
		Pause    int `json:"pause"`
	} `json:"actions"`
	// EventStreamMediaType is the response media type that must never be paused (compared case-insensitively).
	EventStreamMediaType string `json:"event_stream_media_type"`
	// LocalReplyRequiredHeaders must be present in every local reply.
	LocalReplyRequiredHeaders []string `json:"local_reply_required_headers"`
	// ForeignFunctions are the foreign functions the host registers (calls are counted, Host.RouteClears).
	ForeignFunctions []string `json:"foreign_functions"`
	// ResponseReadBytes is the most one response body callback gets: the upstream's body is read in pieces of
	// at most this size, one callback each.
	ResponseReadBytes int `json:"response_read_bytes"`
	// Trap is the verdict of a trap: the VM is dead (ErrVMDead).
	Trap string `json:"trap"`
	// Checks break a rule: a host must report Rule ("trap": the VM dies).
	Checks []RuleCheck `json:"checks"`
	// Allowed break none: a host must report nothing, and every host must produce the same exchange.
	Allowed []RuleCheck `json:"allowed"`
}

// RuleCheck is one thing a host checks, with a scenario that trips it (nil: no exchange reaches it; the
// check is listed so the table names every check the host code makes).
type RuleCheck struct {
	ID       string    `json:"id"`
	Rule     string    `json:"rule"`
	Text     string    `json:"text"`
	Scenario *Scenario `json:"scenario"`
}

// Check returns the check with the given id.
func (t *RuleTable) Check(id string) (RuleCheck, bool) {
	for _, c := range append(t.Checks, t.Allowed...) {
		if c.ID == id {
			return c, true
		}
	}
	return RuleCheck{}, false
}

// Scenario is one exchange played through a scriptable guest (internal/hostemu/ruleguest, configured with
// Guest as its plugin configuration).
type Scenario struct {
	Guest    json.RawMessage   `json:"guest"`
	Request  ScenarioRequest   `json:"request"`
	Response *ScenarioResponse `json:"response"` // nil: the request gets no answer
}

// ScenarioRequest is the client's request.
type ScenarioRequest struct {
	Headers  [][2]string `json:"headers"`
	Body     []string    `json:"body"`     // chunks; none: a body-less request
	Trailers [][2]string `json:"trailers"` // nil: end_of_stream on the last chunk
}

// ScenarioResponse is the upstream's answer.
type ScenarioResponse struct {
	Status   int         `json:"status"`
	Headers  [][2]string `json:"headers"`
	Body     []string    `json:"body"` // nil: a body-less response
	Trailers [][2]string `json:"trailers"`
}

// ScenarioOutcome is what a scenario produced.
type ScenarioOutcome struct {
	Local          *Response
	Upstream       *Request
	Status         int
	ClientHeaders  [][2]string
	ClientBody     []byte
	ClientTrailers [][2]string
}

// Verdict names what an error from a host means in the table's terms: "" for none, the rule of a
// *RuleError, Rules.Trap for a dead VM, else the error text.
func Verdict(err error) string {
	var rule *RuleError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &rule):
		return rule.Rule
	case errors.Is(err, ErrVMDead):
		return "trap"
	}
	return "error: " + err.Error()
}

// PlayScenario plays sc through h the way the plugin tests play an exchange (plugin/harness_test.go, run):
// the request, then (unless the filter answered it) the upstream's answer, relayed in one callback per
// chunk, then the response content-length check, then Finish.
func PlayScenario(h *Host, sc *Scenario) (*ScenarioOutcome, error) {
	o := &ScenarioOutcome{}
	x := h.Begin()
	defer x.Finish()
	var chunks [][]byte
	for _, c := range sc.Request.Body {
		chunks = append(chunks, []byte(c))
	}
	err := x.SendRequestTrailers(sc.Request.Headers, chunks, sc.Request.Trailers)
	o.Local, o.Upstream = x.Local, x.Upstream
	if x.Local != nil {
		o.Status, o.ClientHeaders, o.ClientBody = x.Local.Status, x.Local.Headers, x.Local.Body
	}
	if err != nil || x.Local != nil || x.Upstream == nil || sc.Response == nil {
		return o, err
	}
	r := sc.Response
	var body io.Reader
	if r.Body != nil {
		body = &stringChunks{chunks: append([]string(nil), r.Body...)}
	}
	var trailers func() [][2]string
	if r.Trailers != nil {
		trailers = func() [][2]string { return r.Trailers }
	}
	w := &scenarioClient{}
	err = x.RelayResponse(r.Status, r.Headers, body, trailers, w)
	o.Local = x.Local
	o.Status, o.ClientHeaders, o.ClientBody, o.ClientTrailers = w.status, w.headers, w.body, w.trailers
	if err != nil {
		return o, err
	}
	return o, x.CheckContentLength(len(w.body))
}

type scenarioClient struct {
	status   int
	headers  [][2]string
	body     []byte
	trailers [][2]string
}

func (c *scenarioClient) WriteHeaders(status int, headers [][2]string) {
	c.status, c.headers = status, headers
}

func (c *scenarioClient) WriteBody(p []byte) error {
	c.body = append(c.body, p...)
	return nil
}

func (c *scenarioClient) WriteTrailers(t [][2]string) { c.trailers = t }

// stringChunks hands out one chunk per Read, like network reads.
type stringChunks struct{ chunks []string }

func (s *stringChunks) Read(p []byte) (int, error) {
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.chunks[0])
	if n == len(s.chunks[0]) {
		s.chunks = s.chunks[1:]
	} else {
		s.chunks[0] = s.chunks[0][n:]
	}
	return n, nil
}

func mustRules(raw []byte) *RuleTable {
	t := &RuleTable{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		panic(fmt.Sprintf("hostemu: rules.json: %v", err))
	}
	seen := map[string]bool{}
	for _, c := range append(t.Checks, t.Allowed...) {
		if c.ID == "" || seen[c.ID] {
			panic("hostemu: rules.json: empty or repeated check id " + strconv.Quote(c.ID))
		}
		seen[c.ID] = true
	}
	return t
}

package hostemu

import (
	"bytes"
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// HTTP callouts (proxy_http_call), as Envoy serves them (docs/envoy-host.md section 9): the cluster must be
// one Envoy has, the headers must carry :method, :path and :authority, the whole answer is buffered (over
// the limit, or on a reset or timeout, the guest's callback gets no headers and no body), and a callout
// belongs to the root context (proxy-wasm-cpp-host's http_call), so a stream that ends first does not cancel
// it: its answer still comes, and the SDK drops it. proxytest records the callouts and delivers
// whatever answer it is handed; the Exchange checks Envoy's rules and hands them the answer a Callouts
// function gives.

// Callout is an HTTP callout the filter dispatched.
type Callout struct {
	Cluster string
	Headers [][2]string
	Body    []byte
}

// Header returns a header's value ("" when absent).
func (c *Callout) Header(name string) string { return lookup(c.Headers, name) }

// CalloutAnswer is how a callout ends: an answer (Headers with :status, Body), or Failed (a reset, no
// healthy host, a timeout), or ClientGone (the client left before it ended: Envoy destroys the stream and
// cancels the callout).
type CalloutAnswer struct {
	Headers    [][2]string
	Body       []byte
	Failed     bool
	ClientGone bool
}

// DefaultCalloutBufferLimit is the most a callout's answer may hold before Envoy fails it: Envoy's async
// client buffers the whole body, up to the runtime value http.async_response_buffer_limit, 32 MiB unless set
// (docs/envoy-host.md section 9).
const DefaultCalloutBufferLimit = 32 << 20

// calloutRule is the rule row callouts report.
const calloutRule = "envoy-host 9"

// pendingCallouts returns the callouts the filter dispatched since the last call; called with mu held.
func (x *Exchange) pendingCallouts() []Callout {
	all := x.h.emu.GetCalloutAttributesFromContext(x.id)
	if len(all) <= x.calloutsSeen {
		return nil
	}
	var out []Callout
	for _, c := range all[x.calloutsSeen:] {
		out = append(out, Callout{Cluster: c.Upstream, Headers: cloneHeaders(c.Headers), Body: bytes.Clone(c.Body)})
		x.calloutIDs = append(x.calloutIDs, c.CalloutID)
	}
	x.calloutsSeen = len(all)
	return out
}

// resolveCallouts delivers the answers of the callouts the last callback dispatched, and of those their
// callbacks dispatched in turn, until none is pending. replied reports a local reply from a callback, which
// ends the exchange; gone reports the client leaving. It writes what the filter released to w.
func (x *Exchange) resolveCallouts(w ClientWriter) (replied, gone bool, err error) {
	for {
		pending, ids, err := x.takeCallouts()
		if err != nil || len(pending) == 0 {
			return false, false, err
		}
		// The highest number first (calloutorder.go).
		for i := len(pending) - 1; i >= 0; i-- {
			answer, err := x.answerFor(pending[i], ids[:i+1])
			if err != nil {
				return false, false, err
			}
			if answer.ClientGone {
				return false, true, x.clientGone(ids[i], ids[:i])
			}
			err = x.step(w, func(o *released) error {
				x.h.deliver(ids[i], answer)
				if r, err := x.responseLocalReply(types.ActionPause, "the callout's callback", o); r || err != nil {
					if err == nil {
						err = errLocalReplied
					}
					return err
				}
				return nil
			})
			if err != nil {
				x.h.abandon(ids[:i])
				if err == errLocalReplied {
					return true, false, nil
				}
				return false, false, err
			}
		}
	}
}

// takeCallouts returns the callouts the filter dispatched since the last call, and their numbers.
func (x *Exchange) takeCallouts() (pending []Callout, ids []uint32, err error) {
	err = x.h.do(func() error {
		pending = x.pendingCallouts()
		ids = x.calloutIDs[len(x.calloutIDs)-len(pending):]
		return nil
	})
	return pending, ids, err
}

// answerFor checks a callout as Envoy does before sending it, and gets its answer from the exchange's
// Callouts (without the host lock). On a broken rule the callouts left unanswered (unanswered: this one
// and those numbered below it) are abandoned.
func (x *Exchange) answerFor(c Callout, unanswered []uint32) (CalloutAnswer, error) {
	if err := x.checkCallout(&c); err != nil {
		x.h.abandon(unanswered)
		return CalloutAnswer{}, err
	}
	if x.Callouts == nil {
		x.h.abandon(unanswered)
		return CalloutAnswer{}, ruleErr(calloutRule, "the filter made a callout to cluster %q, which this host has no answer for", c.Cluster)
	}
	return x.Callouts(c), nil
}

// clientGone ends the exchange as Envoy does when the client leaves while callout id is under way: the
// stream is destroyed (OnHttpStreamDone); the callout, the root context's, goes on and its answer still
// comes, which the SDK drops for a deleted context. The others (rest) are never answered.
func (x *Exchange) clientGone(id uint32, rest []uint32) error {
	x.Finish()
	x.ClientGone = true
	x.h.abandon(rest)
	return x.h.do(func() error {
		x.h.deliver(id, CalloutAnswer{Failed: true})
		return nil
	})
}

// checkCallout enforces what Envoy checks before it sends a callout (Context::httpCall answers BadArgument).
func (x *Exchange) checkCallout(c *Callout) error {
	if x.h.Clusters != nil && !x.h.Clusters[c.Cluster] {
		return ruleErr(calloutRule, "callout to cluster %q, which Envoy does not have: proxy_http_call answers BadArgument", c.Cluster)
	}
	for _, name := range []string{":method", ":path", ":authority"} {
		if c.Header(name) == "" {
			return ruleErr(calloutRule, "callout to %q without %s: proxy_http_call answers BadArgument", c.Cluster, name)
		}
	}
	for _, kv := range c.Headers {
		if kv[0] != strings.ToLower(kv[0]) {
			return ruleErr(calloutRule, "callout header %q is not in lower case", kv[0])
		}
	}
	return nil
}

// awaitRequestCallouts answers the callouts a request callback made before it paused at the end of the
// request (a budget check): Envoy holds the request until a callout's callback resumes it
// (proxy_continue_stream, which proxytest records as the stream's action) or answers it locally. Each answer
// is fetched without the host lock, as Envoy's worker goes on serving other streams while a callout is out.
// A client that leaves finishes the stream; the callout, the root context's, still answers, and the SDK
// drops the answer (docs/envoy-host.md section 9).
func (x *Exchange) awaitRequestCallouts() error {
	if x.awaiting == "" {
		return nil
	}
	where := x.awaiting
	x.awaiting = ""
	for {
		pending, ids, err := x.takeCallouts()
		if err != nil {
			return err
		}
		if len(pending) == 0 {
			if where == "OnHttpRequestTrailers" {
				return ruleErr("envoy-host 4", "OnHttpRequestTrailers paused with callouts whose callbacks neither resumed nor answered the request: it would hang")
			}
			return ruleErr("envoy-host 3", "OnHttpRequestBody paused at end_of_stream, and the callouts' callbacks neither resumed nor answered the request: it would hang")
		}
		for i := len(pending) - 1; i >= 0; i-- {
			answer, err := x.answerFor(pending[i], ids[:i+1])
			if err != nil {
				return err
			}
			if answer.ClientGone {
				return x.clientGone(ids[i], ids[:i])
			}
			done := false
			err = x.h.do(func() error {
				x.h.deliver(ids[i], answer)
				if local, err := x.localReply(types.ActionPause, "the callout's callback (after "+where+")"); local || err != nil {
					done = true
					return err
				}
				if x.h.emu.GetCurrentHttpStreamAction(x.id) != types.ActionContinue {
					return nil
				}
				done = true
				return x.resumeRequest(where)
			})
			if done || err != nil {
				x.h.abandon(ids[:i])
				return err
			}
		}
	}
}

// resumeRequest sends on a request a callout's callback resumed: Envoy continues it from the callback that
// paused, with the body it buffered (and the trailers). Called with mu held.
func (x *Exchange) resumeRequest(where string) error {
	emu := x.h.emu
	x.requestHeld = false
	x.sent = append(x.sent, emu.GetCurrentRequestBody(x.id)...)
	if x.requestHeaders == nil {
		x.requestHeaders = headerMap(emu.GetCurrentRequestHeaders(x.id))
	}
	var upTrailers [][2]string
	if where == "OnHttpRequestTrailers" {
		upTrailers = currentTrailers(proxywasm.GetHttpRequestTrailers, x.awaitingTrailers)
	}
	return x.requestEnded(upTrailers)
}

// resolveRootCallouts answers the callouts the plugin made from its root context (its tick), and those their
// callbacks made in turn; each answer is fetched without the host lock.
func (h *Host) resolveRootCallouts() error {
	for {
		var pending []Callout
		var ids []uint32
		if err := h.do(func() error {
			all := h.emu.GetCalloutAttributesFromContext(proxytest.PluginContextID)
			for _, a := range all[min(h.rootCalloutsSeen, len(all)):] {
				pending = append(pending, Callout{Cluster: a.Upstream, Headers: cloneHeaders(a.Headers), Body: bytes.Clone(a.Body)})
				ids = append(ids, a.CalloutID)
			}
			h.rootCalloutsSeen = len(all)
			return nil
		}); err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		for i := len(pending) - 1; i >= 0; i-- {
			c := pending[i]
			x := &Exchange{h: h}
			if err := x.checkCallout(&c); err != nil {
				h.abandon(ids[:i+1])
				return err
			}
			if h.RootCallouts == nil {
				h.abandon(ids[:i+1])
				return ruleErr(calloutRule, "the plugin made a callout to cluster %q from its root context, which this host has no answer for", c.Cluster)
			}
			answer := h.RootCallouts(c)
			if err := h.do(func() error {
				h.deliver(ids[i], answer)
				return nil
			}); err != nil {
				return err
			}
		}
	}
}

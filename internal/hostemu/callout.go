package hostemu

import (
	"bytes"
	"strings"

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
		var pending []Callout
		var ids []uint32
		if err := x.h.do(func() error {
			pending = x.pendingCallouts()
			ids = x.calloutIDs[len(x.calloutIDs)-len(pending):]
			return nil
		}); err != nil {
			return false, false, err
		}
		if len(pending) == 0 {
			return false, false, nil
		}
		for i, c := range pending {
			if err := x.checkCallout(&c); err != nil {
				return false, false, err
			}
			var answer CalloutAnswer
			switch {
			case x.Callouts == nil:
				return false, false, ruleErr(calloutRule, "the filter made a callout to cluster %q, which this host has no answer for", c.Cluster)
			default:
				answer = x.Callouts(c)
			}
			if answer.ClientGone {
				// Envoy destroys the stream (OnHttpStreamDone); the callout, the root context's, goes on and its
				// answer still comes, which the SDK drops for a deleted context.
				x.Finish()
				x.ClientGone = true
				id := ids[i]
				return false, true, x.h.do(func() error {
					x.h.emu.CallOnHttpCallResponse(id, nil, nil, nil)
					return nil
				})
			}
			limit := x.h.CalloutBufferLimit
			if limit == 0 {
				limit = DefaultCalloutBufferLimit
			}
			if len(answer.Body) > limit {
				answer = CalloutAnswer{Failed: true}
			}
			id := ids[i]
			err := x.step(w, func(o *released) error {
				if answer.Failed {
					x.h.emu.CallOnHttpCallResponse(id, nil, nil, nil)
				} else {
					x.h.emu.CallOnHttpCallResponse(id, answer.Headers, nil, answer.Body)
				}
				if r, err := x.responseLocalReply(types.ActionPause, "the callout's callback", o); r || err != nil {
					if err == nil {
						err = errLocalReplied
					}
					return err
				}
				return nil
			})
			if err == errLocalReplied {
				return true, false, nil
			}
			if err != nil {
				return false, false, err
			}
		}
	}
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

// requestCallouts answers the callouts a request callback made before it paused at the end of the request
// (a budget check): Envoy holds the request until a callout's callback resumes it (proxy_continue_stream,
// which proxytest records as the stream's action) or answers it locally. done: the filter answered, or the
// client left (the stream is finished, and the callout's answer still comes, to the root context, where the
// SDK drops it: docs/envoy-host.md section 9). Called with mu held.
func (x *Exchange) requestCallouts(where string) (resumed, done bool, err error) {
	emu := x.h.emu
	for {
		pending := x.pendingCallouts()
		if len(pending) == 0 {
			return false, false, nil
		}
		ids := x.calloutIDs[len(x.calloutIDs)-len(pending):]
		for i, c := range pending {
			if err := x.checkCallout(&c); err != nil {
				return false, true, err
			}
			if x.Callouts == nil {
				return false, true, ruleErr(calloutRule, "the filter made a callout to cluster %q, which this host has no answer for", c.Cluster)
			}
			answer := x.Callouts(c)
			if answer.ClientGone {
				x.ClientGone = true
				if !x.done {
					x.done = true
					emu.CompleteHttpContext(x.id)
					x.h.release.release(x.id)
				}
				emu.CallOnHttpCallResponse(ids[i], nil, nil, nil) // the answer still comes; the SDK drops it
				return false, true, nil
			}
			x.deliverCallout(ids[i], answer)
			if local, err := x.localReply(types.ActionPause, "the callout's callback (after "+where+")"); local || err != nil {
				return false, true, err
			}
			if emu.GetCurrentHttpStreamAction(x.id) == types.ActionContinue {
				return true, false, nil
			}
		}
	}
}

// deliverCallout hands a callout's answer to the filter, failed when it is over Envoy's buffer limit.
// Called with mu held.
func (x *Exchange) deliverCallout(id uint32, answer CalloutAnswer) {
	limit := x.h.CalloutBufferLimit
	if limit == 0 {
		limit = DefaultCalloutBufferLimit
	}
	if answer.Failed || len(answer.Body) > limit {
		x.h.emu.CallOnHttpCallResponse(id, nil, nil, nil)
		return
	}
	x.h.emu.CallOnHttpCallResponse(id, answer.Headers, nil, answer.Body)
}

// resolveRootCallouts answers the callouts the plugin made from its root context (its tick), and those their
// callbacks made in turn. Called with mu held.
func (h *Host) resolveRootCallouts() error {
	for {
		all := h.emu.GetCalloutAttributesFromContext(proxytest.PluginContextID)
		if len(all) <= h.rootCalloutsSeen {
			return nil
		}
		for _, a := range all[h.rootCalloutsSeen:] {
			h.rootCalloutsSeen++
			c := Callout{Cluster: a.Upstream, Headers: cloneHeaders(a.Headers), Body: bytes.Clone(a.Body)}
			x := &Exchange{h: h}
			if err := x.checkCallout(&c); err != nil {
				return err
			}
			if h.RootCallouts == nil {
				return ruleErr(calloutRule, "the plugin made a callout to cluster %q from its root context, which this host has no answer for", c.Cluster)
			}
			x.deliverCallout(a.CalloutID, h.RootCallouts(c))
		}
	}
}

package hostemu

import (
	"slices"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/proxytest"
)

// proxytest numbers a callout by the size of its table of pending callouts, and answering one removes it
// from the table: answered out of order, a pending callout's number is handed to the next one, whose
// callback the SDK then files in its place (Envoy counts callouts up, proxy-wasm-cpp-host's
// nextHttpCallId). With callouts of several streams under way at once (the local gateway), this host keeps
// the numbers unique by answering the highest pending one first: a callout whose answer is back waits, under
// the host's condition, for those numbered above it. The numbers then stay 0..n-1 and a new one is n.
//
// calloutOrder is that bookkeeping, guarded by Host.mu.
type calloutOrder struct {
	pending map[uint32]bool // dispatched, not answered nor abandoned
	seen    map[uint32]int  // per context: callouts already registered
	live    []uint32        // contexts that may still dispatch: open exchanges, and the root
	waiting int             // deliveries waiting for their turn
}

// register records the callouts dispatched since the last call, by every context that may dispatch.
// Called with mu held, after every call into the VM.
func (h *Host) registerCallouts() {
	o := &h.order
	if o.pending == nil {
		o.pending, o.seen = map[uint32]bool{}, map[uint32]int{}
		o.live = append(o.live, proxytest.PluginContextID)
	}
	for _, id := range o.live {
		all := h.emu.GetCalloutAttributesFromContext(id)
		for _, c := range all[min(o.seen[id], len(all)):] {
			o.pending[c.CalloutID] = true
		}
		o.seen[id] = len(all)
	}
}

// contextOpened and contextClosed keep the list of contexts that may dispatch. Called with mu held.
func (h *Host) contextOpened(id uint32) {
	h.registerCallouts()
	h.order.live = append(h.order.live, id)
}

func (h *Host) contextClosed(id uint32) {
	h.registerCallouts()
	if i := slices.Index(h.order.live, id); i >= 0 {
		h.order.live = slices.Delete(h.order.live, i, i+1)
	}
	delete(h.order.seen, id)
}

// awaitTurn waits until no pending callout is numbered above id. Called with mu held; it releases it while
// waiting. It returns false when the host closed or died meanwhile.
func (h *Host) awaitTurn(id uint32) bool {
	h.registerCallouts()
	for {
		if h.closed || h.dead != nil {
			return false
		}
		above := false
		for p := range h.order.pending {
			if p > id {
				above = true
				break
			}
		}
		if !above {
			return true
		}
		h.order.waiting++
		h.turn.Wait()
		h.order.waiting--
	}
}

// answered (or abandoned: an answer that will never be given) removes a callout from the pending ones.
// Called with mu held.
func (h *Host) answered(id uint32) {
	delete(h.order.pending, id)
	h.turn.Broadcast()
}

// deliver answers a callout in its turn (awaitTurn). Called with mu held.
func (h *Host) deliver(id uint32, answer CalloutAnswer) {
	if !h.awaitTurn(id) {
		return
	}
	defer h.answered(id)
	limit := h.CalloutBufferLimit
	if limit == 0 {
		limit = DefaultCalloutBufferLimit
	}
	if answer.Failed || answer.ClientGone || len(answer.Body) > limit {
		h.emu.CallOnHttpCallResponse(id, nil, nil, nil)
		return
	}
	h.emu.CallOnHttpCallResponse(id, answer.Headers, nil, answer.Body)
}

// abandon gives up on callouts whose answers will never be given (the exchange stopped on a broken rule).
func (h *Host) abandon(ids []uint32) {
	if len(ids) == 0 {
		return
	}
	_ = h.do(func() error {
		for _, id := range ids {
			h.answered(id)
		}
		return nil
	})
}

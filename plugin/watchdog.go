package main

import (
	"strconv"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

	"github.com/aidialect/aidialect/translate"
)

// A request whose model is in its body pauses in OnHttpRequestHeaders until the body arrives. Envoy delivers
// that body only when the filter's configuration carries allow_on_headers_stop_iteration: true; a control
// plane that drops the field (Istio 1.27, Envoy Gateway before v1.5.5) leaves every such request hanging with
// no callback at all. The body watch turns that hang into an answer: a root-context tick finds requests that
// waited body_wait_seconds without a single body callback and answers them, in their dialect, naming the
// missing setting. (With the setting, a body callback comes with the body's first bytes; a client that sends
// headers and then nothing for that long gets the same answer, which says so.)

// bodyWatchTick is how often the watch looks, in milliseconds (more often when budgets flush their charges
// sooner: config.tickMillis); a request is answered between
// body_wait_seconds and that plus one tick after it paused. Time is counted in ticks rather than read from a
// clock: the time package would add a quarter of a MiB to the module.
const bodyWatchTick = 1000

// bodyWatch holds the requests paused for their body, in no order: each knows its place (watchSlot), so
// adding and removing one costs no hashing, and removing an absent one (every body callback does) a test.
type bodyWatch struct {
	waiting []*httpContext
	ticks   int // ticks seen since the plugin started
	// reported: the hang was logged at critical level once; later ones are counted, not logged again.
	reported bool
}

func (w *bodyWatch) add(h *httpContext) {
	h.watchSince = w.ticks
	if h.watchSlot == 0 {
		w.waiting = append(w.waiting, h)
		h.watchSlot = len(w.waiting)
	}
}

func (w *bodyWatch) remove(h *httpContext) {
	if h.watchSlot == 0 {
		return
	}
	i, last := h.watchSlot-1, len(w.waiting)-1
	moved := w.waiting[last]
	w.waiting[i], moved.watchSlot = moved, i+1
	w.waiting[last] = nil
	w.waiting = w.waiting[:last]
	h.watchSlot = 0
}

// OnTick answers the requests that have waited too long for their body, and sends the budget charges.
func (p *pluginContext) OnTick() {
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogCriticalf("aidialect: panic in the body watch: %v", r)
			p.metrics.countError(codePanic)
		}
	}()
	p.watch.ticks++
	if p.cfg == nil {
		return
	}
	p.flushCharges()
	if p.cfg.bodyWaitSeconds <= 0 {
		return
	}
	wait := p.cfg.bodyWaitSeconds * 1000 / p.cfg.tickMillis()
	// From the end: a removal moves the last request into the removed one's place, which was visited already.
	for i := len(p.watch.waiting) - 1; i >= 0; i-- {
		if i >= len(p.watch.waiting) {
			continue // a reply's callbacks ended other requests
		}
		h := p.watch.waiting[i]
		if p.watch.ticks-h.watchSince <= wait {
			continue // a tick may come at any point after the pause: one more makes the wait at least the full time
		}
		p.watch.remove(h)
		if err := proxywasm.SetEffectiveContext(h.id); err != nil {
			continue // the stream is gone
		}
		seconds := strconv.Itoa(p.cfg.bodyWaitSeconds)
		if !p.watch.reported {
			p.watch.reported = true
			proxywasm.LogCriticalf("aidialect: a request waited %s s for its body in vain; if all body-routed requests do, "+
				"the Wasm filter config lacks allow_on_headers_stop_iteration: true (Envoy >= 1.35, Istio >= 1.28, "+
				"Envoy Gateway >= v1.5.5)", seconds)
		}
		h.reply(h.req.Dialect, translate.NewError(translate.ErrBodyNeverArrived, "",
			"no request body arrived within "+seconds+" s: the client stopped sending, or the gateway withholds "+
				"bodies (operator: check allow_on_headers_stop_iteration)"))
	}
}

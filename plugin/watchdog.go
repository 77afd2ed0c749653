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

// bodyWatchTick is how often the watch looks, in milliseconds; a request is answered between
// body_wait_seconds and that plus one tick after it paused. Time is counted in ticks rather than read from a
// clock: the time package would add a quarter of a MiB to the module.
const bodyWatchTick = 1000

// bodyWatch holds the requests paused for their body, by context id.
type bodyWatch struct {
	waiting map[uint32]*httpContext
	ticks   int // ticks seen since the plugin started
	// reported: the hang was logged at critical level once; later ones are counted, not logged again.
	reported bool
}

func (w *bodyWatch) add(h *httpContext) {
	if w.waiting == nil {
		w.waiting = map[uint32]*httpContext{}
	}
	h.watchSince = w.ticks
	w.waiting[h.id] = h
}

func (w *bodyWatch) remove(h *httpContext) { delete(w.waiting, h.id) }

// OnTick answers the requests that have waited too long for their body.
func (p *pluginContext) OnTick() {
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogCriticalf("aidialect: panic in the body watch: %v", r)
			p.metrics.countError(codePanic)
		}
	}()
	p.watch.ticks++
	if p.cfg == nil || p.cfg.bodyWaitSeconds <= 0 {
		return
	}
	wait := p.cfg.bodyWaitSeconds * 1000 / bodyWatchTick
	for id, h := range p.watch.waiting {
		if p.watch.ticks-h.watchSince <= wait {
			continue // a tick may come at any point after the pause: one more makes the wait at least the full time
		}
		delete(p.watch.waiting, id)
		if err := proxywasm.SetEffectiveContext(id); err != nil {
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

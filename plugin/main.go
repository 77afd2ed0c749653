// Command plugin is the aidialect proxy-wasm filter, built to dist/aidialect.wasm:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o dist/aidialect.wasm ./plugin
//
// It is glue: the dialect knowledge lives in package translate. This package reads the configuration,
// authenticates consumers, routes models to providers and drives Envoy's request/response callbacks under the
// host rules of docs/envoy-host.md.
package main

import (
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/aidialect/aidialect/internal/health"
)

// main does nothing in the .wasm: a reactor module only registers its contexts, in init, and the host drives
// it from there. Built natively, it checks configurations (check_native.go).
func main() { runCommand() }

func init() {
	proxywasm.SetVMContext(&vmContext{})
}

type vmContext struct {
	types.DefaultVMContext
}

func (*vmContext) NewPluginContext(contextID uint32) types.PluginContext {
	return &pluginContext{}
}

type pluginContext struct {
	types.DefaultPluginContext
	cfg     *config
	metrics *metrics
	pool    statePool
	watch   bodyWatch
	// pairBufs are header list buffers for reuse (takePairs, givePairs): the VM runs one callback at a time.
	pairBufs [][][2]string
	// health reads and writes the providers' and keys' health in shared data (failover.go); picks counts the
	// weighted choices among providers of one priority.
	health *health.Tracker
	picks  uint64
	// keyBenches remembers the benched keys of providers with several keys, by provider index (failover.go).
	keyBenches []*keyBenches
	// charges are the token budget charges this worker has not sent yet (budget.go).
	charges chargeQueue
}

// Header list buffers kept for reuse: at most maxPairBufs, each of at most maxKeptHeaderPairs pairs.
const (
	maxPairBufs        = 16
	maxKeptHeaderPairs = 256
)

// takePairs is a header list buffer to read or rebuild a list in (nil when none is kept).
func (p *pluginContext) takePairs() [][2]string {
	n := len(p.pairBufs)
	if n == 0 {
		return nil
	}
	b := p.pairBufs[n-1]
	p.pairBufs[n-1] = nil
	p.pairBufs = p.pairBufs[:n-1]
	return b
}

// givePairs keeps a list's buffer for reuse. Only for a list nothing reads again, whose memory no other list
// shares.
func (p *pluginContext) givePairs(b [][2]string) {
	if cap(b) == 0 || cap(b) > maxKeptHeaderPairs || len(p.pairBufs) == maxPairBufs {
		return
	}
	clear(b[:cap(b)]) // a kept buffer must not keep the host's header memory alive
	p.pairBufs = append(p.pairBufs, b[:0])
}

// doneWith gives back the buffers of a header list written for the last time (orig: the list as read, before
// applyIn rebuilt it elsewhere) and empties it.
func (p *pluginContext) doneWith(l *headerList, orig [][2]string) {
	p.givePairs(orig)
	p.givePairs(l.pairs)
	*l = headerList{}
}

// OnPluginStart reads and validates the configuration; a bad one fails the start so Envoy rejects it rather
// than serving with a half-understood configuration.
func (p *pluginContext) OnPluginStart(int) (status types.OnPluginStartStatus) {
	defer func() {
		if r := recover(); r != nil {
			proxywasm.LogCriticalf("aidialect: plugin start panicked: %v", r)
			status = types.OnPluginStartStatusFailed
		}
	}()
	data, err := proxywasm.GetPluginConfiguration()
	if err != nil && err != types.ErrorStatusNotFound {
		proxywasm.LogCriticalf("aidialect: reading the plugin configuration failed: %v", err)
		return types.OnPluginStartStatusFailed
	}
	cfg, err := parseConfig(data, getenv)
	if err != nil {
		proxywasm.LogCriticalf("aidialect: %v", err)
		return types.OnPluginStartStatusFailed
	}
	p.cfg = cfg
	p.metrics = defineMetrics(cfg)
	p.health = &health.Tracker{Store: healthStore, Policy: cfg.failover.policy}
	prepareHealth(cfg, p.health)
	warn := func(format string, args ...any) { proxywasm.LogWarnf("aidialect: "+format, args...) }
	warnAPIVersions(cfg, warn)
	warnCandidates(cfg, warn)
	warnBudgets(cfg, warn)
	if cfg.bodyWaitSeconds > 0 || cfg.budgets.on {
		if err := proxywasm.SetTickPeriodMilliSeconds(uint32(cfg.tickMillis())); err != nil {
			proxywasm.LogWarnf("aidialect: the host refused a tick period (%v): requests whose body never arrives will hang", err)
		}
	}
	proxywasm.LogInfof("aidialect: started with %d providers, routing header %q", len(cfg.providers), cfg.routingHeader)
	return types.OnPluginStartStatusOK
}

func (p *pluginContext) NewHttpContext(contextID uint32) types.HttpContext {
	return &httpContext{plugin: p, cfg: p.cfg, metrics: p.metrics, id: contextID}
}

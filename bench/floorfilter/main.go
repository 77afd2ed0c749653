// Command floorfilter is the floor the aidialect filter is measured against: the least a proxy-wasm filter
// that buffers and may rewrite bodies must do, built exactly like dist/aidialect.wasm (same SDK, same flags):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-s -w" -o floor.wasm ./bench/floorfilter
//
// It holds the request headers until the body is complete, reads the whole request body and writes the same
// bytes back; it buffers a JSON answer and writes it back unchanged; it reads every chunk of an event stream
// and replaces it with itself. It understands nothing, so whatever the real filter costs beyond it is the
// price of translation. Benchmarks in package bench run both modules through internal/hostemu.
//
// Like the filter (plugin/host.go), it runs the garbage collector every 256 finished requests. A wasip1
// reactor has one thread and runs other goroutines only when an export's goroutine blocks, so the runtime's
// background mark workers get little chance to finish a collection that allocation started: without the
// forced collection this module's linear memory went from 7.5 MiB to 287 MiB over 100,000 JSON requests
// (the filter's, with its collection disabled, to 591 MiB). That cost is the runtime's, not translation's,
// so the floor pays it too.
package main

import (
	"runtime"
	"strings"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"
	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

func main() {}

func init() {
	proxywasm.SetVMContext(&vmContext{})
}

type vmContext struct {
	types.DefaultVMContext
}

func (*vmContext) NewPluginContext(uint32) types.PluginContext { return &pluginContext{} }

// collectEvery is the filter's: a full collection after this many finished requests.
const collectEvery = 256

type pluginContext struct {
	types.DefaultPluginContext
	finished int
}

func (p *pluginContext) NewHttpContext(uint32) types.HttpContext { return &httpContext{plugin: p} }

type httpContext struct {
	types.DefaultHttpContext
	plugin *pluginContext
	stream bool
}

// OnHttpRequestHeaders holds the headers while a body follows, as a filter routing on the body must.
func (*httpContext) OnHttpRequestHeaders(_ int, endOfStream bool) types.Action {
	if endOfStream {
		return types.ActionContinue
	}
	return types.ActionPause
}

// OnHttpRequestBody buffers the body, then writes it back unchanged.
func (*httpContext) OnHttpRequestBody(bodySize int, endOfStream bool) types.Action {
	if !endOfStream {
		return types.ActionPause
	}
	echoRequestBody(bodySize)
	return types.ActionContinue
}

// OnHttpResponseHeaders tells an event stream from a buffered answer; the headers go on at once.
func (h *httpContext) OnHttpResponseHeaders(int, bool) types.Action {
	contentType, _ := proxywasm.GetHttpResponseHeader("content-type")
	h.stream = strings.Contains(contentType, "text/event-stream")
	return types.ActionContinue
}

// OnHttpResponseBody replaces every stream chunk with itself, and a buffered answer, once complete, with
// itself.
func (h *httpContext) OnHttpResponseBody(bodySize int, endOfStream bool) types.Action {
	if !h.stream && !endOfStream {
		return types.ActionPause
	}
	echoResponseBody(bodySize)
	return types.ActionContinue
}

// OnHttpStreamDone collects the garbage every collectEvery requests.
func (h *httpContext) OnHttpStreamDone() {
	if h.plugin.finished++; h.plugin.finished%collectEvery == 0 {
		runtime.GC()
	}
}

func echoRequestBody(size int) {
	if size == 0 {
		return
	}
	body, err := proxywasm.GetHttpRequestBody(0, size)
	if err != nil {
		proxywasm.LogErrorf("floorfilter: reading the request body failed: %v", err)
		return
	}
	if err := proxywasm.ReplaceHttpRequestBody(body); err != nil {
		proxywasm.LogErrorf("floorfilter: replacing the request body failed: %v", err)
	}
}

func echoResponseBody(size int) {
	if size == 0 {
		return
	}
	body, err := proxywasm.GetHttpResponseBody(0, size)
	if err != nil {
		proxywasm.LogErrorf("floorfilter: reading the response body failed: %v", err)
		return
	}
	if err := proxywasm.ReplaceHttpResponseBody(body); err != nil {
		proxywasm.LogErrorf("floorfilter: replacing the response body failed: %v", err)
	}
}

//go:build !wasip1

package main

import "github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm"

// Natively, the host calls go through the SDK, which proxytest emulates (the module makes them itself:
// hostcalls_wasip1.go).

func getHeaderMap(mapType uint32, _ [][2]string) ([][2]string, error) {
	if mapType == mapResponseHeaders {
		return proxywasm.GetHttpResponseHeaders()
	}
	return proxywasm.GetHttpRequestHeaders()
}

func replaceHeaderMap(mapType uint32, pairs [][2]string) error {
	if mapType == mapResponseHeaders {
		return proxywasm.ReplaceHttpResponseHeaders(pairs)
	}
	return proxywasm.ReplaceHttpRequestHeaders(pairs)
}

// The proxy-wasm buffer types of the bodies.
const (
	bufferRequestBody  uint32 = 0
	bufferResponseBody uint32 = 1
)

func getBody(bufferType uint32, start, maxSize int) ([]byte, error) {
	if bufferType == bufferResponseBody {
		return proxywasm.GetHttpResponseBody(start, maxSize)
	}
	return proxywasm.GetHttpRequestBody(start, maxSize)
}

// clearRouteCache asks Envoy (>= 1.33) to pick the route again after our header edits. Older hosts lack the
// foreign function; ABI 0.2.0 hosts clear the cache on every header edit anyway (docs/envoy-host.md section 2).
func clearRouteCache() {
	_, _ = proxywasm.CallForeignFunction("clear_route_cache", nil)
}

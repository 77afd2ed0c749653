//go:build wasip1

package main

import (
	"errors"
	"strconv"
	"unsafe"

	"github.com/proxy-wasm/proxy-wasm-go-sdk/proxywasm/types"
)

// The host calls made on every request, called directly rather than through the SDK, with the SDK's results
// (hostcalls_native.go goes through the SDK, which proxytest emulates). The SDK's wrappers cost guest time
// the filter pays per request: each call that returns data moves its two result variables to the heap (two
// allocations per call, per stream chunk too), and ReplaceHttpRequestHeaders serialises the map a byte at a
// time into a fresh buffer (appendHeaderMap copies each name and value at once, into a buffer kept between
// writes).

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(mapType uint32, returnData unsafe.Pointer, returnSize *int32) uint32

//go:wasmimport env proxy_set_header_map_pairs
func proxySetHeaderMapPairs(mapType uint32, data *byte, size int32) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(bufferType uint32, start, maxSize int32, returnData unsafe.Pointer, returnSize *int32) uint32

//go:wasmimport env proxy_call_foreign_function
func proxyCallForeignFunction(name *byte, nameSize int32, param *byte, paramSize int32, returnData unsafe.Pointer, returnSize *int32) uint32

// hostResult receives a host call's returned data and size. A global: a local would have to live on the
// heap anyway, since the host writes it after calling back into the guest (proxy_on_memory_allocate, which
// may move the goroutine's stack); the VM runs one callback at a time.
var hostResult struct {
	data *byte
	size int32
}

// takeResult reads the host call's result and forgets it, so the global keeps no buffer alive.
func takeResult() (*byte, int32) {
	data, size := hostResult.data, hostResult.size
	hostResult.data, hostResult.size = nil, 0
	return data, size
}

// getHeaderMap is proxywasm.GetHttpRequestHeaders (mapRequestHeaders) or GetHttpResponseHeaders, the list
// made in buf when it is large enough.
func getHeaderMap(mapType uint32, buf [][2]string) ([][2]string, error) {
	status := proxyGetHeaderMapPairs(mapType, unsafe.Pointer(&hostResult.data), &hostResult.size)
	data, size := takeResult()
	if status != 0 {
		return nil, statusError(status)
	}
	if data == nil {
		return nil, types.ErrorStatusNotFound
	}
	return decodeHeaderMap(unsafe.Slice(data, size), buf), nil
}

// replaceHeaderMap serialises the map into a buffer of its own each time. Envoy copies the map, so a reused
// buffer would do there; but the SDK's proxytest host (hostemu, the local gateway) keeps views of the guest's
// memory instead of copies, and a reused buffer rewrote the headers it held for an earlier stream (seen as
// "response headers edited after they went to the client" when requests overlapped).
func replaceHeaderMap(mapType uint32, pairs [][2]string) error {
	b := appendHeaderMap(nil, pairs)
	return statusError(proxySetHeaderMapPairs(mapType, &b[0], int32(len(b))))
}

// The proxy-wasm buffer types of the bodies.
const (
	bufferRequestBody  uint32 = 0
	bufferResponseBody uint32 = 1
)

// getBody is proxywasm.GetHttpRequestBody (bufferRequestBody) or GetHttpResponseBody.
func getBody(bufferType uint32, start, maxSize int) ([]byte, error) {
	status := proxyGetBufferBytes(bufferType, int32(start), int32(maxSize), unsafe.Pointer(&hostResult.data), &hostResult.size)
	data, size := takeResult()
	if status != 0 {
		return nil, statusError(status)
	}
	if data == nil {
		return nil, types.ErrorStatusNotFound
	}
	return unsafe.Slice(data, size), nil
}

// clearRouteCache asks Envoy (>= 1.33) to pick the route again after our header edits. Older hosts lack the
// foreign function; ABI 0.2.0 hosts clear the cache on every header edit anyway (docs/envoy-host.md section 2).
func clearRouteCache() {
	const name = "clear_route_cache"
	proxyCallForeignFunction(unsafe.StringData(name), int32(len(name)), nil, 0, unsafe.Pointer(&hostResult.data), &hostResult.size)
	takeResult()
}

// statusError is the SDK's error for a host status (its internal.StatusToError).
func statusError(status uint32) error {
	switch status {
	case 0:
		return nil
	case 1:
		return types.ErrorStatusNotFound
	case 2:
		return types.ErrorStatusBadArgument
	case 7:
		return types.ErrorStatusEmpty
	case 8:
		return types.ErrorStatusCasMismatch
	case 10:
		return types.ErrorInternalFailure
	case 12:
		return types.ErrorUnimplemented
	}
	return errors.New("unknown status code: " + strconv.Itoa(int(status)))
}

//go:build aidialect_faults

package main

// faultHeader names the callback a test wants to panic in. Only builds tagged aidialect_faults read it.
const faultHeader = "x-aidialect-test-panic"

// injectFault panics in the callback the request's x-aidialect-test-panic header names, so tests can prove
// that every callback recovers and the VM lives on.
func (h *httpContext) injectFault(callback string) {
	if callback == "OnHttpRequestHeaders" {
		h.fault = requestHeader(faultHeader)
	}
	if h.fault == callback {
		panic("injected fault in " + callback)
	}
}

//go:build !aidialect_faults

package main

// injectFault does nothing in real builds; the aidialect_faults build tag makes it panic on demand
// (faults_on.go).
func (h *httpContext) injectFault(string) {}

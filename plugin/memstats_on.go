//go:build aidialect_memstats && wasip1

package main

import "runtime"

// heapLive collects and returns the bytes of live heap objects. The memory tests (bench/) cannot see the
// guest's heap from outside, only its linear memory, which never shrinks; only modules built with the
// aidialect_memstats tag export this.
//
//go:wasmexport aidialect_heap_live
func heapLive() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

//go:build !unix

package bench

import "time"

// processCPU is not measured here; the cpu-ns/op metrics are then omitted.
func processCPU() time.Duration { return 0 }

//go:build !unix

package wasmtest

import "time"

// ProcessCPU is not measured on this platform: it is 0, and the cpu figures are then omitted.
func ProcessCPU() time.Duration { return 0 }

//go:build !unix

package v8host

import "time"

// processCPU is not measured on this platform: the cpu figures are left out.
func processCPU() time.Duration { return 0 }

//go:build unix

package v8host

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time (user + system, every thread), as bench measures it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

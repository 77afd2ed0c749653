//go:build unix

package wasmtest

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time the process has used (user + system, every thread: the guest, the host, the
// garbage collector). Unlike wall time it barely moves when other work shares the machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package casty_test

import (
	"syscall"
	"time"
)

// processCPU is the user and system time the process has used so far: on
// a shared machine, unlike the wall clock, it does not count the time
// other processes held the CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

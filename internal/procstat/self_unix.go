//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// Self returns the user and system time this process has used so far (0
// where the platform does not say).
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

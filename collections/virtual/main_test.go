package virtual_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Members must have stopped every goroutine of theirs by the end of each
// test's cleanup; porcupine's checker must have finished with its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// envInt reads the integer environment variable name, or def when it is
// unset or not a number.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

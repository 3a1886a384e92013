// Package procstat reads the CPU time a process has used: the user and
// system time, which on a shared machine, unlike the wall clock, does not
// count the time other processes held the CPU. Casty's benchmarks and
// simulations report their cost with it.
package procstat

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Of returns the user and system time process pid has used so far, from
// /proc (Linux); 0 where /proc is missing or pid is not running.
func Of(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return 0
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return 0
	}
	// Clock ticks: USER_HZ is 100 on every Linux ABI Go supports.
	return time.Duration(ut+st) * 10 * time.Millisecond
}

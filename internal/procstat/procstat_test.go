package procstat_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/casty-go/casty/internal/procstat"
)

// Work done shows in Self, and in Of for this process where /proc exists;
// a process that does not exist reads 0.
func TestCPUTimeGrowsWithWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Of reads /proc, which only Linux has")
	}
	self0, of0 := procstat.Self(), procstat.Of(os.Getpid())
	x := 0
	for procstat.Self()-self0 < 30e6 { // 30 ms of CPU
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
	if procstat.Self() <= self0 {
		t.Fatal("Self did not grow with work")
	}
	// /proc counts in 10 ms ticks: 30 ms of work shows.
	if of := procstat.Of(os.Getpid()); of <= of0 {
		t.Fatalf("Of(self) did not grow with 30 ms of work: %v then %v", of0, of)
	}
	if got := procstat.Of(-1); got != 0 {
		t.Fatalf("Of of no process: %v, want 0", got)
	}
}

func ExampleSelf() {
	before := procstat.Self()
	// ... the work whose CPU cost is measured ...
	cost := procstat.Self() - before
	fmt.Println(cost >= 0)
	// Output: true
}

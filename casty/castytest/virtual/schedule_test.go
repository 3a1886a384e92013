package virtual_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// RemoveDeadAfter of the schedules' clusters (and of the tests here that
// share their timing).
const scheduleRemoveAfter = 10 * time.Second

// Two crashes in turn, each member back as a new process, and placed in
// its old identity's stead, before the next crash: the cluster settles,
// every range synced. Run once brought a crashed member back only at the
// schedule's next step, which turned the two into a double failure whose
// ranges waited for both lost copies. (A gap shorter than the detector's
// delay is a double failure in fact: the old identity is replaced only once
// the others see it dead, and its ranges are a copy short until then.)
func TestCrashesInTurnSettle(t *testing.T) {
	for _, gap := range []time.Duration{5 * time.Second, 20 * time.Second} {
		t.Run(gap.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := castytest.TestConfig()
				cfg.Replication.RemoveDeadAfter = scheduleRemoveAfter
				c := castytest.NewCluster(t, 5, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
				keys := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
				h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
				for i := range 40 {
					_ = registerOp(h, MajorityRegs, keys, c.Lite(), 0, i)
				}
				hold := 2 * time.Second
				c.Run(castytest.Schedule{Seed: 1, Length: 10 * time.Second, Faults: []castytest.Fault{
					{Kind: castytest.Crash, At: time.Second, Hold: hold, Members: []int{0}},
					{Kind: castytest.Crash, At: time.Second + hold + gap, Hold: hold, Members: []int{1}},
				}}, t.Logf)
				deadline := time.Now().Add(2 * time.Minute)
				for {
					settled := true
					for _, m := range c.Members() {
						settled = settled && m.Replication().Placed == 5 && m.Health().Ready
					}
					if settled {
						break
					}
					if time.Now().After(deadline) {
						for i, m := range c.Members() {
							t.Logf("member %d: %s", i, m.Health().Reason)
						}
						t.Fatal("not settled 2 virtual minutes after two crashes in turn")
					}
					time.Sleep(time.Second)
				}
				for i := range 8 {
					if err := registerOp(h, MajorityRegs, keys, c.Lite(), 0, 100+i); err != nil {
						t.Fatalf("after settling: %v", err)
					}
				}
			})
		})
	}
}

// A crash that strikes a member already stopped does nothing, and its end
// must not start a second process beside the one the crash's end already
// started: Run once listed the member again at the stop's end, and every
// start after that failed to listen on the address the running process
// held, for ever (schedule seed 500250 of the mixed configuration met it
// after two failed restarts).
func TestAFaultOnAMemberAlreadyDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := castytest.TestConfig()
		cfg.Replication.RemoveDeadAfter = scheduleRemoveAfter
		c := castytest.NewCluster(t, 3, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
		var logged []string
		c.Run(castytest.Schedule{Seed: 1, Length: 10 * time.Second, Faults: []castytest.Fault{
			{Kind: castytest.Stop, At: time.Second, Hold: 10 * time.Second, Members: []int{1}},
			{Kind: castytest.Crash, At: 3 * time.Second, Hold: 2 * time.Second, Members: []int{1}},
		}}, func(format string, args ...any) {
			logged = append(logged, fmt.Sprintf(format, args...))
		})
		for _, l := range logged {
			if strings.Contains(l, "failed") {
				t.Errorf("Run: %s", l)
			}
		}
		for deadline := time.Now().Add(time.Minute); !c.Member(1).Health().Ready; time.Sleep(time.Second) {
			if time.Now().After(deadline) {
				t.Fatalf("member 1 is not ready a virtual minute after the schedule: %s", c.Member(1).Health().Reason)
			}
		}
	})
}

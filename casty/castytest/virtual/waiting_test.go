package virtual_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// quietRoundsPerSync is how many rounds TestRangesThatLostTheirQuorumWait
// lets each waiting sync run in 30 virtual seconds with nothing changing:
// one every 10 s (casty's waitingRecheck), and one more.
const quietRoundsPerSync = 4

// waitingKeys is how many registers each writer of
// TestRangesThatLostTheirQuorumWait writes in turn.
const waitingKeys = 24

// A schedule of faults in turn, each crashed or stopped member brought
// back only when the next fault begins (castytest.Run did so once: every
// Hold below ends at the next fault's start), so that faults in turn
// become double failures: member 4's new process starts as member 1
// crashes, member 3 crashes while member 1 is stopped, and later members
// 3, 0 and 2 are each cut off or paused past RemoveDeadAfter, the
// placement shrinking to three members. Ranges whose replica sets lost two
// of three copies to crashes must wait for them, or for an operator's
// AcceptLoss. Their syncs did, but the members that entered those ranges
// later left out the members of the previous sets that were still pulling
// them — newcomers at once, the others after behindWait — and walked the
// ring past them: on a placement of four, then three, members the walk
// found nobody, the count it asked fell to zero, and the ranges synced
// with no answer at all, then served without the writes (replica/SPEC.md,
// "Membership changes": a member still pulling a range is never walked
// past). Writers set registers to increasing values throughout;
// afterwards each register must read its last acknowledged value or a
// later one, or fail to read while members report syncs waiting for
// removed members' copies — never read an older value.
//
// This is seed 18 of collections/virtual's TestCollectionsOnVirtualTime
// under the old Run. Before the fix, three or four of the 96 registers
// read a value older than their last acknowledged one (six runs in six),
// with the placement of three members settled.
func TestRangesThatLostTheirQuorumWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { lostQuorumTrial(t) })
}

func lostQuorumTrial(t *testing.T) {
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = scheduleRemoveAfter
	c := castytest.NewCluster(t, 5, castytest.Seed(18), castytest.MemberOptions(casty.WithConfig(cfg)))
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)).Round(time.Millisecond) }
	at := func(kind castytest.FaultKind, start, end float64, m int) castytest.Fault {
		return castytest.Fault{Kind: kind, At: sec(start), Hold: sec(end) - sec(start), Members: []int{m}}
	}
	s := castytest.Schedule{Seed: 18, Length: sec(139), Faults: []castytest.Fault{
		at(castytest.Stop, 16.075, 31.827, 4),
		{Kind: castytest.Skew, At: sec(31.827), Hold: sec(27.757), Members: []int{2}, Delay: 84 * time.Millisecond},
		at(castytest.Crash, 39.267, 46.261, 4),
		at(castytest.Crash, 46.261, 51.173, 1),
		at(castytest.Lossy, 51.173, 52.486, 0),
		at(castytest.OneWay, 54.877, 64.864, 1),
		at(castytest.Crash, 69.874, 72.581, 3),
		at(castytest.Stop, 71.238, 86.44, 1),
		at(castytest.Isolate, 86.44, 114.151, 3),
		at(castytest.OneWay, 101.374, 101.605, 1),
		at(castytest.Isolate, 104.32, 128.021, 0),
		at(castytest.Pause, 119.132, 120.661, 1),
		at(castytest.Pause, 125.98, 140.964, 2),
		at(castytest.Crash, 138.41, 140.964, 3),
	}}

	// Each writer sets its own registers, one after the other, to values
	// that only grow: a read older than the last acknowledged value of its
	// register lost that write.
	var mu sync.Mutex
	acked := map[string]int{}
	var keys []string
	for w := range 4 {
		for k := range waitingKeys {
			keys = append(keys, fmt.Sprintf("w%d-%d", w, k))
		}
	}
	lite := c.Lite() // started once, before the writers share it
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(250 * time.Millisecond):
				}
				via := lite
				if w > 0 {
					via = c.Member((w + i) % c.N())
				}
				key := fmt.Sprintf("w%d-%d", w, i%waitingKeys)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := casty.Do(ctx, MajorityRegs.Ref(via, key), (*Reg).Set, i)
				cancel()
				if err == nil {
					mu.Lock()
					acked[key] = max(acked[key], i)
					mu.Unlock()
				}
			}
		})
	}
	c.Run(s, t.Logf)
	close(stop)
	wg.Wait()

	// waiting lists the removed members whose copies some member's syncs
	// of the registers' ranges wait for.
	waiting := func() []string {
		var out []string
		for _, m := range c.Members() {
			for _, w := range m.Replication().Waiting {
				if w.Kind == MajorityRegs.Name() {
					for _, id := range w.Members {
						if !slices.Contains(out, id) {
							out = append(out, id)
						}
					}
				}
			}
		}
		slices.Sort(out)
		return out
	}
	// readAll reads every register through the lite member, each read
	// given 2 s, and returns the registers that read an older value than
	// their last acknowledged one and those that could not be read.
	readAll := func() (older, unread []string) {
		var rmu sync.Mutex
		work := make(chan string)
		var rwg sync.WaitGroup
		for range 8 {
			rwg.Go(func() {
				for key := range work {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					v, err := casty.Call0(ctx, MajorityRegs.Ref(lite, key), (*Reg).Get)
					cancel()
					rmu.Lock()
					switch {
					case err != nil:
						unread = append(unread, key)
					case v < acked[key]:
						older = append(older, fmt.Sprintf("%s read %d, acknowledged %d", key, v, acked[key]))
					}
					rmu.Unlock()
				}
			})
		}
		for _, k := range keys {
			work <- k
		}
		close(work)
		rwg.Wait()
		slices.Sort(older)
		slices.Sort(unread)
		return older, unread
	}

	// The ranges that lost their quorum wait: give the cluster half a
	// minute to settle what it can, then read.
	time.Sleep(30 * time.Second)
	older, unread := readAll()
	w := waiting()
	t.Logf("after the schedule: %d registers, %d acknowledged writes; %d read older than acknowledged, %d unread; syncs wait for %v",
		len(keys), len(acked), len(older), len(unread), w)
	for _, o := range older {
		t.Errorf("an acknowledged write was lost, with no AcceptLoss: %s", o)
	}
	if len(unread) > 0 && len(w) == 0 {
		t.Errorf("%d registers could not be read (%v), yet no member reports syncs waiting for removed members", len(unread), unread)
	}
	if t.Failed() {
		dumpWaiting(t, c)
		return
	}

	// While they wait, and nothing changes, the waiting syncs back off:
	// nothing could answer them until the view changes. (Each asked every
	// previous holder it could reach again every second, for as long as
	// the wait lasted.)
	if len(w) > 0 {
		var rounds, syncs int64
		for _, m := range c.Members() {
			st := m.Replication()
			rounds -= st.SyncRounds
			syncs += int64(len(st.Waiting))
		}
		time.Sleep(30 * time.Second)
		for _, m := range c.Members() {
			rounds += m.Replication().SyncRounds
		}
		t.Logf("%d waiting syncs ran %d rounds in 30 quiet virtual seconds", syncs, rounds)
		if limit := syncs * quietRoundsPerSync; rounds > limit {
			t.Errorf("while %d syncs waited for %v and nothing changed, the members ran %d sync rounds in 30 virtual seconds; want at most %d", syncs, w, rounds, limit)
		}
	}

	// The way out: an operator gives the crashed members' copies up. The
	// ranges then sync from what the members left hold — though each of
	// them may still be pulling some of those ranges from the others (a
	// copy sync: replica/SPEC.md, "Copy syncs") — and every register
	// reads again, none older than its last acknowledged value: the
	// writes only the crashed members held were never acknowledged, as
	// every acknowledged one also sits on a member left.
	if len(w) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.Member(1).AcceptLoss(ctx, w...)
		cancel()
		if err != nil {
			t.Fatalf("AcceptLoss(%v): %v", w, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		older, unread = readAll()
		if len(older) > 0 || len(unread) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	copies := int64(0)
	for _, m := range c.Members() {
		copies += m.Replication().CopySyncs
	}
	t.Logf("after AcceptLoss: %d read older than acknowledged, %d unread; %d copy syncs", len(older), len(unread), copies)
	for _, o := range older {
		t.Errorf("after AcceptLoss of the crashed members: %s", o)
	}
	if len(unread) > 0 {
		t.Errorf("2 minutes after AcceptLoss of %v, %d registers still cannot be read: %v", w, len(unread), unread)
	}
	if t.Failed() {
		dumpWaiting(t, c)
	}
}

// dumpWaiting logs each member's placement, waiting syncs and health.
func dumpWaiting(t *testing.T, c *castytest.Cluster) {
	t.Helper()
	for i, m := range c.Members() {
		st := m.Replication()
		t.Logf("member %d: places %d (version %d), waiting %v, health %+v", i, st.Placed, st.PlacementVersion, st.Waiting, m.Health())
	}
}

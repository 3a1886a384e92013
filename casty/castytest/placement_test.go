package castytest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/internal/wait"
)

// Faults held longer than Config.Replication.RemoveDeadAfter: the placement changes
// only by agreement (replica/SPEC.md, "Placement by agreement"), so a
// side without a majority of the placement removes no one, a member
// removed while cut off hands its copies over when it is back and joins
// again by itself, and no acknowledged write is lost.
//
// A member that misses placement versions while paused is TestAMemberThatMissedVersionsResyncs in castytest/virtual,
// on virtual time.

// removeFast is the test config with a removal delay of removeAfter.
const removeAfter = 3 * time.Second

func removeFast() castytest.ClusterOption {
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = removeAfter
	return castytest.MemberOptions(casty.WithConfig(cfg))
}

// replicasOf returns the indexes of key's replica set (MajorityRegs), as
// member 0 sees it.
func replicasOf(t *testing.T, c *castytest.Cluster, key string) []int {
	t.Helper()
	p, ok := c.Member(0).Placement(MajorityRegs.Name(), key, 0)
	if !ok || len(p.Replicas) != 3 {
		t.Fatalf("placement of %s: %+v", key, p)
	}
	var out []int
	for _, m := range p.Replicas {
		out = append(out, indexOf(t, c, m.Addr))
	}
	return out
}

// poller has one client per via write (a counter of its own) and
// Read(Majority) the registers keys in turn, every 100 ms, until stop;
// every operation goes into the history.
type poller struct {
	h    *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]
	stop chan struct{}
	wg   sync.WaitGroup
}

func startPolling(keys []string, vias []*casty.System) *poller {
	p := &poller{h: castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]](), stop: make(chan struct{})}
	for client, via := range vias {
		p.wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-p.stop:
					return
				case <-tick.C:
				}
				key := keys[i%len(keys)]
				ref := MajorityRegs.Ref(via, key)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if i%2 == 0 {
					v := (client+1)*100000 + i
					p.h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
						return castytest.Written[int](), casty.Do(ctx, ref, (*Reg).Set, v)
					})
				} else {
					p.h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
						v, err := casty.Call0(ctx, ref, (*Reg).Get)
						return castytest.Read(v), err
					})
				}
				cancel()
			}
		})
	}
	return p
}

func (p *poller) end() { close(p.stop); p.wg.Wait() }

// settle waits until every member places all n members, then reads every
// key through every member (into the history, as client 100+i) — each
// must answer.
func settle(t *testing.T, c *castytest.Cluster, keys []string, h *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]) {
	t.Helper()
	wait.For(t, 30*time.Second, fmt.Sprintf("every member placing all %d members and ready", c.N()), func() bool {
		for _, m := range c.Members() {
			if m.Replication().Placed != c.N() || !m.Health().Ready {
				return false
			}
		}
		return true
	})
	for i, m := range c.Members() {
		for _, key := range keys {
			var err error
			wait.For(t, 30*time.Second, fmt.Sprintf("member %d serving %s", i, key), func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, err = h.Record(100+i, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
					v, err := casty.Call0(ctx, MajorityRegs.Ref(m, key), (*Reg).Get)
					return castytest.Read(v), err
				})
				return err == nil
			})
		}
	}
}

// TestAMinorityHoldingAQuorumRemovesNobody: 5 members, a key whose replica
// set has two members on the minority side of a 2|3 partition, held three
// times RemoveDeadAfter, clients writing and reading (majority reads) on
// both sides every 100 ms. The minority may go on acknowledging writes
// (it holds the key's quorum on the placement it knows); the majority
// removes the two, but cannot serve the key without their copies, so it
// never returns the value from before. After the heal the two hand their
// copies over and join again: the history is linearizable, and every
// member serves every key with every member placed.
func TestAMinorityHoldingAQuorumRemovesNobody(t *testing.T) {
	c := castytest.NewCluster(t, 5, removeFast())
	key := "minority-quorum"
	reps := replicasOf(t, c, key)
	minority := reps[:2]
	var majority []int
	for i := range c.N() {
		if i != minority[0] && i != minority[1] {
			majority = append(majority, i)
		}
	}
	keys := []string{key, "other-a", "other-b"}
	p := startPolling(keys, []*casty.System{c.Member(minority[0]), c.Member(majority[0]), c.Member(majority[1])})
	time.Sleep(500 * time.Millisecond) // writes before the partition: pacing, not a wait for convergence
	c.Partition(minority, majority)
	wait.For(t, 30*time.Second, "the majority removing the minority", func() bool {
		return c.Member(majority[0]).Replication().Placed == 3
	})
	time.Sleep(3 * removeAfter) // the partition held: the fault's length, not a wait
	for _, i := range minority {
		if got := c.Member(i).Replication().Placed; got != 5 {
			t.Errorf("member %d on the minority side places %d members: the minority removed someone", i, got)
		}
	}
	c.HealAll()
	settle(t, c, keys, p.h)
	p.end()
	res := castytest.Check(t, castytest.RegisterModel(0), p.h)
	t.Logf("%d operations, %d indeterminate: %s", res.Ops, res.Indeterminate, res.Verdict)
}

// TestAMemberCutOffPastRemovalComesBack: member 0 is cut off from the four
// others for longer than RemoveDeadAfter while writes go through member 1;
// the four remove it, and once healed it hands over what it held, joins
// again, and the members agree on one placement: no "owners disagree", no
// acknowledged write lost, every member serving every key.
func TestAMemberCutOffPastRemovalComesBack(t *testing.T) {
	c := castytest.NewCluster(t, 5, removeFast())
	keys := []string{"cut-a", "cut-b", "cut-c", "cut-d"}
	p := startPolling(keys, []*casty.System{c.Member(1), c.Member(2)})
	time.Sleep(500 * time.Millisecond) // writes before the cut: pacing
	c.Partition([]int{0}, []int{1, 2, 3, 4})
	wait.For(t, 30*time.Second, "the four removing member 0", func() bool {
		for i := 1; i < 5; i++ {
			if c.Member(i).Replication().Placed != 4 {
				return false
			}
		}
		return true
	})
	if got := c.Member(0).Replication().Placed; got != 5 {
		t.Errorf("the member cut off alone places %d members: it removed someone", got)
	}
	time.Sleep(removeAfter) // cut off well past the removal: the fault's length
	c.HealAll()
	settle(t, c, keys, p.h)
	p.end()
	res := castytest.Check(t, castytest.RegisterModel(0), p.h)
	t.Logf("%d operations, %d indeterminate: %s", res.Ops, res.Indeterminate, res.Verdict)
}

// TestARestartedOwnerSyncsFromAReadQuorum: 3 members; writes acknowledged
// by B and C while A was cut off; then B restarts on its address as a
// newcomer, its link to C slow. The new B must sync each range from a read
// quorum of the holders before it — A and C, not A alone — and every read
// returns the last acknowledged write. (Counting the read quorum against
// the members left instead of the configured replicas let the stale A
// stand alone for the set.)
func TestARestartedOwnerSyncsFromAReadQuorum(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	keys := []string{"restart-a", "restart-b", "restart-c"}
	a, b, cc := 0, 1, 2
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range keys {
		if err := casty.Do(ctx, MajorityRegs.Ref(c.Member(b), key), (*Reg).Set, 1); err != nil {
			t.Fatal(err)
		}
	}
	c.Partition([]int{a}, []int{b, cc})
	for _, key := range keys {
		// Until B and C hold A dead, a key A owns is out of reach: the
		// write is retried (it sets, so a retry is harmless).
		var err error
		wait.For(t, 30*time.Second, "write 2 to "+key+" with A cut off", func() bool {
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			err = casty.Do(wctx, MajorityRegs.Ref(c.Member(b), key), (*Reg).Set, 2)
			return err == nil
		})
	}
	c.HealAll()
	c.Delay(b, cc, 300*time.Millisecond)
	c.Restart(b)
	wait.For(t, 30*time.Second, "every member placing the new B and settled", func() bool {
		for _, m := range c.Members() {
			if m.Replication().Placed != 3 || !m.Health().Ready {
				return false
			}
		}
		return true
	})
	c.Delay(b, cc, 0)
	for i, m := range c.Members() {
		for _, key := range keys {
			v, err := casty.Call0(ctx, MajorityRegs.Ref(m, key), (*Reg).Get)
			if err != nil {
				t.Fatalf("read %s via member %d: %v", key, i, err)
			}
			if v != 2 {
				t.Errorf("read %s via member %d = %d, want the acknowledged 2", key, i, v)
			}
		}
	}
}

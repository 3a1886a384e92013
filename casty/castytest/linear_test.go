package castytest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/internal/wait"
)

// Reg is a replicated register: three replicas, majority writes.
type Reg struct{ V int }

func (r *Reg) Get(ctx context.Context) (int, error) { return r.V, nil }

func (r *Reg) Set(ctx context.Context, v int) error { r.V = v; return nil }

func (r *Reg) Swap(ctx context.Context, s Swap) (bool, error) {
	if r.V != s.Old {
		return false, nil
	}
	r.V = s.New
	return true, nil
}

var Regs = casty.Actor[Reg](casty.Name("castytest.test.Reg"), casty.Replicas(3), casty.Write(casty.Majority))

// MajorityRegs is Regs with majority reads too: a read confirms with a
// majority of replicas that the owner is still the owner.
var MajorityRegs = casty.Actor[Reg](casty.Name("castytest.test.MajorityReg"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

// registerRun has one client per system in vias read, write and swap the
// registers keys of kind, perClient operations each, with a 1 s deadline
// per call; once a quarter of them are done it calls fault, and once
// three quarters are, heal (if not nil). It returns the history.
func registerRun(t *testing.T, kind *casty.Kind[Reg], keys []string, vias []*casty.System, perClient int, fault, heal func()) *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]] {
	t.Helper()
	h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
	var done atomic.Int32
	var wg sync.WaitGroup
	for client, via := range vias {
		wg.Go(func() {
			for i := range perClient {
				key := keys[(client+i)%len(keys)]
				ref := kind.Ref(via, key)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				switch (client + i) % 3 {
				case 0:
					h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
						v, err := casty.Call0(ctx, ref, (*Reg).Get)
						return castytest.Read(v), err
					})
				case 1:
					v := client*1000 + i
					h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
						return castytest.Written[int](), casty.Do(ctx, ref, (*Reg).Set, v)
					})
				default:
					old, v := client*1000+i-1, client*1000+i
					h.Record(client, castytest.CASOp(key, old, v), func() (castytest.RegisterResult[int], error) {
						ok, err := casty.Call(ctx, ref, (*Reg).Swap, Swap{Old: old, New: v})
						return castytest.Swapped[int](ok), err
					})
				}
				cancel()
				done.Add(1)
			}
		})
	}
	total := int32(perClient * len(vias))
	wait.For(t, 30*time.Second, fmt.Sprintf("a quarter of the %d operations", total), func() bool { return done.Load() >= total/4 })
	fault()
	if heal != nil {
		wait.For(t, 60*time.Second, fmt.Sprintf("three quarters of the %d operations", total), func() bool { return done.Load() >= 3*total/4 })
		heal()
	}
	wg.Wait()
	return h
}

// Clients read, write and swap two replicated registers through a lite
// member and three members while the owner of one of them crashes; the
// history, timeouts and all, must be linearizable.
func TestClusterLinearizableAcrossACrash(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	keys := []string{"r0", "r1"}
	m, _ := c.Member(0).OwnerOf(Regs.Name(), keys[0])
	victim := indexOf(t, c, m.Addr)
	vias := []*casty.System{c.Lite()}
	for i := range c.N() {
		if i != victim && len(vias) < 4 {
			vias = append(vias, c.Member(i))
		}
	}
	h := registerRun(t, Regs, keys, vias, 40, func() { c.Crash(victim) }, nil)
	res := castytest.Check(t, castytest.RegisterModel(0), h)
	t.Logf("%d operations, %d indeterminate: %s", res.Ops, res.Indeterminate, res.Verdict)
}

// The same with majority reads, across a partition of two against three
// that heals: clients on both sides and a lite member that reaches all.
func TestClusterLinearizableAcrossAPartition(t *testing.T) {
	c := castytest.NewCluster(t, 5)
	keys := []string{"p0", "p1", "p2"}
	vias := []*casty.System{c.Lite(), c.Member(0), c.Member(1), c.Member(2), c.Member(4)}
	h := registerRun(t, MajorityRegs, keys, vias, 40,
		func() { c.Partition([]int{0, 1}, []int{2, 3, 4}) }, c.HealAll)
	res := castytest.Check(t, castytest.RegisterModel(0), h)
	t.Logf("%d operations, %d indeterminate: %s", res.Ops, res.Indeterminate, res.Verdict)
}

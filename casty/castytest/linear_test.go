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

	h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
	const perClient = 40
	var done atomic.Int32
	var wg sync.WaitGroup
	for client, via := range vias {
		wg.Go(func() {
			for i := range perClient {
				key := keys[(client+i)%len(keys)]
				ref := Regs.Ref(via, key)
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
	wait.For(t, 30*time.Second, fmt.Sprintf("a quarter of the %d operations", perClient*len(vias)), func() bool {
		return done.Load() >= int32(perClient*len(vias)/4)
	})
	c.Crash(victim)
	wg.Wait()
	res := castytest.Check(t, castytest.RegisterModel(0), h)
	t.Logf("%d operations, %d indeterminate: %s", res.Ops, res.Indeterminate, res.Verdict)
}

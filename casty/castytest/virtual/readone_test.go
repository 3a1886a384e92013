package virtual_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// ReadOneRegs: three replicas, majority writes, reads from the owner.
var ReadOneRegs = casty.Actor[Reg](casty.Name("castytest.virtual.ReadOneReg"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.One))

// An owner that was paused long enough for the others to serve its keys
// meanwhile does not answer Read(One) from the state it held before the
// pause once it is back: its activations may have missed writes the
// others acknowledged, so it drops them (it learns it was suspected when
// it refutes the suspicion) and its next read starts from a read quorum.
func TestAnOwnerBackFromAPauseDoesNotServeStaleReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := castytest.TestConfig()
		cfg.RemoveDeadAfter = time.Hour // nobody is removed: only the owner changes
		c := castytest.NewCluster(t, 3, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
		ctx := context.Background()
		lite := c.Lite()
		const key = "stale"
		if err := casty.Do(ctx, ReadOneRegs.Ref(lite, key), (*Reg).Set, 1); err != nil {
			t.Fatal(err)
		}
		owner := -1
		if m, ok := lite.OwnerOf(ReadOneRegs.Name(), key); ok {
			for i := range c.N() {
				if c.Addr(i) == m.Addr {
					owner = i
				}
			}
		}
		if owner < 0 {
			t.Fatal("no owner")
		}
		if v, err := casty.Call0(ctx, ReadOneRegs.Ref(lite, key), (*Reg).Get); err != nil || v != 1 {
			t.Fatalf("read before the pause = %d, %v", v, err)
		}
		c.Pause(owner)
		// The others suspect it and serve the key from the replicas.
		other := (owner + 1) % c.N()
		deadline := time.Now().Add(time.Minute)
		for {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := casty.Do(cctx, ReadOneRegs.Ref(c.Member(other), key), (*Reg).Set, 2)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no write while the owner was paused: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Resume(owner)
		// Back: it serves the key again, from what a read quorum holds.
		deadline = time.Now().Add(time.Minute)
		for {
			m, ok := lite.OwnerOf(ReadOneRegs.Name(), key)
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			v, err := casty.Call0(cctx, ReadOneRegs.Ref(lite, key), (*Reg).Get)
			cancel()
			if ok && m.Addr == c.Addr(owner) && err == nil && v == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a minute after the owner came back it reads %d (%v), want 2, acknowledged while it was paused", v, err)
			}
			time.Sleep(time.Second)
		}
	})
}

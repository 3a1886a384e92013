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
		cfg.Replication.RemoveDeadAfter = time.Hour // nobody is removed: only the owner changes
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

// An owner whose activation another member deposed while their views
// disagreed does not go on answering Read(One) from it once they agree.
//
// The owner O is paused until the other members hold it dead, then
// resumed with its link to the next replica Y cut: O refutes the
// suspicion, which drops its activations, and the lite member, holding O
// alive again, routes the key back to it. O activates afresh from a read
// quorum (itself and the third member Z). Y cannot prove O alive (its
// probes do not reach O), so it still holds O dead and serves the key
// itself: it activates under a higher ballot and Z acknowledges its
// write. O's activation now holds a value a newer owner has written over,
// and nothing fences it: O does not write, and nobody suspects O at its
// new incarnation.
//
// "held": Y's messages to O are held by a one-way cut and delivered when
// it heals; Y's prepare or commit reaches O's copy with Y's higher
// ballot and deposes O's activation. "lost": the link is cut both ways,
// nothing of Y's reaches O, and O's next anti-entropy pass adopts Y's
// copy from Z, which deposes it (Config.Replication.RepairInterval at most). Either
// way the next read activates from a read quorum and reads Y's write.
// Before, O read the old value for as long as nobody wrote (both fail on
// the commit before this test: 40 s after the views agreed, O reads 1).
func TestAnOwnerDeposedWhileViewsDisagreedDoesNotServeStaleReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  func(c *castytest.Cluster, y, o int)
	}{
		{"held", func(c *castytest.Cluster, y, o int) { c.CutOneWay(y, o) }},
		{"lost", func(c *castytest.Cluster, y, o int) { c.Cut(y, o) }},
	} {
		t.Run(tc.name, func(t *testing.T) { deposedOwnerTrial(t, tc.cut) })
	}
}

func deposedOwnerTrial(t *testing.T, cut func(c *castytest.Cluster, y, o int)) {
	synctest.Test(t, func(t *testing.T) {
		cfg := castytest.TestConfig()
		cfg.Replication.RemoveDeadAfter = time.Hour // nobody is removed: only the owner changes
		c := castytest.NewCluster(t, 3, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(cfg)))
		lite := c.Lite()
		const key = "deposed"
		ownerIn := func(s *casty.System) int {
			if m, ok := s.OwnerOf(ReadOneRegs.Name(), key); ok {
				for i := range c.N() {
					if c.Addr(i) == m.Addr {
						return i
					}
				}
			}
			return -1
		}
		set := func(via *casty.System, v int) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return casty.Do(ctx, ReadOneRegs.Ref(via, key), (*Reg).Set, v)
		}
		get := func(via *casty.System) (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return casty.Call0(ctx, ReadOneRegs.Ref(via, key), (*Reg).Get)
		}
		// until retries cond every 100 ms of virtual time, for at most d.
		until := func(d time.Duration, what string, cond func() bool) {
			t.Helper()
			for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: not within %v of virtual time", what, d)
				}
			}
		}
		if err := set(lite, 1); err != nil {
			t.Fatal(err)
		}
		o := ownerIn(lite)
		if o < 0 {
			t.Fatal("no owner")
		}
		if v, err := get(lite); err != nil || v != 1 {
			t.Fatalf("first read = %d, %v; want 1", v, err)
		}

		c.Pause(o)
		y := -1
		until(time.Minute, "the lite member routes the key away from the paused owner", func() bool {
			y = ownerIn(lite)
			return y >= 0 && y != o
		})
		until(time.Minute, "the next replica serves the key itself", func() bool { return ownerIn(c.Member(y)) == y })
		time.Sleep(5 * cfg.Membership.SuspicionTimeout) // Y holds O dead, not merely suspect
		cut(c, y, o)
		c.Resume(o)

		// O refutes and is back in the lite member's view; it activates
		// the key afresh (its activation from before the pause went with
		// the refutation) when read through itself.
		until(time.Minute, "the owner serves the key again", func() bool {
			v, err := get(c.Member(o))
			return err == nil && v == 1 && ownerIn(lite) == o
		})
		// Y still holds O dead: it serves the key, and Z acknowledges its
		// write under a ballot above O's activation.
		if w := ownerIn(c.Member(y)); w != y {
			t.Fatalf("member %d routes the key to %d: the views no longer disagree", y, w)
		}
		until(time.Minute, "a write through the next replica", func() bool { return set(c.Member(y), 2) == nil })
		if v, err := get(c.Member(o)); err == nil {
			t.Logf("during the cut the owner reads %d (2 was acknowledged by another owner)", v)
		}

		c.Heal(y, o)
		healed := time.Now()
		until(time.Minute, "the views agree", func() bool {
			for i := range c.N() {
				if len(c.Member(i).Members()) != c.N() || ownerIn(c.Member(i)) != o {
					return false
				}
			}
			return ownerIn(lite) == o
		})
		agreed := time.Now()
		// Bounded by the delivery of what Y sent O, or else by O's next
		// anti-entropy pass.
		bound := casty.DefaultConfig().Replication.RepairInterval + 5*time.Second
		for {
			v, err := get(lite)
			if err == nil && v == 2 {
				break
			}
			if time.Since(agreed) > bound {
				t.Fatalf("%v after the views agreed the owner reads %d (%v), want 2, acknowledged by another owner while the views disagreed", time.Since(agreed), v, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("the owner reads 2 %v after the heal, %v after the views agreed; activations deposed there: %d",
			time.Since(healed), time.Since(agreed), c.Member(o).Replication().Deposed)
	})
}

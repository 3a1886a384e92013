package virtual_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// A lock granted to a parked waiter over a slow link: the owner's answer
// says how long the lease has left, and spends the link's delay on the
// way. Until the waiter's own estimate of its lease (Lease.Expires) has
// passed, the owner must not give the lock to anyone else. Counted from
// the answer's arrival, as it was, the estimate ran the link's delay past
// the owner's end, and a TryLock there won the lock while the waiter, by
// its estimate, still held it (the collections' schedules on casty's
// default configuration found it: a holder whose Do reported no lost lease
// refused by the resource for a newer token).
func TestAGrantOverASlowLinkEndsNoLaterThanTheOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { slowGrant(t, 4*time.Second, 400*time.Millisecond, 20*time.Second) })
}

// The same with a link slower than the lease's TTL: the grant's answer
// arrives after the owner let the lease go. The waiter must not take the
// lock on it — it waits again (here until its ctx ends, every answer as
// late) — and the owner gives it to a TryLock. Before, Lock returned that
// lease, and a TryLock won the lock while the waiter, by its estimate,
// still held it.
func TestAGrantThatArrivesAfterItsTTLIsNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { slowGrant(t, time.Second, 1500*time.Millisecond, 20*time.Second) })
}

// slowGrant has a waiter on the far side of a link of delay wait for a
// lock held on the owner's member (its Lock given within), releases it,
// and checks that until the waiter's lease ends by its own estimate the
// owner gives the lock to nobody else.
func slowGrant(t *testing.T, ttl, delay, within time.Duration) {
	c := castytest.NewCluster(t, 3, castytest.Seed(1), castytest.MemberOptions(casty.WithConfig(casty.DefaultConfig())))
	ctx := context.Background()
	name := "slow-grant"
	owner, ok := c.Member(0).OwnerOf("casty.collections.Shard[r3,wmajority,rone]", "lock/"+name)
	if !ok {
		t.Fatal("no owner for the lock's shard")
	}
	// The holder calls from the owner's member; the waiter from another,
	// over the slow link.
	holder, waiter := -1, -1
	for i := range c.N() {
		if c.Addr(i) == owner.Addr {
			holder = i
		} else if waiter < 0 {
			waiter = i
		}
	}
	hl, err := collections.NewLock(c.Member(holder), name, collections.TTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	wl, err := collections.NewLock(c.Member(waiter), name, collections.TTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	first, err := hl.Lock(ctx)
	if err != nil {
		t.Fatalf("the first Lock: %v", err)
	}
	c.Delay(holder, waiter, delay)
	type result struct {
		l   *collections.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		l, err := wl.Lock(wctx)
		got <- result{l, err}
	}()
	time.Sleep(min(ttl/2, 2*time.Second)) // the waiter arrives, parks
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := <-got
	if r.err != nil {
		// No lease it could count on: the owner must have the lock free.
		if l, won, err := hl.TryLock(ctx); err != nil || !won {
			t.Fatalf("the waiter's Lock failed (%v), and a TryLock did not win the lock: won %v, %v", r.err, won, err)
		} else {
			_ = l.Release(ctx)
		}
		return
	}
	// Just before the waiter's lease ends by its estimate, the owner still
	// holds it for the waiter.
	time.Sleep(time.Until(r.l.Expires()) - time.Millisecond)
	if other, won, err := hl.TryLock(ctx); err != nil || won {
		t.Fatalf("a TryLock 1 ms before the waiter's lease ends by its estimate: won %v, %v (token %d after the waiter's %d)", won, err, tokenOf(other), r.l.Token())
	}
}

func tokenOf(l *collections.Lease) uint64 {
	if l == nil {
		return 0
	}
	return l.Token()
}

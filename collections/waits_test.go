package collections_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// eventually fails the test unless cond holds within 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// parked waits until n Await calls are parked for the collection.
func parked(t *testing.T, typ, name string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waiter(s) parked on %s %q", n, typ, name), func() bool { return collections.Parked(typ, name) == n })
}

// noneParked checks, at the end of a test, that every Await returned.
func noneParked(t *testing.T) {
	t.Helper()
	eventually(t, "no waiter parked", func() bool { return collections.ParkedAll() == 0 })
}

// ownerIndex is the index of the member serving the collection.
func ownerIndex(t *testing.T, c *castytest.Cluster, typ, name string) int {
	t.Helper()
	addr := collections.OwnerAddr(c.Member(0), typ, name)
	for i := range c.N() {
		if c.Addr(i) == addr {
			return i
		}
	}
	t.Fatalf("no member serves %s %q (owner %q)", typ, name, addr)
	return -1
}

// others are the member indexes but skip.
func others(c *castytest.Cluster, skip int) []int {
	var out []int
	for i := range c.N() {
		if i != skip {
			out = append(out, i)
		}
	}
	return out
}

// must returns v, or panics with err: for calls a test cannot go on
// without (opening a collection, a lease it needs).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestQueueOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		q := must(collections.NewQueue[price](sys, "orders-"+t.Name()))
		if q.Name() != "orders-"+t.Name() {
			t.Fatalf("Name = %q", q.Name())
		}
		if _, ok, err := q.Poll(ctx); err != nil || ok {
			t.Fatalf("Poll of an empty queue = %v %v", ok, err)
		}
		if _, ok, err := q.Peek(ctx); err != nil || ok {
			t.Fatalf("Peek of an empty queue = %v %v", ok, err)
		}
		for i := range 6 {
			if err := q.Offer(ctx, price{Amount: float64(i), Currency: "EUR"}); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.Size(ctx); err != nil || n != 6 {
			t.Fatalf("Size = %d %v", n, err)
		}
		if v, ok, err := q.Peek(ctx); err != nil || !ok || v.Amount != 0 {
			t.Fatalf("Peek = %v %v %v", v, ok, err)
		}
		if v, ok, err := q.Poll(ctx); err != nil || !ok || v.Amount != 0 {
			t.Fatalf("Poll = %v %v %v", v, ok, err)
		}
		if v, err := q.Take(ctx); err != nil || v.Amount != 1 {
			t.Fatalf("Take of a queued element = %v %v", v, err)
		}
		vs, err := q.Drain(ctx, 2)
		if err != nil || len(vs) != 2 || vs[0].Amount != 2 || vs[1].Amount != 3 {
			t.Fatalf("Drain 2 = %v %v", vs, err)
		}
		if n, err := q.Size(ctx); err != nil || n != 2 {
			t.Fatalf("Size after Drain = %d %v", n, err)
		}
		if err := q.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after Clear = %d %v", n, err)
		}
		for i := range 3 {
			_ = q.Offer(ctx, price{Amount: float64(10 + i)})
		}
		vs, err = q.Drain(ctx, 0)
		if err != nil || len(vs) != 3 || vs[2].Amount != 12 {
			t.Fatalf("Drain all = %v %v", vs, err)
		}
		if vs, err := q.Drain(ctx, 0); err != nil || len(vs) != 0 {
			t.Fatalf("Drain of an empty queue = %v %v", vs, err)
		}
		// The same name as another type is refused.
		if _, err := must(collections.NewSemaphore(sys, q.Name(), 1)).Available(ctx); !errors.Is(err, collections.ErrMismatch) {
			t.Fatalf("a queue's name opened as a semaphore: %v", err)
		}
	})
	noneParked(t)
}

// Takers parked on different members are served in arrival order, by
// offers made on another member.
func TestQueueTakeWaitsFIFOAcrossMembers(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	takers := []*casty.System{c.Member(1), c.Lite(), c.Member(2), c.Member(0)}
	got := make([]chan int, len(takers))
	for i, sys := range takers {
		q := must(collections.NewQueue[int](sys, "fifo"))
		got[i] = make(chan int, 1)
		go func() {
			v, err := q.Take(ctx)
			if err != nil {
				t.Error(err)
			}
			got[i] <- v
		}()
		parked(t, "queue", "fifo", i+1)
	}
	q := must(collections.NewQueue[int](c.Member(0), "fifo"))
	for i := range takers {
		if err := q.Offer(ctx, 100+i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range takers {
		if v := <-got[i]; v != 100+i {
			t.Fatalf("taker %d (arrived %d-th) took %d, want %d", i, i+1, v, 100+i)
		}
	}
	if n, err := q.Size(ctx); err != nil || n != 0 {
		t.Fatalf("Size = %d %v", n, err)
	}
	noneParked(t)
}

func TestSemaphoreOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		name := "slots-" + t.Name()
		s := must(collections.NewSemaphore(sys, name, 2, collections.TTL(time.Minute)))
		if s.Permits() != 2 || s.Name() != name {
			t.Fatalf("Permits %d, Name %q", s.Permits(), s.Name())
		}
		if n, err := s.Available(ctx); err != nil || n != 2 {
			t.Fatalf("Available = %d %v", n, err)
		}
		a, ok, err := s.TryAcquire(ctx)
		if err != nil || !ok {
			t.Fatalf("TryAcquire = %v %v", ok, err)
		}
		if a.TTL() != time.Minute || time.Until(a.Expires()) <= 0 || time.Until(a.Expires()) > time.Minute {
			t.Fatalf("lease TTL %v, expires in %v", a.TTL(), time.Until(a.Expires()))
		}
		b := must(s.Acquire(ctx))
		if _, ok, err := s.TryAcquire(ctx); err != nil || ok {
			t.Fatalf("TryAcquire of a third permit = %v %v", ok, err)
		}
		if n, err := s.Available(ctx); err != nil || n != 0 {
			t.Fatalf("Available = %d %v", n, err)
		}
		before := a.Expires()
		if err := a.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if a.Expires().Before(before) {
			t.Fatalf("Renew moved the expiry back: %v → %v", before, a.Expires())
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx); !errors.Is(err, collections.ErrLeaseLost) {
			t.Fatalf("a second Release: %v", err)
		}
		if err := a.Renew(ctx); !errors.Is(err, collections.ErrLeaseLost) {
			t.Fatalf("Renew after Release: %v", err)
		}
		if n, err := s.Available(ctx); err != nil || n != 1 {
			t.Fatalf("Available = %d %v", n, err)
		}
		// Tokens strictly increase, grant after grant.
		tokens := []uint64{a.Token(), b.Token()}
		for range 5 {
			l := must(s.Acquire(ctx))
			tokens = append(tokens, l.Token())
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i < len(tokens); i++ {
			if tokens[i] <= tokens[i-1] {
				t.Fatalf("tokens %v do not strictly increase", tokens)
			}
		}
		_ = b.Release(ctx)
		// Permits are part of the identity.
		if _, err := must(collections.NewSemaphore(sys, name, 3)).Available(ctx); !errors.Is(err, collections.ErrMismatch) {
			t.Fatalf("reopened with 3 permits: %v", err)
		}
		if _, err := collections.NewSemaphore(sys, name, 0); !errors.Is(err, collections.ErrInvalidOption) {
			t.Fatalf("0 permits: %v", err)
		}
	})
	noneParked(t)
}

// A parked Acquire is granted by a Release made on another member, and
// waiters on different members are served in arrival order.
func TestAcquireWaitsForAReleaseOnAnotherMember(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	holder := must(collections.NewSemaphore(c.Member(0), "release", 1))
	held, ok, err := holder.TryAcquire(ctx)
	if err != nil || !ok {
		t.Fatalf("TryAcquire = %v %v", ok, err)
	}
	waiters := []*casty.System{c.Lite(), c.Member(2), c.Member(1)}
	got := make([]chan *collections.Lease, len(waiters))
	for i, sys := range waiters {
		s := must(collections.NewSemaphore(sys, "release", 1))
		got[i] = make(chan *collections.Lease, 1)
		go func() {
			l, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got[i] <- l
		}()
		parked(t, "semaphore", "release", i+1)
	}
	last := held
	for i := range waiters {
		if err := last.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got[i]
		if l == nil {
			t.FailNow()
		}
		if l.Token() <= last.Token() {
			t.Fatalf("waiter %d got token %d after %d", i, l.Token(), last.Token())
		}
		last = l
	}
	_ = last.Release(ctx)
	noneParked(t)
}

// A waiter whose ctx ends is withdrawn: it returns ctx's error, is no
// longer parked nor counted, and is granted nothing afterwards.
func TestCancelledWaitsAreWithdrawn(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		name := "cancel-" + t.Name()

		s := must(collections.NewSemaphore(sys, name, 1))
		held, _, _ := s.TryAcquire(ctx)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := s.Acquire(wctx); done <- err }()
		parked(t, "semaphore", name, 1)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled Acquire: %v", err)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Available(ctx); err != nil || n != 1 {
			t.Fatalf("Available after the waiter withdrew and the holder released = %d %v", n, err)
		}

		q := must(collections.NewQueue[string](sys, name+"-q"))
		wctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := q.Take(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a Take past its deadline: %v", err)
		}
		if err := q.Offer(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := q.Poll(ctx); err != nil || !ok || v != "x" {
			t.Fatalf("Poll after the taker withdrew = %q %v %v", v, ok, err)
		}

		b := must(collections.NewBarrier(sys, name+"-b", 2))
		wctx, cancel = context.WithCancel(ctx)
		go func() { done <- b.Wait(wctx) }()
		eventually(t, "one party waiting", func() bool { n, _ := b.Waiting(ctx); return n == 1 })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled Wait: %v", err)
		}
		if n, err := b.Waiting(ctx); err != nil || n != 0 {
			t.Fatalf("Waiting after the party withdrew = %d %v", n, err)
		}
	})
	noneParked(t)
}

// A grant that races the waiter's cancellation is given back: a permit
// granted to a withdrawn Acquire is released, an element handed to a
// withdrawn Take goes back to the queue. Nothing is lost either way.
func TestAGrantRacingACancelIsGivenBack(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		name := "race-" + t.Name()
		s := must(collections.NewSemaphore(sys, name, 1))
		q := must(collections.NewQueue[int](sys, name+"-q"))
		for i := range 12 {
			held := must(s.Acquire(ctx))
			wctx, cancel := context.WithCancel(ctx)
			got := make(chan *collections.Lease, 1)
			go func() { l, _ := s.Acquire(wctx); got <- l }()
			parked(t, "semaphore", name, 1)
			go func() { _ = held.Release(ctx) }()
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // pace: cancel around the grant
			cancel()
			if l := <-got; l != nil {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the permit free", func() bool { n, _ := s.Available(ctx); return n == 1 })

			wctx, cancel = context.WithCancel(ctx)
			took := make(chan error, 1)
			go func() { _, err := q.Take(wctx); took <- err }()
			parked(t, "queue", name+"-q", 1)
			go func() { _ = q.Offer(ctx, i) }()
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			cancel()
			if err := <-took; err != nil {
				// Withdrawn: the element, offered or still to be, stays queued.
				var v int
				eventually(t, "the element queued", func() bool {
					var ok bool
					v, ok, _ = q.Poll(ctx)
					return ok
				})
				if v != i {
					t.Fatalf("polled %d, want %d", v, i)
				}
			}
			if n, err := q.Size(ctx); err != nil || n != 0 {
				t.Fatalf("round %d: Size = %d %v", i, n, err)
			}
		}
	})
	noneParked(t)
}

// A grant made while its waiter cannot collect it (cut off from the
// owner) and then withdraws is given back, deterministically.
func TestAGrantToAWithdrawnWaiterIsGivenBack(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	lite := c.Lite()
	for _, typ := range []string{"queue", "semaphore"} {
		name := "cut-" + typ
		owner := ownerIndex(t, c, typ, name)
		other := c.Member(others(c, owner)[0])
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		var give func() error     // on another member: makes the grant
		var check func() error    // after: nothing was lost
		var collected atomic.Bool // the waiter got it after all (it reached the shard another way)
		switch typ {
		case "queue":
			q := must(collections.NewQueue[string](other, name))
			lq := must(collections.NewQueue[string](lite, name))
			go func() {
				_, err := lq.Take(wctx)
				collected.Store(err == nil)
				done <- err
			}()
			give = func() error { return q.Offer(ctx, "the element") }
			check = func() error {
				if collected.Load() {
					return nil
				}
				v, ok, err := q.Poll(ctx)
				if err != nil || !ok || v != "the element" {
					return fmt.Errorf("Poll = %q %v %v: the element was lost", v, ok, err)
				}
				return nil
			}
		case "semaphore":
			s := must(collections.NewSemaphore(other, name, 1))
			ls := must(collections.NewSemaphore(lite, name, 1))
			held := must(s.Acquire(ctx))
			go func() {
				l, err := ls.Acquire(wctx)
				if err == nil {
					collected.Store(true)
					_ = l.Release(ctx)
				}
				done <- err
			}()
			give = func() error { return held.Release(ctx) }
			check = func() error {
				if n, err := s.Available(ctx); err != nil || n != 1 {
					return fmt.Errorf("Available = %d %v: the permit was lost", n, err)
				}
				return nil
			}
		}
		parked(t, typ, name, 1)
		c.Cut(c.N(), owner)
		if err := give(); err != nil {
			t.Fatal(err)
		}
		cancel()
		c.Heal(c.N(), owner)
		err := <-done
		if collected.Load() {
			t.Logf("%s: the waiter collected its grant before it withdrew", typ)
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: the withdrawn waiter: %v", typ, err)
		}
		if err := check(); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	noneParked(t)
}

// Concurrent Acquire and Release from several goroutines on every member
// and the lite member never hold more permits than the semaphore has.
func TestSemaphoreCapacityNeverExceeded(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	const permits, rounds = 2, 6
	var holders, peak, grants atomic.Int32
	var tokensMu sync.Mutex
	var tokens []uint64
	var wg sync.WaitGroup
	for _, sys := range append(c.Members(), c.Lite()) {
		s := must(collections.NewSemaphore(sys, "capacity", permits))
		for range 2 {
			wg.Go(func() {
				for range rounds {
					l, err := s.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					n := holders.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					grants.Add(1)
					tokensMu.Lock()
					tokens = append(tokens, l.Token())
					tokensMu.Unlock()
					time.Sleep(time.Millisecond) // hold it a moment
					holders.Add(-1)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if p := peak.Load(); p > permits {
		t.Fatalf("%d holders at once, with %d permits", p, permits)
	}
	if g := grants.Load(); g != 4*2*rounds {
		t.Fatalf("%d grants, want %d", g, 4*2*rounds)
	}
	slices.Sort(tokens)
	if len(slices.Compact(tokens)) != len(tokens) {
		t.Fatal("a fencing token was granted twice")
	}
	noneParked(t)
}

// A lease not renewed is reclaimed after its TTL and granted to the
// waiter; its holder then finds it lost.
func TestSemaphoreTTLReclaim(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	const ttl = 300 * time.Millisecond
	holder := must(collections.NewSemaphore(c.Member(1), "ttl", 1, collections.TTL(ttl)))
	waiter := must(collections.NewSemaphore(c.Lite(), "ttl", 1, collections.TTL(ttl)))
	stale, ok, err := holder.TryAcquire(ctx)
	if err != nil || !ok {
		t.Fatalf("TryAcquire = %v %v", ok, err)
	}
	l, err := waiter.Acquire(ctx) // granted once the holder's lease expires
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= stale.Token() {
		t.Fatalf("reclaimed with token %d after %d", l.Token(), stale.Token())
	}
	if err := stale.Renew(ctx); !errors.Is(err, collections.ErrLeaseLost) {
		t.Fatalf("Renew of a reclaimed lease: %v", err)
	}
	if err := stale.Release(ctx); !errors.Is(err, collections.ErrLeaseLost) {
		t.Fatalf("Release of a reclaimed lease: %v", err)
	}
	// Renewed, a lease outlives its TTL.
	for range 4 {
		time.Sleep(ttl / 3) // pace the renewals
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release of a renewed lease: %v", err)
	}
	noneParked(t)
}

// A parked waiter whose process died holds its place no longer than its
// TTL.
func TestAWaiterWhoseCallerDiedExpires(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	const ttl = 300 * time.Millisecond
	owner := ownerIndex(t, c, "barrier", "orphans")
	dies := others(c, owner)[0]
	survivor := c.Member(others(c, owner)[1])
	b := must(collections.NewBarrier(survivor, "orphans", 2, collections.TTL(ttl)))
	gone := must(collections.NewBarrier(c.Member(dies), "orphans", 2, collections.TTL(ttl)))
	go func() { _ = gone.Wait(ctx) }()
	eventually(t, "one party waiting", func() bool { n, _ := b.Waiting(ctx); return n == 1 })
	c.Crash(dies)
	eventually(t, "the dead party dropped", func() bool { n, _ := b.Waiting(ctx); return n == 0 })
	noneParked(t)
}

func TestLockOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		name := "mutex-" + t.Name()
		l := must(collections.NewLock(sys, name))
		if l.Name() != name {
			t.Fatalf("Name = %q", l.Name())
		}
		a, ok, err := l.TryLock(ctx)
		if err != nil || !ok {
			t.Fatalf("TryLock = %v %v", ok, err)
		}
		if _, ok, err := l.TryLock(ctx); err != nil || ok {
			t.Fatalf("TryLock of a held lock = %v %v", ok, err)
		}
		if err := l.Unlock(ctx, a); err != nil {
			t.Fatal(err)
		}
		b := must(l.Lock(ctx))
		if b.Token() <= a.Token() {
			t.Fatalf("token %d after %d", b.Token(), a.Token())
		}
		if err := b.Release(ctx); err != nil {
			t.Fatal(err)
		}
		var seen uint64
		if err := l.Do(ctx, func(ctx context.Context, token uint64) error { seen = token; return nil }); err != nil {
			t.Fatal(err)
		}
		if seen <= b.Token() {
			t.Fatalf("Do ran with token %d after %d", seen, b.Token())
		}
		boom := errors.New("boom")
		if err := l.Do(ctx, func(context.Context, uint64) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("Do returned %v, want fn's error", err)
		}
		// Do released the lock each time.
		if c, ok, err := l.TryLock(ctx); err != nil || !ok {
			t.Fatalf("TryLock after Do = %v %v", ok, err)
		} else {
			_ = c.Release(ctx)
		}
		if _, err := must(collections.NewSemaphore(sys, name, 1)).Available(ctx); !errors.Is(err, collections.ErrMismatch) {
			t.Fatalf("a lock's name opened as a semaphore: %v", err)
		}
	})
	noneParked(t)
}

// fenced is a resource that refuses a write with a token older than one
// it has seen, as a storage service fenced by lock tokens would.
type fenced struct {
	mu     sync.Mutex
	last   uint64
	writes int
}

func (f *fenced) write(token uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.last {
		return fmt.Errorf("stale token %d: %d was seen", token, f.last)
	}
	f.last = token
	f.writes++
	return nil
}

// Lock.Do runs one holder at a time across members, each with a token the
// fenced resource accepts; a holder whose lease expired is refused there.
func TestLockMutualExclusionWithFencing(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	res := &fenced{}
	var inside atomic.Int32
	var wg sync.WaitGroup
	const each = 4
	for _, sys := range append(c.Members(), c.Lite()) {
		l := must(collections.NewLock(sys, "ledger"))
		for range 2 {
			wg.Go(func() {
				for range each {
					err := l.Do(ctx, func(ctx context.Context, token uint64) error {
						if n := inside.Add(1); n != 1 {
							t.Errorf("%d holders inside the lock", n)
						}
						defer inside.Add(-1)
						time.Sleep(time.Millisecond) // hold it a moment
						return res.write(token)
					})
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	if res.writes != 4*2*each {
		t.Fatalf("%d writes, want %d", res.writes, 4*2*each)
	}

	// A holder that stalls past its TTL is fenced off.
	res = &fenced{}
	const ttl = 300 * time.Millisecond
	slow := must(collections.NewLock(c.Member(0), "fenced", collections.TTL(ttl)))
	fast := must(collections.NewLock(c.Lite(), "fenced", collections.TTL(ttl)))
	stalled, ok, err := slow.TryLock(ctx)
	if err != nil || !ok {
		t.Fatalf("TryLock = %v %v", ok, err)
	}
	err = fast.Do(ctx, func(_ context.Context, token uint64) error { return res.write(token) })
	if err != nil {
		t.Fatal(err)
	}
	if err := res.write(stalled.Token()); err == nil {
		t.Fatal("the resource accepted the stalled holder's stale token")
	}
	noneParked(t)
}

// Do cancels its function's ctx when the lease is lost (its renewals
// cannot reach the owner), and says so.
func TestLockDoCancelsWhenTheLeaseIsLost(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	const ttl = 300 * time.Millisecond
	owner := ownerIndex(t, c, "lock", "lost")
	l := must(collections.NewLock(c.Lite(), "lost", collections.TTL(ttl)))
	var token uint64
	err := l.Do(ctx, func(ctx context.Context, tok uint64) error {
		token = tok
		c.Cut(c.N(), owner)
		<-ctx.Done()
		return ctx.Err()
	})
	c.Heal(c.N(), owner)
	if !errors.Is(err, collections.ErrLeaseLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want ErrLeaseLost and fn's context.Canceled", err)
	}
	next := must(collections.NewLock(c.Member(owner), "lost", collections.TTL(ttl)))
	lease := must(next.Lock(ctx))
	if lease.Token() <= token {
		t.Fatalf("token %d after %d", lease.Token(), token)
	}
	_ = lease.Release(ctx)
	noneParked(t)
}

func TestBarrierOperations(t *testing.T) {
	systems(t, func(t *testing.T, sys *casty.System) {
		ctx := ctxFor(t)
		name := "gate-" + t.Name()
		one := must(collections.NewBarrier(sys, name+"-1", 1))
		for range 3 {
			if err := one.Wait(ctx); err != nil {
				t.Fatalf("Wait on a barrier of 1: %v", err)
			}
		}
		b := must(collections.NewBarrier(sys, name, 3))
		if b.Parties() != 3 || b.Name() != name {
			t.Fatalf("Parties %d, Name %q", b.Parties(), b.Name())
		}
		done := make(chan error, 3)
		for i := range 3 {
			go func() { done <- b.Wait(ctx) }()
			if i < 2 {
				eventually(t, fmt.Sprint(i+1, " waiting"), func() bool { n, _ := b.Waiting(ctx); return n == i+1 })
			}
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if n, err := b.Waiting(ctx); err != nil || n != 0 {
			t.Fatalf("Waiting after the trip = %d %v", n, err)
		}
		if _, err := must(collections.NewBarrier(sys, name, 2)).Waiting(ctx); !errors.Is(err, collections.ErrMismatch) {
			t.Fatalf("reopened with 2 parties: %v", err)
		}
		if _, err := collections.NewBarrier(sys, name, 0); !errors.Is(err, collections.ErrInvalidOption) {
			t.Fatalf("0 parties: %v", err)
		}
	})
	noneParked(t)
}

// Parties on different members trip the barrier once per round, for 3
// rounds: no party leaves a round before every party arrived at it.
func TestBarrierTripsOncePerRoundAcrossMembers(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	const rounds = 3
	parties := []*casty.System{c.Member(0), c.Member(2), c.Lite()}
	var arrived, left [rounds]atomic.Int32
	var wg sync.WaitGroup
	for _, sys := range parties {
		b := must(collections.NewBarrier(sys, "rounds", len(parties)))
		wg.Go(func() {
			for r := range rounds {
				arrived[r].Add(1)
				if err := b.Wait(ctx); err != nil {
					t.Error(err)
					return
				}
				if n := arrived[r].Load(); n != int32(len(parties)) {
					t.Errorf("round %d tripped with %d of %d parties arrived", r, n, len(parties))
				}
				left[r].Add(1)
			}
		})
	}
	wg.Wait()
	for r := range rounds {
		if n := left[r].Load(); n != int32(len(parties)) {
			t.Fatalf("round %d released %d parties", r, n)
		}
	}
	if n, err := must(collections.NewBarrier(c.Member(1), "rounds", 3)).Waiting(ctx); err != nil || n != 0 {
		t.Fatalf("Waiting after the rounds = %d %v", n, err)
	}
	noneParked(t)
}

// A lock held and a waiter parked survive a crash of the lock's owner:
// the waiter is granted, once the holder releases, with a token greater
// than every earlier one.
func TestLockFailover(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	owner := ownerIndex(t, c, "lock", "failover")
	rest := others(c, owner)
	holder := must(collections.NewLock(c.Member(rest[0]), "failover"))
	waiter := must(collections.NewLock(c.Member(rest[1]), "failover"))
	var tokens []uint64
	for range 3 { // some history before the crash
		l := must(holder.Lock(ctx))
		tokens = append(tokens, l.Token())
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	held := must(holder.Lock(ctx))
	tokens = append(tokens, held.Token())
	got := make(chan *collections.Lease, 1)
	go func() {
		l, err := waiter.Lock(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	parked(t, "lock", "failover", 1)
	if collections.ParkedOn(c.Member(owner), "lock", "failover") != 1 {
		t.Fatal("the waiter is not parked beside the lock, on its owner")
	}
	c.Crash(owner)
	// The new owner knows the waiter; its caller parks again there.
	eventually(t, "the waiter parked at a new owner", func() bool {
		return collections.ParkedOn(c.Member(rest[0]), "lock", "failover")+collections.ParkedOn(c.Member(rest[1]), "lock", "failover") == 1
	})
	// Release through the new owner; a try whose answer was lost may have
	// released it already.
	for tries := 0; ; tries++ {
		err := held.Release(ctx)
		if err == nil || tries > 0 && errors.Is(err, collections.ErrLeaseLost) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Release across the failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // pace the retries
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	for _, tok := range tokens {
		if l.Token() <= tok {
			t.Fatalf("granted token %d after the failover; tokens before: %v", l.Token(), tokens)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	noneParked(t)
}

// Elements offered before and after a crash of the queue's owner are all
// taken, each exactly once, by takers on the surviving members.
func TestQueueFailover(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	owner := ownerIndex(t, c, "queue", "failover")
	rest := others(c, owner)
	lite := c.Lite()
	const before, after = 10, 10
	q := must(collections.NewQueue[int](lite, "failover"))
	for i := range before {
		if err := q.Offer(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	taken := map[int]int{}
	attempts := map[int]int{}
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, sys := range []*casty.System{c.Member(rest[0]), c.Member(rest[1]), lite} {
		tq := must(collections.NewQueue[int](sys, "failover"))
		wg.Go(func() {
			for {
				v, err := tq.Take(tctx)
				if err != nil {
					if tctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				taken[v]++
				n := len(taken)
				mu.Unlock()
				if n == before+after {
					stop()
				}
				time.Sleep(5 * time.Millisecond) // pace the takers across the crash
			}
		})
	}
	c.Crash(owner)
	for i := before; i < before+after; i++ {
		for {
			mu.Lock()
			attempts[i]++
			mu.Unlock()
			err := q.Offer(ctx, i)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("Offer %d across the failover: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond) // pace the retries
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("took %d of %d elements", len(taken), before+after)
	}
	for i := range before + after {
		most := max(1, attempts[i]) // an Offer retried after an indeterminate error may have landed twice
		if taken[i] < 1 || taken[i] > most {
			t.Errorf("element %d taken %d times (offered in %d tries)", i, taken[i], attempts[i])
		}
	}
	noneParked(t)
}

// Parties waiting at a barrier when its owner crashes are still counted
// by the new owner: the last party's arrival trips the round for all.
func TestBarrierFailover(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	ctx := ctxFor(t)
	owner := ownerIndex(t, c, "barrier", "failover")
	rest := others(c, owner)
	callers := []*casty.System{c.Member(rest[0]), c.Member(rest[1]), c.Lite()}
	errs := make(chan error, 2)
	for _, sys := range callers[:2] {
		b := must(collections.NewBarrier(sys, "failover", 3))
		go func() { errs <- b.Wait(ctx) }()
	}
	parked(t, "barrier", "failover", 2)
	c.Crash(owner)
	eventually(t, "both parties parked at a new owner", func() bool {
		return collections.ParkedOn(c.Member(rest[0]), "barrier", "failover")+collections.ParkedOn(c.Member(rest[1]), "barrier", "failover") == 2
	})
	last := must(collections.NewBarrier(callers[2], "failover", 3))
	if err := last.Wait(ctx); err != nil {
		t.Fatalf("the last party: %v", err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a party waiting through the crash: %v", err)
		}
	}
	noneParked(t)
}

package collections

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Server-side waits: Queue.Take, Semaphore.Acquire, Lock.Lock and
// Barrier.Wait park their caller in the collection's shard, not in a
// polling loop. The protocol, between a facade (on any member or lite
// member), the shard (on its owner) and the waiting room (a service beside
// the shard):
//
//  1. Arrive. The facade picks a random waiter id and calls the shard with
//     req{Waiter, TTL, Wait: true}. The handler grants at once (a lease,
//     an element, a tripped round) or appends a waiter to Waiters (FIFO)
//     with Expires = the owner's now + TTL, and answers queued. Arriving
//     is idempotent by id, so the facade retries it on an infrastructure
//     error.
//  2. Park. The facade calls the waiting room's Await through
//     casty.Beside(waits, shardRef): it runs on the member serving the
//     shard. Await registers a channel for (its System, the shard's kind
//     and key, the waiter id) in a process-wide registry, then claims:
//     calls the shard's claim handler (a local call when beside), returns
//     when granted, else waits for the channel, a tick (1 s, or TTL/3 if
//     shorter: each claim also renews the waiter's Expires once half its
//     TTL is gone), or the bound the facade passed (at most 10 s, never
//     past its ctx), and claims again. Registering before the first claim
//     means a grant made meanwhile is seen by that claim.
//  3. Grant. A handler that makes a waiter grantable (an Offer, a Release,
//     a lease's expiry, a barrier's last arrival, a withdrawal that frees
//     a permit or puts an element back) records the grant in the state —
//     the lease, the waiter's element, the tripped round — and signals the
//     registry of its own System. The signal is a hint: casty commits a
//     handler's state before the activation runs its next message, so
//     the claim it prompts reads the committed grant, and the claim is
//     what answers. (Verified in actor/activation.go: the mailbox runs
//     one envelope at a time, and Activation.succeeded commits the
//     handler's state — replicated to the write quorum — before it
//     finishes the envelope and before the next one runs; a failed commit
//     discards the activation, and the next claim restores the last
//     committed state, without the grant.) A signal for a waiter parked
//     on another member (the ring moved) is lost; the next tick's claim
//     finds the grant.
//  4. Expire. Every handler first drops the leases and waiters whose
//     Expires passed on the owner's clock, then grants what that freed,
//     FIFO. A queue element granted to a taker that withdrew or expired
//     before collecting it goes back to the front of the queue.
//  5. Withdraw. When the caller's ctx ends, the facade calls the shard's
//     withdraw handler with a fresh 5 s context: a waiter is removed; one
//     granted meanwhile gives its grant back (a semaphore releases the
//     lease, a queue puts the element back at the front), except a
//     barrier's, whose round tripped: Wait returns nil. A cancelled
//     waiter is removed and never granted something it cannot see.
//  6. Collect. A semaphore's grant is its lease, found again by id. A
//     queue's or barrier's grant record stays in Waiters, marked
//     Delivered once a claim answered it, until the facade acknowledges
//     it (the ids ride on the facade's next call to the shard, Acks) or
//     its TTL passes: a claim retried after its answer was lost gets the
//     same element. A delivered record that expires is dropped, not put
//     back (its caller most likely has the element); an undelivered one is
//     put back.
//  7. Fail over. Waiters, grants, leases and the token are replicated
//     state, so a new owner knows them all: a parked Await that fails with
//     an infrastructure error (connection lost, actor or quorum
//     unavailable, timeout) is called again by the facade until its ctx
//     ends, and reaches the new owner, where the waiter kept its place. A
//     waiter out of touch for longer than its TTL loses it and arrives
//     again, at the back.
//  8. Fence. Token increments with each grant, in the state the grant
//     commits, and a lease is answered only after that commit; a grant
//     made by a deposed owner fails its commit under casty's fencing and
//     reaches no caller. Tokens therefore strictly increase per semaphore
//     or lock, across owner failovers.

// status is a waiting operation's outcome.
type status int8

const (
	notGranted status = iota // a try that cannot be granted now
	granted                  // granted: the lease, element or tripped round is in the response
	queued                   // parked in the shard
	gone                     // the shard knows no such waiter: it expired or withdrew
)

// waitRoom is the waiting-room service: Await parks a waiter beside its
// shard. It is stateless; parked calls wait in a process-wide registry.
type waitRoom struct{}

// waits is declared in every process that imports collections, so every
// member serves it.
var waits = declareWaits()

func declareWaits() *casty.ServiceKind[waitRoom] {
	registerOnce.Do(registerMessages)
	return casty.Service[waitRoom](casty.Name("casty.collections.waits"), casty.Concurrency(maxParked))
}

const (
	// maxParked bounds the waiters parked at once per member.
	maxParked = 4096
	// maxPark bounds one Await call; the facade calls again after it.
	maxPark = 10 * time.Second
	// parkGrace is how much longer than its bound an Await call may take.
	parkGrace = 5 * time.Second
	// claimEvery is how often a parked waiter claims without a signal.
	claimEvery = time.Second
	// withdrawWithin bounds a cancelled waiter's withdrawal.
	withdrawWithin = 5 * time.Second
	// maxAcks bounds the collected grants a facade remembers to
	// acknowledge; older ones expire in the shard by their TTL.
	maxAcks = 256
)

// Await parks the waiter q.Waiter of the shard q.Kind/q.Shard until it is
// granted, the shard no longer knows it, q.Bound passes (it answers
// queued then) or ctx ends. Errors of its claims are answers, so the
// caller sees casty's sentinels.
func (*waitRoom) Await(ctx context.Context, q req) (resp, error) {
	sys := casty.Self(ctx).System()
	k, claim := kindNamed(q.Kind), claimOf(q.Shard)
	if sys == nil || k == nil || claim == nil {
		return resp{}, fmt.Errorf("collections: no waiting collection %s/%s on this member", q.Kind, q.Shard)
	}
	ch, leave := park(sys, q.Kind, q.Shard, q.Waiter)
	defer leave()
	every := claimEvery
	if ttl := time.Duration(q.TTL) / 3; ttl > 0 && ttl < every {
		every = ttl
	}
	bound := time.NewTimer(time.Duration(q.Bound))
	defer bound.Stop()
	tick := time.NewTimer(every)
	defer tick.Stop()
	ref, cq := k.Ref(sys, q.Shard), req{Waiter: q.Waiter, TTL: q.TTL, N: q.N}
	for {
		r, err := casty.Call(ctx, ref, claim, cq)
		if err != nil {
			return resp{}, casty.Answer(err)
		}
		if r.Wait != queued {
			return r, nil
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-bound.C:
			return r, nil
		case <-ctx.Done():
			return resp{}, casty.Answer(ctx.Err())
		}
		tick.Reset(every)
	}
}

// claimOf is the claim handler of a waiting collection's shard key.
func claimOf(key string) func(*shard, context.Context, req) (resp, error) {
	typ, _, _ := strings.Cut(key, "/")
	switch typ {
	case "queue":
		return (*shard).QClaim
	case "semaphore", "lock":
		return (*shard).SemClaim
	case "barrier":
		return (*shard).BarClaim
	}
	return nil
}

// kindNamed finds a declared shard kind by its wire name.
func kindNamed(name string) *casty.Kind[shard] {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	for _, k := range kinds {
		if k.Name() == name {
			return k
		}
	}
	return nil
}

// The registry of parked waiters: one channel per Await call under way,
// by the System it runs on, its shard and its waiter id. A shard handler
// signals the waiters of its own System only.
type roomKey struct {
	sys   *casty.System
	shard string // kind name "/" key
	id    string
}

var room = struct {
	sync.Mutex
	m map[roomKey][]chan struct{}
}{m: map[roomKey][]chan struct{}{}}

// park registers a channel for a waiter; leave unregisters it.
func park(sys *casty.System, kind, key, id string) (ch chan struct{}, leave func()) {
	k := roomKey{sys, kind + "/" + key, id}
	ch = make(chan struct{}, 1)
	room.Lock()
	room.m[k] = append(room.m[k], ch)
	room.Unlock()
	return ch, func() {
		room.Lock()
		defer room.Unlock()
		chs := slices.DeleteFunc(room.m[k], func(c chan struct{}) bool { return c == ch })
		if len(chs) == 0 {
			delete(room.m, k)
		} else {
			room.m[k] = chs
		}
	}
}

// wake signals the waiter id parked on the shard whose handler ctx is:
// it was granted, its claim will see it.
func wake(ctx context.Context, id string) {
	self := casty.Self(ctx)
	sys := self.System()
	if sys == nil {
		return
	}
	k := roomKey{sys, self.Kind() + "/" + self.Key(), id}
	room.Lock()
	defer room.Unlock()
	for _, ch := range room.m[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// parked reports how many Await calls are parked in this process (tests).
func parked() int {
	room.Lock()
	defer room.Unlock()
	n := 0
	for _, chs := range room.m {
		n += len(chs)
	}
	return n
}

// Shard-side helpers shared by the waiting collections.

// waiterAt returns the index of waiter id, or -1.
func (s *shard) waiterAt(id string) int {
	if id == "" {
		return -1
	}
	return slices.IndexFunc(s.Waiters, func(w waiter) bool { return w.ID == id })
}

// removeWaiter removes Waiters[i], leaving nil for none.
func (s *shard) removeWaiter(i int) waiter {
	w := s.Waiters[i]
	s.Waiters = slices.Delete(s.Waiters, i, i+1)
	if len(s.Waiters) == 0 {
		s.Waiters = nil
	}
	return w
}

// renew extends a parked waiter's life once half its TTL is gone (so a
// waiter claiming every second commits a renewal every TTL/2, not every
// claim).
func (w *waiter) renew(now int64) {
	if w.Expires-now < w.TTL/2 {
		w.Expires = now + w.TTL
	}
}

// newWaiter is a waiter arriving now.
func newWaiter(q req, now int64) waiter {
	return waiter{ID: q.Waiter, TTL: q.TTL, Expires: now + q.TTL}
}

// The facade's side.

// waitOps are a waiting collection's handlers.
type waitOps struct {
	arrive, withdraw func(*shard, context.Context, req) (resp, error)
	// collect: the grant leaves a record to acknowledge (queue, barrier).
	collect bool
	// tripWins: a withdrawal that finds the grant made is a success
	// (a barrier's round tripped), not a grant to give back.
	tripWins bool
}

// newWaiterID is a random waiter (and lease) id.
func newWaiterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// await runs the waiting protocol for a single-owner collection: it
// arrives with q, parks until granted, and withdraws when ctx ends. It
// returns the granting response and a time no later than when the lease
// time it reports (resp.Expires) started counting on the owner: the start
// of the call that got it, which for a parked call can be long before the
// grant (parkAt's bound).
func (b *base) await(ctx context.Context, ops waitOps, q req) (resp, time.Time, error) {
	q.Waiter, q.TTL, q.Wait = newWaiterID(), int64(b.opt.ttl), true
	var pause backoff
	parkedNow := false
	for {
		var r resp
		var err error
		// The time left that a grant reports is the owner's when it
		// answered, after the call began: counted from the call's start
		// it never outlasts the owner's. Counted from the answer's
		// arrival, as it was, a delayed answer (a slow link, a cut
		// healing) stretched the holder's estimate past the owner's by
		// the delay, while the owner granted the permit to the next
		// waiter.
		sent := time.Now()
		if parkedNow {
			r, err = b.parkAt(ctx, q)
		} else {
			r, err = b.send(ctx, ops.arrive, q)
		}
		if err == nil {
			switch r.Wait {
			case queued:
				parkedNow, pause = true, 0
				continue
			case gone: // expired while out of touch: arrive again, at the back
				parkedNow = false
				if pause.wait(ctx) {
					continue
				}
			case granted:
				if ops.collect {
					b.collected(q.Waiter)
				}
				return r, sent, nil
			default:
				err = fmt.Errorf("collections: %s %q: unexpected wait status %d", b.meta.Type, b.name, r.Wait)
			}
		} else if ctx.Err() == nil && retryable(err) && b.live() && pause.wait(ctx) {
			continue
		}
		// ctx ended, or a definite failure: withdraw, whatever was done.
		w := b.withdraw(ctx, ops, q)
		if ctx.Err() == nil {
			return resp{}, sent, err
		}
		if ops.tripWins && w.Wait == granted {
			return w, sent, nil
		}
		return resp{}, sent, ctx.Err()
	}
}

// parkAt calls Await beside the shard, bounded by ctx and maxPark.
func (b *base) parkAt(ctx context.Context, q req) (resp, error) {
	bound := maxPark
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl))
	}
	if bound <= 0 {
		<-ctx.Done()
		return resp{}, ctx.Err()
	}
	cctx, cancel := context.WithTimeout(ctx, bound+parkGrace)
	defer cancel()
	ref := b.refs[0]
	aq := req{Kind: ref.Kind(), Shard: ref.Key(), Waiter: q.Waiter, TTL: q.TTL, N: q.N, Bound: int64(bound)}
	return casty.Call(cctx, casty.Beside(waits, ref), (*waitRoom).Await, aq)
}

// withdraw takes the waiter back, with a context of its own (the
// caller's has ended), retrying infrastructure errors within
// withdrawWithin. It answers what the shard said; nothing on failure (the
// waiter, or its grant, then expires by its TTL).
func (b *base) withdraw(ctx context.Context, ops waitOps, q req) resp {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawWithin)
	defer cancel()
	var pause backoff
	for {
		r, err := b.send(wctx, ops.withdraw, req{Waiter: q.Waiter, TTL: q.TTL, N: q.N})
		if err == nil || !retryable(err) || !b.live() || !pause.wait(wctx) {
			return r
		}
	}
}

// send calls the single-owner shard with the grants to acknowledge.
func (b *base) send(ctx context.Context, m func(*shard, context.Context, req) (resp, error), q req) (resp, error) {
	if err := b.open(ctx); err != nil {
		return resp{}, err
	}
	b.ackMu.Lock()
	q.Acks = slices.Clone(b.acks)
	b.ackMu.Unlock()
	r, err := casty.Call(ctx, b.refs[0], m, q)
	if err == nil && len(q.Acks) > 0 {
		b.ackMu.Lock()
		b.acks = slices.DeleteFunc(b.acks, func(id string) bool { return slices.Contains(q.Acks, id) })
		b.ackMu.Unlock()
	}
	return r, err
}

// collected remembers a grant to acknowledge with the next call.
func (b *base) collected(id string) {
	b.ackMu.Lock()
	defer b.ackMu.Unlock()
	if len(b.acks) >= maxAcks {
		b.acks = slices.Delete(b.acks, 0, 1)
	}
	b.acks = append(b.acks, id)
}

// live reports whether the facade's system can still make calls.
func (b *base) live() bool {
	h := b.sys.Health()
	return h.Live && !h.Draining
}

// retryable reports an infrastructure error a waiting caller outlasts:
// the shard's owner, its quorum or the connection to it is away for now.
func retryable(err error) bool {
	for _, e := range []error{casty.ErrTimeout, casty.ErrActorUnavailable, casty.ErrQuorumUnavailable, casty.ErrRangeMoving, casty.ErrOverloaded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// backoff is a retry pause, from 20 ms doubling to 500 ms.
type backoff time.Duration

// wait pauses; false when ctx ended first.
func (p *backoff) wait(ctx context.Context) bool {
	d := time.Duration(*p)
	if d == 0 {
		d = 20 * time.Millisecond
	}
	*p = backoff(min(2*d, 500*time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

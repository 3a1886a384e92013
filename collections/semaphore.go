package collections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Semaphore is a distributed counting semaphore of a fixed number of
// permits, on one shard actor. Each permit granted is a Lease: it carries
// a fencing token and lasts its TTL unless renewed, timed on the member
// serving the semaphore, so a holder whose process died holds nothing
// beyond its TTL. Acquire waits on the server, FIFO among waiters (see
// the package doc, "Waiting").
type Semaphore struct {
	b       *base
	permits int
}

// NewSemaphore opens the semaphore called name, with permits permits, on
// sys. The permit count is part of the semaphore's identity: opening it
// with another count fails with ErrMismatch at the first operation.
// Options: Replicas, Write, Read, TTL (a lease's, and a parked waiter's
// whose caller stopped asking).
func NewSemaphore(sys *casty.System, name string, permits int, opts ...Option) (*Semaphore, error) {
	if permits < 1 {
		return nil, fmt.Errorf("%w: a semaphore needs at least 1 permit, got %d", ErrInvalidOption, permits)
	}
	return newSemaphore(sys, "semaphore", name, permits, opts)
}

func newSemaphore(sys *casty.System, typ, name string, permits int, opts []Option) (*Semaphore, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	b, err := newBase(sys, typ, name, int64(permits), 1, o)
	if err != nil {
		return nil, err
	}
	return &Semaphore{b: b, permits: permits}, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.b.name }

// Permits returns how many permits the semaphore has.
func (s *Semaphore) Permits() int { return s.permits }

// TryAcquire takes a permit if one is free and nobody waits for one,
// without waiting. A TryAcquire that fails with an indeterminate error may
// have taken a permit: it is released by its TTL.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, bool, error) {
	id, sent := newWaiterID(), time.Now()
	r, err := s.b.send(ctx, (*shard).SemAcquire, req{Waiter: id, TTL: int64(s.b.opt.ttl), N: int64(s.permits)})
	if err != nil || r.Wait != granted {
		return nil, false, err
	}
	return s.lease(id, r, sent), true, nil
}

// Acquire takes a permit, waiting for one as long as ctx allows; waiters
// are served in the order they arrived, whichever member they call from.
// The wait is on the server: Acquire parks beside the semaphore's shard
// and is answered when a permit is granted to it. When ctx ends first,
// Acquire withdraws and returns ctx.Err(); a permit granted to it at that
// moment is released. An owner's failover keeps its place (the new owner
// knows it), and so does any infrastructure error shorter than the TTL:
// Acquire retries them.
//
// A grant's answer says how long the lease has left, not how long the
// answer took to arrive, so the lease counts from the start of the call
// that got it. When that leaves less than three quarters of the TTL (the
// call had been parked a while, or the answer was slow), Acquire renews
// the lease before it returns (one round trip more); if the renewal finds
// it gone, or fails and the lease's time is up by this count, Acquire
// waits again — it never returns a lease it cannot count on.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	for {
		r, at, err := s.b.await(ctx, waitOps{arrive: (*shard).SemAcquire, withdraw: (*shard).SemWithdraw}, req{N: int64(s.permits)})
		if err != nil {
			return nil, err
		}
		l := s.lease("", r, at)
		if time.Until(l.Expires()) >= l.ttl*3/4 {
			return l, nil
		}
		err = l.Renew(ctx)
		switch {
		case err == nil:
			return l, nil
		case !errors.Is(err, ErrLeaseLost) && time.Now().Before(l.Expires()):
			return l, nil // not renewed, but still counted on (Do renews it)
		}
		if !errors.Is(err, ErrLeaseLost) {
			// Its time is up by this count, though the owner may hold it
			// still: give it back, for the next waiter's sake.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawWithin)
			_ = l.Release(rctx)
			cancel()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (s *Semaphore) lease(id string, r resp, at time.Time) *Lease {
	if id == "" {
		id = r.Value
	}
	return &Lease{s: s, id: id, token: r.Token, ttl: s.b.opt.ttl, expires: at.Add(time.Duration(r.Expires))}
}

// Available counts the permits free now.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	r, err := s.b.send(ctx, (*shard).SemAvailable, req{N: int64(s.permits)})
	return int(r.N), err
}

// Lease is a permit of a Semaphore or a Lock, held until Release, or
// until its TTL passes without a Renew.
type Lease struct {
	s     *Semaphore
	id    string
	token uint64
	ttl   time.Duration

	mu      sync.Mutex
	expires time.Time
}

// Token returns the lease's fencing token: tokens strictly increase with
// every permit the semaphore grants, across failovers of its owner. Pass
// it to what the lease protects and have that refuse a token older than
// one it has seen: a holder that lost its lease (it expired while the
// holder was paused, say) is refused there.
func (l *Lease) Token() uint64 { return l.token }

// TTL returns how long the lease lasts without a Renew.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Expires returns when the lease ends unless renewed, as this process
// estimates it: from the time the owner said was left when it answered,
// counted from when the request that got the answer was sent (Renew,
// TryAcquire, Acquire, which renews a grant that leaves it less than three
// quarters of the TTL), so never later than the owner's own. The owner's
// clock decides; keep well inside it.
func (l *Lease) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// Renew extends the lease by its TTL from now. It fails with ErrLeaseLost
// when the lease is gone: expired, or released.
func (l *Lease) Renew(ctx context.Context) error {
	sent := time.Now()
	r, err := l.s.b.send(ctx, (*shard).SemRenew, req{Waiter: l.id, Token: l.token, TTL: int64(l.ttl), N: int64(l.s.permits)})
	if err != nil {
		return err
	}
	if !r.Found {
		return fmt.Errorf("%w: %s %q, token %d", ErrLeaseLost, l.s.b.meta.Type, l.s.b.name, l.token)
	}
	l.mu.Lock()
	l.expires = sent.Add(time.Duration(r.Expires))
	l.mu.Unlock()
	return nil
}

// Release gives the permit back, to the first waiter if one waits. It
// fails with ErrLeaseLost when the lease was gone already (expired, or
// released before).
func (l *Lease) Release(ctx context.Context) error {
	r, err := l.s.b.send(ctx, (*shard).SemRelease, req{Waiter: l.id, Token: l.token, N: int64(l.s.permits)})
	if err != nil {
		return err
	}
	if !r.Found {
		return fmt.Errorf("%w: %s %q, token %d", ErrLeaseLost, l.s.b.meta.Type, l.s.b.name, l.token)
	}
	return nil
}

// Handlers of a semaphore's (or lock's) shard. Every request carries the
// permit count as N (the catalog keeps it the same for every opener).

// semTick drops the leases and waiters whose time passed and grants the
// permits free to the waiters, FIFO.
func (s *shard) semTick(ctx context.Context, now, permits int64) {
	if len(s.Leases) > 0 {
		s.Leases = slices.DeleteFunc(s.Leases, func(l lease) bool { return l.Expires <= now })
		if len(s.Leases) == 0 {
			s.Leases = nil
		}
	}
	if len(s.Waiters) > 0 {
		s.Waiters = slices.DeleteFunc(s.Waiters, func(w waiter) bool { return w.Expires <= now })
		if len(s.Waiters) == 0 {
			s.Waiters = nil
		}
	}
	s.semGrant(ctx, now, permits)
}

// semGrant grants free permits to the waiters in arrival order.
func (s *shard) semGrant(ctx context.Context, now, permits int64) {
	for len(s.Waiters) > 0 && int64(len(s.Leases)) < permits {
		w := s.removeWaiter(0)
		s.grantLease(w.ID, w.TTL, now)
		wake(ctx, w.ID)
	}
}

// grantLease grants a permit with the next token.
func (s *shard) grantLease(id string, ttl, now int64) {
	s.Token++
	s.Leases = append(s.Leases, lease{ID: id, Token: s.Token, Expires: now + ttl})
}

func (s *shard) leaseAt(id string, token uint64) int {
	return slices.IndexFunc(s.Leases, func(l lease) bool { return l.ID == id && (token == 0 || l.Token == token) })
}

func (s *shard) leaseResp(i int, now int64) resp {
	l := s.Leases[i]
	return resp{Wait: granted, Found: true, Value: l.ID, Token: l.Token, Expires: l.Expires - now}
}

func (s *shard) removeLease(i int) {
	s.Leases = slices.Delete(s.Leases, i, i+1)
	if len(s.Leases) == 0 {
		s.Leases = nil
	}
}

// SemAcquire arrives as Waiter: granted a permit at once when one is free
// and nobody waits, else queued (Wait) or not granted. A waiter already
// known is answered as SemClaim answers.
func (s *shard) SemAcquire(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.semTick(ctx, now, q.N)
	if r, ok := s.semKnown(q.Waiter, now); ok {
		return r, nil
	}
	if len(s.Waiters) == 0 && int64(len(s.Leases)) < q.N {
		s.grantLease(q.Waiter, q.TTL, now)
		return s.leaseResp(len(s.Leases)-1, now), nil
	}
	if !q.Wait {
		return resp{}, nil
	}
	s.Waiters = append(s.Waiters, newWaiter(q, now))
	return resp{Wait: queued}, nil
}

// semKnown answers for a waiter the shard knows: its lease, or queued.
func (s *shard) semKnown(id string, now int64) (resp, bool) {
	if i := s.leaseAt(id, 0); i >= 0 {
		return s.leaseResp(i, now), true
	}
	if i := s.waiterAt(id); i >= 0 {
		s.Waiters[i].renew(now)
		return resp{Wait: queued}, true
	}
	return resp{}, false
}

// SemClaim answers waiter Waiter's claim: its lease, queued, or gone.
func (s *shard) SemClaim(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.semTick(ctx, now, q.N)
	if r, ok := s.semKnown(q.Waiter, now); ok {
		return r, nil
	}
	return resp{Wait: gone}, nil
}

// SemWithdraw removes waiter Waiter; a lease granted to it is released.
func (s *shard) SemWithdraw(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.semTick(ctx, now, q.N)
	if i := s.leaseAt(q.Waiter, 0); i >= 0 {
		s.removeLease(i)
		s.semGrant(ctx, now, q.N)
		return resp{Wait: granted}, nil
	}
	if i := s.waiterAt(q.Waiter); i >= 0 {
		s.removeWaiter(i)
	}
	return resp{Wait: gone}, nil
}

// SemRenew extends lease Waiter (of Token) by TTL; Found reports it held.
func (s *shard) SemRenew(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.semTick(ctx, now, q.N)
	i := s.leaseAt(q.Waiter, q.Token)
	if i < 0 {
		return resp{}, nil
	}
	s.Leases[i].Expires = now + q.TTL
	return resp{Found: true, Expires: q.TTL}, nil
}

// SemRelease releases lease Waiter (of Token); Found reports it held.
func (s *shard) SemRelease(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.semTick(ctx, now, q.N)
	i := s.leaseAt(q.Waiter, q.Token)
	if i < 0 {
		return resp{}, nil
	}
	s.removeLease(i)
	s.semGrant(ctx, now, q.N)
	return resp{Found: true}, nil
}

// SemAvailable counts the permits free.
func (s *shard) SemAvailable(ctx context.Context, q req) (resp, error) {
	s.semTick(ctx, time.Now().UnixNano(), q.N)
	return resp{N: max(0, q.N-int64(len(s.Leases)))}, nil
}

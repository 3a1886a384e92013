package collections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Lock is a distributed mutual-exclusion lock: a semaphore of one permit.
// Lock waits on the server, FIFO among waiters; each holder gets a fencing
// token greater than every earlier holder's, which Do passes to the work
// it protects.
type Lock struct {
	s *Semaphore
}

// NewLock opens the lock called name on sys. Options: Replicas, Write,
// Read, TTL (the lease's, default 30 s: Do renews it while its function
// runs; a holder whose process died holds the lock no longer than that).
func NewLock(sys *casty.System, name string, opts ...Option) (*Lock, error) {
	s, err := newSemaphore(sys, "lock", name, 1, opts)
	if err != nil {
		return nil, err
	}
	return &Lock{s: s}, nil
}

// Name returns the lock's name.
func (l *Lock) Name() string { return l.s.b.name }

// TryLock takes the lock if it is free and nobody waits for it, without
// waiting.
func (l *Lock) TryLock(ctx context.Context) (*Lease, bool, error) { return l.s.TryAcquire(ctx) }

// Lock takes the lock, waiting as long as ctx allows (see
// Semaphore.Acquire). Unlock it with the lease's Release (or Unlock), and
// Renew it within its TTL while holding it longer.
func (l *Lock) Lock(ctx context.Context) (*Lease, error) { return l.s.Acquire(ctx) }

// Unlock releases the lock held by lease: lease.Release(ctx).
func (l *Lock) Unlock(ctx context.Context, lease *Lease) error { return lease.Release(ctx) }

// Do takes the lock (waiting as Lock does), runs fn with the lease's
// fencing token, and releases the lock when fn returns. While fn runs, Do
// renews the lease every TTL/3 (sooner while it has less left); if the
// lease is lost — a renewal finds it gone, or none succeeded before it
// would have expired — fn's ctx is cancelled and Do's error matches
// ErrLeaseLost (joined with fn's own), as it does when fn returns after
// the lease would have expired unrenewed.
// Otherwise Do returns fn's error, or ErrLeaseLost if the release found
// the lease gone. The release is not bounded by ctx (it gets 5 s of its
// own); if it fails otherwise, the lease expires by its TTL.
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context, token uint64) error) error {
	lease, err := l.Lock(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ferr := lease.run(fctx, cancel, fn)
	var lost error
	if cause := context.Cause(fctx); errors.Is(cause, ErrLeaseLost) {
		lost = cause
	} else if !time.Now().Before(lease.Expires()) {
		// fn outlasted the lease by this process's count, and no renewal
		// extended it: lost, though keep had not noticed yet.
		lost = fmt.Errorf("%w: %s %q, token %d: not renewed before it expired", ErrLeaseLost, l.s.b.meta.Type, l.s.b.name, lease.token)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawWithin)
	defer rcancel()
	rerr := lease.Release(rctx)
	switch {
	case lost != nil:
		return errors.Join(lost, ferr)
	case ferr != nil:
		return ferr
	case errors.Is(rerr, ErrLeaseLost):
		return rerr
	}
	return nil
}

// run runs fn while keep renews the lease, and stops keep when fn
// returns (or panics).
func (l *Lease) run(ctx context.Context, cancel context.CancelCauseFunc, fn func(ctx context.Context, token uint64) error) error {
	kctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() { l.keep(kctx, cancel) })
	return fn(ctx, l.token)
}

// keep renews the lease every TTL/3 until ctx ends, cancelling with an
// ErrLeaseLost cause once the lease is lost.
func (l *Lease) keep(ctx context.Context, cancel context.CancelCauseFunc) {
	every := l.ttl / 3
	// The first renewal comes sooner when the lease has less than its
	// whole TTL left (Acquire kept one it could not renew).
	t := time.NewTimer(min(every, time.Until(l.Expires())/2))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Renew, trying again on infrastructure errors until the lease
		// would have expired.
		rctx, rcancel := context.WithDeadline(ctx, l.Expires())
		var err error
		var pause backoff
		for {
			err = l.Renew(rctx)
			if err == nil || !retryable(err) || !l.s.b.live() || !pause.wait(rctx) {
				break
			}
		}
		rcancel()
		if ctx.Err() != nil {
			return // fn returned, or the caller's ctx ended: no loss
		}
		if err != nil {
			if !errors.Is(err, ErrLeaseLost) {
				err = fmt.Errorf("%w: %s %q, token %d: not renewed before it expired: %w", ErrLeaseLost, l.s.b.meta.Type, l.s.b.name, l.token, err)
			}
			cancel(err)
			return
		}
		t.Reset(min(every, time.Until(l.Expires())/2))
	}
}

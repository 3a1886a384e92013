package collections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/casty-go/casty/casty"
)

// Barrier is a distributed cyclic barrier on one shard actor: a round
// trips when its parties-th caller waits, releasing them all, and the
// next Wait starts the next round. Wait waits on the server (see the
// package doc, "Waiting").
type Barrier struct {
	b       *base
	parties int
}

// NewBarrier opens the barrier called name, for parties parties, on sys.
// The party count is part of the barrier's identity: opening it with
// another count fails with ErrMismatch at the first operation. Options:
// Replicas, Write, Read, TTL (how long a party whose process died is
// counted as waiting).
func NewBarrier(sys *casty.System, name string, parties int, opts ...Option) (*Barrier, error) {
	if parties < 1 {
		return nil, fmt.Errorf("%w: a barrier needs at least 1 party, got %d", ErrInvalidOption, parties)
	}
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	b, err := newBase(sys, "barrier", name, int64(parties), 1, o)
	if err != nil {
		return nil, err
	}
	return &Barrier{b: b, parties: parties}, nil
}

// Name returns the barrier's name.
func (b *Barrier) Name() string { return b.b.name }

// Parties returns how many callers trip a round.
func (b *Barrier) Parties() int { return b.parties }

// Wait arrives at the current round and returns nil once it trips, when
// Parties callers, on any members, have arrived. When ctx ends first,
// Wait withdraws — the round then needs another caller — and returns
// ctx.Err(), unless the round had tripped already: then it returns nil.
// An owner's failover keeps the caller counted (the new owner knows it),
// and so does any infrastructure error shorter than the TTL: Wait retries
// them.
func (b *Barrier) Wait(ctx context.Context) error {
	_, _, err := b.b.await(ctx, waitOps{arrive: (*shard).BarArrive, withdraw: (*shard).BarWithdraw, collect: true, tripWins: true}, req{N: int64(b.parties)})
	return err
}

// Waiting counts the callers waiting in the current round.
func (b *Barrier) Waiting(ctx context.Context) (int, error) {
	r, err := b.b.send(ctx, (*shard).BarWaiting, req{N: int64(b.parties)})
	return int(r.N), err
}

// Handlers of a barrier's shard. Waiters holds the current round's
// parties (not Granted) and the parties of tripped rounds that have not
// acknowledged it yet (Granted).

// barTick drops the tripped parties that acknowledged (acks) and the
// records whose time passed: a party that stopped asking leaves its round.
func (s *shard) barTick(now int64, acks []string) {
	if len(s.Waiters) == 0 {
		return
	}
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w waiter) bool {
		return w.Granted && slices.Contains(acks, w.ID) || w.Expires <= now
	})
	if len(s.Waiters) == 0 {
		s.Waiters = nil
	}
}

// barWaiting counts the current round's parties.
func (s *shard) barWaiting() int {
	n := 0
	for _, w := range s.Waiters {
		if !w.Granted {
			n++
		}
	}
	return n
}

// barStatus answers for party i: tripped, or queued (renewing it).
func (s *shard) barStatus(i int, now int64) resp {
	w := &s.Waiters[i]
	if w.Granted {
		return resp{Wait: granted, N: int64(s.Round)}
	}
	w.renew(now)
	return resp{Wait: queued}
}

// BarArrive arrives as party Waiter in the current round, tripping it if
// it is the N-th. A party already known is answered as BarClaim answers.
func (s *shard) BarArrive(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.barTick(now, q.Acks)
	if i := s.waiterAt(q.Waiter); i >= 0 {
		return s.barStatus(i, now), nil
	}
	s.Waiters = append(s.Waiters, newWaiter(q, now))
	if int64(s.barWaiting()) >= q.N {
		for i := range s.Waiters {
			if w := &s.Waiters[i]; !w.Granted {
				w.Granted, w.Expires = true, now+w.TTL
				wake(ctx, w.ID)
			}
		}
		s.Round++
	}
	return s.barStatus(len(s.Waiters)-1, now), nil
}

// BarClaim answers party Waiter's claim: tripped, queued, or gone.
func (s *shard) BarClaim(_ context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.barTick(now, q.Acks)
	i := s.waiterAt(q.Waiter)
	if i < 0 {
		return resp{Wait: gone}, nil
	}
	return s.barStatus(i, now), nil
}

// BarWithdraw removes party Waiter from its round; granted reports that
// the round had tripped.
func (s *shard) BarWithdraw(_ context.Context, q req) (resp, error) {
	s.barTick(time.Now().UnixNano(), q.Acks)
	i := s.waiterAt(q.Waiter)
	if i < 0 {
		return resp{Wait: gone}, nil
	}
	if s.removeWaiter(i).Granted {
		return resp{Wait: granted}, nil
	}
	return resp{Wait: gone}, nil
}

// BarWaiting counts the current round's parties.
func (s *shard) BarWaiting(_ context.Context, q req) (resp, error) {
	s.barTick(time.Now().UnixNano(), q.Acks)
	return resp{N: int64(s.barWaiting())}, nil
}

package collections

import (
	"context"
	"slices"
	"time"

	"github.com/casty-go/casty/casty"
)

// Queue is a distributed FIFO queue of T on one shard actor, each element
// a page of its own (an Offer ships one element). Take waits on the
// server: the taker is parked in the shard, FIFO among takers, and handed
// the next element offered (see the package doc, "Waiting").
type Queue[T any] struct {
	b *base
	e codec[T]
}

// NewQueue opens the queue called name on sys, from a member or a lite
// member. Options: Replicas, Write, Read, MaxItem, TTL (how long a taker
// whose process died keeps its place, and how long an element handed to
// it stays reserved for it).
func NewQueue[T any](sys *casty.System, name string, opts ...Option) (*Queue[T], error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkType[T]("element"); err != nil {
		return nil, err
	}
	b, err := newBase(sys, "queue", name, 0, 1, o)
	if err != nil {
		return nil, err
	}
	return &Queue[T]{b: b, e: newCodec[T]("element", o.maxItem)}, nil
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.b.name }

// Offer appends v to the queue, or hands it to the first taker waiting.
func (q *Queue[T]) Offer(ctx context.Context, v T) error {
	ev, err := q.e.encode(v)
	if err != nil {
		return err
	}
	_, err = q.b.send(ctx, (*shard).QOffer, req{Value: ev})
	return err
}

// Poll removes and returns the first element, if there is one, without
// waiting. Like every removal, a Poll that fails with an indeterminate
// error (casty.ErrTimeout, casty.ErrQuorumUnavailable,
// casty.ErrConnectionLost) may have removed it.
func (q *Queue[T]) Poll(ctx context.Context) (T, bool, error) {
	return q.one(q.b.send(ctx, (*shard).QPoll, req{}))
}

// Peek returns the first element, if there is one, leaving it queued.
func (q *Queue[T]) Peek(ctx context.Context) (T, bool, error) {
	return q.one(q.b.send(ctx, (*shard).QPeek, req{}))
}

func (q *Queue[T]) one(r resp, err error) (T, bool, error) {
	var zero T
	if err != nil || !r.Found {
		return zero, false, err
	}
	v, err := q.e.decode(r.Value)
	return v, err == nil, err
}

// Size counts the elements queued (not those handed to takers).
func (q *Queue[T]) Size(ctx context.Context) (int, error) {
	r, err := q.b.send(ctx, (*shard).QSize, req{})
	return int(r.N), err
}

// Clear removes every element queued.
func (q *Queue[T]) Clear(ctx context.Context) error {
	_, err := q.b.send(ctx, (*shard).QClear, req{})
	return err
}

// Drain removes and returns up to n elements (n < 1: as many as one
// answer holds), oldest first, in one call: fewer when they would make the
// answer larger than 1 MiB — call again until it returns none. It returns
// a slice, not a stream, because what it removes and what the caller
// receives must be the same elements: a stream that removed a page ahead
// would lose the rest of the page when the loop breaks, and one that
// removed an element per call would cost a call per element.
func (q *Queue[T]) Drain(ctx context.Context, n int) ([]T, error) {
	r, err := q.b.send(ctx, (*shard).QDrain, req{N: int64(n)})
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(r.List))
	for _, ev := range r.List {
		v, err := q.e.decode(ev)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Take removes and returns the first element, waiting for one as long as
// ctx allows. Takers are served in the order they arrived, whichever
// member they call from. The wait is on the server: Take parks beside the
// shard and is answered when an element is handed to it. When ctx ends
// first, Take withdraws and returns ctx.Err(); an element handed to it at
// that moment goes back to the front of the queue. An owner's failover
// keeps its place (the new owner knows it), and so does any
// infrastructure error shorter than the TTL: Take retries them.
func (q *Queue[T]) Take(ctx context.Context) (T, error) {
	var zero T
	r, _, err := q.b.await(ctx, waitOps{arrive: (*shard).QTake, withdraw: (*shard).QWithdraw, collect: true}, req{})
	if err != nil {
		return zero, err
	}
	return q.e.decode(r.Value)
}

// Handlers of a queue's shard. Queued elements are Front, then Head up
// to Tail; a granted element stays in Items under its number until its
// taker's record goes (waits.go).

// drainBudget bounds the elements' bytes in one Drain answer.
const drainBudget = 1 << 20

// qLen counts the elements queued.
func (s *shard) qLen() int { return len(s.Front) + int(s.Tail-s.Head) }

// qFirst is the number of the first element queued.
func (s *shard) qFirst() (uint64, bool) {
	if len(s.Front) > 0 {
		return s.Front[0], true
	}
	return s.Head, s.Head != s.Tail
}

// qPop takes the first element queued off the queue (it stays in Items).
func (s *shard) qPop() (uint64, bool) {
	if len(s.Front) > 0 {
		seq := s.Front[0]
		s.Front = slices.Delete(s.Front, 0, 1)
		if len(s.Front) == 0 {
			s.Front = nil
		}
		return seq, true
	}
	if s.Head == s.Tail {
		return 0, false
	}
	s.Head++
	return s.Head - 1, true
}

// qPutBack queues element seq again, in front of every element offered
// after it.
func (s *shard) qPutBack(seq uint64) {
	i, _ := slices.BinarySearch(s.Front, seq)
	s.Front = slices.Insert(s.Front, i, seq)
}

// qTick drops the grants the facade collected (acks) and the waiters and
// grants whose time passed, putting back elements granted and never
// delivered, then grants what is queued to the takers waiting, FIFO.
func (s *shard) qTick(ctx context.Context, now int64, acks []string) {
	if len(s.Waiters) == 0 {
		return
	}
	s.Waiters = slices.DeleteFunc(s.Waiters, func(w waiter) bool {
		switch {
		case w.Granted && slices.Contains(acks, w.ID):
			s.Items.Delete(w.Seq)
		case w.Expires > now:
			return false
		case w.Granted && w.Delivered:
			s.Items.Delete(w.Seq) // its taker most likely has it
		case w.Granted:
			s.qPutBack(w.Seq)
		}
		return true
	})
	if len(s.Waiters) == 0 {
		s.Waiters = nil
	}
	s.qGrant(ctx, now)
}

// qGrant hands queued elements to the waiting takers, in arrival order.
func (s *shard) qGrant(ctx context.Context, now int64) {
	for i := range s.Waiters {
		w := &s.Waiters[i]
		if w.Granted {
			continue
		}
		seq, ok := s.qPop()
		if !ok {
			return
		}
		w.Granted, w.Seq, w.Expires = true, seq, now+w.TTL
		wake(ctx, w.ID)
	}
}

// qCollect answers waiter i's claim: its element once granted (marking
// it delivered), else queued (renewing it).
func (s *shard) qCollect(i int, now int64) resp {
	w := &s.Waiters[i]
	if !w.Granted {
		w.renew(now)
		return resp{Wait: queued}
	}
	if !w.Delivered {
		w.Delivered, w.Expires = true, now+w.TTL
	}
	v, _ := s.Items.Get(w.Seq)
	return resp{Wait: granted, Found: true, Value: v}
}

// QOffer appends Value.
func (s *shard) QOffer(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.qTick(ctx, now, q.Acks)
	s.Items.Set(s.Tail, q.Value)
	s.Tail++
	s.qGrant(ctx, now)
	return resp{}, nil
}

// QPoll removes the first element queued.
func (s *shard) QPoll(ctx context.Context, q req) (resp, error) {
	s.qTick(ctx, time.Now().UnixNano(), q.Acks)
	seq, ok := s.qPop()
	if !ok {
		return resp{}, nil
	}
	v, _ := s.Items.Get(seq)
	s.Items.Delete(seq)
	return resp{Found: true, Value: v}, nil
}

// QPeek answers the first element queued.
func (s *shard) QPeek(ctx context.Context, q req) (resp, error) {
	s.qTick(ctx, time.Now().UnixNano(), q.Acks)
	seq, ok := s.qFirst()
	if !ok {
		return resp{}, nil
	}
	v, _ := s.Items.Get(seq)
	return resp{Found: true, Value: v}, nil
}

// QSize counts the elements queued.
func (s *shard) QSize(ctx context.Context, q req) (resp, error) {
	s.qTick(ctx, time.Now().UnixNano(), q.Acks)
	return resp{N: int64(s.qLen())}, nil
}

// QDrain removes up to N elements (N < 1: no count limit), at most
// drainBudget bytes of them but at least one.
func (s *shard) QDrain(ctx context.Context, q req) (resp, error) {
	s.qTick(ctx, time.Now().UnixNano(), q.Acks)
	var r resp
	bytes := 0
	for q.N < 1 || int64(len(r.List)) < q.N {
		seq, ok := s.qFirst()
		if !ok {
			break
		}
		v, _ := s.Items.Get(seq)
		if len(r.List) > 0 && bytes+len(v) > drainBudget {
			break
		}
		s.qPop()
		s.Items.Delete(seq)
		r.List = append(r.List, v)
		bytes += len(v)
	}
	r.N = int64(len(r.List))
	return r, nil
}

// QClear removes every element queued and answers how many there were.
func (s *shard) QClear(ctx context.Context, q req) (resp, error) {
	s.qTick(ctx, time.Now().UnixNano(), q.Acks)
	n := s.qLen()
	for seq, ok := s.qPop(); ok; seq, ok = s.qPop() {
		s.Items.Delete(seq)
	}
	return resp{N: int64(n)}, nil
}

// QTake arrives as taker Waiter: granted the first element at once when
// one is queued (no earlier taker waits then: qTick served them), else
// queued. A taker already known is answered as QClaim answers.
func (s *shard) QTake(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.qTick(ctx, now, q.Acks)
	if i := s.waiterAt(q.Waiter); i >= 0 {
		return s.qCollect(i, now), nil
	}
	w := newWaiter(q, now)
	if seq, ok := s.qPop(); ok {
		w.Granted, w.Delivered, w.Seq = true, true, seq
		s.Waiters = append(s.Waiters, w)
		v, _ := s.Items.Get(seq)
		return resp{Wait: granted, Found: true, Value: v}, nil
	}
	s.Waiters = append(s.Waiters, w)
	return resp{Wait: queued}, nil
}

// QClaim answers taker Waiter's claim: its element, queued, or gone.
func (s *shard) QClaim(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.qTick(ctx, now, q.Acks)
	i := s.waiterAt(q.Waiter)
	if i < 0 {
		return resp{Wait: gone}, nil
	}
	return s.qCollect(i, now), nil
}

// QWithdraw removes taker Waiter; an element granted to it goes back to
// the front of the queue (and to the next taker waiting, if any).
func (s *shard) QWithdraw(ctx context.Context, q req) (resp, error) {
	now := time.Now().UnixNano()
	s.qTick(ctx, now, q.Acks)
	i := s.waiterAt(q.Waiter)
	if i < 0 {
		return resp{Wait: gone}, nil
	}
	w := s.removeWaiter(i)
	if !w.Granted {
		return resp{Wait: gone}, nil
	}
	s.qPutBack(w.Seq)
	s.qGrant(ctx, now)
	return resp{Wait: granted}, nil
}

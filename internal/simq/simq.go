// Package simq is the event queue of Casty's deterministic simulators
// (gossip/sim, replica/sim): events ordered by their time, and events of
// one time in the order they were pushed, so a run replays exactly from its
// seed.
package simq

import (
	"cmp"
	"container/heap"
)

// Queue holds events E due at times T.
type Queue[T cmp.Ordered, E any] struct {
	h   items[T, E]
	seq uint64
}

type item[T cmp.Ordered, E any] struct {
	at  T
	seq uint64
	e   E
}

type items[T cmp.Ordered, E any] []item[T, E]

func (h items[T, E]) Len() int { return len(h) }
func (h items[T, E]) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h items[T, E]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *items[T, E]) Push(x any)   { *h = append(*h, x.(item[T, E])) }
func (h *items[T, E]) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// Push schedules e at time at, after every event already due then.
func (q *Queue[T, E]) Push(at T, e E) {
	q.seq++
	heap.Push(&q.h, item[T, E]{at: at, seq: q.seq, e: e})
}

// Len returns the number of events queued.
func (q *Queue[T, E]) Len() int { return len(q.h) }

// Next returns the time of the earliest event; ok is false when empty.
func (q *Queue[T, E]) Next() (at T, ok bool) {
	if len(q.h) == 0 {
		return at, false
	}
	return q.h[0].at, true
}

// Pop removes and returns the earliest event.
func (q *Queue[T, E]) Pop() (at T, e E, ok bool) {
	if len(q.h) == 0 {
		return at, e, false
	}
	it := heap.Pop(&q.h).(item[T, E])
	return it.at, it.e, true
}

package main

import (
	"context"
	"sync"
	"time"
)

// kindKey names one actor: its kind's name and its key.
type kindKey struct{ kind, key string }

// ackFeed tells the nemesis about the workloads' acknowledged writes as
// they happen, so the close fault can stop a member right after a write
// to a key it owns was acknowledged. A nil feed ignores everything (the
// member processes declare the kinds without one).
type ackFeed struct {
	mu      sync.Mutex
	waiters map[chan kindKey]map[kindKey]bool
}

func newAckFeed() *ackFeed { return &ackFeed{waiters: map[chan kindKey]map[kindKey]bool{}} }

// acked reports an acknowledged write to key of kind.
func (f *ackFeed) acked(kind, key string) {
	if f == nil {
		return
	}
	kk := kindKey{kind, key}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, want := range f.waiters {
		if want[kk] {
			ch <- kk // buffered, and removed at once: never blocks
			delete(f.waiters, ch)
		}
	}
}

// wait returns the first of keys to have a write acknowledged from now,
// or false when bound passes or ctx ends first.
func (f *ackFeed) wait(ctx context.Context, keys []kindKey, bound time.Duration) (kindKey, bool) {
	if f == nil || len(keys) == 0 {
		return kindKey{}, false
	}
	ch := make(chan kindKey, 1)
	want := map[kindKey]bool{}
	for _, kk := range keys {
		want[kk] = true
	}
	f.mu.Lock()
	f.waiters[ch] = want
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.waiters, ch)
		f.mu.Unlock()
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case kk := <-ch:
		return kk, true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case kk := <-ch:
		return kk, true
	default:
		return kindKey{}, false
	}
}

// byAddr is the member listening on addr, nil when none.
func (p *procs) byAddr(addr string) *proc {
	for _, m := range p.members {
		if m.addr == addr {
			return m
		}
	}
	return nil
}

package actor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The activation cap (Config.MaxActivations). Every activation holds a
// slot from its creation until finalize; Host.live counts the slots. A
// call that needs a new activation while every slot is taken makes room:
// it picks an idle activation — not running, nothing queued, not already
// stopping — and deactivates it as its idle timeout would have, then
// waits for a slot to free (any slot: another deactivation may free one
// first); while as many activations are already deactivating to make
// room as callers wait for one, it only waits. While an activation is
// settling — its handler returned, its commit still runs (settle) — it
// waits for it too, and looks again once it went idle or took its next
// message. When no activation is idle, none is deactivating to make room
// and none is settling, the call fails with ErrOverloaded. So the host
// never holds more than MaxActivations activations, and a flood of new
// keys costs the flood's callers their wait, not the host its memory. Close wakes the waiting callers, who then
// fail with ErrActorUnavailable.
//
// The victim is the least recently used of a sample (evictSample idle
// activations, read from successive shards, starting at a rotating one)
// rather than of all: an exact order would put a shared list on every
// call's path. When most activations are busy, finding an idle one may
// read every shard.

// evictSample is how many idle activations makeRoom compares.
const evictSample = 16

// room wakes the callers waiting for a slot.
type room struct {
	waiting atomic.Int32 // callers in makeRoom
	mu      sync.Mutex
	ch      chan struct{} // closed when a slot frees; nil until a caller waits
	cursor  int           // the shard the next sample starts from
}

// reserve takes a slot for a new activation; it reports false when all
// Config.MaxActivations are taken.
func (h *Host) reserve() bool {
	max := int64(h.cfg.MaxActivations)
	for {
		n := h.live.Load()
		if n >= max {
			return false
		}
		if h.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// freed wakes the callers waiting for a slot: one was released, an
// activation deactivating to make room ended (even when calls queued on
// it meanwhile kept its slot, the waiters must look again), or a settling
// one went idle or took its next message.
func (h *Host) freed() {
	// A caller that starts waiting after this load reads live after the
	// release, and sees the slot.
	if h.room.waiting.Load() == 0 {
		return
	}
	h.room.mu.Lock()
	if h.room.ch != nil {
		close(h.room.ch)
		h.room.ch = nil
	}
	h.room.mu.Unlock()
}

// makeRoom deactivates an idle activation so that a call to (k, key) may
// create one, and waits, bounded by ctx (or Config.CallTimeout), until a
// slot is free; the caller then tries again. It fails with ErrOverloaded
// when no activation can be deactivated.
func (h *Host) makeRoom(ctx context.Context, k *Kind, key string, e *Envelope) error {
	h.room.waiting.Add(1)
	defer h.room.waiting.Add(-1)
	h.room.mu.Lock()
	if h.room.ch == nil {
		h.room.ch = make(chan struct{})
	}
	wake := h.room.ch
	h.room.mu.Unlock()
	// A slot freed before wake was taken is seen here; one freed after
	// closes wake.
	if h.live.Load() < int64(h.cfg.MaxActivations) {
		return nil
	}
	// One deactivation per waiting caller: each slot freed wakes them all,
	// and without this check each would deactivate one more. A caller
	// refuses only once it found nothing idle itself, with no deactivation
	// in flight to wait for.
	if h.evicting.Load() < int64(h.room.waiting.Load()) && !h.evictIdle() && h.evicting.Load() == 0 && h.settling.Load() == 0 {
		if h.live.Load() < int64(h.cfg.MaxActivations) {
			return nil // a deactivation ended since the first look
		}
		return fmt.Errorf("%w: %s/%s needs an activation, and all %d on this host (Config.MaxActivations) are busy", ErrOverloaded, k.Name, key, h.cfg.MaxActivations)
	}
	if h.cfg.BeforeWait != nil {
		h.cfg.BeforeWait(ctx)
	}
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(h.cfg.CallTimeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return h.ctxErr(ctx.Err(), k, key, e)
	case <-timeout:
		return &TimeoutError{Kind: k.Name, Key: key, Method: e.method.Name}
	}
}

// settle marks a as settling: its handler returned and its commit
// (Session.Commit) runs. A settling activation is not idle, but it soon
// will be, or will take its next message: a caller making room waits for
// it rather than fail with ErrOverloaded — casty answers a replicated call
// from the caller's member before the owner's commit ends, so the caller's
// next call may find the activation still settling.
func (a *Activation) settle() {
	a.mu.Lock()
	if !a.settling {
		a.settling = true
		a.host.settling.Add(1)
	}
	a.mu.Unlock()
}

// unsettle ends a's settling, when it was: a went idle, took its next
// message or stops. The caller holds a.mu and, when it reports true, calls
// host.freed once a.mu is released: the callers waiting for room look again.
func (a *Activation) unsettle() bool {
	if !a.settling {
		return false
	}
	a.settling = false
	a.host.settling.Add(-1)
	return true
}

// evictable reports whether a may be deactivated to make room: idle, and
// not already stopping. The caller holds a.mu.
func (a *Activation) evictable() bool {
	return a.status == statusActive && !a.running && a.empty() && a.inflight == 0 && a.stopReq == ReasonNone
}

// evictIdle deactivates the least recently used of a sample of idle
// activations, gracefully (ReasonIdle). It reports false when none is idle.
func (h *Host) evictIdle() bool {
	// The one chosen may get a call, or be chosen by another caller making
	// room, before it is claimed: each loss is another's progress.
	for range 64 {
		h.room.mu.Lock()
		first := h.room.cursor
		h.room.cursor = (h.room.cursor + 1) % numShards
		h.room.mu.Unlock()
		var victim *Activation
		var oldest int64
		seen := 0
		for i := 0; i < numShards && seen < evictSample; i++ {
			sh := &h.shards[(first+i)%numShards]
			sh.mu.RLock()
			for _, a := range sh.m {
				a.mu.Lock()
				if a.evictable() {
					if seen++; victim == nil || a.lastUsed < oldest {
						victim, oldest = a, a.lastUsed
					}
				}
				a.mu.Unlock()
				if seen >= evictSample {
					break
				}
			}
			sh.mu.RUnlock()
		}
		if victim == nil {
			return false
		}
		victim.mu.Lock()
		ok := victim.evictable()
		if ok {
			victim.stopReq = ReasonIdle
			victim.roomFor = true
			victim.running = true
			h.evicting.Add(1)
		}
		victim.mu.Unlock()
		if ok {
			h.start(victim)
			return true
		}
	}
	return false
}

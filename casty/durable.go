package casty

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/ring"
)

// Durable actors: a kind with Replicas > 1 and IdleTimeout(Forever) is
// meant to be always running somewhere. Whenever the membership view or the
// placement changes, each member activates, unprompted, the durable actors
// whose copies it holds and whose owner it now is — so an actor whose
// owner died, left or lost its range resumes on the new owner, its Activate
// hook runs again, and schedules re-armed from state tick again.
//
// Self(ctx).Deactivate() on a durable actor ends it for good: its next
// commit carries an "ended" page (endedPage), and members do not reactivate
// an ended actor — neither by their own copy, nor by the state the
// reactivation reads from the replicas when their copy missed the end
// (Restore declines it: actor.ErrDeclined); a later call to it activates
// it again and clears the mark. A supervisor's Stop ends it for good too:
// nothing of the failed handler is committed, but the ended mark is, on
// top of the last commit (replSession.Stopped).

// endedPage marks a durable actor's state as ended for good. It is not a
// field of any state (a state's pages are named after its fields), so the
// pager ignores it on restore and never drops it.
const endedPage = "\x00ended"

// durableKinds lists the replicated kinds that never idle.
func durableKinds() []*declared {
	var out []*declared
	for _, d := range kinds.replicated() {
		if d.k.IdleTimeout == actor.Forever {
			out = append(out, d)
		}
	}
	return out
}

// touch is a message that only makes sure its actor is active.
type touch struct{ actor.Envelope }

func (t *touch) Invoke(context.Context, any) error { return nil }

var touchMethod = &actor.Method{Name: "(reactivate)"}

// reactivate activates the durable actors this member holds and now owns,
// in the background; a run already going picks up the newest view.
func (r *replicator) reactivate() {
	if len(durableKinds()) == 0 || r.cl == nil || r.cl.lite {
		return
	}
	r.react.Lock()
	if r.reacting {
		r.reagain = true
		r.react.Unlock()
		return
	}
	r.reacting = true
	r.react.Unlock()
	if !r.spawn(func() {
		for {
			r.reactivateOnce()
			r.react.Lock()
			again := r.reagain
			r.reagain = false
			if !again {
				r.reacting = false
				r.react.Unlock()
				return
			}
			r.react.Unlock()
		}
	}) {
		r.react.Lock()
		r.reacting = false
		r.react.Unlock()
	}
}

func (r *replicator) reactivateOnce() {
	host := r.cl.sys.host
	for _, d := range durableKinds() {
		r.mu.Lock()
		keys, ended := r.rep.Held(d.k.Name, endedPage)
		r.mu.Unlock()
		for i, key := range keys {
			select {
			case <-r.done:
				return
			default:
			}
			if ended[i] {
				continue
			}
			owner, ok := r.cl.view.Load().ownerOf(d.k, ring.Point(d.k.Name, key))
			if !ok || owner != r.cl.self {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
			if active, _ := host.Peek(ctx, d.k, key, func(any) error { return nil }); !active {
				e := &touch{}
				e.Init(e, touchMethod)
				if err := host.Ask(ctx, d.k, key, &e.Envelope); err != nil {
					r.cl.logger.Debug("casty: reactivating a durable actor failed", "kind", d.k.Name, "key", key, "err", err)
				}
			}
			cancel()
		}
	}
}

// ended reports whether this member's copy of kind/key carries the ended
// mark.
func (r *replicator) ended(kind, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.rep.Pages(kind, key) {
		if p.Key == endedPage {
			return true
		}
	}
	return false
}

// durableState is what a replicated activation tracks of durability.
type durableState struct {
	mu       sync.Mutex
	ending   bool // Self(ctx).Deactivate() was called: mark the state ended
	clearing bool // restored from an ended state by a call: drop the mark
	deleting bool // Self(ctx).DeleteState() was called: commit the empty state
}

// replSessionOf returns the replSession a commits to, nil when a keeps no
// replicated state: its member's replicator holds it (owned) from Restore
// to Release.
func replSessionOf(a *actor.Activation) *replSession {
	sys := systemOf(a.Host())
	if sys == nil || sys.cl == nil || sys.cl.rp == nil {
		return nil
	}
	r := sys.cl.rp
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.owned[copyKey{a.Kind().Name, a.Key()}]; s != nil && s.act == a {
		return s
	}
	return nil
}

// markEnding asks a's next commit to end it for good, when a is a durable
// replicated actor.
func markEnding(a *actor.Activation) {
	if s := replSessionOf(a); s != nil {
		if s.durable {
			s.dur.mu.Lock()
			s.dur.ending = true
			s.dur.mu.Unlock()
		}
	}
}

// markDeleting asks a's next commit to replace its replicated state with
// the empty one. It reports false when a keeps no replicated state.
func markDeleting(a *actor.Activation) bool {
	s := replSessionOf(a)
	if s == nil {
		return false
	}
	s.dur.mu.Lock()
	s.dur.deleting = true
	s.dur.mu.Unlock()
	return true
}

// amend adds the durable bookkeeping to a commit's delta: the ended mark
// when the actor ends for good, its removal when an ended actor was called
// again. It reports whether it changed the delta.
func (s *replSession) amend(d *pager.Delta) bool {
	s.dur.mu.Lock()
	defer s.dur.mu.Unlock()
	switch {
	case s.dur.deleting:
		// Every page goes: a full set with nothing in it (a durable actor's
		// carries the ended mark, so it is not reactivated either).
		s.dur.deleting, s.dur.ending, s.dur.clearing = false, false, false
		d.Full, d.Dropped, d.Pages = true, nil, nil
		if s.durable {
			d.Pages = []pager.Page{{Key: endedPage, Data: []byte{1}}}
		}
		return true
	case s.dur.ending:
		s.dur.ending, s.dur.clearing = false, false
		d.Pages = append(d.Pages, pager.Page{Key: endedPage, Data: []byte{1}})
		return true
	case s.dur.clearing:
		s.dur.clearing = false
		d.Dropped = append(d.Dropped, endedPage)
		return true
	}
	return false
}

// reactivateEvery bounds how long a durable actor may stay down when no
// view change prompts its new owner (a sync that finished late).
const reactivateEvery = 5 * time.Second

// Stopped marks a durable actor ended when its supervisor stops it
// (actor.Stopper): a commit of the ended mark alone over the last
// committed state, so the failed handler's changes stay out and no member
// reactivates the actor. Other kinds commit nothing.
func (s *replSession) Stopped(ctx context.Context) error {
	if !s.durable || s.over != nil {
		return nil
	}
	r := s.r
	d := pager.Delta{Stamp: pager.Stamp(r.clock.Now()), Basis: s.tracker.Stamp(), Pages: []pager.Page{{Key: endedPage, Data: []byte{1}}}}
	r.mu.Lock()
	outs := s.sess.Commit(d)
	r.mu.Unlock()
	if res, _ := r.run(ctx, s.sess, outs, false, &s.inflight); res.Err != nil {
		return fmt.Errorf("%w: %s/%s: marking the stopped actor ended: %v", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), res.Err)
	}
	return nil
}

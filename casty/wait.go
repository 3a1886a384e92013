package casty

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WaitMembers waits until this node sees at least n live full members
// (self included for a full member; a lite member counts the members it
// routes to) and, on a full member, until its placement of replicated
// kinds has settled: every live member is on it and this member has no
// sync in flight, so its replicas vote everywhere they are placed. It
// replaces polling Members in a loop after Start or Connect:
//
//	if err := sys.WaitMembers(ctx, 3); err != nil {
//		return err // ctx ended first: the error wraps ctx.Err()
//	}
//
// A settled view is this node's: other members may still be catching up.
// WaitMembers fails at once on a local system and with ErrActorUnavailable
// once the system is closing.
func (s *System) WaitMembers(ctx context.Context, n int) error {
	if s.cl == nil {
		return errors.New("casty: WaitMembers: a local system has no members")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	cl := s.cl
	tick := time.NewTicker(10 * time.Millisecond) // a sync ending is not a view change
	defer tick.Stop()
	for {
		v := cl.view.Load()
		ready, why := cl.settledWith(v, n)
		if ready {
			return nil
		}
		if s.closing.Load() {
			return fmt.Errorf("%w: the system is closing", ErrActorUnavailable)
		}
		select {
		case <-v.changed:
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("casty: waiting for %d members: %s: %w", n, why, ctx.Err())
		}
	}
}

// settledWith reports whether view v has at least n live full members and
// this member's placement has settled on it; if not, why.
func (cl *cluster) settledWith(v *view, n int) (bool, string) {
	if have := len(v.members); have < n {
		return false, fmt.Sprintf("%d live", have)
	}
	if cl.rp == nil || cl.lite {
		return true, ""
	}
	if v.pl == nil {
		return false, "no placement yet"
	}
	for _, id := range v.ring.Members() {
		if !v.pl.ring.Has(id) {
			return false, "a live member is not placed yet"
		}
	}
	if !cl.rp.settledOn(v.pl) {
		return false, "this member is still syncing its replicas"
	}
	return true, ""
}

// settledOn reports whether the replicator adopted pl, or a later
// placement, and has no sync in flight.
func (r *replicator) settledOn(pl *layout) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pl != nil && r.pl.version >= pl.version && r.pending == 0
}

package casty

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/replica"
)

// Spare copies (replica/SPEC.md, "Spare copies"). A commit whose answer
// rides to the caller's member needs no vote from the key's third
// replica, so the owner of a hot actor (one that commits again within
// spareFlush) skips it for up to spareCommits commits in a row and then
// sends it what it missed as one delta. The runtime's part is
// the flushes: a commit round that skipped a spare and has not decided
// within spareFlush sends the spare its due and counts its vote (the
// answer's member may be paused or gone; when its connection fails the
// spare is sent at once), and an actor that goes quiet with a spare owed
// sends it spareFlush after its last commit, so that a spare is behind by
// at most spareCommits commits or spareFlush.
const (
	spareCommits = 8
	spareFlush   = 5 * time.Millisecond
)

// hot reports whether this commit follows the actor's last one within
// spareFlush, and notes it as the last. Only a hot actor's commits skip
// spares (replica.Session.Quiet): a commit after a quiet spell would owe
// its spare a flush spareFlush later — the same message, late, plus a
// delta to build and a timer — so it goes to every replica at once. With
// 64 writers over 1,000 keys (each key written every few tens of
// milliseconds) skipping cost a fifth of the write rate. The caller holds
// s.r.mu.
func (s *replSession) hot() bool { return s.r.recent(&s.lastCommit) }

// recent reports whether *last is within spareFlush of now, and sets it
// to now. The caller holds r.mu.
func (r *replicator) recent(last *time.Time) bool {
	now := time.Now()
	hot := !last.IsZero() && now.Sub(*last) < r.spareFlush
	*last = now
	return hot
}

// armFlush schedules the quiet-actor flush of the spares s's commits
// skipped, unless one is scheduled or nothing is owed. The caller holds
// s.r.mu.
func (s *replSession) armFlush() {
	if s.flushArmed || s.sess.Owed() == 0 {
		return
	}
	s.flushArmed = true
	time.AfterFunc(s.r.spareFlush, s.quietFlush)
}

// quietFlush sends the spares what they are owed, unless a round is
// running: that round flushes, or re-arms, when it ends (replSession.Commit).
func (s *replSession) quietFlush() {
	r := s.r
	r.mu.Lock()
	s.flushArmed = false
	var outs []replica.Out
	if !s.sess.Busy() {
		outs = s.sess.Flush()
	}
	r.mu.Unlock()
	r.sendFlush(s.sess, outs, &s.inflight)
}

// sendFlush sends a flush outside any round: the answers change only what
// the session knows of the spares' copies (a need-full marks one behind,
// lateAck). track counts the requests until their answers are taken in
// (replSession.inflight).
func (r *replicator) sendFlush(s *replica.Session, outs []replica.Out, track *atomic.Int32) {
	if len(outs) == 0 {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	rd := &round{ended: true, r: r, s: s, track: track}
	for _, o := range outs {
		track.Add(1)
		r.requestAsync(r.life, o, r.timeout, rd)
	}
}

// settle brings every member of the key's set up to s's last commit
// (replica.Session.Settle: the spares' dues, the catch-up of a member a
// need-full marked behind) and waits for the acknowledgements; a member
// that answers need-full is caught up in a second pass. Before each pass
// it waits for the replies of s's requests still in flight (inflight): a
// need-full among them is news Settle needs. Each wait is bounded by
// Replication.Timeout.
//
// Release calls it when this member is closing gracefully: the
// activations are drained, in parallel, before the member announces LEFT,
// so the set takes it on the placement that still holds the leaver.
// Without it the quiet flush could go after the spare had adopted the
// leaver's removal (refused as behind) or not at all (the replicator
// stopped), and where the leave leaves no member to enter the key's range
// (a cluster of at most Replicas members) nothing syncs it: the range's
// new, smaller set reads with a smaller quorum, and the spare alone could
// answer the next owner's prepare without the writes it was never sent
// (replica/SPEC.md, "Spare copies", "Graceful leave").
func (s *replSession) settle() {
	r := s.r
	for range 2 {
		if !s.awaitReplies() {
			return
		}
		r.mu.Lock()
		outs := s.sess.Settle()
		r.mu.Unlock()
		if len(outs) == 0 {
			return
		}
		replies := make([]*replica.Msg, len(outs))
		for range settleTries {
			ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
			var wg sync.WaitGroup
			for i, o := range outs {
				if replies[i] != nil {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					replies[i] = r.request(ctx, o)
				}()
			}
			wg.Wait()
			cancel()
			if !slices.Contains(replies, nil) || r.isDone() {
				break
			}
		}
		r.mu.Lock()
		for i, m := range replies {
			if m != nil {
				s.sess.Step(outs[i].To, m)
			}
		}
		r.mu.Unlock()
	}
}

// settleTries is how many times settle sends a message its member has not
// answered (each within Replication.Timeout): the session forgets a due
// once it is sent, so a settle message lost to a stalled connection is
// resent as it was — a duplicate commit is acknowledged without effect.
const settleTries = 3

// isDone reports whether the replicator has stopped (r.done is closed).
func (r *replicator) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// awaitReplies waits, up to Replication.Timeout, until no request of s's
// rounds or flushes awaits its reply (after that, settle goes on with what
// it knows). It reports false when the replicator stopped: a crash, or
// the end of a Close.
func (s *replSession) awaitReplies() bool {
	r := s.r
	deadline := time.Now().Add(r.timeout)
	for {
		select {
		case <-r.done:
			return false
		default:
		}
		if s.inflight.Load() == 0 || time.Now().After(deadline) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

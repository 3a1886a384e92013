package casty

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// Adopting a placement (replica/SPEC.md, "Membership changes"): before this
// member votes on a range it just entered, it marks the range unsynced and
// pulls it from the range's previous replica set.
//
// The previous set is the range's set on the placement this member acted
// on before. A member that joined a running cluster has no such placement
// it can trust — what it first hears of the cluster may be partial — so
// until every range it entered has synced once, it takes the previous set
// from the new placement without itself, and starts over on each newer
// placement it learns; a sync under a placement older than a replica's is
// refused, so a partial view cannot complete one.

// segment is a stretch of the ring a member entered, and where it was
// before.
type segment struct {
	rng  replica.Range
	prev []ring.NodeID // the range's replica set before, this member excluded
	n    int           // that set's size, this member excluded
}

// enteredSegments lists the stretches of the ring where self is one of the
// n replicas on cur and was not on base (base nil: self entered
// everything), with their replica sets on base, adjacent stretches with
// the same previous set merged.
func enteredSegments(base, cur *ring.Ring, self ring.NodeID, n int) []segment {
	size := cur.Len()
	if base != nil {
		size += base.Len()
	}
	points := make([]uint64, 0, size)
	for _, r := range []*ring.Ring{base, cur} {
		if r == nil {
			continue
		}
		for i := range r.Len() {
			t, _ := r.Entry(i)
			points = append(points, t)
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	if len(points) == 0 {
		return nil
	}
	var out []segment
	var nowBuf, beforeBuf [8]ring.NodeID // a point's sets, kept only when a segment starts
	prevPoint := points[len(points)-1]   // the wrap: (last, first]
	for _, p := range points {
		start := prevPoint
		prevPoint = p
		now := cur.AppendReplicas(nowBuf[:0], p, n)
		if !slices.Contains(now, self) {
			continue
		}
		var before []ring.NodeID
		if base != nil {
			before = base.AppendReplicas(beforeBuf[:0], p, n)
		}
		if slices.Contains(before, self) {
			continue
		}
		if k := len(out); k > 0 && out[k-1].rng.End == start && slices.Equal(out[k-1].prev, before) {
			out[k-1].rng.End = p
			continue
		}
		out = append(out, segment{rng: replica.Range{Start: start, End: p}, prev: slices.Clone(before), n: len(before)})
	}
	if len(points) == 1 && len(out) == 1 {
		out[0].rng = replica.Range{} // one token: the whole ring
	}
	return out
}

// without returns r's members other than self as a ring.
func without(r *ring.Ring, self ring.NodeID) *ring.Ring {
	ids := slices.DeleteFunc(r.Members(), func(id ring.NodeID) bool { return id == self })
	out, _ := ring.New(ids)
	return out
}

// adopt makes pl the placement this member acts on. The cluster adopts
// every agreed version in order, each once (cluster.refresh); an older one
// is ignored.
func (r *replicator) adopt(pl *layout) {
	if r.cl == nil {
		return
	}
	self := r.cl.self
	r.mu.Lock()
	old := r.pl
	if old == pl || old != nil && pl.version <= old.version {
		r.mu.Unlock()
		return
	}
	var base *ring.Ring
	if old != nil {
		base = old.ring
	}
	var runs []*syncRun
	if pl.placed(self) && (base != nil || r.joiner) {
		for _, d := range kinds.replicated() {
			n := d.repl.replicas
			var rngs []replica.Range
			for _, seg := range enteredSegments(base, pl.ring, self, n) {
				rngs = append(rngs, seg.rng)
			}
			if len(rngs) > 0 {
				// What it holds there is from before it left the ranges
				// (or a newer placement's commits that never counted).
				// A copy older than the tombstone TTL could bring back
				// state deleted meanwhile: dropped. A younger one may be
				// the only live copy of a write the ranges' set never
				// synced: kept, not voting until the sync brings it up to
				// date (replica/SPEC.md, Pruning).
				r.rep.DropRanges(d.k.Name, r.clock.Now().Wall-r.tombstoneTTL.Milliseconds(), rngs...)
				r.rep.Unsync(d.k.Name, rngs...)
				b := base
				if b == nil {
					b = without(pl.ring, self)
				}
				run := &syncRun{kind: d.k.Name, n: n, w: d.repl.write.Of(n), rngs: rngs, base: b, pl: pl, gen: r.syncGen}
				r.reenter(run)
				runs = append(runs, run)
			}
		}
	}
	r.rep.ObserveDigest(pl.version, pl.digest)
	r.pl = pl
	r.pending += len(runs)
	r.runs = append(r.runs, runs...)
	if r.pending == 0 && r.joiner && !r.settledJoin && pl.placed(self) {
		r.settledJoin = true
		r.rep.JoinSettled()
	}
	r.mu.Unlock()
	for _, run := range runs {
		r.spawn(func() { r.runSync(run) })
	}
}

// reenter ties run to the unfinished syncs of its kind whose ranges it
// overlaps (r.mu held): the member left those ranges and came back before
// they synced. Each must then hear the previous sets of both — the older
// base's members can hold writes the newer base never saw (a leaver still
// handing off, say), and the newer base's those made while this member
// was away — so each takes the other's bases, and the older one's rounds
// in flight are abandoned, lest one finish on its old sets alone
// (replica/SPEC.md, "Membership changes").
func (r *replicator) reenter(run *syncRun) {
	for _, old := range r.runs {
		if old.kind != run.kind || old.gen != run.gen || len(old.rngs) == 0 || !overlaps(old.rngs, run.rngs) {
			continue
		}
		run.prior = addBases(run.prior, run.base, old.base)
		run.prior = addBases(run.prior, run.base, old.prior...)
		old.prior = addBases(old.prior, old.base, run.base)
		old.abandon()
	}
}

// addBases appends to prior each of bs not in it already and not base: a
// base asked twice adds the same group twice, and runs that re-enter
// ranges in turn pass their bases on to each other, so, kept as they come,
// the lists double with each re-entry (1,180 bases of 12 distinct ones
// after a fault schedule's double failures, every round computing each
// range's set on each).
func addBases(prior []*ring.Ring, base *ring.Ring, bs ...*ring.Ring) []*ring.Ring {
	for _, b := range bs {
		if b != base && !slices.Contains(prior, b) {
			prior = append(prior, b)
		}
	}
	return prior
}

func overlaps(a, b []replica.Range) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Overlaps(y) {
				return true
			}
		}
	}
	return false
}

// syncRun is the sync of one kind's entered ranges on one placement.
type syncRun struct {
	kind    string
	n, w    int
	rngs    []replica.Range // not synced yet
	base    *ring.Ring      // the placement the ranges' previous sets are on
	prior   []*ring.Ring    // more bases whose sets must answer too (reenter)
	pl      *layout
	gen     uint64
	counted bool            // its completion was counted in replicator.pending
	waiting []ring.NodeID   // removed members out of reach that its last round asked (r.mu)
	live    []*replica.Sync // the syncs of its round in flight (r.mu)
}

// abandon stops run's rounds in flight without marking anything synced
// (r.mu held); its next round starts from its bases as they are now.
func (run *syncRun) abandon() {
	for _, y := range run.live {
		y.Abandon()
	}
}

// syncParallel is how many batches of a sync round run at once.
const syncParallel = 16

// unsyncedWait, times Replication.Timeout, is how long a LEFT member a
// sync has no session with is still asked as a leaver handing off; after
// it the leaver is departed: not asked, its copies still counted
// (syncPeers).
const unsyncedWait = 2

// runSync syncs run's ranges, a round at a time. Each round asks, for every
// group of ranges with the same previous replica sets, those sets: the
// range's set on each base placement (run.base, and run.prior when the
// member re-entered ranges it had not synced) without this member. A set
// is the range's replica set there as it was: no member of it is left out
// and replaced by the next one clockwise, and the count it must give is
// the read quorum of the whole set, counting only the members that answer
// they have synced the range. A member that answers it has not (it
// entered the range itself and is still pulling it — a newcomer too) is
// asked again in the next rounds, its vote not counted (a newcomer's
// copies, which its answer carries, are adopted meanwhile). Leaving such a member out used to walk the ring
// past it, which brings in a member that never held the range (or nobody,
// on a ring of at most R members) and lowers the count with it: a range
// whose previous holders were all still pulling it — from members removed
// as dead, say — synced with no answer at all (replica/SPEC.md,
// "Membership changes"). The base, not the new placement, names the set:
// after a leave or a removal the new placement lacks the member that went,
// and the set it gives can hold a member that never was a replica of the
// range, whose empty answer would count toward the sync. Rounds repeat
// until every range is synced or the member closes. Rounds that bring
// nothing new back off from 50 ms to a second; rounds that sync nothing
// while they wait for removed members out of reach back off to
// waitingRecheck, and run again as soon as the view changes.
func (r *replicator) runSync(run *syncRun) {
	self := r.cl.self
	departed := map[ring.NodeID]time.Time{} // leavers with no session, since when
	pause := 50 * time.Millisecond
	var idle time.Duration           // the back-off of rounds that wait for removed members
	progress, left := time.Now(), -1 // when run last synced a range; how many it had left then
	for !r.syncDone(run) {
		start := time.Now()
		type batch struct {
			groups []replica.Group
			rngs   []replica.Range
		}
		// The requests carry the newest placement this member adopted,
		// not the one the run began on: members that adopted a newer
		// one refuse an older version (behind), so a run begun before
		// another membership change could otherwise never finish. A newer
		// version only fences old owners further.
		r.mu.Lock()
		cur := r.pl
		bases := append([]*ring.Ring{run.base}, run.prior...)
		rngs := run.rngs
		r.mu.Unlock()
		v := r.cl.view.Load()
		now := time.Now()
		for id := range v.left {
			if _, ok := r.cl.node.Session(mux.NodeID(id)); ok {
				delete(departed, id)
			} else if _, ok := departed[id]; !ok {
				departed[id] = now
			}
		}
		peers := syncPeers{cur: cur, v: v, departed: departed, now: now, departAfter: unsyncedWait * r.timeout, w: run.w}
		about := peers.about
		isGone := func(id ring.NodeID) bool { return about(id).gone }
		isForgiven := func(id ring.NodeID) bool { return about(id).forgiven }
		var waiting []ring.NodeID
		var batches []*batch
		// A range's groups are worked out in scratch space, reused from
		// range to range, and copied only for a range that opens a batch:
		// a round computes them for every range not synced, every round.
		var (
			set    []ring.NodeID
			groups []replica.Group
			prevs  []replica.NodeID // the groups' Members, one after another
		)
		for _, rng := range rngs {
			groups, prevs = groups[:0], prevs[:0]
			for _, b := range bases {
				// The set as it was, nobody walked in: a member after
				// the set's end never held the range. Where this member
				// was in the set (a base it re-entered the range from),
				// its own copy answers for it: it keeps what it held
				// there, and a write it did not hold sits on w others.
				set = b.AppendReplicas(set[:0], rng.End, run.n)
				q := replica.ReadQuorumOf(len(set), run.n, run.w)
				if r.mutant == "quorum-of-set" {
					q = replica.ReadQuorumOf(len(set), len(set), run.w)
				}
				others := slices.DeleteFunc(set, func(id ring.NodeID) bool { return id == self })
				if len(others) < len(set) {
					q--
				}
				from := len(prevs)
				var need int
				prevs, need = answerable(prevs, others, q, about)
				if r.mutant == "sync-one-fewer" && need > 1 {
					need--
				}
				for _, id := range others {
					if about(id).waits && !slices.Contains(waiting, id) {
						waiting = append(waiting, id)
					}
				}
				groups = append(groups, replica.Group{Members: prevs[from:len(prevs):len(prevs)], Need: need})
			}
			i := slices.IndexFunc(batches, func(bt *batch) bool { return sameGroups(bt.groups, groups) })
			if i < 0 {
				own := make([]replica.Group, len(groups))
				for j, g := range groups {
					g.Members = append(make([]replica.NodeID, 0, len(g.Members)), g.Members...)
					own[j] = g
				}
				batches = append(batches, &batch{groups: own})
				i = len(batches) - 1
			}
			batches[i].rngs = append(batches[i].rngs, rng)
		}
		if left < 0 || len(rngs) < left {
			progress, left = now, len(rngs)
		}
		// Stalled: the members it must hear may each be pulling the
		// ranges from the others. A copy sync of every member that may
		// hold their writes does not wait on anyone's sync.
		var everyone []replica.NodeID
		if now.Sub(progress) >= copySyncAfter*r.timeout {
			var unreachable []ring.NodeID
			everyone, unreachable = r.copySyncMembers(cur, v, bases, rngs, run.n, isGone, isForgiven)
			if len(unreachable) > 0 {
				// Stalled with no removed member it waits for out of
				// reach: what the copy sync waits for is what blocks it.
				if len(waiting) == 0 {
					waiting = unreachable
				}
				everyone = nil
			}
		}
		r.mu.Lock()
		run.waiting = waiting
		r.mu.Unlock()
		if everyone != nil {
			y := replica.NewCopySync(run.kind, rngs, cur.version, cur.digest, everyone, r.rep, r.batch)
			if r.syncRound(run, y) {
				batches = nil // every range synced
				r.cl.logger.Info("casty: a sync that made no progress took its ranges from every member's copies",
					"kind", run.kind, "ranges", len(rngs), "members", len(everyone))
				r.copySyncs.Add(1)
			}
		}
		// The batches are independent syncs of disjoint ranges: they run
		// syncParallel at a time. One after another, a member entering
		// ranges of a 50-member placement (about two hundred batches, one
		// per distinct previous set) would wait two hundred round trips a
		// round.
		// A batch some group of which has fewer members this member can
		// reach than it needs cannot sync this round: send asks only
		// members with an address in the view (alive, or a leaver handing
		// off), so it is not sent. Until the view changes nothing can
		// answer it: a range waiting for removed members' copies costs no
		// traffic while it waits.
		reachable := func(id replica.NodeID) bool {
			return v.addrs[ring.NodeID(id)] != "" || v.left[ring.NodeID(id)] != "" && !about(ring.NodeID(id)).departed
		}
		done := make([]bool, len(batches))
		sem := make(chan struct{}, syncParallel)
		var wg sync.WaitGroup
		asked := everyone != nil
		for i, bt := range batches {
			if !answerableNow(bt.groups, reachable) {
				continue
			}
			asked = true
			sem <- struct{}{}
			wg.Add(1)
			ok := r.spawn(func() {
				defer func() { <-sem; wg.Done() }()
				y := replica.NewJointSync(run.kind, bt.rngs, cur.version, cur.digest, bt.groups, r.rep, r.batch)
				done[i] = r.syncRound(run, y)
			})
			if !ok {
				<-sem
				wg.Done()
			}
		}
		wg.Wait()
		var remaining []replica.Range
		for i, bt := range batches {
			if !done[i] {
				remaining = append(remaining, bt.rngs...)
			}
		}
		r.mu.Lock()
		run.rngs = remaining
		r.mu.Unlock()
		if len(remaining) == 0 {
			continue // syncDone counts it
		}
		if !asked || len(remaining) == len(rngs) && len(waiting) > 0 {
			// Nothing could be asked, or nothing synced while the round
			// waits for removed members out of reach: until one of them
			// is back or a placement is agreed (AcceptLoss too), the next
			// round most likely ends the same, so rounds back off to
			// waitingRecheck, woken early by such a change (awaitChange)
			// or by the copy sync's time.
			if asked {
				r.syncRounds.Add(1)
			}
			idle = min(max(2*idle, pause), waitingRecheck)
			wait := idle
			if due := time.Until(progress.Add(copySyncAfter * r.timeout)); due > 0 {
				wait = min(wait, due)
			}
			if !r.awaitChange(cur, v, start.Add(wait)) {
				return
			}
			continue
		}
		r.syncRounds.Add(1)
		idle = 0
		select {
		case <-time.After(time.Until(start.Add(pause))):
		case <-r.done:
			return
		}
		pause = min(2*pause, time.Second)
	}
}

// awaitChange waits, for a sync round that could not progress, until
// deadline or until a change that may let it: a newer placement, or a
// member with an address in the view that v had not (one back, a leaver
// announced). Gossip replaces the view for many other reasons (suspicions,
// incarnations, records expiring), which would otherwise wake the round
// several times a second. It returns false when the replicator closes.
func (r *replicator) awaitChange(cur *layout, v *view, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	changed := v.changed
	for {
		select {
		case <-changed:
			nv := r.cl.view.Load()
			if nv.pl != cur || gained(v.addrs, nv.addrs) || gained(v.left, nv.left) {
				return true
			}
			changed = nv.changed
		case <-timer.C:
			return true
		case <-r.done:
			return false
		}
	}
}

// gained reports whether now has an id with an address that before had
// not.
func gained(before, now map[ring.NodeID]string) bool {
	for id, addr := range now {
		if addr != "" && before[id] == "" {
			return true
		}
	}
	return false
}

// waitingRecheck bounds how long a sync that could ask nobody waits for
// its view to change before it works its round out again.
const waitingRecheck = 10 * time.Second

// answerableNow reports whether every group has at least Need members
// that reachable accepts: only then can a sync round of them complete.
func answerableNow(groups []replica.Group, reachable func(replica.NodeID) bool) bool {
	for _, g := range groups {
		n := 0
		for _, id := range g.Members {
			if reachable(id) {
				n++
			}
		}
		if n < g.Need {
			return false
		}
	}
	return true
}

// copySyncAfter, times Replication.Timeout, is how long a sync makes no
// progress before it asks every member for its copies (copySyncMembers).
const copySyncAfter = 2

// copySyncMembers lists the members a copy sync of rngs must hear: every
// member that may hold a write of them — each placed member, each member
// removed as dead whose copies no operator gave up (AcceptLoss), and each
// member of the ranges' previous sets on bases not yet gone (a leaver
// still handing off) — this member excepted, and removed members of a
// Write(One) kind (forgiven: asked, not waited for, left out here). A
// write acknowledged before the copy sync sits on a member of that list,
// unless an operator gave its holders up: a copy leaves a member only
// once a read quorum of the range's next holders has it, and the members
// of every later set are in the list again (replica/SPEC.md, "Copy
// syncs"). Those without an address in the view are returned apart: the
// copy sync waits for them, as the ordinary sync waits for removed
// members.
func (r *replicator) copySyncMembers(cur *layout, v *view, bases []*ring.Ring, rngs []replica.Range, n int, gone, forgiven func(ring.NodeID) bool) (reach []replica.NodeID, unreachable []ring.NodeID) {
	self := r.cl.self
	seen := map[ring.NodeID]bool{self: true}
	add := func(id ring.NodeID) {
		if seen[id] || gone(id) || forgiven(id) {
			return
		}
		seen[id] = true
		if v.addrs[id] == "" {
			unreachable = append(unreachable, id)
			return
		}
		reach = append(reach, replica.NodeID(id))
	}
	for _, id := range cur.ring.Members() {
		add(id)
	}
	for _, id := range cur.p.Removed {
		add(id)
	}
	for _, b := range bases {
		for _, rng := range rngs {
			for _, id := range b.Replicas(rng.End, n) {
				add(id)
			}
		}
	}
	return reach, unreachable
}

// syncPeers tells a sync round what it holds of each member of its
// ranges' previous sets, worked out once per member per round, not per
// range and base.
//
// A member that left is asked while it hands off. Once its process is
// gone (it stays in the view as LEFT with no session for departAfter, or
// is out of the view) it is departed: no longer asked, but its copies
// still count. Its handoff may have been cut short (HandoffTimeout, or the
// Close ctx) while a sync it was the last synced holder for was still
// pulling, and then its copies were the only ones of writes acknowledged
// before it left. A member removed as dead is asked as long as the range
// needs it: cut off past RemoveDeadAfter, it may hold the only copies of
// writes, and it answers syncs once it is back. Either counts until an
// operator gives its copies up (AcceptLoss): only then is it gone. So the
// count never drops below a read quorum of the previous holders for want
// of members that left or were removed: the range waits, and the members
// it waits for are reported (replica/SPEC.md, "Placement by agreement").
type syncPeers struct {
	cur         *layout
	v           *view
	departed    map[ring.NodeID]time.Time // leavers with no session, since when
	now         time.Time
	departAfter time.Duration
	w           int // the kind's write quorum
	memo        map[ring.NodeID]syncPeer
}

// syncPeer is what a sync round holds of one member.
type syncPeer struct {
	id ring.NodeID
	// gone: an operator gave its copies up; they no longer count.
	gone bool
	// departed: a leaver whose process has ended; not asked, still counted.
	departed bool
	// forgiven: a removed member or departed leaver of a Write(One) kind,
	// not waited for (that kind promised each write one copy).
	forgiven bool
	// waits: the round waits for it, out of reach (removed as dead with no
	// address, or departed), until it is back or given up.
	waits bool
}

// about returns what the round holds of id.
func (p *syncPeers) about(id ring.NodeID) syncPeer {
	if m, ok := p.memo[id]; ok {
		return m
	}
	cur, v := p.cur, p.v
	placed, removed := cur.placed(id), cur.p.WasRemoved(id)
	m := syncPeer{id: id, gone: cur.p.WasLost(id)}
	if !placed && !removed {
		// A leaver's leave can be agreed before its LEFT record reaches
		// this member: while it is alive in the view it is handing off,
		// not departed.
		since, unreachable := p.departed[id]
		m.departed = v.left[id] == "" && v.addrs[id] == "" || unreachable && p.now.Sub(since) > p.departAfter
	}
	// A kind whose writes need one acknowledgement promised each write one
	// copy: what only a removed member or a departed leaver held is lost
	// within what it declared, so its syncs do not wait for them.
	m.forgiven = p.w <= 1 && !placed && (removed || m.departed)
	m.waits = !placed && !m.gone && !m.forgiven && (removed && v.addrs[id] == "" || m.departed)
	if p.memo == nil {
		p.memo = map[ring.NodeID]syncPeer{}
	}
	p.memo[id] = m
	return m
}

// answerable returns the members of a previous set to ask in a sync, and
// how many of them it must hear: need, less the members whose copies no
// longer count (gone: a member an operator gave up with AcceptLoss) and
// capped at the members not forgiven (a removed member of a Write(One)
// kind: asked, not waited for). A member removed as dead, or a departed
// leaver (counted, not asked), is otherwise not gone: the range waits for
// it while too few others answer — with two of a Replicas(3),
// Write(Majority) set removed, the one left cannot make the read quorum
// of two alone, and counting fewer would let that one stale copy stand
// for a write the two removed members alone acknowledged
// (replica/SPEC.md, "Placement by agreement").
//
// The members to ask are appended to dst.
func answerable(dst []replica.NodeID, full []ring.NodeID, need int, about func(ring.NodeID) syncPeer) ([]replica.NodeID, int) {
	counted := 0
	for _, id := range full {
		switch m := about(id); {
		case m.gone:
		case m.departed:
			if !m.forgiven {
				counted++ // not asked: nothing listens there
			}
		default:
			dst = append(dst, replica.NodeID(id))
			if !m.forgiven {
				counted++
			}
		}
	}
	return dst, min(need, counted)
}

// settled reports whether this member has no sync in flight: it votes
// everywhere it is a replica on its placement.
func (r *replicator) settled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pl != nil && r.pending == 0
}

// syncRound runs y, a sync of run, until it is done or a round of
// requests brought nothing more; it reports whether y is done. While it
// runs, y is one of run's live syncs, which reenter may abandon.
func (r *replicator) syncRound(run *syncRun, y *replica.Sync) bool {
	r.mu.Lock()
	run.live = append(run.live, y)
	outs := y.Start()
	r.mu.Unlock()
	ok := r.exchange(outs, y.Step, y.Done)
	r.mu.Lock()
	defer r.mu.Unlock()
	run.live = slices.DeleteFunc(run.live, func(x *replica.Sync) bool { return x == y })
	return ok && y.Done()
}

// sameGroups reports whether a and b ask the same members for the same
// counts.
func sameGroups(a, b []replica.Group) bool {
	return slices.EqualFunc(a, b, func(x, y replica.Group) bool {
		return x.Need == y.Need && x.Copies == y.Copies && slices.Equal(x.Members, y.Members)
	})
}

// exchange sends outs, feeds each answer to step (under r.mu) and sends
// what step returns, round after round, until a round brings nothing
// more, or done (checked under r.mu; nil: never) reports the work
// finished — then the members still to answer are not waited for: a sync
// that has heard enough does not wait out a silent member's timeout. Each
// round is bounded by Replication.Timeout; members that do not answer in
// time are left out. It reports false when the replicator is closing.
func (r *replicator) exchange(outs []replica.Out, step func(replica.NodeID, *replica.Msg) []replica.Out, done func() bool) bool {
	for len(outs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		replies := make(chan reply, len(outs))
		sent := 0
		for _, o := range outs {
			if r.spawn(func() { replies <- reply{from: o.To, raw: r.send(ctx, o)} }) {
				sent++
			}
		}
		var next []replica.Out
		finished := false
		for range sent {
			var rp reply
			select {
			case rp = <-replies:
			case <-r.done:
				cancel()
				return false
			}
			m := r.decodeReply(rp.raw)
			if m == nil {
				continue
			}
			if m.Op == replica.OpSynced && !m.Brief {
				r.syncIn.Add(int64(len(rp.raw)))
			}
			r.mu.Lock()
			next = append(next, step(rp.from, m)...)
			finished = done != nil && done()
			r.mu.Unlock()
			if finished {
				break
			}
		}
		cancel()
		if finished {
			return true
		}
		outs = next
	}
	return true
}

// syncDone reports whether run is over (done, superseded or closing), and
// settles a joiner whose last sync finished.
func (r *replicator) syncDone(run *syncRun) bool {
	select {
	case <-r.done:
		return true
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if run.gen != r.syncGen {
		return true
	}
	if len(run.rngs) > 0 {
		return false
	}
	if !run.counted {
		run.counted = true
		r.runs = slices.DeleteFunc(r.runs, func(x *syncRun) bool { return x == run })
		r.pending--
		if r.pending == 0 && r.joiner {
			r.settledJoin = true
			r.rep.JoinSettled()
		}
	}
	return true
}

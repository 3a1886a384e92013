package casty

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	agreed "github.com/casty-go/casty/casty/internal/placement"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
	"github.com/vmihailenco/msgpack/v5"
)

// Placement by agreement (replica/SPEC.md, "Placement by agreement").
//
// Each member holds the placement's history (internal/agreed.History)
// and votes on its next version (agreed.Acceptor). Gossip only proposes:
// a member of the placement that sees a full member alive and not placed
// wants it joined; a placed member gone LEFT, left; a placed member it
// has seen dead for Config.Replication.RemoveDeadAfter (or whose address a new process
// answers at), removed. It proposes those changes as the next version
// (agreed.Proposer) to the members of its newest version, and the step
// is chosen once a majority of them accepted it — for a removal, once a
// majority supported it, each having seen the member dead that long
// itself. The proposer then pushes the history to every live member; every
// member also pulls it from one random member a second, and from any member
// whose replication messages carry a newer version. Members adopt the
// versions in order (cluster.rebuild): the replicator syncs the ranges each
// one makes it enter from the sets they had on the version before.
//
// The member started without seeds founds the cluster: its history starts
// with itself alone. Every other member starts with no history and waits
// to be joined.

// Requests on the replication lane that the cluster answers itself.
const (
	laneFacts byte = 'F' // a pull: the puller's version follows; the answer is the history when newer
	laneAgree byte = 'P' // a agreed.Msg: a prepare or an accept, answered by the acceptor
	laneLog   byte = 'L' // a push of the history after a version was chosen
)

// pullEvery is how often a member pulls the history from a random member.
const pullEvery = time.Second

// proposeAfter is how long a member that is not the first live member of
// the placement waits, per member before it, before proposing a change
// itself (the first may be down or cut off).
const proposeAfter = time.Second

// agreement is a cluster's part in the placement's agreement.
type agreement struct {
	mu        sync.Mutex
	hist      *agreed.History
	layouts   []*layout // layouts[i] is version i+1
	acc       agreed.Acceptor
	ballot    uint64
	want      []agreed.Change
	since     map[agreed.Change]time.Time // when each wanted change was first wanted
	deadSince map[ring.NodeID]time.Time   // placed members seen not alive, since when
	replaced  map[ring.NodeID]bool        // placed members whose address a new process took
	warned    bool                        // a history of another founder was logged

	adoptMu sync.Mutex // orders adoptions
	adopted uint64     // the newest version the replicator adopted

	pulling   sync.Map    // ring.NodeID: a pull from that member is in flight
	rejoining atomic.Bool // rejoin runs
	kick      chan struct{}
	life      context.Context
	stop      context.CancelFunc
	wg        sync.WaitGroup
}

func (a *agreement) init(founder ring.NodeID, found bool) {
	a.hist = &agreed.History{}
	if found {
		a.hist = agreed.Found(founder)
	}
	a.since = map[agreed.Change]time.Time{}
	a.deadSince = map[ring.NodeID]time.Time{}
	a.replaced = map[ring.NodeID]bool{}
	a.kick = make(chan struct{}, 1)
	a.life, a.stop = context.WithCancel(context.Background())
	a.layoutsLocked()
}

// layoutsLocked builds the layouts of versions learned since the last call
// and moves the acceptor on (a.mu held).
func (a *agreement) layoutsLocked() {
	for v := uint64(len(a.layouts)) + 1; v <= a.hist.Version(); v++ {
		a.layouts = append(a.layouts, newLayout(a.hist.At(v), a.hist.LogAt(v)))
	}
	a.acc.Reset(a.hist.Latest())
}

// latest returns the newest placement this member knows, nil before it
// learned one.
func (cl *cluster) latest() *layout {
	a := &cl.agree
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.layouts) == 0 {
		return nil
	}
	return a.layouts[len(a.layouts)-1]
}

// spawn runs f on a goroutine that close waits for; false once stopped.
func (a *agreement) spawn(f func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.life.Err() != nil {
		return false
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
	return true
}

// close stops the agreement's goroutines and waits for them.
func (a *agreement) close() {
	a.mu.Lock()
	a.stop()
	a.mu.Unlock()
	a.wg.Wait()
}

// wanting reports whether observe left changes this member wants.
func (a *agreement) wanting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.want) > 0
}

func (a *agreement) wake() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// merge takes what l adds to this member's history, then adopts it.
func (cl *cluster) merge(l agreed.Log) {
	a := &cl.agree
	a.mu.Lock()
	added, err := a.hist.Merge(l)
	if err != nil && !a.warned {
		a.warned = true
		cl.logger.Error("casty: a member sent a placement history this member cannot take: two clusters met, or a member founded a cluster of its own (start every member but the first with Seeds)",
			"err", err, "founder", l.Founder.String())
	}
	if added > 0 {
		a.layoutsLocked()
	}
	a.mu.Unlock()
	if added > 0 {
		cl.refresh()
		a.wake()
	}
}

// chosen appends step as the version after base, when this member's
// history still ends at base, and pushes the history to every live member.
func (cl *cluster) chosen(base uint64, step []agreed.Change) {
	a := &cl.agree
	a.mu.Lock()
	if a.hist.Version() == base {
		a.hist.Append(step)
		a.layoutsLocked()
	}
	a.mu.Unlock()
	cl.refresh()
	cl.push()
}

// push sends the history to every live full member.
func (cl *cluster) push() {
	pl := cl.latest()
	if pl == nil {
		return
	}
	v := cl.view.Load()
	msg := append([]byte{laneLog}, pl.encode()...)
	for _, m := range v.members {
		id, err := ring.ParseNodeID(m.ID)
		if err != nil || id == cl.self {
			continue
		}
		addr := m.Addr
		cl.agree.spawn(func() {
			ctx, cancel := context.WithTimeout(cl.agree.life, cl.sys.cfg.Replication.Timeout)
			defer cancel()
			if sess, err := cl.node.Connect(ctx, mux.NodeID(id), addr); err == nil {
				_, _ = sess.Request(ctx, mux.LaneReplication, msg)
			}
		})
	}
}

// pull asks a member for its history, one request at a time per member.
func (cl *cluster) pull(id ring.NodeID, addr string) {
	a := &cl.agree
	if id == cl.self || addr == "" {
		return
	}
	if _, busy := a.pulling.LoadOrStore(id, true); busy {
		return
	}
	if !a.spawn(func() {
		defer a.pulling.Delete(id)
		ctx, cancel := context.WithTimeout(a.life, cl.sys.cfg.Replication.Timeout)
		defer cancel()
		sess, err := cl.node.Connect(ctx, mux.NodeID(id), addr)
		if err != nil {
			return
		}
		a.mu.Lock()
		have := a.hist.Version()
		a.mu.Unlock()
		b, err := sess.Request(ctx, mux.LaneReplication, binary.BigEndian.AppendUint64([]byte{laneFacts}, have))
		if err != nil || len(b) < 1 || b[0] != laneFacts {
			return
		}
		if l, ok := decodeLog(b[1:]); ok {
			cl.merge(l)
		}
	}) {
		a.pulling.Delete(id)
	}
}

// learn merges a history another member sent (a refusal's facts).
func (cl *cluster) learn(b []byte) {
	if l, ok := decodeLog(b); ok {
		cl.merge(l)
	}
}

// handleRepl serves the replication lane: the placement's requests here,
// the rest by the replicator.
func (cl *cluster) handleRepl(ctx context.Context, from *mux.Session, payload []byte) ([]byte, error) {
	if len(payload) == 0 {
		return nil, errors.New("casty: empty replication request")
	}
	switch payload[0] {
	case laneFacts:
		// Anyone admitted may read the placement: lite members route by it.
		var have uint64
		if len(payload) == 9 {
			have = binary.BigEndian.Uint64(payload[1:])
		}
		pl := cl.latest()
		if (pl == nil || pl.version < have) && from != nil && from.Member() {
			// The puller is ahead: this member pulls in turn.
			cl.pull(ring.NodeID(from.Peer()), from.PeerAddr())
		}
		if pl == nil || pl.version <= have {
			return []byte{laneFacts}, nil
		}
		return append([]byte{laneFacts}, pl.encode()...), nil
	case laneAgree, laneLog:
		if from != nil && !from.Member() {
			return nil, ErrForbidden
		}
		if payload[0] == laneLog {
			cl.learn(payload[1:])
			return []byte{laneLog}, nil
		}
		var m agreed.Msg
		if err := msgpack.Unmarshal(payload[1:], &m); err != nil {
			return nil, fmt.Errorf("casty: malformed placement message: %w", err)
		}
		reply := cl.vote(m)
		if reply.Kind == agreed.Refuse && reply.Current < m.Base && from != nil {
			cl.pull(ring.NodeID(from.Peer()), from.PeerAddr())
		}
		b, err := msgpack.Marshal(&reply)
		return append([]byte{laneAgree}, b...), err
	}
	if cl.rp == nil {
		return nil, ErrForbidden
	}
	return cl.rp.handle(ctx, from, payload)
}

// vote answers a proposer's prepare or accept.
func (cl *cluster) vote(m agreed.Msg) agreed.Msg {
	a := &cl.agree
	v := cl.view.Load()
	// A removed member joins again only once this member has taken its
	// ranges over (rejoin): asked before the lock, which the replicator's
	// must not nest in.
	handedOff := map[ring.NodeID]bool{}
	for _, c := range m.Step {
		if c.Op == agreed.Join && cl.rp != nil {
			handedOff[c.ID] = cl.rp.takenOver(c.ID)
		}
	}
	addrs := map[ring.NodeID]string{}
	gossipUp := cl.agentUp.Load()
	if gossipUp {
		for _, r := range cl.agent.Members() {
			addrs[ring.NodeID(r.ID)] = r.Addr
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.hist.Latest()
	var supports func(c agreed.Change) bool
	supports = func(c agreed.Change) bool {
		switch c.Op {
		case agreed.Join:
			if p != nil && p.WasRemoved(c.ID) && !handedOff[c.ID] && cl.rp != nil {
				return false
			}
			// A new process at a placed member's address replaces it in
			// one step — the old one's removal with its join — never a
			// step that places both: the members would leave ranges for
			// a version whose sets count the dead one (and wait for it).
			addr := addrs[c.ID]
			if addr == "" && gossipUp {
				return false // not heard of yet: its address is not known to be free
			}
			if p != nil {
				for _, y := range p.Members {
					if y != c.ID && addrs[y] == addr {
						if !slices.Contains(m.Step, agreed.Change{Op: agreed.Remove, ID: y}) || !supports(agreed.Change{Op: agreed.Remove, ID: y}) {
							return false
						}
					}
				}
			}
			return true
		case agreed.Leave:
			return true
		case agreed.Remove:
			if v.up[c.ID] {
				return false
			}
			since, ok := a.deadSince[c.ID]
			return a.replaced[c.ID] || ok && time.Since(since) >= cl.sys.cfg.Replication.RemoveDeadAfter
		case agreed.Lose:
			return true // an operator's word (AcceptLoss)
		}
		return false
	}
	return a.acc.Handle(m, supports)
}

// rejoin runs while the placement holds this member removed though it is
// alive (a majority saw it dead for RemoveDeadAfter: it was cut off or
// paused): like a leaver, it answers the syncs of the members that took
// its ranges over — it may hold the only copies of writes it acknowledged
// — and asks each live member of the placement until all say they have
// taken over (handoff.go); then it has its own join agreed, and enters
// its ranges again as any joiner does, syncing them from their holders.
func (cl *cluster) rejoin() {
	a := &cl.agree
	defer a.rejoining.Store(false)
	for a.life.Err() == nil {
		pl := cl.latest()
		if pl == nil || pl.placed(cl.self) || !pl.p.WasRemoved(cl.self) {
			return
		}
		v := cl.view.Load()
		peers := map[ring.NodeID]string{}
		for _, id := range pl.ring.Members() {
			if addr := v.addrs[id]; addr != "" {
				peers[id] = addr
			}
		}
		if len(peers) >= pl.p.Majority() && cl.rp.handoff(a.life, peers) == 0 {
			if cl.propose([]agreed.Change{{Op: agreed.Join, ID: cl.self}}) {
				continue
			}
		}
		select {
		case <-a.life.Done():
			return
		case <-time.After(time.Duration(100+rand.IntN(100)) * time.Millisecond):
		}
	}
}

// observe records, from a new view of the membership, which changes this
// member wants (a.mu not held): members to join, leavers to take out,
// members dead long enough to remove. It returns whether it wants any.
func (cl *cluster) observe(v *view, table []gossip.Member) bool {
	a := &cl.agree
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.hist.Latest()
	if p == nil || cl.lite {
		return false
	}
	aliveAt := map[string]ring.NodeID{}
	for _, m := range table {
		if m.Role == gossip.RoleMember && m.Status == gossip.Alive {
			aliveAt[m.Addr] = ring.NodeID(m.ID)
		}
	}
	var want []agreed.Change
	listed := map[ring.NodeID]bool{}
	for _, m := range table {
		id := ring.NodeID(m.ID)
		if m.Role != gossip.RoleMember {
			continue
		}
		listed[id] = true
		switch {
		case m.Status == gossip.Alive && !p.Has(id) && !p.WasGone(id):
			// A newcomer. A member removed while cut off asks to join
			// again itself, once it has handed its ranges over (rejoin).
			want = append(want, agreed.Change{Op: agreed.Join, ID: id})
		case m.Status == gossip.Left && p.Has(id):
			want = append(want, agreed.Change{Op: agreed.Leave, ID: id})
		case m.Status != gossip.Alive && p.Has(id):
			if other, ok := aliveAt[m.Addr]; ok && other != id {
				// A new process answers at its address: the old one is
				// gone for good.
				a.replaced[id] = true
			}
		}
	}
	for _, id := range p.Members {
		if v.up[id] || id == cl.self {
			delete(a.deadSince, id)
			continue
		}
		if _, ok := a.deadSince[id]; !ok {
			a.deadSince[id] = now
		}
		if a.replaced[id] || now.Sub(a.deadSince[id]) >= cl.sys.cfg.Replication.RemoveDeadAfter {
			if !slices.ContainsFunc(want, func(c agreed.Change) bool { return c.ID == id }) {
				want = append(want, agreed.Change{Op: agreed.Remove, ID: id})
			}
		}
	}
	for id := range a.deadSince {
		if !p.Has(id) {
			delete(a.deadSince, id)
		}
	}
	for id := range a.replaced {
		if !p.Has(id) {
			delete(a.replaced, id)
		}
	}
	for c := range a.since {
		if !slices.Contains(want, c) {
			delete(a.since, c)
		}
	}
	for _, c := range want {
		if _, ok := a.since[c]; !ok {
			a.since[c] = now
		}
	}
	a.want = want
	return len(want) > 0
}

// agreeLoop proposes the changes this member wants, one version at a time.
// It looks again every 200 ms while it wants any (a later-ranked member's
// turn comes with time), and otherwise only when kicked (observe wanting
// a change, a merged version): an idle member wakes for nothing.
func (cl *cluster) agreeLoop() {
	a := &cl.agree
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		var tick <-chan time.Time
		if a.wanting() {
			tick = t.C
		}
		select {
		case <-a.life.Done():
			return
		case <-a.kick:
		case <-tick:
		}
		want := cl.wanted()
		if len(want) == 0 {
			continue
		}
		if cl.propose(want) {
			continue
		}
		// Preempted or unsupported: back off a random while.
		select {
		case <-a.life.Done():
			return
		case <-time.After(time.Duration(20+rand.IntN(80)) * time.Millisecond):
		}
	}
}

// wanted returns the changes this member should propose now: all it wants
// when it is the first live member of the placement, else those wanted for
// proposeAfter per member before it.
func (cl *cluster) wanted() []agreed.Change {
	a := &cl.agree
	v := cl.view.Load()
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.hist.Latest()
	if p == nil || !p.Has(cl.self) || len(a.want) == 0 {
		return nil
	}
	rank := 0
	for _, id := range p.Members {
		if id == cl.self {
			break
		}
		if v.up[id] {
			rank++
		}
	}
	now := time.Now()
	var out []agreed.Change
	for _, c := range a.want {
		if now.Sub(a.since[c]) >= time.Duration(rank)*proposeAfter {
			out = append(out, c)
		}
	}
	return out
}

// propose runs one proposal of want as the next version; it reports
// whether a version was chosen (want's, or one a proposal before it
// left accepted).
func (cl *cluster) propose(want []agreed.Change) bool {
	return cl.proposeWithin(context.Background(), want)
}

// proposeWithin is propose, given up when ctx ends too (a leave bounded
// by Close's ctx).
func (cl *cluster) proposeWithin(cctx context.Context, want []agreed.Change) bool {
	a := &cl.agree
	a.mu.Lock()
	base := a.hist.Latest()
	a.ballot++
	p := agreed.NewProposer(base, agreed.Ballot{N: a.ballot, By: cl.self}, want)
	a.mu.Unlock()
	if base == nil || !p.Wants() {
		return false
	}
	ctx, cancel := context.WithTimeout(a.life, cl.sys.cfg.Replication.Timeout)
	defer cancel()
	defer context.AfterFunc(cctx, cancel)()
	type answer struct {
		from ring.NodeID
		m    agreed.Msg
	}
	// Each member answers each phase once, and once more after a push
	// brought it up to the base.
	answers := make(chan answer, 4*len(base.Members))
	v := cl.view.Load()
	sendTo := func(id ring.NodeID, req []byte, push []byte) {
		if id == cl.self {
			var m agreed.Msg
			if msgpack.Unmarshal(req[1:], &m) == nil {
				answers <- answer{id, cl.vote(m)}
			}
			return
		}
		addr := v.addrs[id]
		if addr == "" {
			return
		}
		a.spawn(func() {
			sess, err := cl.node.Connect(ctx, mux.NodeID(id), addr)
			if err != nil {
				return
			}
			if push != nil {
				// It is behind the base: it learns the history first.
				if _, err := sess.Request(ctx, mux.LaneReplication, push); err != nil {
					return
				}
			}
			resp, err := sess.Request(ctx, mux.LaneReplication, req)
			if err != nil || len(resp) < 1 || resp[0] != laneAgree {
				return
			}
			var r agreed.Msg
			if msgpack.Unmarshal(resp[1:], &r) == nil {
				answers <- answer{id, r}
			}
		})
	}
	var cur []byte // the current phase's request
	pushed := map[ring.NodeID]bool{}
	send := func(m agreed.Msg) {
		b, err := msgpack.Marshal(&m)
		if err != nil {
			return
		}
		cur = append([]byte{laneAgree}, b...)
		clear(pushed)
		for _, id := range base.Members {
			sendTo(id, cur, nil)
		}
	}
	first, _ := p.Start()
	send(first)
	for {
		select {
		case <-ctx.Done():
			return false
		case ans := <-answers:
			if ans.m.Kind == agreed.Refuse && ans.m.Current < base.Version && !pushed[ans.from] {
				if pl := cl.latest(); pl != nil && pl.version == base.Version {
					pushed[ans.from] = true
					sendTo(ans.from, cur, append([]byte{laneLog}, pl.encode()...))
					continue
				}
			}
			next, out := p.Step(ans.from, ans.m)
			if next != nil {
				send(*next)
			}
			switch out {
			case agreed.Chosen:
				cl.chosen(base.Version, p.Value)
				return true
			case agreed.Preempted:
				a.mu.Lock()
				a.ballot = max(a.ballot, p.MaxSeen.N)
				a.mu.Unlock()
				if p.Ahead {
					cl.pull(ans.from, v.addrs[ans.from])
				}
				return false
			case agreed.Unsupported:
				return false
			}
		}
	}
}

// leave has this member's own leave agreed, waiting at most until ctx
// ends; it reports whether the placement no longer holds it.
func (cl *cluster) leave(ctx context.Context) bool {
	c := []agreed.Change{{Op: agreed.Leave, ID: cl.self}}
	for {
		pl := cl.latest()
		if pl == nil || !pl.placed(cl.self) {
			return true
		}
		if !cl.proposeWithin(ctx, c) {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Duration(20+rand.IntN(80)) * time.Millisecond):
			}
		}
	}
}

// pullRandom pulls the history from one random live full member.
func (cl *cluster) pullRandom() {
	v := cl.view.Load()
	if len(v.members) == 0 {
		return
	}
	m := v.members[rand.IntN(len(v.members))]
	if id, err := ring.ParseNodeID(m.ID); err == nil {
		cl.pull(id, m.Addr)
	}
}

// stale reports whether v suggests a placement change that pl does not
// hold yet: a live full member not placed, or a placed member not alive.
func stale(pl *layout, v *view) bool {
	if pl == nil {
		return len(v.members) > 0
	}
	for _, m := range v.members {
		if id, err := ring.ParseNodeID(m.ID); err == nil && !pl.placed(id) && !pl.p.WasGone(id) {
			return true
		}
	}
	for _, id := range pl.ring.Members() {
		if !v.up[id] {
			return true
		}
	}
	return false
}

// AcceptLoss records, as an agreed change of the placement, that the
// copies held by the members named (by id, as Members and castyctl list
// them) are gone for good. Use it only when those members were taken out
// of the placement and will never come back with their state — two of a
// Replicas(3) set's members lost with their disks, say, or a member whose
// graceful Close ran out of time before the members taking its ranges over
// had synced them: the ranges they held with the remaining members wait for
// them until then (inspect.ReplicationStats.Waiting, Health), since the
// copies left may lack writes the lost members alone acknowledged. After it, those ranges sync from the members that remain,
// and writes only the lost members held are lost: that is the operator's
// decision, never the runtime's. Each acceptance is logged and counted
// (inspect.ReplicationStats.LostMembers, the casty.replication.lost_members
// gauge). It returns once the change is chosen, or ctx's error; a member
// still placed, or never placed, is refused with ErrNotRemoved.
func (s *System) AcceptLoss(ctx context.Context, ids ...string) error {
	if s.cl == nil || s.cl.lite {
		return errors.New("casty: AcceptLoss runs on a full member")
	}
	cl := s.cl
	var want []agreed.Change
	for _, raw := range ids {
		id, err := ring.ParseNodeID(raw)
		if err != nil {
			return fmt.Errorf("casty: AcceptLoss: member id %q: %w", raw, err)
		}
		pl := cl.latest()
		if pl == nil || !pl.p.WasGone(id) {
			return fmt.Errorf("%w: AcceptLoss: member %s (see Replication().Waiting for the members syncs wait for)", ErrNotRemoved, raw)
		}
		if !pl.p.WasLost(id) {
			want = append(want, agreed.Change{Op: agreed.Lose, ID: id})
		}
	}
	for len(want) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if cl.propose(want) {
			pl := cl.latest()
			want = slices.DeleteFunc(want, func(c agreed.Change) bool {
				if pl.p.WasLost(c.ID) {
					cl.logger.Error("casty: the operator accepted the loss of a departed member's copies: writes only it held are gone", logPeer, c.ID.String())
					return true
				}
				return false
			})
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(20+rand.IntN(80)) * time.Millisecond):
		}
	}
	return nil
}

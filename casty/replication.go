package casty

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// The replication runtime: it carries out what the replica module's pure
// machines decide (replica/SPEC.md). One replicator per member holds the
// member's copies (replica.Replica, behind one lock), its hybrid logical
// clock, and the placement it acts on; it plugs into the engine as its
// actor.Durability, so every activation of a replicated kind restores from
// a read quorum and commits after each handler.
//
// Requests travel on mux's replication lane. A payload's first byte says
// what it is: laneReplica (a replica.Msg follows), laneSettled (a leaver's
// question, handoff.go), or one of the placement's requests, which the
// cluster answers itself (agree.go).
const laneReplica byte = 'R'

// replicationEnvelope bounds what a commit message adds around one page:
// the message's fields, two ballots, two stamps, the page's key and stamp.
const replicationEnvelope = 64 << 10

// errNotApplied marks a failed commit that took effect nowhere — the
// owner's own copy refused it (a newer owner exists) — or a read's confirm
// a newer owner or placement refused: the call may be retried against the
// rightful owner.
var errNotApplied = errors.New("casty: the commit was applied nowhere")

// notApplied reports whether err says the call took effect nowhere: an
// errNotApplied no handler returned (a handler that returns another
// actor's such failure did run).
func notApplied(err error) bool { return errors.Is(err, errNotApplied) && !fromHandler(err) }

type replicator struct {
	cl      *cluster
	clock   *hlc.Clock
	batch   int
	maxPage int // the largest state page a commit may carry
	timeout time.Duration

	// groupsMu guards the repair pass's ring groups, worked out once per
	// ring (groupsOf).
	groupsMu   sync.Mutex
	groupsRing *ring.Ring
	groups     map[int][]ringGroup

	undeclared sync.Map // kind name → struct{}: kinds this member was sent but does not declare (warned once)

	mu     sync.Mutex // guards rep, pl and every replica.Session and replica.Sync
	rep    *replica.Replica
	pl     *layout // the placement this member adopted
	joiner bool    // joined a running cluster (started with seeds)

	// A joiner is settled once every range its join made it enter synced
	// once (it answers syncs as a newcomer until then). syncGen is the
	// generation syncs run in: with every placement version adopted in
	// order it no longer changes, and the checks against it are left
	// for a cleanup.
	settledJoin bool
	syncGen     uint64
	pending     int        // syncs of the current generation not done
	runs        []*syncRun // the syncs of the current generation not done

	react    sync.Mutex // guards reacting, reagain
	reacting bool       // a reactivation of durable actors runs
	reagain  bool       // the view changed while it ran: run again

	commits         atomic.Int64 // commits made by this member's activations
	commitBytes     atomic.Int64 // bytes of their commit messages sent
	syncIn          atomic.Int64 // bytes of copies pulled from others (syncs, repairs)
	syncOut         atomic.Int64 // bytes of copies sent in answer to others' syncs
	repaired        atomic.Int64 // copies adopted by anti-entropy passes
	earlyAnswers    atomic.Int64 // calls from here answered by this member's copy (early.go)
	repliesWithheld atomic.Int64 // calls served here whose answer the caller's member handed on (early.go)
	missedBasis     atomic.Int64 // commits this member's copy answered need-full
	readInline      atomic.Int64 // rounds whose replies their handler read itself (mux.WaitReading)
	syncRounds      atomic.Int64 // sync rounds that asked other members (runSync)
	copySyncs       atomic.Int64 // syncs that took their ranges from every member's copies (copySyncMembers)
	// Commits waiting for the commit they were built on (basisOnItsWay),
	// closed when the copy publishes one, and how long they wait
	// (basisWait; tests change it); guarded by mu.
	basisWaits map[copyKey][]basisWaiter
	basisWait  time.Duration
	// How many commits in a row may skip a spare replica, and how long a
	// round or a quiet actor waits before sending it its due (spares.go;
	// tests change them before the first activation); guarded by mu.
	spares       int
	spareFlush   time.Duration
	pruned       int64 // copies dropped by pruning (guarded by mu)
	tombstoneTTL time.Duration
	maxDrift     time.Duration // Config.Replication.MaxClockDrift
	mutant       string        // seam.Member.Mutant: a deliberately broken rule, for tests only

	// owned holds this member's live activations of replicated actors by
	// key, for raised to depose one when another owner's higher ballot
	// reaches its copy; deposed counts those it deposed. Guarded by mu.
	owned   map[copyKey]*replSession
	deposed int64

	goMu    sync.Mutex // orders spawn against close
	stopped bool
	life    context.Context // cancelled by close
	stop    context.CancelFunc
	wg      sync.WaitGroup
	done    chan struct{}
}

func newReplicator() *replicator {
	r := &replicator{rep: replica.NewReplica(ring.Point), done: make(chan struct{}), basisWait: basisWait,
		spares: spareCommits, spareFlush: spareFlush}
	r.life, r.stop = context.WithCancel(context.Background())
	return r
}

// attach completes the replicator once the member's cluster exists.
func (r *replicator) attach(cl *cluster, joiner bool) {
	cfg := cl.sys.cfg
	r.cl, r.batch, r.timeout, r.joiner = cl, cfg.Replication.Batch, cfg.Replication.Timeout, joiner
	// A page travels alone in a commit part at worst: it and the
	// replication envelope around it must fit one mux message.
	r.maxPage = max(cfg.Transport.MaxMessage-replicationEnvelope, 1)
	r.clock, _ = hlc.New(hlc.Config{Node: cl.self, Physical: cl.physical, MaxDrift: max(cfg.Replication.MaxClockDrift, time.Millisecond)})
	r.maxDrift = cfg.Replication.MaxClockDrift
	r.rep.SetLimit(cfg.Replication.MaxBytes)
	r.tombstoneTTL = cfg.Replication.StateTombstoneTTL
	if joiner {
		r.rep.Joined()
	}
	r.rep.SetRaised(r.raised)
	r.rep.SetFacts(func() []byte {
		if r.pl == nil {
			return nil
		}
		return r.pl.encode()
	})
	r.spawn(func() { r.repairLoop(cfg.Replication.RepairInterval) })
}

// close stops the syncs in flight and waits for every goroutine the
// replicator started.
func (r *replicator) close() {
	r.goMu.Lock()
	if !r.stopped {
		r.stopped = true
		close(r.done)
		r.stop()
	}
	r.goMu.Unlock()
	r.wg.Wait()
}

// spawn runs f on a goroutine close waits for; it reports false, running
// nothing, once the replicator is closing.
func (r *replicator) spawn(f func()) bool {
	r.goMu.Lock()
	defer r.goMu.Unlock()
	if r.stopped {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
	return true
}

// observe feeds every stamp of a received message to the clock, so the
// stamps and ballots this member issues next are above them. Observing
// the greatest alone does that at one clock reading; only when the clock
// refuses it (further ahead than MaxDrift) is each observed in turn, so
// the others still count. It reports false when a stamp was refused.
func (r *replicator) observe(m *replica.Msg) bool {
	stamps := [...]hlc.Timestamp{m.Ballot, m.Promised, m.Accepted, hlc.Timestamp(m.Stamp), {}}
	if m.Delta != nil {
		stamps[4] = hlc.Timestamp(m.Delta.Stamp)
	}
	var top hlc.Timestamp
	for _, t := range stamps {
		if top.Less(t) {
			top = t
		}
	}
	if top.IsZero() {
		return true
	}
	if _, err := r.clock.Observe(top); err == nil {
		return true
	}
	for _, t := range stamps {
		if !t.IsZero() && t != top {
			_, _ = r.clock.Observe(t)
		}
	}
	return false
}

// errDrift refuses a replication request stamped further ahead of this
// member's clock than Config.Replication.MaxClockDrift.
var errDrift = errors.New("casty: the request is stamped further ahead of this member's clock than Config.Replication.MaxClockDrift: the sender's clock is wrong")

// handle serves a request of another member on the replication lane. A
// replica answers from memory; it waits only, briefly, for a commit it
// cannot apply yet because the commit it was built on is still on its way
// (basisOnItsWay).
func (r *replicator) handle(ctx context.Context, from *mux.Session, payload []byte) ([]byte, error) {
	if from != nil && !from.Member() {
		// Replicas are members' business: a lite client's credential does
		// not allow writing or reading them.
		return nil, ErrForbidden
	}
	if len(payload) == 0 {
		return nil, errors.New("casty: empty replication request")
	}
	switch payload[0] {
	case laneSettled:
		var leaver ring.NodeID
		if len(payload) != 1+len(leaver) {
			return nil, errors.New("casty: malformed handoff question")
		}
		copy(leaver[:], payload[1:])
		answer := byte(0)
		if r.takenOver(leaver) {
			answer = 1
		}
		return []byte{laneSettled, answer}, nil
	case laneReplica:
	default:
		return nil, fmt.Errorf("casty: unknown replication request %#x", payload[0])
	}
	sc := scratches.Get().(*replica.Scratch)
	m, err := sc.Decode(payload[1:])
	if err != nil {
		scratches.Put(sc)
		reply := &replica.Msg{Op: replica.OpAck, Status: replica.StatusCorrupt, Reason: err.Error()}
		return reply.Append([]byte{laneReplica})
	}
	defer putScratch(sc, m)
	if !r.observe(m) {
		// A member whose clock runs too far ahead would drag every
		// member's clock with it, and ages measured by them (pruning,
		// re-entered ranges) with them: refused until it is fixed.
		if from != nil {
			r.cl.warnNet("casty: a member's replication request is stamped beyond Config.Replication.MaxClockDrift: refused (fix its clock)", from.PeerAddr(), errDrift)
		}
		return nil, errDrift
	}
	if kinds.declaredOf(m.Kind) == nil {
		r.warnUndeclared(m.Kind, from)
	}
	reply := replies.Get().(*replica.Msg)
	defer putReply(reply)
	r.mu.Lock()
	r.rep.HandleInto(reply, m, r.batch)
	// A commit that overtook the one it was built on waits for it; the
	// copy may publish others first (an earlier one still), so it looks
	// again each time, until basisWait is up.
	var stop *time.Timer
	for wait := r.basisOnItsWay(m, reply); wait != nil; wait = r.basisOnItsWay(m, reply) {
		if stop == nil {
			stop = time.NewTimer(r.basisWait)
			defer stop.Stop()
		}
		r.mu.Unlock()
		arrived := r.awaitBasis(ctx, wait, stop.C)
		r.mu.Lock()
		if !arrived {
			r.dropBasisWait(copyKey{m.Kind, m.Key}, wait)
			break
		}
		r.rep.HandleInto(reply, m, r.batch)
	}
	r.noteCommit(m, reply)
	behind := r.pl == nil || m.Version > r.pl.version
	r.mu.Unlock()
	if behind && from != nil {
		r.cl.pull(ring.NodeID(from.Peer()), from.PeerAddr())
	}
	if len(m.Answer) > 0 {
		r.answerEarly(m, reply)
	}
	b, err := reply.Append([]byte{laneReplica})
	if err == nil && reply.Op == replica.OpSynced && !reply.Brief {
		r.syncOut.Add(int64(len(b)))
	}
	return b, err
}

// warnUndeclared says, once per kind, that another member replicates a
// kind this member's program does not declare. Its replica still stores
// the commits it is sent (so a rolling deploy that adds a kind keeps
// writing it), but the member never syncs that kind's ranges — it syncs
// the kinds it declares — so where it joined after the kind's keys were
// written it holds no vote for them: their replica sets run one copy
// short until it runs a program that declares the kind. (Refusing the
// commits instead would fail the new kind's writes during every rolling
// deploy that adds one.)
func (r *replicator) warnUndeclared(kind string, from *mux.Session) {
	if _, warned := r.undeclared.LoadOrStore(kind, struct{}{}); warned {
		return
	}
	peer := ""
	if from != nil {
		peer = from.PeerAddr()
	}
	r.cl.logger.Warn("casty: another member replicates a kind this member does not declare: it stores the commits but never syncs the kind, so it holds no vote for keys written before it joined (one copy short) until its program declares the kind; run the same kinds on every member", "kind", kind, logPeer, peer)
}

// scratches holds the room a replica decodes its requests in: nothing
// keeps a request after handle returns, but a part of a commit in several
// parts, whose Delta the copy's pager.Store keeps until the rest arrives
// (putScratch).
var scratches = sync.Pool{New: func() any { return new(replica.Scratch) }}

func putScratch(sc *replica.Scratch, m *replica.Msg) {
	if m.Delta != nil && m.Delta.Parts > 1 {
		return // the store may hold its Delta, pages and all: not reused
	}
	scratches.Put(sc)
}

// replies holds the Msgs a replica's replies are built in: each is
// encoded before handle returns, and nothing keeps it.
var replies = sync.Pool{New: func() any { return new(replica.Msg) }}

func putReply(m *replica.Msg) {
	*m = replica.Msg{} // let go of what it pointed at
	replies.Put(m)
}

// basisWait bounds how long a commit waits for the commit it was built on
// (basisOnItsWay): long enough for a request that a connection's reader
// handed to a worker a moment earlier, short enough that a commit that
// was lost costs its owner little before the full page set is asked for.
const basisWait = 20 * time.Millisecond

// basisOnItsWay is called locked with a request and this replica's reply.
// When m is a commit the copy refused as need-full because it is older
// than the commit's basis, the commit it was built on may be on its way:
// requests of one connection run concurrently (a reader hands them to
// workers when more input is buffered), so on a hot key the next commit
// can overtake the one before it. It then registers and returns a channel
// that is closed when the copy publishes the commit's basis or a newer one
// (noteCommit); nil when there is nothing to wait for. Waiting is only receiving the commit
// later, which the protocol allows (replica/SPEC.md): the replica's rules
// run again on it when it is handled a second time.
func (r *replicator) basisOnItsWay(m, reply *replica.Msg) chan struct{} {
	if m.Op != replica.OpCommit || reply.Status != replica.StatusNeedFull || m.Delta == nil || m.Delta.Full {
		return nil
	}
	if st, _ := r.rep.Get(m.Kind, m.Key); st.Stamp.Compare(m.Delta.Basis) >= 0 {
		return nil // an orphan or another owner's commit is held: nothing will come
	}
	if r.basisWaits == nil {
		r.basisWaits = map[copyKey][]basisWaiter{}
	}
	k := copyKey{m.Kind, m.Key}
	w := basisWaiter{basis: m.Delta.Basis, ch: make(chan struct{})}
	r.basisWaits[k] = append(r.basisWaits[k], w)
	return w.ch
}

// basisWaiter is a commit waiting for its copy to reach basis.
type basisWaiter struct {
	basis pager.Stamp
	ch    chan struct{} // closed once the copy published basis or newer
}

// dropBasisWait forgets a waiter that gave up, locked.
func (r *replicator) dropBasisWait(k copyKey, ch chan struct{}) {
	ws := slices.DeleteFunc(r.basisWaits[k], func(w basisWaiter) bool { return w.ch == ch })
	if len(ws) == 0 {
		delete(r.basisWaits, k)
	} else {
		r.basisWaits[k] = ws
	}
}

// awaitBasis waits for wait to close until stop fires; it reports whether
// it closed. It waits where it runs, often on the connection's reader,
// without handing the reading on: the commit it waits for came earlier on
// that connection and is on a worker, a moment from publishing (handing
// the reading on cost more than the wait). Should it be something else,
// mux's watchdog hands the reading on after its grace.
func (r *replicator) awaitBasis(ctx context.Context, wait chan struct{}, stop <-chan time.Time) bool {
	select {
	case <-wait:
		return true
	case <-stop:
	case <-ctx.Done():
	case <-r.done:
	}
	return false
}

// noteCommit is called locked after a request was handled: a commit the
// copy published wakes the commits waiting for it (basisOnItsWay), and a
// need-full refusal is counted.
func (r *replicator) noteCommit(m, reply *replica.Msg) {
	if m.Op != replica.OpCommit {
		return
	}
	switch reply.Status {
	case replica.StatusOK:
		// Wake only the commits built on what the copy holds now (or on
		// something older): one at a time along a run of commits, not
		// every waiter of the key at each step.
		k := copyKey{m.Kind, m.Key}
		ws, ok := r.basisWaits[k]
		if !ok {
			return
		}
		st, _ := r.rep.Get(m.Kind, m.Key)
		ws = slices.DeleteFunc(ws, func(w basisWaiter) bool {
			if w.basis.Compare(st.Stamp) <= 0 {
				close(w.ch)
				return true
			}
			return false
		})
		if len(ws) == 0 {
			delete(r.basisWaits, k)
		} else {
			r.basisWaits[k] = ws
		}
	case replica.StatusNeedFull:
		r.missedBasis.Add(1)
	}
}

// copyKey names one actor's copy.
type copyKey struct{ kind, key string }

// reply is one answer to a request of a round: the raw answer, nil when
// the member could not be reached or failed to answer.
type reply struct {
	from replica.NodeID
	raw  []byte
	// carried: the request answered, when it carried a call's answer
	// (early.go); nil otherwise.
	carried *replica.Msg
}

// round collects the answers to one round's requests. Answers arrive on
// connection readers (mux.Session.RequestAsync), which must never block:
// they append under the lock and wake the round's goroutine.
type round struct {
	mu      sync.Mutex
	replies []reply
	buf     [3]reply      // replies' first backing array: a round rarely gets more
	wake    chan struct{} // cap 1: answers are waiting
	ended   bool          // the round is over: replies go to lateAck
	lending atomic.Bool   // its goroutine reads the replies itself (mux.WaitReading)
	// A commit round's replicator and session, for lateAck; nil otherwise.
	r *replicator
	s *replica.Session
	// unknown: the members the session did not know to hold the key when
	// the round began (Session.Holds); lateAck feeds it their late oks.
	// Set before any request is sent, read-only after.
	unknown    []replica.NodeID
	unknownBuf [2]replica.NodeID
	// track, when set, counts the round's requests whose reply, or
	// failure, is still to come: the session's (replSession.inflight),
	// which a closing owner waits out before it settles (spares.go).
	track *atomic.Int32
	// reply is where run decodes each reply it takes, one at a time.
	reply replica.Msg
}

// newRound returns a round for run, which must end it. Rounds are not
// recycled: replies that come after the round ended still reach it
// (lateAck), and the collector alone knows when the last one has.
func newRound() *round {
	rd := &round{wake: make(chan struct{}, 1)}
	rd.replies = rd.buf[:0]
	return rd
}

func (rd *round) put(rp reply) {
	if t := rd.track; t != nil {
		defer t.Add(-1) // after lateAck took it in
	}
	rd.mu.Lock()
	if rd.ended {
		rd.mu.Unlock()
		if rd.r != nil {
			rd.r.lateAck(rd, rp)
		}
		return
	}
	rd.replies = append(rd.replies, rp)
	rd.mu.Unlock()
	select {
	case rd.wake <- struct{}{}:
		if rd.lending.Load() {
			return // most likely read by the round's own goroutine: nobody to let run
		}
		// Let the woken commit finish before this goroutine (usually a
		// connection's reader) goes on to what it read next — often the
		// caller's next request for the same actor, which would find the
		// activation still busy, hand the reader off and park. It saves one
		// goroutine wake-up per hot-key write.
		runtime.Gosched()
	default:
	}
}

// end ends the round: the replies not taken, and those still to come, go
// to lateAck (a commit round's) or nowhere. The round is not its caller's
// any more.
func (rd *round) end() {
	rd.mu.Lock()
	rd.ended = true
	rest := rd.replies
	rd.replies = nil
	rd.mu.Unlock()
	if rd.r != nil {
		for _, rp := range rest {
			rd.r.lateAck(rd, rp)
		}
	}
}

func (rd *round) take(into []reply) []reply {
	rd.mu.Lock()
	into = append(into[:0], rd.replies...)
	rd.replies = rd.replies[:0]
	rd.mu.Unlock()
	return into
}

// run carries out one round of s until it ends: it sends outs, feeds the
// replies to s, sends what follows, and expires the round at its deadline
// (Replication.Timeout, or ctx's when sooner), or as soon as every request
// of the round has failed (nothing more can arrive). It reports taken when
// the member a call's answer rode to voted so that it decided the round
// (replica.Decides): that member handed the answer to the call (early.go).
// hot says the round is a hot actor's (replSession.hot, or a confirm
// within spareFlush of the actor's last).
//
// The requests go out without a goroutine each: their answers come back
// on the connections' readers and wake this goroutine, once per batch of
// answers (the latency of a commit is two wake-ups past the network).
//
// track, when not nil, counts the round's requests until their replies,
// late ones included, have been taken in (replSession.inflight).
func (r *replicator) run(ctx context.Context, s *replica.Session, outs []replica.Out, hot bool, track *atomic.Int32) (_ replica.Result, taken bool) {
	var resBuf [1]replica.Result // a round's result, taken without allocating
	r.mu.Lock()
	res := s.AppendResults(resBuf[:0])
	r.mu.Unlock()
	if len(res) > 0 {
		r.sendAsync(outs)
		return res[len(res)-1], false
	}
	deadline := time.Now().Add(r.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	rd := newRound()
	if len(outs) > 0 && outs[0].Msg.Op == replica.OpCommit {
		rd.r, rd.s = r, s
	}
	rd.track = track
	defer rd.end()
	// A commit round that skipped a spare sends it its due if the answer's
	// member is slow to vote (spares.go).
	var flushC <-chan time.Time
	if rd.s != nil {
		r.mu.Lock()
		owed, wait := s.Owed() > 0, r.spareFlush
		rd.unknown = rd.unknownBuf[:0]
		for _, o := range outs {
			if !s.Holds(o.To) && !slices.Contains(rd.unknown, o.To) {
				rd.unknown = append(rd.unknown, o.To)
			}
		}
		r.mu.Unlock()
		if owed {
			t := flushTimers.Get().(*time.Timer)
			t.Reset(wait)
			defer func() {
				t.Stop() // with Go 1.23's timers no stale tick survives Stop
				flushTimers.Put(t)
			}()
			flushC = t.C
		}
	}
	var (
		sentBuf     [4]mux.AsyncRequest
		batchBuf    [4]reply
		sent        = sentBuf[:0]
		carrier     = -1 // in sent: the request that carries the call's answer
		outstanding int
		batch       = batchBuf[:0]
	)
	send := func(outs []replica.Out) {
		for _, o := range outs {
			outstanding++
			if track != nil {
				track.Add(1)
			}
			if req, ok := r.requestAsync(ctx, o, time.Until(deadline), rd); ok {
				if len(o.Msg.Answer) > 0 {
					carrier = len(sent)
				}
				sent = append(sent, req)
			}
		}
	}
	// expire ends a round that cannot succeed any more, abandoning the
	// requests still out.
	expire := func() (replica.Result, bool) {
		for _, req := range sent {
			req.Cancel()
		}
		return r.expire(s), false
	}
	send(answerFirst(outs))
	// When the round waits on the member whose call this handler serves,
	// on the connection whose reader runs it, the handler reads the
	// replies itself: no goroutine woken to read, none woken by the reply
	// (mux.WaitReading). That is every request of the round (the hot
	// key's usual round: the spare skipped), or, for a hot actor whose
	// commit or confirm carries the call's answer to that member, that
	// one: its vote completes the quorum and brings the caller its answer,
	// and the third replica (a spare sent its due every spareCommits+1-th
	// commit, or a read's confirm) answers on another connection, taken
	// once the lending ends (at the caller's member's reply or
	// lendLimit). A round that is not hot reads no other connection's
	// replies inline: its connection is likely busy with other calls, so
	// the lending would only end at one (the 64 writers of `go run ./bench
	// -only replication` lost a tenth of their rate to it). Bounded by the
	// spare's flush.
	waitOn := sent
	if hot && carrier >= 0 {
		waitOn = sent[carrier : carrier+1]
	}
	lend := time.Until(deadline)
	if flushC != nil {
		lend = min(lend, r.spareFlush)
	}
	rd.lending.Store(true)
	if mux.WaitReading(ctx, waitOn, rd.wake, lend) {
		r.readInline.Add(1)
	}
	rd.lending.Store(false)
	for {
		select {
		case <-rd.wake:
			// Answers are in (usually read by WaitReading): taken without
			// asking ctx for its Done channel, which a request's context
			// makes on demand.
		default:
			// Only now, about to wait, the round's requests on their way,
			// does a handler on its connection's reader hand the reading
			// on: the commit that carries the caller's answer left without
			// waiting for the hand-off (another goroutine woken, the
			// batch's held answers written). Once handed on, it is a no-op.
			mux.HandOff(ctx)
			// No timer: every request carries the round's deadline
			// (enforced by mux's sweeper), so the round ends by then
			// through outstanding reaching zero.
			select {
			case <-rd.wake:
			case <-flushC:
				flushC = nil
				r.mu.Lock()
				more := s.Flush()
				r.mu.Unlock()
				send(more)
			case <-ctx.Done():
				return expire()
			case <-r.done:
				return expire()
			}
		}
		batch = rd.take(batch)
		for i, rp := range batch {
			outstanding--
			m := &rd.reply // the session keeps nothing of it but what decoding allocated
			if !r.decodeReplyInto(m, rp.raw) {
				// Unreachable: the round waits for the others, a skipped
				// spare among them.
				if flushC != nil {
					flushC = nil
					r.mu.Lock()
					more := s.Flush()
					r.mu.Unlock()
					send(more)
				}
				continue
			}
			if m.Op == replica.OpAck {
				r.cl.sys.tel.acked(1)
			}
			if rp.carried != nil && replica.Decides(rp.carried, m) {
				taken = true
			}
			r.mu.Lock()
			more := s.Step(rp.from, m)
			res := s.AppendResults(resBuf[:0])
			r.mu.Unlock()
			if len(res) > 0 {
				r.sendAsync(more)
				if rd.s != nil {
					// The replies that came in the same batch as the one
					// that decided are late ones too (a spare's
					// acknowledgement beside the answer's member's).
					for _, late := range batch[i+1:] {
						r.lateAck(rd, late)
					}
				}
				return res[len(res)-1], taken
			}
			send(more)
		}
		if outstanding == 0 {
			return expire()
		}
	}
}

// flushTimers are the stopped timers of the rounds that may flush a
// spare (run): a hot key's every round has one.
var flushTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// lateAck feeds a commit's need-full that arrived after its round ended
// to the session, whose next commit then sends that member the full page
// set (replica/SPEC.md, "Owner rounds"): without it the member's copy
// stays behind, refusing every later delta. A late ok is fed only from a
// member the session did not know, when the round began, to hold the key
// (Session.Holds: a spare is skipped only then). Other late replies change
// nothing and are dropped here. It runs on connection readers.
func (r *replicator) lateAck(rd *round, rp reply) {
	if len(rp.raw) < 1 || rp.raw[0] != laneReplica {
		return
	}
	st, ok := replica.AckStatus(rp.raw[1:])
	if !ok || (st != replica.StatusNeedFull && st != replica.StatusOK) {
		return
	}
	if st == replica.StatusOK && !slices.Contains(rd.unknown, rp.from) {
		return // the common case, a late ok: not even decoded, no lock
	}
	s := rd.s
	m := r.decodeReply(rp.raw)
	if m == nil || m.Op != replica.OpAck || m.Status != st {
		return
	}
	r.mu.Lock()
	s.Step(rp.from, m)
	r.mu.Unlock()
}

// answerFirst moves the commit that carries a call's answer (early.go) to
// the front of outs: the caller waits for that message alone, and each
// send is a write, so it is not held up behind the others.
func answerFirst(outs []replica.Out) []replica.Out {
	for i := 1; i < len(outs); i++ {
		if len(outs[i].Msg.Answer) > 0 {
			outs[0], outs[i] = outs[i], outs[0]
			break
		}
	}
	return outs
}

func (r *replicator) expire(s *replica.Session) replica.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.Expire()
	var resBuf [1]replica.Result
	res := s.AppendResults(resBuf[:0])
	if len(res) == 0 {
		return replica.Result{Err: replica.ErrQuorumUnavailable}
	}
	return res[len(res)-1]
}

// sendAsync sends requests whose replies no one waits for (repairs after
// a round ended).
func (r *replicator) sendAsync(outs []replica.Out) {
	if len(outs) == 0 {
		return
	}
	r.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		for _, o := range outs {
			select {
			case <-r.done:
				return
			default:
			}
			r.request(ctx, o)
		}
	})
}

// encodeOut encodes a request for the replication lane into a buffer of
// outBufs, counting the bytes of commits; the caller returns the buffer
// (putOut) once mux has taken the request (it copies it before Request
// and RequestAsync return).
func (r *replicator) encodeOut(o replica.Out) (*[]byte, bool) {
	buf := outBufs.Get().(*[]byte)
	b, err := o.Msg.Append(append((*buf)[:0], laneReplica))
	if err != nil {
		outBufs.Put(buf)
		return nil, false
	}
	if o.Msg.Op == replica.OpCommit {
		r.commitBytes.Add(int64(len(b)))
	}
	*buf = b
	return buf, true
}

// outBufs holds encoded replication requests for reuse; putOut returns one.
var outBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putOut returns a buffer of encodeOut to outBufs unless it grew too large
// to keep.
func putOut(buf *[]byte) {
	if cap(*buf) <= maxPooledReq {
		*buf = (*buf)[:0]
		outBufs.Put(buf)
	}
}

// requestAsync sends one request of a round; its answer (nil when none)
// reaches rd. Over an established session nothing waits; a member not yet
// connected is dialled on a goroutine of its own.
func (r *replicator) requestAsync(ctx context.Context, o replica.Out, timeout time.Duration, rd *round) (mux.AsyncRequest, bool) {
	to := o.To
	if sess, ok := r.cl.node.Session(mux.NodeID(to)); ok && timeout > 0 && sess.Member() {
		b, ok := r.encodeOut(o)
		if !ok {
			rd.put(reply{from: to})
			return mux.AsyncRequest{}, false
		}
		var carried *replica.Msg
		if len(o.Msg.Answer) > 0 {
			carried = o.Msg
		}
		req := sess.RequestAsync(ctx, mux.LaneReplication, *b, timeout, func(resp []byte, err error) {
			if err != nil {
				resp = nil
			}
			rd.put(reply{from: to, raw: resp, carried: carried})
		})
		putOut(b)
		return req, true
	}
	if !r.spawn(func() {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		rd.put(reply{from: to, raw: r.send(rctx, o)})
	}) {
		rd.put(reply{from: to})
	}
	return mux.AsyncRequest{}, false
}

// request sends one message to a member and returns its decoded reply,
// nil when the member could not be reached or answered garbage.
func (r *replicator) request(ctx context.Context, o replica.Out) *replica.Msg {
	return r.decodeReply(r.send(ctx, o))
}

// send sends one message to a member and returns its raw answer, nil when
// the member could not be reached or failed to answer.
func (r *replicator) send(ctx context.Context, o replica.Out) []byte {
	v := r.cl.view.Load()
	addr := v.addrs[ring.NodeID(o.To)]
	if addr == "" {
		addr = v.left[ring.NodeID(o.To)] // a leaver handing off (handoff.go)
	}
	if addr == "" {
		return nil // not alive in this member's view
	}
	b, ok := r.encodeOut(o)
	if !ok {
		return nil
	}
	defer putOut(b)
	sess, err := r.cl.node.Connect(ctx, mux.NodeID(o.To), addr)
	if err != nil || !sess.Member() {
		return nil // unreachable, or no member: replicas go to members only
	}
	resp, err := sess.Request(ctx, mux.LaneReplication, *b)
	if err != nil {
		return nil
	}
	return resp
}

// decodeReply decodes an answer on the replication lane, observes its
// stamps and merges the placement facts of a "behind" refusal; nil when
// there is no answer or it is garbage.
func (r *replicator) decodeReply(resp []byte) *replica.Msg {
	m := new(replica.Msg)
	if !r.decodeReplyInto(m, resp) {
		return nil
	}
	return m
}

// decodeReplyInto is decodeReply into m (replica.DecodeInto), reporting
// whether resp held a reply.
func (r *replicator) decodeReplyInto(m *replica.Msg, resp []byte) bool {
	if len(resp) < 1 || resp[0] != laneReplica {
		return false
	}
	if replica.DecodeInto(m, resp[1:]) != nil {
		return false
	}
	r.observe(m)
	if m.Status == replica.StatusBehind && len(m.Facts) > 0 {
		r.cl.learn(m.Facts)
	}
	return true
}

// Restore activates a replicated actor from its replicas (actor.Durability).
func (r *replicator) Restore(ctx context.Context, a *actor.Activation) (actor.Session, error) {
	k := a.Kind()
	d := kinds.declaredOf(k.Name)
	if d == nil || d.repl.replicas <= 1 || r.cl == nil {
		return nil, nil
	}
	rp := d.repl
	point := ring.Point(k.Name, a.Key())
	t, err := d.schema.NewTracker(&pager.Config{BatchSize: r.batch, MaxPageSize: r.maxPage})
	if err != nil {
		return nil, err
	}
	rs := &replSession{r: r, tracker: t, act: a, repl: rp, durable: k.IdleTimeout == actor.Forever}
	var res replica.Result
	var pages []pager.Page
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		pl := r.pl
		if pl == nil {
			r.mu.Unlock()
			return nil, fmt.Errorf("%w: %s/%s: this member has no placement yet", ErrQuorumUnavailable, k.Name, a.Key())
		}
		set := r.setOf(pl, point, rp)
		if !slices.Contains(set.Members, set.Self) {
			r.mu.Unlock()
			return nil, fmt.Errorf("%w: %s/%s: this member is not one of its replicas", ErrRangeMoving, k.Name, a.Key())
		}
		sess := replica.NewSession(k.Name, a.Key(), set, r.rep, r.clock.Now())
		outs := sess.Open()
		r.mu.Unlock()
		res, _ = r.run(ctx, sess, outs, false, nil)
		if res.Err == nil {
			// From here on another owner's ballot reaching this member's
			// copy deposes the activation (raised). One that reached it
			// since the round ended deposes it now, before it serves
			// anything: it counts as a fenced round.
			r.mu.Lock()
			st, _ := r.rep.Get(k.Name, a.Key())
			if st.Promised.Compare(sess.Ballot()) <= 0 {
				if !res.State.Stamp.IsZero() {
					pages = r.rep.Pages(k.Name, a.Key())
				}
				rs.sess = sess
				r.own(rs)
				r.mu.Unlock()
				break
			}
			r.mu.Unlock()
			res = replica.Result{Err: fmt.Errorf("%w: %s/%s: a newer owner's ballot reached this member's copy as it activated", replica.ErrFenced, k.Name, a.Key()),
				Fenced: true, Promised: st.Promised}
		}
		if !res.Promised.IsZero() {
			_, _ = r.clock.Observe(res.Promised)
		}
		// Replicas on a newer placement, or still syncing the range after a
		// membership change: the cluster is settling; try again while the
		// caller's time lasts.
		if errors.Is(res.Err, replica.ErrFull) {
			return nil, fmt.Errorf("%w: activating %s/%s: %v", ErrReplicaFull, k.Name, a.Key(), res.Err)
		}
		settling := res.Version > pl.version || res.Abstained > 0 || res.Fenced && attempt == 0
		if !settling || ctx.Err() != nil {
			// Nothing ran: the caller may take the call to the key's next
			// replica (route.go; this member may be cut off from the
			// replicas while the caller still reaches it).
			return nil, fmt.Errorf("%w: activating %s/%s: %v", ErrNoReadQuorum, k.Name, a.Key(), res.Err)
		}
		if res.Version > pl.version {
			r.cl.awaitPlacement(ctx, res.Version, 250*time.Millisecond)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		case <-r.done:
			return nil, fmt.Errorf("%w: activating %s/%s: the member is closing", ErrQuorumUnavailable, k.Name, a.Key())
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
	if !res.State.Stamp.IsZero() {
		_, _ = r.clock.Observe(hlc.Timestamp(res.State.Stamp))
		if err := t.Restore(a.State(), res.State.Stamp, pages); err != nil {
			r.disown(rs)
			return nil, fmt.Errorf("casty: restoring %s/%s from its replicas: %w", k.Name, a.Key(), err)
		}
	}
	if rs.durable && r.ended(k.Name, a.Key()) {
		if actor.Starter(ctx) == touchMethod {
			// An unprompted reactivation whose own copy missed the end:
			// the adopted state has it, so the actor stays down.
			r.disown(rs)
			return nil, fmt.Errorf("%w: %s/%s ended for good", actor.ErrDeclined, k.Name, a.Key())
		}
		rs.dur.clearing = true // ended, and called again
	}
	return rs, nil
}

// own records s as this member's live activation of its actor, locked.
func (r *replicator) own(s *replSession) {
	if r.owned == nil {
		r.owned = map[copyKey]*replSession{}
	}
	r.owned[copyKey{s.act.Kind().Name, s.act.Key()}] = s
}

// disown forgets s as a live activation (Release, a Restore that failed
// after its round); it takes r.mu.
func (r *replicator) disown(s *replSession) {
	k := copyKey{s.act.Kind().Name, s.act.Key()}
	r.mu.Lock()
	if r.owned[k] == s {
		delete(r.owned, k)
	}
	r.mu.Unlock()
}

// raised is this member's replica's hook (replica.Replica.SetRaised),
// called under r.mu each time one of its copies promises a ballot above
// the one it held. When this member holds a live activation of that actor
// under a lower ballot, another owner has prepared or committed through
// this copy — the views of the members disagreed for a moment, a paused
// or cut-off owner was routed around — and may have acknowledged writes
// the activation never saw. Its next commit would be refused here, but a
// Read(One) commits nothing: it would go on answering from that state for
// as long as nobody writes. So it is deposed, and the next call activates
// from a read quorum under a new ballot (replica/SPEC.md, "Read(One) and
// a deposed owner"). Only a strictly higher ballot deposes: the prepare
// of this member's own new activation raises the promise to that
// activation's ballot, and a commit of the ballot already promised raises
// nothing (the hot path costs one comparison).
func (r *replicator) raised(kind, key string, b replica.Ballot) {
	if len(r.owned) == 0 {
		return
	}
	k := copyKey{kind, key}
	s, ok := r.owned[k]
	if !ok || b.Compare(s.sess.Ballot()) <= 0 {
		return
	}
	delete(r.owned, k)
	s.deposed.Store(true)
	if s.act.Depose() {
		r.deposed++
	}
}

// setOf is key's replica set on pl for r's member. The caller holds r.mu.
func (r *replicator) setOf(pl *layout, point uint64, rp replication) replica.Set {
	ids := pl.ring.Replicas(point, rp.replicas)
	set := replica.Set{Self: replica.NodeID(r.cl.self), W: rp.write.Of(rp.replicas), R: rp.replicas, Batch: r.batch,
		Version: pl.version, Digest: pl.digest, Spares: r.spares}
	if r.mutant == "write-one-fewer" && set.W > 1 {
		set.W, set.R = set.W-1, set.R-1 // the read quorum stays as it was
	}
	for _, id := range ids {
		set.Members = append(set.Members, replica.NodeID(id))
	}
	if r.mutant == "quorum-of-set" {
		set.R = len(set.Members) // a set shrunk below R reads with a smaller quorum
	}
	return set
}

// replSession is one activation's link to its replicas (actor.Session).
type replSession struct {
	r       *replicator
	sess    *replica.Session
	tracker *pager.Tracker
	act     *actor.Activation
	repl    replication
	over    error // set once a newer owner fenced this one
	durable bool  // Replicas > 1 and IdleTimeout(Forever) (durable.go)
	dur     durableState
	// flushArmed: a quiet-actor flush of skipped spares is scheduled
	// (spares.go); guarded by r.mu.
	flushArmed bool
	// lastCommit is when the last commit started: a commit within
	// spareFlush of it may skip spares (spares.go, hot); guarded by r.mu.
	lastCommit time.Time
	// inflight counts the requests of s's rounds and flushes whose
	// replies are still to come (round.track): settle waits them out.
	inflight atomic.Int32
	// lastConfirm is the same for Read(Majority)'s confirm rounds, which
	// skip no spare: a hot read reads its caller's confirmation inline
	// (replicator.run); guarded by r.mu.
	lastConfirm time.Time
	// deposed: another owner's higher ballot reached this member's copy
	// (replicator.raised); the activation is ending, and a handler that
	// ran meanwhile is not answered from its state.
	deposed atomic.Bool
}

// Commit replicates what the handler changed, or, for Read(Majority),
// confirms that no newer owner exists (actor.Session).
func (s *replSession) Commit(ctx context.Context, failed bool) error {
	if s.over != nil {
		return s.over
	}
	if s.deposed.Load() {
		// Nothing sent: the caller runs the call again on the next
		// activation, which reads a quorum (a write, here, would be
		// refused by this member's own copy anyway).
		return fmt.Errorf("%w: %s/%s: %w: a newer owner's ballot reached this member's copy", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), errNotApplied)
	}
	r := s.r
	pending, err := s.tracker.Prepare(s.act.State(), pager.Stamp(r.clock.Now()))
	if err != nil {
		var big *pager.PageTooLargeError
		if errors.As(err, &big) {
			return &CommitTooLargeError{Kind: s.act.Kind().Name, Key: s.act.Key(), Page: big.Key, Size: big.Size, Limit: big.Limit}
		}
		return fmt.Errorf("casty: %s/%s: preparing the commit: %w", s.act.Kind().Name, s.act.Key(), err)
	}
	if amended := s.amend(&pending.Delta); pending.Delta.Empty() && !amended {
		_ = s.tracker.Commit(pending)
		if s.repl.read == One {
			return nil
		}
		to, answer := earlyFor(ctx, s.act, failed, &pending.Delta, r.maxPage)
		r.mu.Lock()
		hot := r.recent(&s.lastConfirm)
		outs := s.sess.ConfirmAnswering(to, answer)
		r.mu.Unlock()
		res, taken := r.run(ctx, s.sess, outs, hot, &s.inflight)
		r.mu.Lock()
		s.armFlush() // a quiet flush that found this round running left it to us
		r.mu.Unlock()
		if res.Err != nil {
			r.cl.sys.tel.quorumFailed()
			if res.Fenced || res.Version > 0 {
				// A newer owner, or a newer placement, refused it: the read
				// changed nothing anywhere, so, as a commit its owner's own
				// copy refused, it may run again on the rightful owner.
				return fmt.Errorf("%w: %s/%s: confirming the read: %w: %v", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), errNotApplied, res.Err)
			}
			return fmt.Errorf("%w: %s/%s: confirming the read: %v", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), res.Err)
		}
		if taken {
			r.answerTaken(ctx)
		}
		return nil
	}
	to, answer := earlyFor(ctx, s.act, failed, &pending.Delta, r.maxPage)
	r.mu.Lock()
	hot := s.hot()
	s.sess.Quiet(!hot)
	outs := s.sess.CommitAnswering(pending.Delta, to, answer)
	r.mu.Unlock()
	res, taken := r.run(ctx, s.sess, outs, hot, &s.inflight)
	r.mu.Lock()
	s.armFlush()
	r.mu.Unlock()
	if res.Err != nil {
		r.cl.sys.tel.quorumFailed()
		if !res.Applied && errors.Is(res.Err, replica.ErrFull) {
			// Definite, and not worth a retry: the owner's own copy took
			// nothing, at its limit of replicated state.
			return fmt.Errorf("%w: %s/%s: %v", ErrReplicaFull, s.act.Kind().Name, s.act.Key(), res.Err)
		}
		if !res.Applied {
			return fmt.Errorf("%w: %s/%s: %w: %v", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), errNotApplied, res.Err)
		}
		return fmt.Errorf("%w: %s/%s: the commit may or may not have taken effect: %v", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), res.Err)
	}
	_ = s.tracker.Commit(pending)
	r.commits.Add(1)
	if taken {
		r.answerTaken(ctx)
	}
	if res.Fenced {
		s.over = fmt.Errorf("%w: %s/%s: %w: a newer owner exists", ErrQuorumUnavailable, s.act.Kind().Name, s.act.Key(), errNotApplied)
	}
	return nil
}

// Release ends the session (actor.Session). On a graceful Close it first
// settles the key's set (spares.go, settle).
func (s *replSession) Release() {
	s.r.disown(s)
	if cl := s.r.cl; cl != nil && cl.closed.Load() {
		s.settle()
	}
}

// CommitTooLargeError is returned when a handler left a state page bigger
// than the replication limit: the handler ran, nothing was replicated, and
// the activation is discarded (the next call restores the last committed
// state). Keep pages small: a TrackedMap pages per entry.
type CommitTooLargeError struct {
	Kind, Key string
	Page      string // the page's key ("Field" or "Field/<entry>")
	Size      int    // its size in bytes
	Limit     int    // the limit (pager's MaxPageSize)
}

func (e *CommitTooLargeError) Error() string {
	return fmt.Sprintf("casty: %s/%s: state page %q is %d bytes, over the %d-byte page limit: nothing was replicated", e.Kind, e.Key, e.Page, e.Size, e.Limit)
}

// Replication reports this member's replicated state; the zero value on a
// lite member or in local mode.
func (s *System) Replication() inspect.ReplicationStats {
	if s.cl == nil || s.cl.rp == nil {
		return inspect.ReplicationStats{}
	}
	r := s.cl.rp
	r.mu.Lock()
	defer r.mu.Unlock()
	st := inspect.ReplicationStats{Keys: r.rep.Keys(), Bytes: r.rep.Bytes(), Usage: r.rep.Usage(), Limit: r.cl.sys.cfg.Replication.MaxBytes,
		Commits: r.commits.Load(), CommitBytes: r.commitBytes.Load(), SyncBytes: r.syncIn.Load(), ServedSyncBytes: r.syncOut.Load(), Repaired: r.repaired.Load(), Pruned: r.pruned, Deposed: r.deposed, Syncing: r.pending > 0,
		EarlyAnswers: r.earlyAnswers.Load(), RepliesWithheld: r.repliesWithheld.Load(), MissedBasis: r.missedBasis.Load(),
		RoundsReadInline: r.readInline.Load(), CopySyncs: r.copySyncs.Load(), SyncRounds: r.syncRounds.Load()}
	if r.pl != nil {
		st.Placed = r.pl.ring.Size()
		st.PlacementVersion = r.pl.version
		st.LostMembers = len(r.pl.p.Lost)
	}
	for _, run := range r.runs {
		if len(run.waiting) == 0 || run.gen != r.syncGen {
			continue
		}
		w := inspect.WaitingSync{Kind: run.kind, Ranges: len(run.rngs)}
		for _, id := range run.waiting {
			w.Members = append(w.Members, id.String())
		}
		st.Waiting = append(st.Waiting, w)
	}
	return st
}

package casty

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	agreed "github.com/casty-go/casty/casty/internal/placement"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
	"github.com/casty-go/casty/wire"
)

// MemberEvents subscribes to the node's membership events as strings
// "kind addr".
func MemberEvents(s *System) (<-chan string, func()) {
	events, unsub := s.cl.agent.Subscribe()
	out := make(chan string, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			select {
			case out <- ev.Kind.String() + " " + ev.Member.Addr:
			default:
			}
		}
	}()
	return out, func() { unsub(); <-done }
}

// HideKind makes a node behave as if it had never declared the kind: its
// handlers answer calls and stream opens for it "unknown".
func HideKind(s *System, name string) {
	cl := s.cl
	intercept(cl, func(req *callReq) *callResp {
		if req.Kind != name {
			return nil
		}
		r := cl.unknownKind(req.Kind)
		return &r
	})
}

// intercept puts refuse in front of the node's request and stream
// handlers: a request it answers (non-nil) goes no further. It replaces
// any earlier interception.
func intercept(cl *cluster, refuse func(req *callReq) *callResp) {
	cl.node.HandleRequests(mux.LaneMessage, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		var req callReq
		if decodeCallReq(payload, &req) == nil {
			if r := refuse(&req); r != nil {
				return appendCallResp(nil, r), nil
			}
		}
		return cl.handle(ctx, sess, payload)
	})
	cl.node.HandleStreams(func(from *mux.Session, st *mux.Stream) {
		var req callReq
		if decodeCallReq(st.Header(), &req) == nil && req.Op == opStream {
			if r := refuse(&req); r != nil {
				newFrameConn(st, cl.sys.cfg.Transport.MaxMessage).writeError(frameStatus, r.Err)
				st.Close()
				return
			}
		}
		cl.handleStream(from, st)
	})
}

var _ = gossip.EventJoined

// RouteAttempts is how many owners a call tries when rings disagree.
const RouteAttempts = routeAttempts

// CountRequests counts the calls and stream opens for kind's key that
// reach the node, whatever it answers them.
func CountRequests(s *System, kind, key string) (count func() int32) {
	var n atomic.Int32
	intercept(s.cl, func(req *callReq) *callResp {
		if req.Kind == kind && req.Key == key {
			n.Add(1)
		}
		return nil
	})
	return n.Load
}

// PendingTo is how many requests from's session to to still awaits
// answers for (0 when there is no session).
func PendingTo(from, to *System) int {
	sess, ok := from.cl.node.Session(mux.NodeID(to.cl.self))
	if !ok {
		return 0
	}
	return sess.Pending()
}

// Leaving reports whether the member has begun to leave: it refuses calls
// as leaving.
func Leaving(s *System) bool { return s.cl.closed.Load() }

// RefuseAsWrongOwner makes the node answer the next n calls or stream
// opens of actors as if its ring gave their keys to another node.
func RefuseAsWrongOwner(s *System, n int32) {
	cl := s.cl
	var left atomic.Int32
	left.Store(n)
	intercept(cl, func(req *callReq) *callResp {
		if k := kinds.get(req.Kind); k == nil || k.Service || left.Add(-1) < 0 {
			return nil
		}
		r := cl.wrongOwner(req.Kind, req.Key)
		return &r
	})
}

// Misplaced returns r with its ring point replaced: a Ref whose point does
// not match its key, as a buggy or hostile caller would send it.
func Misplaced[T any](r Ref[T], point uint64) Ref[T] {
	r.at = placement{point: point, known: true}
	return r
}

// PointOwnedBy returns a ring point that via's ring gives to owner.
func PointOwnedBy(via, owner *System) uint64 {
	v := via.cl.view.Load()
	for i := uint64(1); ; i++ {
		p := i * 0x9e3779b97f4a7c15
		if id, ok := v.ring.Owner(p); ok && id == owner.cl.self {
			return p
		}
	}
}

// Untyped makes the kind's remote calls to method go through reflection
// for the rest of the process, as on a node that never calls the method
// itself.
func Untyped(kind, method string) {
	typedInvokers.set(kinds.get(kind).MethodByName(method), nil, true)
}

// Admission reports what a member's transport refused, evicted or closed
// as silent (mux.Node.Admission).
func Admission(s *System) mux.Admission { return s.cl.node.Admission() }

// WithMuxConfig edits the node's transport configuration last: a hostile
// node whose transport says something else than its membership.
func WithMuxConfig(f func(*mux.Config)) Option { return func(o *systemOptions) { o.editMux = f } }

// WithDurability sets the host's actor.Durability (replication's seam).
func WithDurability(d actor.Durability) Option { return withDurability(d) }

// Crash stops a member as a killed process would (no drain, no LEFT).
func Crash(s *System) { s.cl.crash() }

// Settled reports whether a member has adopted a placement of n members
// and finished every sync it started (it votes wherever it replicates).
func Settled(s *System, n int) bool {
	rp := s.cl.rp
	return rp != nil && rp.settled() && len(placedRing(s.cl.view.Load()).Members()) == n
}

// ReplicaState reports the commit (ballot and stamp) this member's replica
// holds of kind/key, as text comparable across members; false when it
// holds nothing of it.
func ReplicaState(s *System, kind, key string) (string, bool) {
	r := s.cl.rp
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.rep.Get(kind, key)
	return fmt.Sprint(st.Accepted, st.Stamp), ok
}

// ReplicationRequest sends payload as is on the replication lane from one
// member to another, through from's mux node, and returns the raw reply:
// a hostile or buggy peer speaking to the replica.
func ReplicationRequest(ctx context.Context, from, to *System, payload []byte) ([]byte, error) {
	sess, err := from.cl.node.Connect(ctx, mux.NodeID(to.cl.self), to.Addr())
	if err != nil {
		return nil, err
	}
	return sess.Request(ctx, mux.LaneReplication, payload)
}

// DropCopy makes this member's replica forget kind/key, as if it had
// missed every commit of it.
func DropCopy(s *System, kind, key string) {
	r := s.cl.rp
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Drop(kind, key)
}

// StateOfUndeclared is System.StateOf as a tool that does not declare the
// kind takes it: asking the members in turn.
func StateOfUndeclared(ctx context.Context, s *System, kind, key string) (any, bool, error) {
	return s.cl.stateOfAny(ctx, kind, key, func(b []byte) (any, error) {
		var v any
		return v, wire.Unmarshal(b, &v)
	})
}

// Synced reports whether a member's replication has no range sync in
// flight on the placement it adopted.
func Synced(s *System) bool { return s.cl.rp != nil && s.cl.rp.settled() }

// HoldReplication makes the member's replication requests (facts, syncs,
// commits) wait until release is called.
func HoldReplication(s *System) (release func()) {
	gate := make(chan struct{})
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return s.cl.handleRepl(ctx, sess, payload)
	})
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// CountFactsRequests counts the requests for its placement facts the
// member answers from now on.
func CountFactsRequests(s *System) (count func() int32) {
	var n atomic.Int32
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		if len(payload) > 0 && payload[0] == laneFacts {
			n.Add(1)
		}
		return s.cl.handleRepl(ctx, sess, payload)
	})
	return n.Load
}

// CountCommits counts the commit messages of kind the member's replica
// receives from now on.
func CountCommits(s *System, kind string) (count func() int32) {
	var n atomic.Int32
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		if len(payload) > 1 && payload[0] == laneReplica {
			if m, err := replica.Decode(payload[1:]); err == nil && m.Op == replica.OpCommit && m.Kind == kind {
				n.Add(1)
			}
		}
		return s.cl.handleRepl(ctx, sess, payload)
	})
	return n.Load
}

// SetSpares sets how many commits in a row may skip a spare replica, and
// the flush delay (spares.go), for the activations the member starts
// from now on.
func SetSpares(s *System, commits int, flush time.Duration) {
	rp := s.cl.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.spares, rp.spareFlush = commits, flush
}

// HostileChain is a call request to kind whose chain claims entries
// empty entries, entries bytes long, as a hostile peer would build it.
func HostileChain(kind string, entries int) []byte {
	b := appendCallReq(nil, &callReq{Op: opCall, Kind: kind, Key: "k", Method: "Go"})
	b = b[:len(b)-1]
	b = binary.AppendUvarint(b, uint64(entries))
	return append(b, make([]byte, entries)...)
}

// RawCall sends payload as a call request from one member to another and
// returns the error its answer decodes to.
func RawCall(ctx context.Context, from, to *System, payload []byte) error {
	sess, err := from.cl.node.Connect(ctx, mux.NodeID(to.cl.self), to.Addr())
	if err != nil {
		return err
	}
	reply, err := sess.Request(ctx, mux.LaneMessage, payload)
	if err != nil {
		return err
	}
	var resp callResp
	if err := decodeCallResp(reply, &resp); err != nil {
		return err
	}
	if resp.Err == nil {
		return nil
	}
	return resp.Err.decode()
}

// Routed is how many live members the ring this member routes
// Replicas(1) kinds by holds.
func Routed(s *System) int { return len(s.cl.view.Load().ring.Members()) }

// Placed is how many members the placement this member adopted holds.
func Placed(s *System) int { return len(placedRing(s.cl.view.Load()).Members()) }

// placedRing is v's placement's ring, empty before the member learned one.
func placedRing(v *view) *ring.Ring {
	if v.pl == nil {
		return emptyRing()
	}
	return v.pl.ring
}

// OwnerOf returns the address of the member via's view gives kind's key
// to ("" when none).
func OwnerOf(via *System, kind, key string) string {
	k := kinds.get(kind)
	v := via.cl.view.Load()
	id, ok := v.ownerOf(k, pointOf(k, key))
	if !ok {
		return ""
	}
	return addrIn(via, v, id)
}

// addrIn is member id's address in via's view v.
func addrIn(via *System, v *view, id ring.NodeID) string {
	if id == via.cl.self {
		return via.Addr()
	}
	return v.addrs[id]
}

// RemoveFromPlacement makes the member learn that the placement removed
// it, as when others saw it dead for RemoveDeadAfter while it was alive.
func RemoveFromPlacement(s *System) {
	a := &s.cl.agree
	a.mu.Lock()
	a.hist.Append([]agreed.Change{{Op: agreed.Remove, ID: s.cl.self}})
	a.layoutsLocked()
	a.mu.Unlock()
	s.cl.refresh()
}

// ReplicasOf returns the addresses of kind's key's replica set on via's
// placement, in ring order: the first live one owns the key.
func ReplicasOf(via *System, kind, key string) []string {
	k := kinds.get(kind)
	v := via.cl.view.Load()
	var out []string
	for _, id := range placedRing(v).Replicas(pointOf(k, key), replicasOf(k)) {
		out = append(out, addrIn(via, v, id))
	}
	return out
}

// DelayReplicationReplies makes the member apply the replication requests
// it receives at once but hold its replies until release is called, as if
// every reply were slow on the network.
func DelayReplicationReplies(s *System) (release func()) {
	gate := make(chan struct{})
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		mux.HandOff(ctx)
		b, err := s.cl.handleRepl(ctx, sess, payload)
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return b, err
	})
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// SlowReplicationReplies makes the member apply the replication requests
// it receives at once and send each reply d later, as if its replies were
// slow on the network; restore puts the plain handler back.
func SlowReplicationReplies(s *System, d time.Duration) (restore func()) {
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		mux.HandOff(ctx)
		b, err := s.cl.handleRepl(ctx, sess, payload)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return b, err
	})
	return func() { s.cl.node.HandleRequests(mux.LaneReplication, s.cl.handleRepl) }
}

// HoldCommitUntilTheNext makes the member hold the next commit of kind it
// receives until the commit after it has arrived and hold has passed, so
// that the later commit is handled first; and makes a commit it cannot
// apply yet wait for its basis up to wait (basisWait).
func HoldCommitUntilTheNext(s *System, kind string, hold, wait time.Duration) (restore func()) {
	rp := s.cl.rp
	rp.mu.Lock()
	rp.basisWait = wait
	rp.mu.Unlock()
	var (
		mu     sync.Mutex
		held   bool
		second = make(chan struct{})
	)
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		if len(payload) > 1 && payload[0] == laneReplica {
			if m, err := replica.Decode(payload[1:]); err == nil && m.Op == replica.OpCommit && m.Kind == kind {
				mu.Lock()
				first := !held
				held = true
				mu.Unlock()
				mux.HandOff(ctx)
				if first {
					select {
					case <-second:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					time.Sleep(hold)
				} else {
					select {
					case <-second:
					default:
						close(second)
					}
				}
			}
		}
		return s.cl.handleRepl(ctx, sess, payload)
	})
	return func() {
		s.cl.node.HandleRequests(mux.LaneReplication, s.cl.handleRepl)
		rp.mu.Lock()
		rp.basisWait = basisWait
		rp.mu.Unlock()
	}
}

// LoseNextCommit makes the member fail the next commit of kind it receives
// without handling it, as if the message were lost; restore puts the plain
// handler back.
func LoseNextCommit(s *System, kind string) (restore func()) {
	var lost atomic.Bool
	s.cl.node.HandleRequests(mux.LaneReplication, func(ctx context.Context, sess *mux.Session, payload []byte) ([]byte, error) {
		if len(payload) > 1 && payload[0] == laneReplica {
			if m, err := replica.Decode(payload[1:]); err == nil && m.Op == replica.OpCommit && m.Kind == kind && lost.CompareAndSwap(false, true) {
				return nil, errors.New("casty test: commit lost")
			}
		}
		return s.cl.handleRepl(ctx, sess, payload)
	})
	return func() { s.cl.node.HandleRequests(mux.LaneReplication, s.cl.handleRepl) }
}

// GossipTableBounds returns the member-table bounds cfg gives the
// membership protocol.
func GossipTableBounds(cfg Config) (table, clients int) {
	g := gossipConfig(cfg.Membership)
	return g.MaxTableSize, g.MaxClientRecords
}

// CutStreamsBeforeStatus makes s close every stream opened to it before
// writing the stream's status, as a member that dies right after
// accepting one would.
func CutStreamsBeforeStatus(s *System) {
	s.cl.node.HandleStreams(func(_ *mux.Session, st *mux.Stream) { st.Close() })
}

// OpenStreamsUncounted makes s open its streams without the credit flag,
// as a node that predates credit frames does: its streams are bounded by
// the mux stream's window alone.
func OpenStreamsUncounted(s *System) { s.cl.uncounted = true }

// LiveRing returns the ring of live members on s's current view.
func LiveRing(s *System) *ring.Ring { return s.cl.view.Load().ring }

// Refresh rebuilds s's view from its gossip table, as a membership event
// does.
func Refresh(s *System) { s.cl.refresh() }

// ConfigWithDefaults is c with every zero field at its default, as a
// system built with c uses it.
func ConfigWithDefaults(c Config) Config { return c.withDefaults() }

package casty

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
)

// The calling side: a call goes to the owner of its key on this node's
// ring (target). When that is this node it runs here with nothing encoded;
// otherwise dispatch encodes a callReq (envelope.go) and sends it as one
// request on the mux message lane, and route retries — only where provably
// nothing ran — when the owner's ring disagrees.

// dest is where a call goes.
type dest struct {
	local bool
	id    ring.NodeID
	addr  string
}

func (cl *cluster) target(k *actor.Kind, key string, at placement) (dest, error) {
	return cl.targetAvoiding(k, key, at, nil)
}

// targetAvoiding is target on the ring without the members in avoid:
// members that refused the call as leaving, whose keys go to the next
// member clockwise (the owner once the leave is adopted).
func (cl *cluster) targetAvoiding(k *actor.Kind, key string, at placement, avoid map[ring.NodeID]bool) (dest, error) {
	v := cl.view.Load()
	if k.Service && at.near != nil {
		// A service Beside an actor: on the member serving that actor.
		k = at.near
	} else if k.Service {
		if !cl.lite {
			return dest{local: true}, nil
		}
		if len(v.members) == 0 {
			return dest{}, fmt.Errorf("%w: no member to serve %s", ErrActorUnavailable, k.Name)
		}
		m := v.members[cl.rr.Add(1)%uint64(len(v.members))]
		id, err := ringParse(m.ID)
		return dest{id: id, addr: m.Addr}, err
	}
	if !at.known {
		at.point = ring.Point(k.Name, key)
	}
	owner, ok := v.ownerAvoiding(k, at.point, avoid)
	if !ok {
		if replicasOf(k) > 1 {
			return dest{}, fmt.Errorf("%w: %s/%s: no replica of it is alive", ErrNoReadQuorum, k.Name, key)
		}
		return dest{}, fmt.Errorf("%w: %s/%s: no full member in the cluster", ErrActorUnavailable, k.Name, key)
	}
	if owner == cl.self {
		return dest{local: true}, nil
	}
	return dest{id: owner, addr: v.addrs[owner]}, nil
}

// reqBufs holds request envelopes for reuse: mux copies a request into
// the connection's queue before Request returns.
var reqBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooledReq = 64 << 10

// routeAttempts is how many owners a call tries when rings disagree. A
// rolling restart moves the ring twice per member (a leave, then a join),
// and an attempt that meets a view in motion waits for the next change
// (awaitChange), so a few attempts carry a call across both moves. A
// refusal that only says a leave is under way costs no attempt (route).
const routeAttempts = 5

// routeSettle is how long a call's wrong-owner and moving refusals cost it
// no attempt: owners that disagree converge as the newer placement spreads
// (pull), but while views move fast (a restart: each gossip event is a
// change awaitChange returns on) five attempts can pass in far less time
// than that takes on a loaded machine. Nothing runs on a refusal.
const routeSettle = 2 * time.Second

// maxRouteReasons bounds the refusals a failed route names.
const maxRouteReasons = 2 * routeAttempts

// dispatch sends a call (or a StateOf) to the key's owner when that is
// another node, and returns its answer. It reports local, doing nothing,
// when this node owns the key: the caller then runs it here, with no
// serialization. encode produces the argument's bytes, at most once.
func (cl *cluster) dispatch(ctx context.Context, k *actor.Kind, key string, at placement, req callReq, encode func(dst []byte) ([]byte, error)) (resp callResp, local bool, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !k.Service {
		at = placementOf(k, key, at)
	}
	// The common case first, with nothing allocated: this node owns the
	// key. (Not for a lite member's service call, which is never local:
	// target would take a turn of the round robin that route then skips.)
	if !k.Service || !cl.lite {
		if d, err := cl.target(k, key, at); err != nil || d.local {
			return resp, err == nil, err
		}
	}
	// Without a deadline of the caller's, the call gets CallTimeout: the
	// owner learns it in the request, and the wait for the answer ends
	// there too (mux's RequestTimeout, with no context or timer allocated).
	deadline, hasDeadline := ctx.Deadline()
	var timeout time.Duration
	if !hasDeadline {
		timeout = cl.sys.cfg.Actors.CallTimeout
		deadline = time.Now().Add(timeout)
	}
	var payload []byte
	var early *earlyWait // the call may be answered by this member's copy (early.go)
	if req.Op == opCall && cl.wantsEarly(k, at.point) {
		req.early, early = cl.early.add()
		defer cl.early.remove(req.early, early)
	}
	buf := reqBufs.Get().(*[]byte)
	defer func() {
		if cap(payload) <= maxPooledReq {
			*buf = payload[:0]
		}
		reqBufs.Put(buf)
	}()
	local, err = cl.route(ctx, deadline, k, key, req.Method, at, func(sess *mux.Session, d dest) (*wireError, error) {
		if payload == nil {
			req.Kind, req.Key, req.Chain = k.Name, key, actor.ChainOf(ctx)
			if !k.Service && len(req.Chain) >= actor.MaxCallChain {
				return nil, fmt.Errorf("%w: calling %s/%s with %d activations already waiting up the chain (at most %d); nothing was sent", ErrCallChainTooLong, k.Name, key, len(req.Chain), actor.MaxCallChain)
			}
			req.trace = cl.sys.tel.outgoing(ctx)
			req.Deadline = deadline.UnixNano()
			req.at = at
			if k.Service {
				req.at = placement{} // a service runs wherever it is called
			}
			payload = appendCallReqHead((*buf)[:0], &req)
			if encode != nil {
				if payload, err = encode(payload); err != nil {
					return nil, fmt.Errorf("casty: %s/%s.%s: encoding the argument: %w", k.Name, key, req.Method, err)
				}
			}
			if max := cl.sys.cfg.Transport.MaxMessage; len(payload) > max {
				return nil, fmt.Errorf("%w: %s/%s.%s: the call encodes to %d bytes, over Config.Transport.MaxMessage (%d); nothing was sent: send large data through Upload", ErrMessageTooLarge, k.Name, key, req.Method, len(payload), max)
			}
		}
		if !hasDeadline {
			if timeout = time.Until(deadline); timeout <= 0 {
				return nil, &actor.TimeoutError{Kind: k.Name, Key: key, Method: req.Method}
			}
		}
		remoteWaits.Add(1)
		var b []byte
		var err error
		if early != nil {
			b, err = requestEarly(ctx, sess, payload, timeout, req.early, early)
		} else {
			b, err = sess.RequestTimeout(ctx, mux.LaneMessage, payload, timeout)
		}
		remoteWaits.Add(-1)
		if t := cl.sys.tel; t != nil {
			t.bytes(len(payload), true)
			t.bytes(len(b), false)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, k, key, req.Method)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, &actor.TimeoutError{Kind: k.Name, Key: key, Method: req.Method}
			}
			if re := (*mux.RemoteError)(nil); errors.As(err, &re) && re.Code == mux.CodeOverloaded {
				// The owner's mux.Config.MaxRequests: refused, nothing ran.
				return nil, fmt.Errorf("%w: %s/%s.%s on %s: %v", ErrOverloaded, k.Name, key, req.Method, d.addr, err)
			}
			// Sent, and the connection or the session failed before the
			// answer: the mux error stays matchable (ErrConnectionLost is
			// indeterminate). mux.ErrSessionClosed (nothing sent) is
			// route's to retry.
			return nil, fmt.Errorf("%w: %s/%s.%s on %s: %w", ErrActorUnavailable, k.Name, key, req.Method, d.addr, err)
		}
		resp = callResp{}
		if err := decodeCallResp(b, &resp); err != nil {
			return nil, fmt.Errorf("%w: malformed reply from %s: %v", ErrActorUnavailable, d.addr, err)
		}
		if resp.Err != nil && (resp.Err.Code == codeWrongOwner || resp.Err.Code == codeMoving || resp.Err.Code == codeLeaving || resp.Err.Code == codeNotApplied || resp.Err.Code == codeUnactivated) {
			return resp.Err, nil
		}
		if resp.Err != nil {
			return nil, resp.Err.decodeMarked()
		}
		return nil, nil
	})
	return resp, local, err
}

// route runs exchange against the key's owner, as this node's ring has
// it. It retries, at most routeAttempts in all, only where provably
// nothing ran: a dial that failed, a session that had failed before the
// call could be queued on it (mux.ErrSessionClosed), or an owner that
// refused the work as not its own (wrong owner, or leaving), or a commit
// the owner was fenced from before any replica took it (codeNotApplied),
// or an owner that could not activate the key for want of a read quorum
// (codeUnactivated) — exchange returns that refusal.
// Between attempts it waits a little for the membership view to move.
// Wrong-owner and moving refusals cost no attempt for the call's first
// routeSettle, while the owners' placements converge. It
// reports local, without calling exchange, when this node owns the key.
// Calls and stream opens both route through here.
//
// Once a member has refused the call as leaving, a wrong-owner refusal
// costs no attempt: the leaver refuses from the moment it begins to close,
// but announces LEFT only after its drain (shutdown), and until the next
// member clockwise adopts that record it refuses the leaver's keys as not
// its own. That ends by itself, however long the drain takes, so the call
// waits for it as long as it has time: until ctx ends or deadline (the
// call's own, or CallTimeout's) passes.
func (cl *cluster) route(ctx context.Context, deadline time.Time, k *actor.Kind, key, method string, at placement,
	exchange func(sess *mux.Session, d dest) (refused *wireError, err error)) (local bool, err error) {
	var why []string
	var last, unactivated *wireError
	var avoid map[ring.NodeID]bool // members that refused the call as leaving, or unactivated
	leaves := false                // a member refused it as leaving
	tries := 0                     // exchanges and dials, refused or failed
	settle := time.Now().Add(routeSettle)
	for attempts := 0; attempts < routeAttempts; {
		tries++
		if cl.closed.Load() {
			return false, fmt.Errorf("%w: system is closed", ErrActorUnavailable)
		}
		changed := cl.changes()
		d, err := cl.targetAvoiding(k, key, at, avoid)
		if err != nil {
			if unactivated != nil {
				return false, unactivated.decode()
			}
			return false, err
		}
		if d.local {
			return true, nil
		}
		sess, ok := cl.node.Session(mux.NodeID(d.id))
		if !ok {
			sess, err = cl.dialOwner(ctx, k, key, at, d, changed)
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctxError(ctx, k, key, method)
			}
			// Nothing was sent: safe to retry once the view moves.
			cl.warnNet("casty: dialing a key's owner failed", d.addr, err)
			why = because(why, fmt.Sprintf("dial %s: %v", d.addr, err))
			attempts++
			cl.awaitChange(ctx, changed)
			continue
		}
		if !sess.Member() {
			// On the ring by gossip, but its connection proved no member
			// credential (a lite client claiming more): it gets no calls.
			// Nothing was sent.
			why = because(why, fmt.Sprintf("%s did not prove the member credential", d.addr))
			attempts++
			cl.awaitChange(ctx, changed)
			continue
		}
		refused, err := exchange(sess, d)
		if err != nil && errors.Is(err, mux.ErrSessionClosed) {
			// The session had failed before the call could be queued:
			// nothing was sent. Once the node has dropped it, the next
			// attempt dials again (its connection may be all that died)
			// or, the view having moved, goes to the key's next owner.
			why = because(why, fmt.Sprintf("%s: %v", d.addr, err))
			attempts++
			cl.awaitDropped(ctx, d.id, sess)
			continue
		}
		if refused != nil {
			last = refused
			why = because(why, refused.Message)
			if refused.Code == codeLeaving || refused.Code == codeUnactivated {
				// A leaver hands its keys to the next member clockwise:
				// go there rather than wait for this member's view to
				// drop it. That member refuses (wrong owner) until it
				// has adopted the leave; nothing runs either way.
				//
				// An owner that reached no read quorum of the key's
				// replicas may be cut off from them while this node
				// still reaches it (a lite member bridging a partition):
				// the next replica, on the side that holds the quorum,
				// serves the key once its members have seen the owner
				// die (gossip/SPEC.md, "Reachability decides routing").
				if avoid == nil {
					avoid = map[ring.NodeID]bool{}
				}
				avoid[d.id] = true
				if refused.Code == codeLeaving {
					leaves = true
				} else {
					unactivated = refused
				}
				attempts++
				continue
			}
			disagree := refused.Code == codeWrongOwner || refused.Code == codeMoving
			if disagree {
				// The two placements may differ: the newer one wins
				// (agree.go, pull).
				cl.pull(d.id, d.addr)
			}
			if refused.Code == codeWrongOwner && leaves || disagree && time.Now().Before(settle) {
				// The leave is under way, or the call is young: wait
				// for the views to agree (see above).
				if !time.Now().Before(deadline) {
					break
				}
				cl.awaitChangeUntil(ctx, changed, deadline)
				if ctx.Err() != nil {
					return false, ctxError(ctx, k, key, method)
				}
				continue
			}
			attempts++
			cl.awaitChange(ctx, changed)
			continue
		}
		return false, err
	}
	if last != nil && last.Code == codeNotApplied {
		return false, last.decode()
	}
	if unactivated != nil {
		// The owner could not reach a quorum and nobody else took the
		// key: as definite as the owner's own failure.
		return false, unactivated.decode()
	}
	return false, fmt.Errorf("%w: %s/%s: owners disagree after %d attempts: %v", ErrActorUnavailable, k.Name, key, tries, why)
}

// because adds a refusal to the reasons a route names, keeping the last
// maxRouteReasons.
func because(why []string, reason string) []string {
	if len(why) == maxRouteReasons {
		why = append(why[:0], why[1:]...)
	}
	return append(why, reason)
}

// dialOwner connects to d, the key's owner on the view whose change
// channel is changed. The caller stops waiting as soon as the view moves
// the key to another member: a member whose process is stopped, or whose
// host vanished, still completes TCP connects in its kernel (or times out
// on them) but never the handshake, and its neighbours suspecting it — the
// view moving — is the first sign. The caller then retries on the new
// owner, as after any failed dial (nothing was sent). The dial itself goes
// on, bounded by mux's connect and handshake timeouts and ended by Close:
// a handshake abandoned half way would close a connection its peer may
// already use (the session to a peer is shared, both ways).
func (cl *cluster) dialOwner(ctx context.Context, k *actor.Kind, key string, at placement, d dest, changed <-chan struct{}) (*mux.Session, error) {
	type dialed struct {
		s   *mux.Session
		err error
	}
	done := make(chan dialed, 1)
	go func() {
		s, err := cl.node.Connect(context.WithoutCancel(ctx), mux.NodeID(d.id), d.addr)
		done <- dialed{s, err}
	}()
	for {
		select {
		case r := <-done:
			return r.s, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
			if nd, err := cl.target(k, key, at); err != nil || nd.local || nd.id != d.id {
				return nil, fmt.Errorf("the key moved from %s while dialling it", d.addr)
			}
			changed = cl.changes()
		}
	}
}

// awaitDropped waits, briefly, until the node no longer hands out sess
// for id: a failed session leaves the node's table a moment after it
// fails.
func (cl *cluster) awaitDropped(ctx context.Context, id ring.NodeID, sess *mux.Session) {
	for range 100 {
		if s, ok := cl.node.Session(mux.NodeID(id)); !ok || s != sess || ctx.Err() != nil {
			return
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// awaitChange waits a little for the membership view to move.
func (cl *cluster) awaitChange(ctx context.Context, changed <-chan struct{}) {
	cl.awaitChangeUntil(ctx, changed, time.Time{})
}

// awaitChangeUntil is awaitChange, never waiting past until (when set).
func (cl *cluster) awaitChangeUntil(ctx context.Context, changed <-chan struct{}, until time.Time) {
	d := 250 * time.Millisecond
	if !until.IsZero() {
		d = min(d, time.Until(until))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
}

func ctxError(ctx context.Context, k *actor.Kind, key, method string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &actor.TimeoutError{Kind: k.Name, Key: key, Method: method}
	}
	return ctx.Err()
}

func ringParse(s string) (ring.NodeID, error) { return ring.ParseNodeID(s) }

// remoteWaits counts this process's callers waiting for another node's
// answer: the host's Config.ExternalWaits.
var remoteWaits atomic.Int32

package casty

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// Early answers (replica/SPEC.md, "Early answers"). A call to a replicated
// actor made from a member that is one of the key's replicas carries a tag
// (callReq.early). The owner puts the call's answer, behind that tag, on
// the commit it sends to the caller's member when that member's vote is
// the one the write quorum still needs (replica.Session.CommitAnswering);
// the caller's member, once its copy has published the commit as a voter
// (replica.Decides), hands the answer to the waiting call. A
// Read(Majority) call that changed nothing is answered the same way, on
// the confirm (replica.Session.ConfirmAnswering), once the caller's copy
// confirmed the owner's ballot and holds nothing newer than its state. The
// caller has its answer after one round trip instead of two. When the
// owner sees that member's vote decide the round (replica.Decides, as
// that member judged it before it voted), it knows the answer was handed
// on and sends no reply of its own (mux.Answered); the call, once it
// has the early answer, forgets its request (mux.AsyncRequest.Forget).
// Otherwise the owner's own answer follows and is dropped. Whatever goes
// wrong on the early path, the call waits for the owner's answer as
// before.

// maxEarlyAnswer bounds the answer a commit carries: a larger one travels
// only in the owner's reply, rather than twice.
const maxEarlyAnswer = 64 << 10

// earlyReply is a waiting call's outcome: the owner's reply (or the error
// that ended its request), or the answer the owner's commit carried.
type earlyReply struct {
	b     []byte
	err   error
	early bool // the answer a commit carried
}

// earlyWait is one call waiting for either. They are pooled: state is
// the call's tag shifted left, its low bit set once an outcome was
// delivered, so that an outcome meant for an earlier call (the owner's
// late reply to a forgotten request, a late early answer) finds another
// tag and is dropped. A wait goes back to the pool only when its call
// received the outcome (took): then no send to ch can still come.
type earlyWait struct {
	ch    chan earlyReply // cap 1: the first outcome
	state atomic.Uint64
	took  bool // the call received its outcome from ch (the call's own)
}

var earlyWaitPool = sync.Pool{New: func() any { return &earlyWait{ch: make(chan earlyReply, 1)} }}

// arm readies w for tag's call (again, after a refusal: see requestEarly).
func (w *earlyWait) arm(tag uint64) {
	w.took = false
	w.state.Store(tag << 1)
}

// claim reports whether the caller may send tag's call its outcome: none
// was delivered yet and w serves that call. One claim per call succeeds.
func (w *earlyWait) claim(tag uint64) bool {
	return w.state.CompareAndSwap(tag<<1, tag<<1|1)
}

// put delivers r to tag's call unless an outcome was delivered already or
// w serves another call; it never blocks.
func (w *earlyWait) put(tag uint64, r earlyReply) {
	if w.claim(tag) {
		w.ch <- r
	}
}

// earlyWaits is a member's calls waiting for an early answer, by tag.
type earlyWaits struct {
	mu    sync.Mutex
	last  uint64
	waits map[uint64]*earlyWait
}

// add registers a call and returns its tag (never 0) and its wait.
func (e *earlyWaits) add() (uint64, *earlyWait) {
	w := earlyWaitPool.Get().(*earlyWait)
	e.mu.Lock()
	e.last++
	tag := e.last
	if e.waits == nil {
		e.waits = map[uint64]*earlyWait{}
	}
	e.waits[tag] = w
	e.mu.Unlock()
	w.arm(tag)
	return tag, w
}

// remove forgets tag's call, whose wait is w, and pools w if the call
// took its outcome.
func (e *earlyWaits) remove(tag uint64, w *earlyWait) {
	e.mu.Lock()
	delete(e.waits, tag)
	e.mu.Unlock()
	if w.took {
		earlyWaitPool.Put(w)
	}
}

// deliver hands answer to tag's call, if it still waits, and counts it in
// delivered before the call can return.
func (e *earlyWaits) deliver(tag uint64, answer []byte, delivered *atomic.Int64) {
	e.mu.Lock()
	w := e.waits[tag]
	e.mu.Unlock()
	if w == nil || !w.claim(tag) {
		return
	}
	delivered.Add(1)
	w.ch <- earlyReply{b: answer, early: true}
}

// wantsEarly reports whether a call of k's key at point, made from this
// member, may be answered early: k is replicated and this member is one
// of the key's replicas on its placement (not the owner: that call runs
// here).
func (cl *cluster) wantsEarly(k *actor.Kind, point uint64) bool {
	n := replicasOf(k)
	if n <= 1 || cl.rp == nil || k.Service {
		return false
	}
	v := cl.view.Load()
	if v.pl == nil {
		return false
	}
	var buf [8]ring.NodeID
	for _, id := range v.pl.ring.AppendReplicas(buf[:0], point, n) {
		if id == cl.self {
			return true
		}
	}
	return false
}

// requestEarly sends a call that carries w's tag and returns the first of
// the owner's reply and the answer the owner's commit brought this member
// (early). After an early answer the request is forgotten, not cancelled:
// cancelling it would cancel the call's context on the owner, whose
// commit round still runs under it. w must hold no outcome: a retry
// after a refusal (which ran nothing, so no commit can carry an answer)
// rearms it.
func requestEarly(ctx context.Context, sess *mux.Session, payload []byte, timeout time.Duration, tag uint64, w *earlyWait) ([]byte, error) {
	w.arm(tag)
	if d, ok := ctx.Deadline(); ok && timeout == 0 {
		// The request may outlive this wait (an early answer does not
		// cancel it): give it the call's deadline, so that mux's sweeper
		// frees it even if the owner never answers.
		timeout = max(time.Until(d), time.Millisecond)
	}
	req := sess.RequestAsync(ctx, mux.LaneMessage, payload, timeout, func(b []byte, err error) {
		w.put(tag, earlyReply{b: b, err: err})
	})
	select {
	case r := <-w.ch:
		w.took = true
		if r.early {
			// The owner sends no reply once it saw this member's vote
			// decide, and otherwise one this call would only drop:
			// nothing is left to wait for.
			req.Forget()
		}
		return r.b, r.err
	case <-ctx.Done():
		req.Cancel()
		return nil, ctx.Err()
	}
}

// earlyAnswer is what a served call needs for its commit to carry its
// answer: the caller's member, its tag, and how to encode the reply from
// the handler's result (set once the handler ran).
type earlyAnswer struct {
	to    ring.NodeID
	tag   uint64
	reply replier // nil: the caller wants no early answer
	used  bool
	// resp is the reply as encoded for the commit (set with used): the
	// owner's own reply is the same bytes, not encoded a second time.
	resp callResp
}

// replier encodes a served call's reply envelope, as the owner sends it,
// at the end of dst (a failure to encode the result is the reply's Err).
type replier interface {
	appendReply(dst []byte) callResp
}

// answer is the reply to send for the served call x once its handler
// ran: the one encoded for its commit, else r's.
func (x *servedCtx) answer(r replier) callResp {
	if x.early.used {
		return x.early.resp
	}
	return r.appendReply(make([]byte, 0, 32))
}

// earlyFor returns the answer the commit d of act's handler, run with ctx,
// may carry to the caller's member (or, d empty, the read's confirm), and
// that member: none unless the call came from a member of the key's
// replica set that asked for it, ctx is that call's own handler (not a
// call it made in turn), the handler ended plainly (actor.Settled: no
// answer error, no emits), and d's pages and the answer fit room (the page
// bytes one commit message may carry). The answer is the caller's tag
// and the reply envelope, in one buffer whose envelope part is the
// owner's reply too (servedCtx.answer).
func earlyFor(ctx context.Context, act *actor.Activation, failed bool, d *pager.Delta, room int) (replica.NodeID, []byte) {
	if failed {
		return replica.NodeID{}, nil
	}
	x, _ := ctx.Value(servedKey{}).(*servedCtx)
	if x == nil || x.early.reply == nil || x.early.used || x.k != act.Kind() || x.key != act.Key() || !actor.Settled(ctx) {
		return replica.NodeID{}, nil
	}
	x.early.used = true
	answer := binary.BigEndian.AppendUint64(make([]byte, 0, 64), x.early.tag)
	r := x.early.reply.appendReply(answer)
	if r.Err != nil {
		answer = appendCallResp(answer, &r)
	} else {
		answer = r.enc
		r.enc = r.enc[8:]
	}
	x.early.resp = r
	for _, p := range d.Pages {
		room -= len(p.Key) + len(p.Data)
	}
	if len(answer)-8 > min(maxEarlyAnswer, room) {
		return replica.NodeID{}, nil
	}
	return replica.NodeID(x.early.to), answer
}

// answerTaken records, on the request of the served call ctx belongs to,
// that the caller's member handed the answer its commit carried to the
// call (replica.Decides held for that member's reply): the owner sends no
// reply, which the call, having forgotten its request, would drop.
func (r *replicator) answerTaken(ctx context.Context) {
	if x, _ := ctx.Value(servedKey{}).(*servedCtx); x != nil && x.early.used && x.early.reply != nil && mux.Answered(x.Context) {
		r.repliesWithheld.Add(1)
	}
}

// answerEarly hands the answer that m, a commit or a confirm, carries to
// the call waiting here, when this member's reply decides m's round.
func (r *replicator) answerEarly(m, reply *replica.Msg) {
	if len(m.Answer) <= 8 || !replica.Decides(m, reply) {
		return
	}
	r.cl.early.deliver(binary.BigEndian.Uint64(m.Answer), m.Answer[8:], &r.earlyAnswers)
}

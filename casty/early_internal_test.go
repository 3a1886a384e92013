package casty

import (
	"sync/atomic"
	"testing"

	"github.com/casty-go/casty/replica"
)

// The commit that carries a call's answer is sent before the others,
// wherever the caller's member sits in the key's set: each send is a
// write, and the caller waits for that one message alone.
func TestTheAnswerCarryingCommitIsSentFirst(t *testing.T) {
	caller, third := replica.NodeID{2}, replica.NodeID{3}
	for _, order := range [][]replica.NodeID{{caller, third}, {third, caller}} {
		var outs []replica.Out
		for _, id := range order {
			m := &replica.Msg{Op: replica.OpCommit}
			if id == caller {
				m.Answer = []byte("answer")
			}
			outs = append(outs, replica.Out{To: id, Msg: m})
		}
		got := answerFirst(outs)
		if len(got) != 2 || got[0].To != caller || got[1].To != third {
			t.Fatalf("from %v: sent to %v then %v, want the caller's member first", order, got[0].To, got[1].To)
		}
	}
	// Without an answer the order is the set's.
	outs := []replica.Out{{To: third, Msg: &replica.Msg{}}, {To: caller, Msg: &replica.Msg{}}}
	if got := answerFirst(outs); got[0].To != third {
		t.Fatalf("no answer: %v sent first, want the set's order", got[0].To)
	}
}

// A call's early wait is reused once the call took its outcome, and an
// outcome meant for the call that used it before — the owner's late reply
// to a forgotten request, or a late early answer — is dropped, not
// handed to the call that uses it now.
func TestAReusedEarlyWaitDropsAnEarlierCallsOutcome(t *testing.T) {
	var e earlyWaits
	var delivered atomic.Int64
	first, w := e.add()
	e.deliver(first, []byte("answer"), &delivered)
	if r := <-w.ch; !r.early || string(r.b) != "answer" {
		t.Fatalf("first call's outcome %+v, want its early answer", r)
	}
	w.took = true
	w.put(first, earlyReply{b: []byte("owner's reply")}) // after the early answer
	if len(w.ch) != 0 {
		t.Fatal("a second outcome for the first call was delivered")
	}
	e.remove(first, w)
	// The wait serves the next call (the pool may hand out another: arm
	// this one as add would).
	second := first + 1
	w.arm(second)
	w.put(first, earlyReply{b: []byte("late reply")})
	e.deliver(first, []byte("late answer"), &delivered)
	if len(w.ch) != 0 {
		t.Fatalf("the first call's late outcome reached the second call: %+v", <-w.ch)
	}
	w.put(second, earlyReply{b: []byte("second")})
	if r := <-w.ch; string(r.b) != "second" || delivered.Load() != 1 {
		t.Fatalf("second call's outcome %+v (%d delivered early), want its own reply and 1", r, delivered.Load())
	}
}

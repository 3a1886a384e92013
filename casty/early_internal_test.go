package casty

import (
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

// A round goes back to its pool only when nothing can touch it any more:
// its run has ended it and every request it sent has had its reply (or
// failure) delivered — a reply that comes after the run decided still
// reaches the round (lateAck), so a round recycled at its end would hand
// that reply to whichever round took it next.
func TestARoundIsRecycledOnlyAfterItsLastReply(t *testing.T) {
	rd := newRound()
	rd.expect()
	rd.expect()
	rd.put(reply{from: replica.NodeID{2}})
	rd.end()
	if !rd.pooled || rd.refs != 1 || !rd.ended {
		t.Fatalf("ended with a reply still to come: pooled %v, refs %d, ended %v; want it kept", rd.pooled, rd.refs, rd.ended)
	}
	rd.put(reply{from: replica.NodeID{3}}) // late: after the round ended
	if rd.pooled || rd.refs != 0 || rd.ended || len(rd.replies) != 0 {
		t.Fatalf("after its last reply: pooled %v, refs %d, ended %v, %d replies; want it recycled and cleared", rd.pooled, rd.refs, rd.ended, len(rd.replies))
	}
	// A round whose replies all came before its end is recycled by end.
	rd = newRound()
	rd.expect()
	rd.put(reply{from: replica.NodeID{2}})
	if !rd.pooled {
		t.Fatal("recycled while its run still holds it")
	}
	rd.end()
	if rd.pooled {
		t.Fatal("not recycled at its end with every reply in")
	}
}

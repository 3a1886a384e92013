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

package casty

import (
	"log/slog"
	"testing"

	agreed "github.com/casty-go/casty/casty/internal/placement"
	"github.com/casty-go/casty/ring"
)

// A member serves the replication lane before its gossip agent starts, so
// a member that is ahead can make it pull the placement's history then:
// the history is merged and adopted at the first refresh once gossip
// runs. Before, the merge's refresh read the agent unset (a data race,
// and a nil dereference that took the process down).
func TestAHistoryMergedBeforeGossipStartsWaitsForIt(t *testing.T) {
	cl := &cluster{logger: slog.New(slog.DiscardHandler), self: ring.NodeID{2}}
	cl.agree.init(cl.self, false)
	defer cl.agree.close()
	h := agreed.Found(ring.NodeID{1})
	h.Append([]agreed.Change{{Op: agreed.Join, ID: ring.NodeID{3}}})
	cl.merge(h.Log())
	if pl := cl.latest(); pl == nil || pl.version != 2 {
		t.Fatalf("the history pulled before gossip started was not merged: %+v", pl)
	}
	if cl.view.Load() != nil {
		t.Fatal("a view was built before gossip started")
	}
}

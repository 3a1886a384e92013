package casty

import (
	"context"
	"time"

	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
)

// Handoff on a graceful Close (replica/SPEC.md, "Graceful leave").
//
// A member that leaves is removed from the placement by its own LEFT
// record. The members that enter its ranges then sync them from each
// range's previous replica set, which includes the leaver: a sync needs
// SyncNeed(n, w) = n-w+1 members of that set. With Write(One) that is the
// whole set — an acknowledged write may sit on the leaver alone — and with
// any quorum it is more than the members that stayed once one of them is
// down. So the leaver does not go at once: it adopts its own removal as it
// announces LEFT (cluster.shutdown; still on the placement with itself it
// would answer those syncs lagging, which counts for nothing), and keeps
// answering on the replication lane — the other members still reach it at
// the address its LEFT record carries (view.left) — and asks every other
// member of the placement, until each says it has adopted a placement
// without the leaver and finished its syncs, or Config.Replication.HandoffTimeout (and
// the Close ctx) runs out. The handoff pushes nothing: the members taking
// over pull what they need through the sync the safety argument already
// covers, so a handoff is safe however it ends, and only whether the syncs
// can finish depends on the leaver staying: once its process is gone the
// syncs no longer ask it but still count its copies (syncPeers), so one
// it did not finish waits for an operator's AcceptLoss rather than sync
// without what only the leaver held. (Before it, the drain settled
// each of the leaver's activations with its replica set: spares.go,
// settle.)

// laneSettled asks a member whether it has taken over from a leaver: the
// leaver's node id follows; the answer is laneSettled and one byte, 1 when
// the member's placement no longer holds the leaver and no sync of its is
// in flight.
const laneSettled byte = 'S'

// handoffPoll is how often a leaver asks the members still taking over.
const handoffPoll = 20 * time.Millisecond

// takenOver answers a leaver's laneSettled question.
func (r *replicator) takenOver(leaver ring.NodeID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pl != nil && !r.pl.placed(leaver) && r.pending == 0
}

// handoffPeers lists the members a leaver waits for: the other members of
// its placement that are alive now. Nil when there is nothing to hand off
// (no replicated kind, nothing held, or not placed).
func (r *replicator) handoffPeers() map[ring.NodeID]string {
	v := r.cl.view.Load()
	r.mu.Lock()
	pl, held := r.pl, r.rep.Keys()
	r.mu.Unlock()
	if pl == nil || !pl.placed(r.cl.self) || held == 0 || len(kinds.replicated()) == 0 {
		return nil
	}
	peers := map[ring.NodeID]string{}
	for _, id := range pl.ring.Members() {
		if addr := v.addrs[id]; id != r.cl.self && addr != "" {
			peers[id] = addr
		}
	}
	return peers
}

// handoff waits, after this member announced LEFT, until every member of
// peers has taken over (takenOver) or ctx ends; a member that cannot be
// reached is not waited for. It reports how many members it gave up on.
func (r *replicator) handoff(ctx context.Context, peers map[ring.NodeID]string) (unconfirmed int) {
	ask := append([]byte{laneSettled}, r.cl.self[:]...)
	tick := time.NewTicker(handoffPoll)
	defer tick.Stop()
	for len(peers) > 0 {
		for id, addr := range peers {
			sess, err := r.cl.node.Connect(ctx, mux.NodeID(id), addr)
			if err != nil {
				if ctx.Err() != nil {
					return len(peers)
				}
				delete(peers, id) // gone: it takes nothing over
				continue
			}
			resp, err := sess.Request(ctx, mux.LaneReplication, ask)
			if err == nil && len(resp) == 2 && resp[0] == laneSettled && resp[1] == 1 {
				delete(peers, id)
			}
		}
		if len(peers) == 0 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return len(peers)
		}
	}
	return 0
}

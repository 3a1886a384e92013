// Package gossip is Casty's leaderless membership: every node keeps a full
// member table, HyParView maintains a partial-view overlay, Plumtree
// broadcasts membership changes over it, SWIM-style suspicion with
// incarnation refutation decides deaths, and anti-entropy repairs whatever
// the broadcast missed. No leader, no coordinator.
//
// # Layers
//
// The protocol is a pure state machine, the Node of gossip/internal/core,
// composed of the member table, HyParView, Plumtree, suspicion and
// anti-entropy, one file each. A Node never reads the clock, never starts a
// goroutine and never touches a socket: Start, Step (a received message),
// LinkDown (a monitored link failed), Tick (timers), Leave and Reannounce
// take the current time and return an Output — messages to send, links to
// open or close, member events, and when to tick next. The simulator in
// gossip/sim drives hundreds of Nodes deterministically from one seed. The
// core, its message codec (format in SPEC.md) and its table merge are
// internal: this package names only what a user needs.
//
// Agent (runtime.go) runs one Node on one goroutine over a Transport
// (transport.go), the seam to the network. MemNetwork/MemTransport
// (memtransport.go) is an in-memory network with partitions, drops and
// crashes for tests of this and other modules; gossip/muxtransport carries
// frames on the control lane of a mux session, one per node pair.
//
// # What it guarantees
//
//   - Records merge by a total order: higher incarnation wins,
//     on a tie the more severe status (ALIVE < SUSPECT < LEFT < DEAD). The
//     merge is commutative, associative and idempotent, so duplicated,
//     late or reordered gossip converges to the same table everywhere
//     (once admitted: see the admission rules below).
//   - Suspicion originates from the failure of a monitored overlay link
//     (a TransportEvent with Failure set, about an active neighbour) or of
//     a dial of a member, or from another node answering a probe at a
//     member's address (a restart there with a new identity), never from
//     a data-path connection. A suspect that hears of it refutes with a higher
//     incarnation; a suspicion unrefuted for SuspicionTimeout becomes DEAD.
//     A node that learns it was declared DEAD refutes and rejoins.
//   - Liveness is proven by members, not heard: a record raising a held
//     member's incarnation (a refutation) is applied at once only when the
//     member itself sends it, or a member relays it that holds it; any
//     other copy (a lite client's relay, a stranger's, one over a
//     connection marked TransportEvent.ClientOnly) waits for this node's
//     own nonce probe of the member. So neither a lite client bridging a
//     partition nor a forger keeps a cut or crashed member alive (SPEC.md,
//     Failure detection).
//   - A graceful Leave announces LEFT with no suspicion window.
//   - LEFT and DEAD records stay as tombstones for TombstoneTTL, so a late
//     rumour cannot resurrect them; anti-entropy carries their age.
//   - Anti-entropy runs on every new link and every AntiEntropyInterval
//     (digest first, full tables when they differ); it is the joiner's
//     bootstrap, and it probes tombstoned members so healed partitions
//     merge and a live member wrongly named LEFT hears of it.
//   - A member enters the table (EventJoined, Members) only once this node
//     reached it directly: a record learned from a rumour or a table
//     exchange is held until the member answers a PING carrying a random
//     nonce, from the recorded id, address and role; an unanswered one is
//     dropped within 3 × NeighborTimeout. A LEFT for a live member is
//     adopted only when a probe of the member fails or it answers that it
//     is leaving; a DEAD for a live member starts a suspicion it can
//     refute, and becomes DEAD only after SuspicionTimeout/2 unrefuted or
//     a failed probe. A sender on the network therefore cannot add members to the
//     table by naming them, nor remove a live one it does not silence
//     (SPEC.md, Admission, states the rules and their limits).
//   - The table, with the records waiting for a probe, holds at most
//     Config.MaxTableSize records; beyond that new unverified records are
//     dropped. Lite clients' records among them (tombstones included) are
//     at most Config.MaxClientRecords (a quarter of the table by
//     default), so the rest stays for members.
//   - Malformed, forged or stale input is dropped with a log line: it
//     never panics and never corrupts the table.
//
// # What the caller must do
//
// Give every node a unique, non-zero NodeID and an address the others can
// dial. Use one Config for the whole cluster (DefaultConfig holds the
// defaults, each documented on its Config field). With Agent: pick a
// Transport, call Start, read Members or Subscribe, and end with Leave
// (graceful) or Close. A Transport
// of your own must keep the links it is asked to Monitor and report their
// failures, and only real ones: that report is the only source of
// suspicion.
//
// # On its own
//
// An Agent over any Transport is a leaderless membership service for
// programs other than Casty; gossip/muxtransport carries it over mux. The
// module is released together with the Casty runtime (actor, replica,
// casty, cmd), at the same version; see RELEASING.md at the repository
// root.
package gossip

// Package replica is Casty's replication protocol: quorum commits of an
// actor's paged state, fencing of stale owners by ballots, activation from
// replicas, linearizable reads on request, and the range sync that lets a
// member that enters a replica set (a join, a restart under a new id, a
// removal) count toward quorums only once it holds what the set held.
//
// Everything here is a pure state machine — no sockets, no clock, no
// goroutine — so a seeded simulator (replica/sim) can drive thousands of
// runs with crashes, partitions and membership changes and check every
// history with porcupine. casty's runtime feeds the machines with messages
// from mux's replication lane, ballots from the node's hybrid logical
// clock, and placements from gossip.
//
// # What it guarantees
//
// A commit acknowledged by W replicas (W counted against the configured R)
// is never lost: every later activation adopts it or a state built on it,
// through owner crashes, replica crashes, minority partitions, members
// joining or restarting with new ids, graceful leaves, duplicated and
// reordered messages, and clock skew. A failed commit is indeterminate
// (Result.Applied) unless the owner's own copy refused it. SPEC.md gives the
// messages and the argument.
//
// # The pieces
//
//   - Replica is one node's copies: it answers prepare, commit, fetch,
//     confirm and sync under the ballot rule, the placement version rule and
//     the pager's basis rule.
//   - Session is one activation's owner side: Open (prepare, fetch,
//     install), then Commit or Confirm per handler. Requests come out as Out
//     values; replies go back through Step; Expire ends a round at its
//     deadline; Results says how rounds ended. CommitAnswering and
//     ConfirmAnswering put a call's answer on the message to the caller's
//     member, which may answer once its own reply decides (Decides); with
//     Set.Spares a hot actor's commits skip the replica its quorum does not
//     need and later send it one delta of what it missed (SPEC.md, "Early
//     answers" and "Spare copies").
//   - Sync pulls a range a member just entered from the range's previous
//     replica set.
//
// # What the caller must do
//
// Serialize calls on one node's Replica and its Sessions (one lock or one
// goroutine); take each activation's ballot from hlc.Clock.Now after
// observing every ballot, stamp and promise received; compute replica sets
// from a placement that changes only on joins, leaves and decided removals,
// never on suspicion; run a Sync for every range entered when adopting a new
// placement, before serving it; never let a process that lost its memory
// come back under its old id. With Set.Spares: call Flush while Owed is
// positive (when a round is slow to decide, and soon after the actor's
// last commit), mark with Quiet the commits of an actor that is not hot,
// and feed Step the acknowledgements that arrive after their round ended
// at least until Holds reports the member's copy known.
package replica

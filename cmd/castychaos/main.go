// Command castychaos runs a casty cluster of member processes on
// 127.0.0.x, drives workloads at it through a lite member while a nemesis
// kills, pauses, partitions, closes and skews the members, and checks
// that nothing acknowledged was lost.
//
//	castychaos -duration 30s -members 5 -replicas 3 -seed 42
//	castychaos -workload register,counter -nemesis kill
//	castychaos -nemesis skew,kill,partition -max-drift 2s
//	castychaos -duration 40s -nemesis minority -hold 6s..9s -seed 1
//	castychaos -duration 40s -workload cset,ccounter,cqueue,clock,cregister -seed 1
//
// Workloads (-workload, comma-separated; "all", the default, selects the
// first four, "collections" the five collection workloads):
//
//   - register: reads, writes and compare-and-sets on -registers
//     registers (default 4), every call recorded and the history checked
//     for linearizability with porcupine (package castytest), each
//     register's on its own within 60 s: a long run needs more registers
//     for its history to stay checkable. A share of the operations (-relay,
//     default 0.5) runs through a member (the Relay service) instead of
//     the lite member, so that replicas make calls too: theirs can be
//     answered by their own copy (replica/SPEC.md, "Early answers"), which
//     the summary counts.
//   - set: adds of unique elements to grow-only sets; every acknowledged
//     add must be present at the end.
//   - counter: increments; the final value must lie within
//     [acknowledged, acknowledged + indeterminate].
//   - ledger: transfers between the accounts of one actor; the total
//     never changes, and the transfers the ledger counts match the
//     acknowledged ones.
//
// The collection workloads drive the collections package (Set, Counter,
// Queue, Lock, Register) from the lite member; their shards are ordinary
// replicated actors on the members, with -replicas copies and majority
// writes. A member serves collections because its program imports the
// package (member.go).
//
//   - cset: adds of unique elements to a collections.Set[int64] (32
//     shards); every acknowledged add must be Contained at the end, and
//     Items must list nothing no client tried to add.
//   - ccounter: Add(1) on a collections.Counter (32 stripes); the final
//     Get must lie within [acknowledged, acknowledged + indeterminate].
//   - cqueue: Offers of unique values to a collections.Queue[int64] (TTL
//     5 s), an Offer repeated (up to twice) while its outcome is
//     indeterminate, and Takes with a 1 s ctx and Polls; at the end the
//     rest is drained (again after the TTL if an acknowledged value is
//     still unseen). Every acknowledged value must have been taken,
//     polled or drained, except at most as many as the removals of
//     unknown outcome may have taken unseen (indeterminate polls and
//     drains, failed takes: queue.go and the package doc, "Delivery");
//     no value may be seen more often than Offers of it may have
//     succeeded (values seen twice because an Offer was repeated are
//     counted apart), and none that nobody offered.
//   - clock: Lock.Do on a collections.Lock (lease TTL 1 s), the work
//     writing its fencing token to a resource in the controller at its
//     start and end, one in ten holding the lock past the TTL without
//     watching its ctx. The resource refuses a token lower than the
//     highest it saw. Tokens accepted must strictly increase from holder
//     to holder, no two holders' accepted writes may interleave, a holder
//     whose Do reported nothing lost must never be refused (one told
//     ErrLeaseLost may be: fencing at work, counted), and a last Lock
//     after the run must get the greatest token.
//   - cregister: reads, Sets and CompareAndSwaps on -registers
//     collections.Register[int64]s read with Read(casty.Majority), the
//     history checked with porcupine as the register workload's is.
//
// Nemeses (-nemesis, comma-separated, default all; "none" for none):
//
//   - kill: SIGKILL a member, restart it (a new node identity) after the
//     hold. The next kill waits until the members report every copy
//     re-replicated (a second crash before that would be a double
//     failure, beyond what Replicas(3) survives without AcceptLoss); a
//     round that would kill sooner logs "kill deferred".
//   - pause: SIGSTOP a member, SIGCONT after the hold.
//   - partition: cut 1 to a minority of members off the other members,
//     both ways; the lite member (the clients) keeps reaching both sides.
//   - bridged: the same cut with exactly a minority (the budget left in
//     the round) on one side, named for what it is: a partition the lite
//     member bridges, so calls reach owners on both sides.
//   - isolate: cut one member off from every other member and from the
//     lite member, both ways.
//   - minority: cut floor((n-1)/2) members off the majority and the lite
//     member, both ways, chosen so that the minority holds two of the
//     copies of a register (its replica set as the lite member places it,
//     System.Placement): with 5 members and 3 replicas the majority side
//     keeps one copy of that register. The clients (the lite member, and
//     the members it relays through) are all on the majority side.
//   - oneway: drop what 1 to a minority of members send to every other
//     member, or what every other member sends to them, not the other way
//     (the lite member reaches everyone): each side's failure detector
//     sees something else.
//   - close: stop a member gracefully (SIGTERM: it drains, hands its
//     actors off and leaves) right after the workloads had a write
//     acknowledged to a key it owns, and restart it after the hold.
//   - skew: every member starts with its replication clock skewed by its
//     own offset within ±max-drift/2, and the fault restarts a member
//     gracefully with a new one (castytest.SkewedClock).
//
// The cuts (partition, bridged, isolate, minority, oneway) use iptables,
// root only: it is installed with apt-get when missing, and without root
// those faults are skipped with a message. Faults combine: sometimes two
// at once on different members, never more than a minority of the
// members (a minority or bridged cut takes the whole budget).
//
// Each fault is held for -hold (default 1s..3s, drawn uniformly from the
// range; one duration for a fixed hold). Members remove a member that a
// majority saw dead for RemoveDeadAfter, 3 s here, from the placement of
// replicated kinds; -hold accepts up to ten times that, so faults can be
// held past removal: a killed member is removed before its restart, a
// cut-off one hands its copies over and rejoins once healed.
//
// After the duration every fault is healed and the run waits, at most
// 90 s, for the cluster to settle: every member reports the same agreed
// placement with every member placed, nothing syncing and no sync waiting
// for a removed member, and every key has its replicas up and answers a
// read. Only then do the final reads judge what was kept; a cluster that
// does not settle fails the run.
//
// Every run prints its seed, each fault as it is injected and healed, and
// a summary table; the exit code is 0 when every check passed, 1 when one
// failed and 2 when the run could not be set up. The seed fixes every
// choice the controller makes (operations, fault kinds, victims, holds);
// the timing of the processes is the machine's.
package main

import "os"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "member" {
		os.Exit(member(os.Args[2:], os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

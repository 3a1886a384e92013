// Command castychaos runs a casty cluster of member processes on
// 127.0.0.x, drives workloads at it through a lite member while a nemesis
// kills, pauses, partitions, closes and skews the members, and checks
// that nothing acknowledged was lost.
//
//	castychaos -duration 30s -members 5 -replicas 3 -seed 42
//	castychaos -workload register,counter -nemesis kill
//	castychaos -nemesis skew,kill,partition -max-drift 2s
//	castychaos -duration 40s -nemesis minority -hold 6s..9s -seed 1
//
// Workloads (-workload, comma-separated, default all):
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
// Nemeses (-nemesis, comma-separated, default all; "none" for none):
//
//   - kill: SIGKILL a member, restart it (a new node identity) after the
//     hold.
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

// Command castychaos runs a casty cluster of member processes on
// 127.0.0.x, drives workloads at it through a lite member while a nemesis
// kills, pauses and partitions the members, and checks that nothing
// acknowledged was lost.
//
//	castychaos -duration 30s -members 5 -replicas 3 -seed 42
//	castychaos -workload register,counter -nemesis kill
//	castychaos -nemesis skew,kill,partition -max-drift 2s
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
// kill (SIGKILL, restart after a hold), pause (SIGSTOP/SIGCONT), partition
// (iptables, root only: installed with apt-get when missing, skipped with
// a message without root), skew (every member starts with its replication
// clock skewed by its own offset within ±max-drift/2, and the fault
// restarts a member gracefully — SIGTERM, so it drains and leaves — with
// a new one; castytest.SkewedClock). Faults combine: sometimes two at once
// on different members, never more than a minority of the members.
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

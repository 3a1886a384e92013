// Package schedules holds castytest's seeded fault schedules on
// testing/synctest's virtual clock (TestSchedulesOnVirtualTime): five
// members with casty's default configuration and a lite member under
// crashes, pauses, stops, partitions, lossy, slow and skewed links, with
// register workloads checked for linearizability. CASTY_SCHEDULE_CONFIG
// picks the replication configurations: r3, r3-all or r5 alone, or mixed,
// all three side by side in one cluster, four clients and eight
// registers each, so that every seed's faults hit every configuration.
// Its test binary declares only the register kinds of the run, because
// every replicated kind of a process syncs on each membership change, and
// shares no process with unbubbled tests (castytest/doc.go, "On a virtual
// clock").
package schedules

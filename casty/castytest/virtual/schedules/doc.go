// Package schedules holds castytest's seeded fault schedules on
// testing/synctest's virtual clock (TestSchedulesOnVirtualTime): five
// members and a lite member under crashes, pauses, stops, partitions,
// lossy, slow and skewed links, with a register workload checked for
// linearizability. Its test binary registers that register alone, because
// every replicated kind of a process syncs on each membership change (and
// reruns the syncs that wait for a removed member's copies every second),
// and shares no process with unbubbled tests (castytest/doc.go, "On a
// virtual clock").
package schedules

// Package castytest checks that what your actors did under concurrency —
// and under failures — is linearizable: that some one-at-a-time order of
// the operations, consistent with when each was called and returned,
// explains every result the callers saw. It also starts the failures: an
// in-process cluster of real members whose network a test can cut, slow,
// make lossy and whose members it can crash, pause and restart.
//
// # Recording a history
//
// Each client (a goroutine that makes one call at a time) records its
// calls in a History, the input it sent and the output it got:
//
//	h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
//	h.Record(client, castytest.ReadOp[int]("x"), func() (castytest.RegisterResult[int], error) {
//		v, err := casty.Call0(ctx, Cells.Ref(sys, "x"), (*Cell).Get)
//		return castytest.Read(v), err
//	})
//
// Record (or Begin and then Return on the Pending it gives) sorts the
// call's error three ways:
//
//   - nil: the operation returned its output at the recorded time.
//   - indeterminate (Indeterminate: ErrTimeout, ErrQuorumUnavailable
//     but ErrNoReadQuorum, ErrActorUnavailable, a cancelled ctx): it may
//     have taken effect, at any time after its call, or never.
//     (ErrActorUnavailable from a closed system is definite, but the
//     sentinel also reports calls whose handler may have run, and the
//     error does not say which: counting every one as indeterminate only
//     leaves an operation unchecked.) The checker gives it a return
//     time of +infinity and accepts any output, as porcupine does for
//     unknown outcomes: a later read may see it or not, but once one read
//     has seen it, later reads must too. An indeterminate operation the
//     model calls read-only (Model.ReadOnly: the ready-made models' reads)
//     is left out of the search: it constrains nothing, and each one left
//     in doubles the orders the checker retries.
//   - any other error is definite — the call took no effect — and the
//     operation leaves the history. Use Pending.Fail and Pending.Unknown to
//     classify errors of your own.
//
// # Checking it
//
// Check(t, model, h) fails the test unless the history is linearizable
// under the model, writes porcupine's HTML visualisation of the failing
// history to os.TempDir()/castytest/<test name>.html and names the file in
// the failure (t.TempDir would be wiped). Verify does the same check
// without a test and returns the Result, whose WriteHTML writes the
// visualisation.
//
// Ready-made models: RegisterModel (read, write, compare-and-set),
// GrowOnlySetModel (add, read all) and CounterModel (add returning the new
// value, read), each a family of independent objects named by key, checked
// separately. Write your own as a Model: an initial state and a pure Step
// that applies one input and returns the output it must have produced.
//
// # What it costs and what it starts
//
// Checking linearizability is NP-complete; porcupine's search is fast for
// histories of thousands of operations per key with a few concurrent
// clients, and Check gives up after CheckTimeout, failing as unknown.
// Partition by key to keep each search small. The checker starts no
// goroutine that outlives a call: porcupine checks partitions in parallel
// and Verify waits for all of them. The cluster's network starts none at
// all (every wait happens in the goroutine that reads, writes or dials);
// its members' goroutines end with the test's cleanup.
//
// # An in-process cluster
//
// NewCluster(t, n) starts n full members of a Casty cluster in the test's
// process and returns once each sees all n and has settled the placement
// of replicated kinds (about 90 ms for five; BENCHMARKS.md). They run the
// real casty, mux and gossip code; only the network is the package's own,
// given to each member with casty.WithNetwork (and its clock, which Skew
// moves, with casty.WithClock: docs/guide.md, "Custom networks and
// clocks"): connections are in-memory byte streams between fixed loopback
// addresses (member i at 127.77.0.i+1:7000), on which no socket is opened. Member(i)
// is member i's *casty.System, Lite() a lite member (casty.Connect) on the
// same network, started on first use, whose index in the link methods is
// N(). Join() starts one more full member, a newcomer, and returns its
// index once the placement holds it and it has synced: N() grows by one,
// and the lite member's index with it. t.Cleanup stops every node as
// Crash does; the package's tests run under goleak.
//
//	c := castytest.NewCluster(t, 5)
//	c.Partition([]int{0, 1}, []int{2, 3, 4})
//	_, err := casty.Call(ctx, Ledgers.Ref(c.Member(0), "k"), (*Ledger).Add, 1)
//	c.HealAll()
//
// Members run with TestConfig, which detects failures in about a second;
// MemberOptions adds casty options to every member (a casty.WithConfig
// replaces TestConfig whole).
//
// The fault model, per pair of nodes (both directions) or per member:
//
//   - Cut(i, j), Partition(groups...): a rejecting firewall. The link's
//     connections reset at once and dials across it fail with
//     ErrUnreachable until Heal or HealAll.
//   - Delay(i, j, d): every write arrives d later, plus a jitter in
//     [0, d/10]; bytes stay in order and throughput is not limited.
//   - Lossy(i, j, p): mux runs over a reliable byte stream, which turns a
//     lost packet into a retransmission; what a caller can observe is the
//     stream giving up. So each write is, with probability p, the one at
//     which the connection resets, the write lost (ErrReset); the nodes
//     redial.
//   - Duplicate(i, j, p): a byte stream never delivers a byte twice; a
//     request arrives twice when its answer is lost and the caller sends
//     it again. So each write is, with probability p, delivered — the peer
//     acts on it — and the connection resets as it is read, before any
//     reply: the call fails as indeterminate, and a retry (casty retries
//     only where nothing ran, so your code's retry) runs it again.
//   - Crash(i): a killed process. No drain, no goodbye, no Deactivate
//     hooks; its connections reset and nothing listens at its address.
//   - Pause(i), Resume(i): SIGSTOP and SIGCONT as the network sees them.
//     Nothing it sends is delivered, nothing sent to it is read (writes
//     buffer, then block), so its peers' keepalives time out and they
//     declare it dead. Go cannot stop its goroutines, so its own timers
//     run and it suspects its peers in turn; on Resume the two sides
//     reconcile as after a partition.
//   - Restart(i): a new process with a new identity and no state at the
//     same address, started at once; the others suspect the old identity
//     when the new one answers at its address (gossip/SPEC.md, failure
//     detection).
//   - Skew(i, d): member i's replication clock (casty.WithClock: its HLC's
//     physical clock) reads the wall clock plus d. Within Config.Replication.MaxClockDrift (500 ms by
//     default) the HLC orders its stamps after every stamp it has seen;
//     further ahead, the others refuse its replication requests. Timers and
//     timeouts keep the real clock. SkewedClock(d) is the same skew as a
//     casty.Option, for a member started with casty.Start over TCP
//     outside a Cluster (the member processes of cmd/castychaos).
//
// Every random choice (which write a lossy or duplicating link hits, the
// jitter of a delay) is drawn from a math/rand/v2 generator per direction
// of each connection, seeded from the cluster's seed, and so are the
// members' node IDs and their gossip's and mux's random choices: Seed(n)
// sets it, NewCluster logs it, and logs it again when the test fails. The same
// seed makes the same choices for the same sequence of writes on a
// connection; which writes the members make, and when, is up to the Go
// scheduler, so a cluster run is reproducible only as far as that allows.
//
// # On a virtual clock
//
// A Cluster runs inside a testing/synctest bubble: start it in the
// function synctest.Test runs, and every timer of its members —
// keepalives, gossip suspicion, RemoveDeadAfter, replication and call
// timeouts, the network's delays — and their HLCs' physical time follow
// the bubble's clock, which jumps ahead whenever every goroutine of the
// bubble waits. A time.Sleep in the test is then virtual too, so minutes
// of cluster life under faults take a fraction of a second of CPU:
//
//	func TestSurvivesACrash(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			ctx := context.Background()
//			c := castytest.NewCluster(t, 3)
//			if _, err := casty.Call(ctx, Ledgers.Ref(c.Member(0), "k"), (*Ledger).Add, 1); err != nil {
//				t.Fatal(err)
//			}
//			c.Crash(2)
//			time.Sleep(time.Minute) // virtual: past RemoveDeadAfter (30 s)
//			n, err := casty.Call(ctx, Ledgers.Ref(c.Member(1), "k"), (*Ledger).Add, 1)
//			if err != nil || n != 2 {
//				t.Fatalf("after the crash: %d, %v", n, err)
//			}
//		})
//	}
//
// Inside the bubble time.Now starts at midnight UTC, 1 January 2000, and
// stands still while goroutines run; so a timeout only fires when
// everything else waits, and a busy loop never lets time pass. Five
// members, a lite member and five clients through a two-against-three
// partition simulate 80 to 150 virtual seconds per CPU second
// (TestClusterLongPartitionOnVirtualTime in castytest/virtual, 2 vCPU);
// three members, a crash and 37 virtual seconds take 40 ms
// (TestClusterOnVirtualTime).
//
// Rules for such tests:
//
//   - Create the cluster, and everything its members talk to, inside the
//     bubble; a channel or timer made outside blocks a member in a way the
//     bubble cannot see through, and its clock stops.
//   - Check the history after synctest.Test returns: inside, Check's
//     CheckTimeout is virtual and cannot fire while it searches. Report
//     failures there too: a failure reported on the bubble's t ends the
//     test function that called synctest.Test.
//   - NewCluster empties the process's sync.Pools before it starts
//     members (two garbage collections), because casty, mux, actor and
//     yamux pool channels and timers process-wide, and one made in a
//     bubble must never be used outside it (the runtime aborts the
//     process). That makes bubbled and unbubbled cluster tests safe one
//     after the other in a package, not at the same time: do not mark
//     both kinds t.Parallel in one test binary. A test that runs casty
//     without NewCluster (casty.Local, an Example) empties nothing: keep
//     bubbled tests in a package of their own, as castytest/virtual does.
//
// # Fault schedules
//
// NewSchedule draws a seeded schedule of faults — crashes, pauses,
// graceful stops, isolations, minority splits, one-way cuts, lossy, slow
// and skewed members — each held from 100 ms to several RemoveDeadAfter,
// never striking more than a minority at once unless
// ScheduleConfig.MaxStruck allows double failures; Cluster.Run applies it,
// restarting crashed and stopped members as new processes at their
// addresses. On a virtual clock an hour of schedule against your actors
// takes seconds, and the seed replays it (nearly: see above):
//
//	synctest.Test(t, func(t *testing.T) {
//		c := castytest.NewCluster(t, 5, castytest.Seed(seed))
//		s := castytest.NewSchedule(seed, castytest.ScheduleConfig{Members: 5, Length: time.Hour})
//		// start clients that record into a History …
//		c.Run(s, t.Logf)
//		// stop the clients
//	})
//	castytest.Check(t, model, h) // after the bubble
//
// castytest/virtual/schedules' TestSchedulesOnVirtualTime is a complete
// one; castytest/virtual's TestSchedulesCatchAMutant measures the schedules' detection power with
// Mutant, which breaks a replication rule on purpose.
//   - A seed replays a bubbled run nearly, not exactly. It fixes the
//     members' node IDs (so the placement), their gossip's and mux's
//     random choices and the network's, and the test's faults come at
//     the same virtual instants; but the scheduler runs the goroutines
//     that wake at one instant in an order of its own. The same seed
//     repeated the verdict, the operation count and (within 3 in 1,200)
//     the indeterminate count of TestClusterLongPartitionOnVirtualTime,
//     not the history operation for operation.
//
// # Finding a bug
//
// The README beside this file walks through a deliberately wrong booking
// desk that checks a Seat actor and then acts on it in a second call (a
// check-then-act across two actors); the register model rejects the
// history in which two claims of the same seat both win. See
// Example_checkThenAct.
package castytest

// Package castytest checks that what your actors did under concurrency —
// and under failures — is linearizable: that some one-at-a-time order of
// the operations, consistent with when each was called and returned,
// explains every result the callers saw.
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
//   - indeterminate (Indeterminate: ErrTimeout, ErrQuorumUnavailable,
//     ErrActorUnavailable, a cancelled ctx): it may have taken effect, at
//     any time after its call, or never. The checker gives it a return
//     time of +infinity and accepts any output, as porcupine does for
//     unknown outcomes: a later read may see it or not, but once one read
//     has seen it, later reads must too.
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
// Partition by key to keep each search small. The package starts no
// goroutine that outlives a call: porcupine checks partitions in parallel
// and Verify waits for all of them.
//
// # Finding a bug
//
// The README beside this file walks through a deliberately wrong booking
// desk that checks a Seat actor and then acts on it in a second call (a
// check-then-act across two actors); the register model rejects the
// history in which two claims of the same seat both win. See
// Example_checkThenAct.
package castytest

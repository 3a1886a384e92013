package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// The collection workloads drive the collections package's facades from
// the lite member, each collection over ordinary replicated shard actors
// (collections/doc.go), and judge what the package promises.

// Collection names. Each run is a cluster of its own, so they never meet
// an earlier run's.
const (
	csetName     = "cset"
	ccounterName = "ccounter"
	cqueueName   = "cqueue"
	clockName    = "clock"
)

func cregName(i int) string { return fmt.Sprint("creg-", i) }

// collection workload settings.
const (
	// cqueueTTL is the queue's TTL: how long an element granted to a
	// taker that gave up stays reserved for it, and a parked taker out of
	// touch keeps its place. Shorter than the default 30 s so the final
	// drain can wait it out.
	cqueueTTL = 5 * time.Second
	// cqueueTake bounds a Take: short, so takes often end while an
	// element is being granted to them.
	cqueueTake = time.Second
	// cqueueDrain is how many elements one Drain removes at most: an
	// indeterminate Drain may have removed that many.
	cqueueDrain = 64
	// clockTTL is the lock's lease TTL; Do renews every clockTTL/3. Short,
	// so a fault on the lock's owner outlasts a lease.
	clockTTL = time.Second
	// clockWait bounds the wait for the lock in one Do.
	clockWait = 10 * time.Second
)

// newCollectionWorkload opens the collection workload called name.
func newCollectionWorkload(name string, k kinds, sys *casty.System, o options, logDir string) (workload, error) {
	switch name {
	case "cset":
		return newCSetWorkload(k, sys, o.clients)
	case "ccounter":
		return newCCounterWorkload(k, sys)
	case "cqueue":
		return newCQueueWorkload(k, sys, o.clients)
	case "clock":
		return newCLockWorkload(k, sys)
	case "cregister":
		return newCRegisterWorkload(k, sys, o.regs, o.clients, logDir)
	}
	return nil, fmt.Errorf("no workload %q", name)
}

// ---- cset ----

// csetWorkload adds unique elements to a collections.Set[int64]; at the
// end every acknowledged add must be contained, and the set must list
// nothing no client tried to add.
type csetWorkload struct {
	set   *collections.Set[int64]
	t     tally
	seq   []atomic.Int64
	mu    sync.Mutex
	acked []int64
	tried map[int64]bool
	// notNew counts acknowledged adds of a unique element that Add
	// reported present already: the call ran twice.
	notNew atomic.Int64
}

func newCSetWorkload(k kinds, sys *casty.System, clients int) (*csetWorkload, error) {
	s, err := collections.NewSet[int64](sys, csetName, append(slices.Clone(k.coll.opts), collections.Shards(collections.DefaultShards))...)
	if err != nil {
		return nil, err
	}
	return &csetWorkload{set: s, seq: make([]atomic.Int64, clients), tried: map[int64]bool{}}, nil
}

func (w *csetWorkload) name() string { return "cset" }

func (w *csetWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	e := uniqueValue(client, w.seq[client].Add(1))
	w.mu.Lock()
	w.tried[e] = true
	w.mu.Unlock()
	added, err := call(ctx, func(ctx context.Context) (bool, error) { return w.set.Add(ctx, e) })
	if w.t.outcome(err) == done {
		w.mu.Lock()
		w.acked = append(w.acked, e)
		w.mu.Unlock()
		if !added {
			w.notNew.Add(1)
		}
	}
}

func (w *csetWorkload) probe(ctx context.Context) error {
	_, err := call(ctx, func(ctx context.Context) (int, error) { return w.set.Size(ctx) })
	return err
}

// items lists the set, bounded by ctx.
func (w *csetWorkload) items(ctx context.Context) (map[int64]bool, error) {
	have := map[int64]bool{}
	for e, err := range w.set.Items(ctx) {
		if err != nil {
			return nil, err
		}
		have[e] = true
	}
	return have, nil
}

func (w *csetWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable = "-"
	have, err := retryWithin(ctx, 20*time.Second, w.items)
	if err != nil {
		r.detail = fmt.Sprintf("final listing failed: %v", err)
		return r
	}
	var unexpected int64
	for e := range have {
		if !w.tried[e] {
			unexpected++
		}
	}
	// Contains, for each acknowledged add, a few at once.
	var unlisted, failed atomic.Int64
	var lostMu sync.Mutex
	var lost []int64
	next := make(chan int64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for e := range next {
				ok, err := retryFinal(ctx, func(ctx context.Context) (bool, error) { return w.set.Contains(ctx, e) })
				switch {
				case err != nil:
					failed.Add(1)
				case !ok:
					lostMu.Lock()
					lost = append(lost, e)
					lostMu.Unlock()
				case !have[e]:
					unlisted.Add(1)
				}
			}
		})
	}
	for _, e := range w.acked {
		next <- e
	}
	close(next)
	wg.Wait()
	slices.Sort(lost)
	r.lost = int64(len(lost))
	r.pass = r.lost == 0 && unexpected == 0 && unlisted.Load() == 0 && failed.Load() == 0
	r.detail = fmt.Sprintf("%d acknowledged adds, %d not contained at the end, %d contained but not listed by Items, %d Contains that never answered; Items lists %d elements, %d never added; %d acknowledged adds of a new element reported it present already",
		len(w.acked), r.lost, unlisted.Load(), failed.Load(), len(have), unexpected, w.notNew.Load())
	if r.lost > 0 {
		// Judged already; this only tells a read of stale memory from a
		// write gone: a write to a shard whose owner answers from stale
		// memory is refused and runs again on a fresh activation.
		r.detail += "; " + w.recheck(ctx, lost)
	}
	return r
}

// recheck writes to every shard (touchAdds fresh elements, from a client
// of its own) and asks again for the elements missing: those contained
// now were held by a write quorum all along, and the reads before were
// answered from a shard owner's stale memory.
func (w *csetWorkload) recheck(ctx context.Context, missing []int64) string {
	const touchAdds = 256 // every one of 32 shards, but for a chance of 1 in 100
	client := len(w.seq)
	for i := range touchAdds {
		e := uniqueValue(client, int64(i+1))
		w.mu.Lock()
		w.tried[e] = true
		w.mu.Unlock()
		if _, err := retryFinal(ctx, func(ctx context.Context) (bool, error) { return w.set.Add(ctx, e) }); err != nil {
			return fmt.Sprintf("recheck: an add to touch every shard failed: %v", err)
		}
	}
	var back []int64
	for _, e := range missing {
		if ok, err := retryFinal(ctx, func(ctx context.Context) (bool, error) { return w.set.Contains(ctx, e) }); err == nil && ok {
			back = append(back, e)
		}
	}
	return fmt.Sprintf("recheck after %d more adds (a write to every shard): %d of the %d missing (%v) contained now (%v): reads answered from stale memory",
		touchAdds, len(back), len(missing), missing, back)
}

// ---- ccounter ----

// ccounterWorkload adds 1 to a collections.Counter (striped); the final
// Get must lie within [acknowledged, acknowledged + indeterminate].
type ccounterWorkload struct {
	ctr          *collections.Counter
	t            tally
	acked, indet atomic.Int64
}

func newCCounterWorkload(k kinds, sys *casty.System) (*ccounterWorkload, error) {
	c, err := collections.NewCounter(sys, ccounterName, append(slices.Clone(k.coll.opts), collections.Shards(collections.DefaultShards))...)
	if err != nil {
		return nil, err
	}
	return &ccounterWorkload{ctr: c}, nil
}

func (w *ccounterWorkload) name() string { return "ccounter" }

func (w *ccounterWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	_, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, w.ctr.Add(ctx, 1) })
	switch w.t.outcome(err) {
	case done:
		w.acked.Add(1)
	case unknown:
		w.indet.Add(1)
	}
}

func (w *ccounterWorkload) probe(ctx context.Context) error {
	_, err := call(ctx, w.ctr.Get)
	return err
}

func (w *ccounterWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable = "-"
	v, err := retryFinal(ctx, w.ctr.Get)
	if err != nil {
		r.detail = fmt.Sprintf("final Get failed: %v", err)
		return r
	}
	lo, hi := w.acked.Load(), w.acked.Load()+w.indet.Load()
	if v < lo {
		r.lost = lo - v
	}
	r.pass = v >= lo && v <= hi
	r.detail = fmt.Sprintf("%s = %d over %d stripes, want [%d, %d]", ccounterName, v, collections.DefaultShards, lo, hi)
	// Judged already; as cset's recheck, this tells a read of stale
	// memory (Read(One)) from adds gone: an add to every stripe (they
	// rotate), then Get again, less those adds. Equal to the first Get
	// unless some stripe answered from stale memory.
	n := int64(collections.DefaultShards)
	for range n {
		if _, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, w.ctr.Add(ctx, 1) }); err != nil {
			r.detail += fmt.Sprintf("; recheck: an add to touch every stripe failed: %v", err)
			return r
		}
	}
	if v2, err := retryFinal(ctx, w.ctr.Get); err == nil {
		r.detail += fmt.Sprintf("; recheck after an add to every stripe: %d less those %d adds = %d", v2, n, v2-n)
		if v2-n != v {
			r.detail += fmt.Sprintf(", %+d against the first Get: some stripe answered it from stale memory", v2-n-v)
		}
	}
	return r
}

// ---- cqueue ----

// cqueueWorkload offers unique values to a collections.Queue[int64] and
// takes them (Take with a short ctx, or Poll); at the end it drains the
// rest. What the queue promises (collections/doc.go, "Delivery"; queue.go):
// an acknowledged Offer's element is handed out, and an element reaches
// at most one caller — but a removal whose outcome is unknown may have
// taken it: a Poll or Drain that failed indeterminately, or a Take that
// gave up after its element was handed to it (the element is then
// dropped after the TTL, not put back: its taker may have it). An Offer
// retried after an indeterminate error may have queued the value twice.
// So the check: every acknowledged value is seen (taken, polled or
// drained) at least once, except at most as many as the removals of
// unknown outcome could have taken; no value is seen more often than
// Offers of it may have succeeded; no value is seen that nobody offered.
type cqueueWorkload struct {
	q   *collections.Queue[int64]
	t   tally
	seq []atomic.Int64

	mu     sync.Mutex
	offers map[int64]*offered
	seen   map[int64]int // times each value was taken, polled or drained
	taken, polled, drained,
	retried int64 // values offered again after an indeterminate Offer
	// removals of unknown outcome, each of which may have taken elements
	// nobody saw: polls and drains (of up to cqueueDrain) that failed
	// indeterminately, takes that failed.
	pollsUnknown, drainsUnknown, takesFailed int64
}

// offered is what became of the Offers of one value.
type offered struct {
	acked bool
	// maybe counts the Offers of it that succeeded or may have.
	maybe int
}

func newCQueueWorkload(k kinds, sys *casty.System, clients int) (*cqueueWorkload, error) {
	q, err := collections.NewQueue[int64](sys, cqueueName, append(slices.Clone(k.coll.opts), collections.TTL(cqueueTTL))...)
	if err != nil {
		return nil, err
	}
	return &cqueueWorkload{q: q, seq: make([]atomic.Int64, clients), offers: map[int64]*offered{}, seen: map[int64]int{}}, nil
}

func (w *cqueueWorkload) name() string { return "cqueue" }

// op offers (55 %; more offers than takes, so takers seldom find the
// queue empty), polls (20 %) or takes (25 %).
func (w *cqueueWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	switch n := rng.IntN(20); {
	case n < 11:
		w.offer(ctx, client)
	case n < 15:
		type polled struct {
			v  int64
			ok bool
		}
		p, err := call(ctx, func(ctx context.Context) (polled, error) {
			v, ok, err := w.q.Poll(ctx)
			return polled{v, ok}, err
		})
		switch w.t.outcome(err) {
		case done:
			if p.ok {
				w.saw(&w.polled, p.v)
			}
		case unknown:
			w.count(&w.pollsUnknown, 1)
		}
	default:
		tctx, cancel := context.WithTimeout(ctx, cqueueTake)
		v, err := w.q.Take(tctx)
		cancel()
		if w.t.outcome(err) == done {
			w.saw(&w.taken, v)
		} else {
			w.count(&w.takesFailed, 1)
		}
	}
}

// offer offers a new value, and again (up to twice more) while the
// outcome is indeterminate.
func (w *cqueueWorkload) offer(ctx context.Context, client int) {
	v := uniqueValue(client, w.seq[client].Add(1))
	rec := &offered{}
	w.mu.Lock()
	w.offers[v] = rec
	w.mu.Unlock()
	for attempt := range 3 {
		if attempt == 1 {
			w.count(&w.retried, 1)
		}
		_, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, w.q.Offer(ctx, v) })
		switch w.t.outcome(err) {
		case done:
			w.mu.Lock()
			rec.acked, rec.maybe = true, rec.maybe+1
			w.mu.Unlock()
			return
		case unknown:
			w.mu.Lock()
			rec.maybe++
			w.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		default:
			return
		}
	}
}

func (w *cqueueWorkload) saw(counter *int64, vs ...int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range vs {
		w.seen[v]++
	}
	*counter += int64(len(vs))
}

func (w *cqueueWorkload) count(counter *int64, n int64) {
	w.mu.Lock()
	*counter += n
	w.mu.Unlock()
}

func (w *cqueueWorkload) probe(ctx context.Context) error {
	_, err := call(ctx, w.q.Size)
	return err
}

// drain drains the queue until a Drain returns nothing, retrying failed
// ones (an indeterminate one counted: it may have removed cqueueDrain).
func (w *cqueueWorkload) drain(ctx context.Context) error {
	for {
		vs, err := call(ctx, func(ctx context.Context) ([]int64, error) { return w.q.Drain(ctx, cqueueDrain) })
		switch {
		case err == nil && len(vs) == 0:
			return nil
		case err == nil:
			w.saw(&w.drained, vs...)
			continue
		case castytest.Indeterminate(err):
			w.count(&w.drainsUnknown, 1)
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return err
		}
	}
}

// missing counts the acknowledged values never seen.
func (w *cqueueWorkload) missing() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for v, rec := range w.offers {
		if rec.acked && w.seen[v] == 0 {
			n++
		}
	}
	return n
}

func (w *cqueueWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable = "-"
	if err := w.drain(ctx); err != nil {
		r.detail = fmt.Sprintf("final drain failed: %v", err)
		return r
	}
	waited := ""
	if w.missing() > 0 {
		// Elements granted to takes that gave up and could not withdraw
		// come back when their reservation's TTL passes: wait it out.
		if !sleepCtx(ctx, cqueueTTL+time.Second) {
			r.detail = "final drain interrupted"
			return r
		}
		if err := w.drain(ctx); err != nil {
			r.detail = fmt.Sprintf("final drain failed: %v", err)
			return r
		}
		waited = fmt.Sprintf(" (drained again after the %s TTL)", cqueueTTL)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var acked, missing, unexpected, dupValues, dupCopies, over int64
	for v, rec := range w.offers {
		if rec.acked {
			acked++
			if w.seen[v] == 0 {
				missing++
			}
		}
	}
	for v, n := range w.seen {
		rec := w.offers[v]
		switch {
		case rec == nil:
			unexpected++
			continue
		case n > rec.maybe:
			over += int64(n - rec.maybe)
		}
		if n > 1 {
			dupValues++
			dupCopies += int64(n - 1)
		}
	}
	budget := w.pollsUnknown + w.takesFailed + w.drainsUnknown*cqueueDrain
	r.lost = max(0, missing-budget)
	r.pass = r.lost == 0 && unexpected == 0 && over == 0
	r.detail = fmt.Sprintf("%d acknowledged offers of %d values offered (%d offered again after an indeterminate Offer); seen %d taken, %d polled, %d drained at the end%s; "+
		"%d acknowledged values never seen, against %d removals of unknown outcome that may have taken them (%d indeterminate polls, %d failed takes, %d indeterminate drains of up to %d); "+
		"%d values seen more than once (%d extra copies: an Offer retried after an indeterminate error may queue its value twice), %d copies seen beyond the Offers that may have succeeded; %d values never offered",
		acked, len(w.offers), w.retried, w.taken, w.polled, w.drained, waited,
		missing, budget, w.pollsUnknown, w.takesFailed, w.drainsUnknown, cqueueDrain,
		dupValues, dupCopies, over, unexpected)
	return r
}

// ---- clock ----

// clockWorkload runs Lock.Do on a collections.Lock; the work each holder
// does writes its fencing token to a resource in this process at the
// start and at the end of its critical section. The resource refuses a
// token lower than the highest it has seen (fencing) and counts the
// refusals. The work does not watch its ctx: it stands for a holder that
// does not notice its lease is gone (a GC pause, say), which is what
// fencing is for; now and then it holds the lock past the lease's TTL,
// so that a fault on the lock's owner makes the lease lapse under it.
//
// The check, judged by the resource in this process's clock: tokens
// accepted strictly increase from one holder to the next in acceptance
// order, and no holder's accepted writes interleave with another's (no
// two accepted critical sections overlap). A holder whose Do reported its
// lease lost (ErrLeaseLost) may be refused: that is the fencing working,
// and it is counted. A holder refused although its Do reported nothing
// lost held the lock, as far as the lock told it, while another holder
// wrote: mutual exclusion failed. A last Lock after the run must get a
// token greater than every one accepted.
type clockWorkload struct {
	lock    *collections.Lock
	acks    *ackFeed
	kind    string
	t       tally
	res     fenced
	holders atomic.Int64

	mu       sync.Mutex
	lostBy   map[int64]bool // holders whose Do reported the lease lost
	heldBy   map[int64]bool // holders whose Do reported nothing lost
	long     int64          // critical sections held past the TTL
	gaveUp   int64          // Do calls that gave up waiting for the lock (after clockWait, or at the run's end)
	entered  int64          // holders that ran their work
	leaseOut int64          // Do calls that returned ErrLeaseLost
}

func newCLockWorkload(k kinds, sys *casty.System) (*clockWorkload, error) {
	l, err := collections.NewLock(sys, clockName, append(slices.Clone(k.coll.opts), collections.TTL(clockTTL))...)
	if err != nil {
		return nil, err
	}
	return &clockWorkload{lock: l, acks: k.acks, kind: k.coll.kind, lostBy: map[int64]bool{}, heldBy: map[int64]bool{}}, nil
}

func (w *clockWorkload) name() string { return "clock" }

var (
	// errFenced: the resource refused the holder's token.
	errFenced = errors.New("castychaos: the resource refused the token (fenced)")
	// errGaveUp: the lock came after the caller stopped waiting for it.
	errGaveUp = fmt.Errorf("castychaos: gave up waiting for the lock: %w", context.Canceled)
)

// gate tells a Do's work whether its caller still wants the lock: the
// caller gives up (cancels the Do's ctx) only before the work starts, so
// the lease keeps being renewed while the work runs, however long.
type gate struct {
	mu             sync.Mutex
	started, ended bool
}

// start reports whether the work may start (the caller has not given up).
func (g *gate) start() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.started = !g.ended
	return g.started
}

// giveUp returns a func that cancels the wait unless the work started.
func (g *gate) giveUp(cancel context.CancelFunc) func() {
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.started {
			g.ended = true
			cancel()
		}
	}
}

func (w *clockWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	holder := w.holders.Add(1)
	hold := time.Duration(5+rng.IntN(25)) * time.Millisecond
	long := rng.IntN(10) == 0
	if long {
		hold = clockTTL + time.Duration(rng.Int64N(int64(clockTTL/3)))
	}
	var g gate
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	timer := time.AfterFunc(clockWait, g.giveUp(cancel))
	defer timer.Stop()
	stop := context.AfterFunc(ctx, g.giveUp(cancel))
	defer stop()
	err := w.lock.Do(dctx, func(_ context.Context, token uint64) error {
		if !g.start() {
			return errGaveUp
		}
		w.mu.Lock()
		w.entered++
		if long {
			w.long++
		}
		w.mu.Unlock()
		if !w.res.write(holder, token) {
			return errFenced
		}
		time.Sleep(hold)
		if !w.res.write(holder, token) {
			return errFenced
		}
		return nil
	})
	w.mu.Lock()
	switch {
	case errors.Is(err, collections.ErrLeaseLost):
		w.lostBy[holder] = true
		w.leaseOut++
	case err == nil || errors.Is(err, errFenced):
		w.heldBy[holder] = true
	case errors.Is(err, context.Canceled): // errGaveUp, or Do's own wait
		w.gaveUp++
	}
	w.mu.Unlock()
	switch {
	case errors.Is(err, collections.ErrLeaseLost):
		w.t.outcome(collections.ErrLeaseLost) // one line for every token
	default:
		if w.t.outcome(err) == done {
			w.acks.acked(w.kind, "lock/"+clockName)
		}
	}
}

func (w *clockWorkload) probe(ctx context.Context) error {
	_, err := call(ctx, func(ctx context.Context) (struct{}, error) {
		lease, ok, err := w.lock.TryLock(ctx)
		if err == nil && ok {
			err = lease.Release(ctx)
		}
		return struct{}{}, err
	})
	return err
}

func (w *clockWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable = "-"
	// One more holder, after every other: its token must be the greatest.
	last, err := retryWithin(ctx, clockWait, func(ctx context.Context) (uint64, error) {
		lease, err := w.lock.Lock(ctx)
		if err != nil {
			return 0, err
		}
		tok := lease.Token()
		return tok, lease.Release(ctx)
	})
	if err != nil {
		r.detail = fmt.Sprintf("final Lock failed: %v", err)
		return r
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	j := w.res.judge()
	var fencedLost, fencedHeld int64
	for h := range j.refusedBy {
		if w.lostBy[h] {
			fencedLost++
		} else {
			fencedHeld++ // its Do returned nil or errFenced: nothing lost
		}
	}
	r.lost = j.notIncreasing + j.interleaved + fencedHeld
	lastOK := last > j.highest
	r.pass = r.lost == 0 && lastOK
	r.detail = fmt.Sprintf("%d holders ran their work (%d held past the %s TTL), %d accepted writes with tokens %d to %d; %d times a token did not exceed the previous holder's, %d critical sections interleaved with another's; "+
		"%d holders told their lease was lost (ErrLeaseLost), %d of them refused by the resource (fencing at work); %d holders refused although their Do reported nothing lost; %d gave up waiting for the lock; "+
		"a last Lock after the run got token %d (want > %d)",
		w.entered, w.long, clockTTL, j.writes, j.lowest, j.highest, j.notIncreasing, j.interleaved,
		w.leaseOut, fencedLost, fencedHeld, w.gaveUp, last, j.highest)
	return r
}

// fenced is the resource a lock protects, in this process: it accepts a
// write with a token at least as high as the highest it has seen, refuses
// a lower one, and keeps the accepted writes in the order it accepted
// them.
type fenced struct {
	mu        sync.Mutex
	highest   uint64
	accepted  []fencedWrite
	refusedBy map[int64]int
}

type fencedWrite struct {
	holder int64
	token  uint64
	at     time.Time
}

func (f *fenced) write(holder int64, token uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if token < f.highest {
		if f.refusedBy == nil {
			f.refusedBy = map[int64]int{}
		}
		f.refusedBy[holder]++
		return false
	}
	f.highest = token
	f.accepted = append(f.accepted, fencedWrite{holder: holder, token: token, at: time.Now()})
	return true
}

// fencedJudgement is what the resource saw.
type fencedJudgement struct {
	writes          int
	lowest, highest uint64
	// notIncreasing counts writes of a holder after another holder's
	// whose token was not greater; interleaved counts writes of a holder
	// after another holder had written since its own previous one.
	notIncreasing, interleaved int64
	refusedBy                  map[int64]int
}

func (f *fenced) judge() fencedJudgement {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := fencedJudgement{writes: len(f.accepted), highest: f.highest, refusedBy: f.refusedBy}
	done := map[int64]bool{} // holders another holder wrote after
	for i, w := range f.accepted {
		if i == 0 {
			j.lowest = w.token
			continue
		}
		prev := f.accepted[i-1]
		if w.holder == prev.holder {
			continue
		}
		if w.token <= prev.token {
			j.notIncreasing++
		}
		done[prev.holder] = true
		if done[w.holder] {
			j.interleaved++
		}
	}
	return j
}

// ---- cregister ----

// cregisterWorkload reads, sets and compares-and-swaps
// collections.Register[int64]s read with Read(casty.Majority), records
// every call and checks the history with porcupine, as the register
// workload does (a register never set reads as 0, the model's initial
// value; a compare-and-swap from 0 is CompareAndSwapUnset).
type cregisterWorkload struct {
	regs    []*collections.Register[int64]
	acks    *ackFeed
	kind    string
	logDir  string
	history *castytest.History[registerOp, registerResult]
	t       tally
	seq     []atomic.Int64
	lastSeen
}

func newCRegisterWorkload(k kinds, sys *casty.System, keys, clients int, logDir string) (*cregisterWorkload, error) {
	w := &cregisterWorkload{acks: k.acks, kind: k.coll.regKind, logDir: logDir, seq: make([]atomic.Int64, clients),
		history: castytest.NewHistory[registerOp, registerResult]()}
	for i := range keys {
		reg, err := collections.NewRegister[int64](sys, cregName(i), k.coll.regOpts...)
		if err != nil {
			return nil, err
		}
		w.regs = append(w.regs, reg)
	}
	return w, nil
}

func (w *cregisterWorkload) name() string { return "cregister" }

// get reads register i, 0 when unset.
func (w *cregisterWorkload) get(ctx context.Context, i int) (int64, error) {
	v, _, err := w.regs[i].Get(ctx)
	return v, err
}

func (w *cregisterWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	i := rng.IntN(len(w.regs))
	key := cregName(i)
	reg := w.regs[i]
	switch rng.IntN(3) {
	case 0:
		p := w.history.Begin(client, castytest.ReadOp[int64](key))
		v, err := call(ctx, func(ctx context.Context) (int64, error) { return w.get(ctx, i) })
		endRegisterOp(&w.t, p, castytest.Read(v), err)
		if err == nil {
			w.remember(client, key, v)
		}
	case 1:
		v := uniqueValue(client, w.seq[client].Add(1))
		p := w.history.Begin(client, castytest.WriteOp(key, v))
		_, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, reg.Set(ctx, v) })
		endRegisterOp(&w.t, p, castytest.Written[int64](), err)
		if err == nil {
			w.remember(client, key, v)
			w.acks.acked(w.kind, "register/"+key)
		}
	default:
		old, v := w.recall(client, key), uniqueValue(client, w.seq[client].Add(1))
		p := w.history.Begin(client, castytest.CASOp(key, old, v))
		ok, err := call(ctx, func(ctx context.Context) (bool, error) {
			if old == 0 {
				return reg.CompareAndSwapUnset(ctx, v)
			}
			return reg.CompareAndSwap(ctx, old, v)
		})
		endRegisterOp(&w.t, p, castytest.Swapped[int64](ok), err)
		if err == nil && ok {
			w.acks.acked(w.kind, "register/"+key)
		}
	}
}

func (w *cregisterWorkload) probe(ctx context.Context) error {
	return probeKeys(ctx, len(w.regs), func(ctx context.Context, i int) error {
		_, err := w.get(ctx, i)
		return err
	})
}

// final reads every register once more, then checks the history as the
// register workload does.
func (w *cregisterWorkload) final(ctx context.Context) row {
	for i := range w.regs {
		p := w.history.Begin(len(w.seq), castytest.ReadOp[int64](cregName(i))) // a client of its own
		v, err := retryFinal(ctx, func(ctx context.Context) (int64, error) { return w.get(ctx, i) })
		endRegisterOp(&w.t, p, castytest.Read(v), err)
	}
	r := w.t.row(w.name())
	ops := w.history.Ops()
	res := judgeRegisters(&r, ops)
	r.detail = fmt.Sprintf("%d operations on %d registers checked (%d indeterminate, %d of them reads, which constrain nothing); %d reads saw the initial value after an acknowledged write",
		res.Ops, len(w.regs), res.Indeterminate, res.LeftOut, r.lost)
	r.detail += undecided(res, ops, w.logDir+"/cregister.html")
	return r
}

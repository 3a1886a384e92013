package virtual_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// ---- Queue ----------------------------------------------------------------

const (
	// queueTTL is the queue's TTL: how long an element granted to a taker
	// that gave up stays reserved for it. Short, so that the final drain
	// can wait it out.
	queueTTL = 2 * time.Second
	// queueDrain is how many elements one Drain removes at most: an
	// indeterminate Drain may have removed that many.
	queueDrain = 64
)

// queueLoad: clients Offer unique values (an indeterminate Offer offered
// again, at most twice), Poll, and Take with opTimeout; afterwards the
// rest is drained (again after the TTL if an acknowledged value is still
// unseen). What the queue promises (collections/doc.go, "Delivery"), as
// castychaos's cqueue checks it: every acknowledged value is seen (taken,
// polled or drained), except at most as many as the removals of unknown
// outcome could have taken — Polls and Drains that failed
// indeterminately, Takes that failed (one that gave up after its element
// was handed to it leaves it reserved and then dropped, not put back); no
// value is seen more often than Offers of it may have succeeded; none is
// seen that nobody offered.
type queueLoad struct {
	queues *opener[*collections.Queue[int]]

	mu     sync.Mutex
	offers map[int]*offered
	seen   map[int]int // times each value was taken, polled or drained
	taken, polled, drained,
	retried int // values offered again after an indeterminate Offer
	// removals of unknown outcome, each of which may have taken elements
	// nobody saw.
	pollsUnknown, drainsUnknown, takesFailed int
	refusals                                 map[string]int

	drainErr error // the final drain never completed
	waited   bool  // drained again after the TTL
}

// offered is what became of the Offers of one value.
type offered struct {
	acked bool
	maybe int // Offers of it that succeeded or may have
}

func (l *queueLoad) name() string { return "queue" }

func (l *queueLoad) start(r *rig) {
	l.offers, l.seen, l.refusals = map[int]*offered{}, map[int]int{}, map[string]int{}
	l.queues = newOpener(r.t, func(sys *casty.System) (*collections.Queue[int], error) {
		return collections.NewQueue[int](sys, "virtual-queue", collections.TTL(queueTTL))
	})
	r.clients(func(ctx context.Context, client, i int) {
		q, ok := l.queues.on(r.via(client, i))
		if !ok {
			return
		}
		// Offers 55 %, Polls 20 %, Takes 25 %: more offers than
		// removals, so takers seldom find the queue empty.
		switch n := (client*7 + i) % 20; {
		case n < 11:
			l.offer(q, unique(client, i))
		case n < 15:
			v, found, err := q.Poll(ctx)
			switch {
			case err == nil && found:
				l.saw(&l.polled, v)
			case err == nil:
			case castytest.Indeterminate(err):
				l.count(&l.pollsUnknown, 1)
			default:
				l.refused(err)
			}
		default:
			v, err := q.Take(ctx)
			if err == nil {
				l.saw(&l.taken, v)
			} else {
				l.count(&l.takesFailed, 1)
			}
		}
	})
}

// offer offers v, and again (up to twice more) while the outcome is
// indeterminate, each attempt with opTimeout of its own.
func (l *queueLoad) offer(q *collections.Queue[int], v int) {
	rec := &offered{}
	l.mu.Lock()
	l.offers[v] = rec
	l.mu.Unlock()
	for attempt := range 3 {
		if attempt == 1 {
			l.count(&l.retried, 1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := q.Offer(ctx, v)
		cancel()
		l.mu.Lock()
		switch {
		case err == nil:
			rec.acked, rec.maybe = true, rec.maybe+1
			l.mu.Unlock()
			return
		case castytest.Indeterminate(err):
			rec.maybe++
			l.mu.Unlock()
		default:
			l.refusals[short(err)]++
			l.mu.Unlock()
			return
		}
	}
}

func (l *queueLoad) saw(counter *int, vs ...int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range vs {
		l.seen[v]++
	}
	*counter += len(vs)
}

func (l *queueLoad) count(counter *int, n int) {
	l.mu.Lock()
	*counter += n
	l.mu.Unlock()
}

func (l *queueLoad) refused(err error) {
	l.mu.Lock()
	l.refusals[short(err)]++
	l.mu.Unlock()
}

// drain drains the queue until a Drain returns nothing, retrying failed
// ones until deadline (an indeterminate one counted: it may have removed
// queueDrain elements).
func (l *queueLoad) drain(q *collections.Queue[int], deadline time.Time) error {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		vs, err := q.Drain(ctx, queueDrain)
		cancel()
		switch {
		case err == nil && len(vs) == 0:
			return nil
		case err == nil:
			l.saw(&l.drained, vs...)
			continue
		case castytest.Indeterminate(err):
			l.count(&l.drainsUnknown, 1)
		}
		if !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// missing counts the acknowledged values never seen.
func (l *queueLoad) missing() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for v, rec := range l.offers {
		if rec.acked && l.seen[v] == 0 {
			n++
		}
	}
	return n
}

func (l *queueLoad) final(r *rig, deadline time.Time) {
	q, ok := l.queues.on(r.lite)
	if !ok {
		l.drainErr = errors.New("not opened")
		return
	}
	if l.drainErr = l.drain(q, deadline); l.drainErr != nil {
		return
	}
	if l.missing() > 0 {
		// Elements granted to Takes that gave up and could not withdraw
		// come back when their reservation's TTL passes: wait it out.
		time.Sleep(queueTTL + time.Second)
		l.waited = true
		l.drainErr = l.drain(q, time.Now().Add(readBackWithin))
	}
}

func (l *queueLoad) check(j judge) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	var acked, missing, unexpected, dupValues, dupCopies, over int
	for v, rec := range l.offers {
		if rec.acked {
			acked++
			if l.seen[v] == 0 {
				missing++
			}
		}
	}
	var never []int
	for v, n := range l.seen {
		rec := l.offers[v]
		switch {
		case rec == nil:
			unexpected++
			never = append(never, v)
			continue
		case n > rec.maybe:
			over += n - rec.maybe
		}
		if n > 1 {
			dupValues++
			dupCopies += n - 1
		}
	}
	budget := l.pollsUnknown + l.takesFailed + l.drainsUnknown*queueDrain
	waited := ""
	if l.waited {
		waited = fmt.Sprintf(" (drained again after the %v TTL)", queueTTL)
	}
	v := verdict{summary: fmt.Sprintf("%d acknowledged offers of %d values offered (%d offered again after an indeterminate Offer); seen %d taken, %d polled, %d drained at the end%s; "+
		"%d acknowledged values never seen, against %d removals of unknown outcome (%d indeterminate polls, %d failed takes, %d indeterminate drains of up to %d); "+
		"%d values seen more than once (%d extra copies), %d copies beyond the Offers that may have succeeded; %d values never offered",
		acked, len(l.offers), l.retried, l.taken, l.polled, l.drained, waited,
		missing, budget, l.pollsUnknown, l.takesFailed, l.drainsUnknown, queueDrain,
		dupValues, dupCopies, over, unexpected)}
	if len(l.refusals) > 0 {
		v.summary += fmt.Sprintf("; refusals: %v", l.refusals)
	}
	switch {
	case l.drainErr != nil:
		// What is unseen may still be queued: only the other rules hold.
		v.unanswered(j, fmt.Sprintf("the final drain did not complete within %v: %v", readBackWithin, l.drainErr))
	case missing > budget:
		v.failures = append(v.failures, fmt.Sprintf("%d acknowledged values never seen, more than the %d removals of unknown outcome could have taken: %d lost", missing, budget, missing-budget))
	}
	if over > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d copies seen beyond the Offers of their values that may have succeeded", over))
	}
	if unexpected > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d values seen that nobody offered: %s", unexpected, upTo(never)))
	}
	if acked == 0 {
		v.failures = append(v.failures, "no Offer was acknowledged: the workload proves nothing")
	}
	return v
}

// ---- Lock -----------------------------------------------------------------

const (
	// lockTTL is the lock's lease TTL; Do renews every lockTTL/3. Short,
	// so that a fault on the lock's owner outlasts a lease.
	lockTTL = time.Second
	// lockWait bounds the wait for the lock in one Do.
	lockWait = 10 * time.Second
)

// lockLoad: clients run Lock.Do; the work each holder does writes its
// fencing token to a resource in the test (fenced) at the start and at
// the end of its critical section, sleeping between. The work does not
// watch its ctx: it stands for a holder that does not notice its lease is
// gone, which is what fencing is for; one in ten holds the lock past the
// lease's TTL. The check, as castychaos's clock's: tokens accepted
// strictly increase from one holder to the next, no two holders' accepted
// writes interleave, no holder is refused although its Do reported no
// lost lease (ErrLeaseLost), and a last Lock after the run gets a token
// greater than every one accepted.
type lockLoad struct {
	locks   *opener[*collections.Lock]
	res     fenced
	holders atomic.Int64

	mu       sync.Mutex
	lostBy   map[int64]bool // holders whose Do reported the lease lost
	long     int            // critical sections held past the TTL
	gaveUp   int            // Do calls that gave up waiting for the lock
	entered  int            // holders that ran their work
	leaseOut int            // Do calls that returned ErrLeaseLost
	failed   map[string]int // other errors of Do

	last    uint64 // the final Lock's token
	lastErr error
}

var (
	// errFenced: the resource refused the holder's token.
	errFenced = errors.New("the resource refused the token (fenced)")
	// errGaveUp: the lock came after the caller stopped waiting for it.
	errGaveUp = fmt.Errorf("gave up waiting for the lock: %w", context.Canceled)
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

func (l *lockLoad) name() string { return "lock" }

func (l *lockLoad) start(r *rig) {
	l.lostBy, l.failed = map[int64]bool{}, map[string]int{}
	l.locks = newOpener(r.t, func(sys *casty.System) (*collections.Lock, error) {
		return collections.NewLock(sys, "virtual-lock", collections.TTL(lockTTL))
	})
	// stopped ends when the clients stop: a Do still waiting gives up.
	stopped, stop := context.WithCancel(context.Background())
	r.wg.Go(func() {
		<-r.stop
		stop()
	})
	r.clients(func(_ context.Context, client, i int) {
		lock, ok := l.locks.on(r.via(client, i))
		if !ok {
			return
		}
		l.do(stopped, lock, client, i)
	})
}

// do runs one Do: up to lockWait (or until stopped ends) waiting for the
// lock, then the work.
func (l *lockLoad) do(stopped context.Context, lock *collections.Lock, client, i int) {
	holder := l.holders.Add(1)
	hold := time.Duration(5+(client*31+i*17)%25) * time.Millisecond
	long := (client+3*i)%10 == 0
	if long {
		hold = lockTTL + time.Duration((client*7+i*13)%333)*time.Millisecond
	}
	var g gate
	dctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(lockWait, g.giveUp(cancel))
	defer timer.Stop()
	unhook := context.AfterFunc(stopped, g.giveUp(cancel))
	defer unhook()
	err := lock.Do(dctx, func(_ context.Context, token uint64) error {
		if !g.start() {
			return errGaveUp
		}
		l.mu.Lock()
		l.entered++
		if long {
			l.long++
		}
		l.mu.Unlock()
		if !l.res.write(holder, token) {
			return errFenced
		}
		time.Sleep(hold)
		if !l.res.write(holder, token) {
			return errFenced
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, collections.ErrLeaseLost):
		l.lostBy[holder] = true
		l.leaseOut++
	case err == nil || errors.Is(err, errFenced):
	case errors.Is(err, context.Canceled): // errGaveUp, or Do's own wait
		l.gaveUp++
	default:
		l.failed[short(err)]++
	}
}

func (l *lockLoad) final(r *rig, deadline time.Time) {
	lock, ok := l.locks.on(r.lite)
	if !ok {
		l.lastErr = errors.New("not opened")
		return
	}
	// One more holder, after every other: its token must be the greatest.
	l.lastErr = retry(deadline, func(ctx context.Context) error {
		lease, err := lock.Lock(ctx)
		if err != nil {
			return err
		}
		l.last = lease.Token()
		return lease.Release(ctx)
	})
}

func (l *lockLoad) check(j judge) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	fj := l.res.judge()
	var fencedLost, fencedHeld int
	var heldRefused []int64
	for h := range fj.refusedBy {
		if l.lostBy[h] {
			fencedLost++
		} else {
			fencedHeld++
			heldRefused = append(heldRefused, h)
		}
	}
	last := fmt.Sprint(l.last)
	if l.lastErr != nil {
		last = "none"
	}
	v := verdict{summary: fmt.Sprintf("%d holders ran their work (%d held past the %v TTL), %d accepted writes with tokens %d to %d; %d times a token did not exceed the previous holder's, %d critical sections interleaved; "+
		"%d holders told their lease was lost, %d of them refused by the resource (fencing at work); %d refused although their Do reported nothing lost; %d gave up waiting; a last Lock got token %s (want > %d)",
		l.entered, l.long, lockTTL, fj.writes, fj.lowest, fj.highest, fj.notIncreasing, fj.interleaved,
		l.leaseOut, fencedLost, fencedHeld, l.gaveUp, last, fj.highest)}
	if len(l.failed) > 0 {
		v.summary += fmt.Sprintf("; other errors: %v", l.failed)
	}
	if fj.notIncreasing > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d times a holder's accepted token did not exceed the previous holder's", fj.notIncreasing))
	}
	if fj.interleaved > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d times a holder's accepted write followed another holder's after its own first: critical sections overlapped", fj.interleaved))
	}
	if fencedHeld > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d holders refused by the resource although their Do reported no lost lease (holders %s): mutual exclusion failed", fencedHeld, upTo(heldRefused)))
	}
	switch {
	case l.lastErr != nil:
		v.unanswered(j, fmt.Sprintf("the final Lock failed for %v: %v", readBackWithin, l.lastErr))
	case l.last <= fj.highest:
		v.failures = append(v.failures, fmt.Sprintf("a Lock after the run got token %d, not above the highest accepted %d", l.last, fj.highest))
	}
	if l.entered == 0 {
		v.failures = append(v.failures, "no holder ran its work: the workload proves nothing")
	}
	return v
}

// fenced is the resource a lock protects: it accepts a write with a token
// at least as high as the highest it has seen, refuses a lower one, and
// keeps the accepted writes in the order it accepted them.
type fenced struct {
	mu        sync.Mutex
	highest   uint64
	accepted  []fencedWrite
	refusedBy map[int64]int
}

type fencedWrite struct {
	holder int64
	token  uint64
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
	f.accepted = append(f.accepted, fencedWrite{holder: holder, token: token})
	return true
}

// fencedJudgement is what the resource saw.
type fencedJudgement struct {
	writes          int
	lowest, highest uint64
	// notIncreasing counts writes of a holder after another holder's
	// whose token was not greater; interleaved counts writes of a holder
	// after another holder had written since its own previous one.
	notIncreasing, interleaved int
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

package casty_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Monitor exercises schedules. Each instance reports ticks to a probe
// chosen by key.
type Monitor struct {
	Checks int
	Alerts int
	Order  []string
}

type probe struct {
	mu      sync.Mutex
	ticks   []time.Time
	ends    []time.Time
	tickDur time.Duration
	sched   *casty.Schedule
	emitErr error
	reenter error
}

var probes sync.Map // key -> *probe

func probeOf(ctx context.Context) *probe {
	p, _ := probes.Load(casty.Self(ctx).Key())
	return p.(*probe)
}

func (m *Monitor) check(ctx context.Context) error {
	p := probeOf(ctx)
	p.mu.Lock()
	p.ticks = append(p.ticks, time.Now())
	d := p.tickDur
	p.mu.Unlock()
	time.Sleep(d)
	m.Checks++
	p.mu.Lock()
	p.ends = append(p.ends, time.Now())
	p.mu.Unlock()
	return nil
}

func (m *Monitor) alert(ctx context.Context) error { m.Alerts++; return nil }

func (m *Monitor) Watch(ctx context.Context, every time.Duration) error {
	p := probeOf(ctx)
	s := casty.Every(ctx, every, (*Monitor).check)
	p.mu.Lock()
	p.sched = s
	p.mu.Unlock()
	return s.Err()
}

func (m *Monitor) AlertIn(ctx context.Context, d time.Duration) error {
	return casty.After(ctx, d, (*Monitor).alert).Err()
}

// AlertTwiceIn arms the same one-shot twice: the second replaces the first.
func (m *Monitor) AlertTwiceIn(ctx context.Context, d time.Duration) error {
	first := casty.After(ctx, d, (*Monitor).alert)
	if err := casty.After(ctx, d, (*Monitor).alert).Err(); err != nil {
		return err
	}
	if first.Active() {
		return errors.New("the first After survived its replacement")
	}
	return nil
}

func (m *Monitor) Get(ctx context.Context) (Monitor, error) { return *m, nil }

func (m *Monitor) Sequence(ctx context.Context, g *gateCh) error {
	m.Order = append(m.Order, "handler")
	<-g.ch
	if err := casty.Emit(ctx, (*Monitor).emitA).Err(); err != nil {
		return err
	}
	return casty.Emit(ctx, (*Monitor).emitB).Err()
}

func (m *Monitor) emitA(ctx context.Context) error { m.Order = append(m.Order, "emitA"); return nil }
func (m *Monitor) emitB(ctx context.Context) error { m.Order = append(m.Order, "emitB"); return nil }

func (m *Monitor) Append(ctx context.Context, tag string) error {
	m.Order = append(m.Order, tag)
	return nil
}

func (m *Monitor) EmitThenStop(ctx context.Context) error {
	casty.Self(ctx).Deactivate()
	return casty.Emit(ctx, (*Monitor).emitA).Err()
}

// EmitThenCancel emits twice and cancels the first: only emitB runs.
func (m *Monitor) EmitThenCancel(ctx context.Context) error {
	a := casty.Emit(ctx, (*Monitor).emitA)
	if err := casty.Emit(ctx, (*Monitor).emitB).Err(); err != nil {
		return err
	}
	if !a.Active() {
		return errors.New("an emitted message is not active before it runs")
	}
	a.Cancel()
	a.Cancel() // idempotent
	return a.Err()
}

func (m *Monitor) TickCallsSelf(ctx context.Context) error {
	return casty.After(ctx, time.Millisecond, (*Monitor).callSelf).Err()
}

func (m *Monitor) callSelf(ctx context.Context) error {
	_, err := casty.Call0(ctx, Monitors.Ref(casty.Self(ctx).System(), casty.Self(ctx).Key()), (*Monitor).Get)
	p := probeOf(ctx)
	p.mu.Lock()
	p.reenter = err
	p.mu.Unlock()
	return nil
}

var Monitors = casty.Actor[Monitor](casty.IdleTimeout(casty.Forever))

func newProbe(key string, d time.Duration) *probe {
	p := &probe{tickDur: d}
	probes.Store(key, p)
	return p
}

func (p *probe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ticks)
}

func TestEveryIsFixedDelay(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	sys := newSys(t)
	p := newProbe("fixed", 200*time.Millisecond)
	if err := casty.Do(ctx, Monitors.Ref(sys, "fixed"), (*Monitor).Watch, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(600 * time.Millisecond) // the window the issue measures over
	n := p.count()
	p.mu.Lock()
	ticks, ends := append([]time.Time(nil), p.ticks...), append([]time.Time(nil), p.ends...)
	p.mu.Unlock()
	if n > 4 || n < 1 {
		t.Fatalf("%d ticks in %v with a 200 ms handler and a 50 ms period", n, time.Since(start))
	}
	// Each tick starts at least one period after the previous one ended.
	for i := 1; i < len(ticks) && i-1 < len(ends); i++ {
		if gap := ticks[i].Sub(ends[i-1]); gap < 45*time.Millisecond {
			t.Fatalf("tick %d started %v after tick %d ended", i, gap, i-1)
		}
	}
	p.sched.Cancel()
	p.sched.Cancel() // idempotent
	if p.sched.Active() {
		t.Fatal("cancelled schedule still active")
	}
}

func TestAfterFiresOnceAndTicksCommitState(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	newProbe("once", 0)
	ref := Monitors.Ref(sys, "once")
	if err := casty.Do(ctx, ref, (*Monitor).AlertIn, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the one-shot", func() bool {
		m, _ := casty.Call0(ctx, ref, (*Monitor).Get)
		return m.Alerts == 1
	})
	time.Sleep(30 * time.Millisecond) // a second firing would show up here
	if m, _ := casty.Call0(ctx, ref, (*Monitor).Get); m.Alerts != 1 {
		t.Fatalf("one-shot fired %d times", m.Alerts)
	}
}

func TestSchedulingAgainReplaces(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	p := newProbe("replace", 0)
	ref := Monitors.Ref(sys, "replace")
	casty.Do(ctx, ref, (*Monitor).Watch, time.Hour)
	first := p.sched
	casty.Do(ctx, ref, (*Monitor).Watch, 5*time.Millisecond)
	if first.Active() {
		t.Fatal("the first schedule survived its replacement")
	}
	waitFor(t, 5*time.Second, "ticks of the replacement", func() bool { return p.count() >= 2 })
	p.sched.Cancel()
}

// After, too, is replaced by scheduling the same function again: two
// one-shots armed back to back fire once.
func TestAfterAgainReplaces(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	newProbe("after-twice", 0)
	ref := Monitors.Ref(sys, "after-twice")
	if err := casty.Do(ctx, ref, (*Monitor).AlertTwiceIn, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the one-shot", func() bool {
		m, _ := casty.Call0(ctx, ref, (*Monitor).Get)
		return m.Alerts >= 1
	})
	time.Sleep(100 * time.Millisecond) // absence check: the replaced one must not fire
	if m, _ := casty.Call0(ctx, ref, (*Monitor).Get); m.Alerts != 1 {
		t.Fatalf("two After of the same function fired %d times, want 1", m.Alerts)
	}
}

func TestSchedulesDieWithActivationAndNeverKeepItAlive(t *testing.T) {
	var deactivations atomic.Int32
	sys := newSys(t, casty.WithInterceptor(func(ev casty.Event) {
		if d, ok := ev.(casty.Deactivated); ok && d.Key == "idle" {
			deactivations.Add(1)
		}
	}))
	ctx := context.Background()
	p := newProbe("idle", 0)
	// A kind with a short idle timeout: the ticks must not keep it alive.
	if err := casty.Do(ctx, ShortMonitors.Ref(sys, "idle"), (*Monitor).Watch, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "idle deactivation despite ticks", func() bool { return deactivations.Load() == 1 })
	n := p.count()
	if n == 0 {
		t.Fatal("no tick ran before deactivation")
	}
	time.Sleep(50 * time.Millisecond) // ten periods: a surviving schedule would tick
	if p.count() != n {
		t.Fatalf("ticks went on after deactivation: %d then %d", n, p.count())
	}
	if sys.Active() != 0 {
		t.Fatalf("a tick reactivated the actor: %d active", sys.Active())
	}
}

var ShortMonitors = casty.Actor[Monitor](casty.Name("test.ShortMonitor"), casty.IdleTimeout(60*time.Millisecond))

func TestEmitRunsNextInOrder(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Monitors.Ref(sys, "emit")
	// Queue another call behind Sequence while it runs: the emits must
	// still run before it.
	g := &gateCh{ch: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := casty.Do(ctx, ref, (*Monitor).Sequence, g); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, 5*time.Second, "Sequence to start", func() bool { return sys.Active() == 1 })
	go func() {
		defer wg.Done()
		if err := casty.Do(ctx, ref, (*Monitor).Append, "call"); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(10 * time.Millisecond) // let "call" queue up (widens the test only)
	close(g.ch)
	wg.Wait()
	m, _ := casty.Call0(ctx, ref, (*Monitor).Get)
	want := []string{"handler", "emitA", "emitB", "call"}
	if len(m.Order) != 4 || m.Order[0] != want[0] || m.Order[1] != want[1] || m.Order[2] != want[2] || m.Order[3] != want[3] {
		t.Fatalf("order %v, want %v", m.Order, want)
	}
}

func TestCancelledEmitNeverRuns(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Monitors.Ref(sys, "emit-cancel")
	if err := casty.Do0(ctx, ref, (*Monitor).EmitThenCancel); err != nil {
		t.Fatal(err)
	}
	m, _ := casty.Call0(ctx, ref, (*Monitor).Get) // queued behind the emits
	if !slices.Equal(m.Order, []string{"emitB"}) {
		t.Fatalf("order %v, want only emitB", m.Order)
	}
}

func TestEmitDroppedWhenActivationCloses(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Monitors.Ref(sys, "emit-stop")
	if err := casty.Do0(ctx, ref, (*Monitor).EmitThenStop); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "deactivation", func() bool { return sys.Active() == 0 })
	m, _ := casty.Call0(ctx, ref, (*Monitor).Get)
	if len(m.Order) != 0 {
		t.Fatalf("the emit ran after deactivation: %v", m.Order)
	}
}

func TestTickCallingItselfIsReentrant(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	p := newProbe("self", 0)
	if err := casty.Do0(ctx, Monitors.Ref(sys, "self"), (*Monitor).TickCallsSelf); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the tick", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.reenter != nil
	})
	if !errors.Is(p.reenter, casty.ErrReentrancy) {
		t.Fatalf("tick calling itself: %v", p.reenter)
	}
}

// Ticker fails on its tick, to show ticks are supervised.
type Ticker struct{ N int }

func (t *Ticker) Start(ctx context.Context) error {
	return casty.After(ctx, time.Millisecond, (*Ticker).boom).Err()
}
func (t *Ticker) boom(ctx context.Context) error { return errors.New("tick failed") }

var Tickers = casty.Actor[Ticker]()

func TestTickFailureGoesToSupervisor(t *testing.T) {
	got := make(chan string, 1)
	sys := newSys(t, casty.WithSupervisor(func(kind, key string, err error, f casty.Failure) casty.Directive {
		got <- f.Method + ": " + err.Error()
		return casty.Keep
	}))
	if err := casty.Do0(context.Background(), Tickers.Ref(sys, "t"), (*Ticker).Start); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "boom: tick failed" {
			t.Fatalf("supervisor saw %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tick's failure never reached the supervisor")
	}
}

func TestScheduleOutsideHandlerIsInert(t *testing.T) {
	s := casty.Every(context.Background(), time.Millisecond, (*Monitor).check)
	if s.Err() == nil || s.Active() {
		t.Fatalf("schedule outside a handler: err %v active %v", s.Err(), s.Active())
	}
	s.Cancel()
	if e := casty.Emit(context.Background(), (*Monitor).check); e.Err() == nil || e.Active() {
		t.Fatalf("emit outside a handler: err %v active %v", e.Err(), e.Active())
	}
}

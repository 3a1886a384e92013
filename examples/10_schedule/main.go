// Schedules: a Monitor checks something periodically (casty.Every) and
// raises a one-shot boot alert (casty.After). Ticks are messages on the
// actor's own mailbox: one at a time with its other handlers, state
// committed, failures supervised.
//
// Schedules die with their activation and never keep it alive, so the
// decision to watch is a state field (Interval) and the schedule is its
// transient effect: the Activate hook re-arms it from that field on every
// activation. The example deactivates the monitor and calls it again to
// show the re-arm.
//
// Local mode keeps no state across activations (nothing replicates it), so
// a small in-process store, injected with casty.Inject, saves the state in
// Deactivate and restores it in Activate; a cluster kind declared with
// casty.Replicas(3) gets the restore for free, and its Activate hook is the
// same.
//
// Run it from the repository root:
//
//	go run ./examples/10_schedule
package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Monitor's exported fields are its state; Interval is the decision to
// watch (0: not watching).
type Monitor struct {
	Interval time.Duration
	Checks   int
	Alerts   int

	// Transient, set by casty.Inject on every activation.
	store  *store
	events chan<- string
	sched  *casty.Schedule // the periodic check, while armed
}

// Activate restores the state and re-arms the check from Interval: the
// idiom that keeps a schedule alive across deactivations and failovers.
func (m *Monitor) Activate(ctx context.Context) error {
	key := casty.Self(ctx).Key()
	if saved, ok := m.store.load(key); ok {
		m.Interval, m.Checks, m.Alerts = saved.Interval, saved.Checks, saved.Alerts
	}
	if m.Interval > 0 {
		m.sched = casty.Every(ctx, m.Interval, (*Monitor).check)
		m.notify(fmt.Sprintf("[hook] activate %s: Interval=%v in state, check re-armed", key, m.Interval))
		return m.sched.Err()
	}
	m.notify(fmt.Sprintf("[hook] activate %s: not watching, nothing to arm", key))
	return nil
}

// Deactivate saves the state; the schedules die with the activation.
func (m *Monitor) Deactivate(ctx context.Context) error {
	key := casty.Self(ctx).Key()
	m.store.save(key, *m)
	m.notify(fmt.Sprintf("[hook] deactivate %s: state saved, schedules gone", key))
	return nil
}

// Watch starts the periodic check every `every`, and a one-shot boot alert
// after `alertIn` (its argument travels by closure).
func (m *Monitor) Watch(ctx context.Context, w WatchArgs) error {
	m.Interval = w.Every
	m.sched = casty.Every(ctx, w.Every, (*Monitor).check)
	if err := m.sched.Err(); err != nil {
		return err
	}
	note := "boot"
	return casty.After(ctx, w.AlertIn, func(m *Monitor, ctx context.Context) error {
		return m.alert(ctx, note)
	}).Err()
}

// Unwatch stops the check and records the decision in state.
func (m *Monitor) Unwatch(ctx context.Context) error {
	m.Interval = 0
	m.sched.Cancel() // idempotent; nil-safe
	return nil
}

// Rest deactivates the monitor after this message.
func (m *Monitor) Rest(ctx context.Context) error {
	casty.Self(ctx).Deactivate()
	return nil
}

// Get returns the monitor's state.
func (m *Monitor) Get(ctx context.Context) (Monitor, error) { return *m, nil }

// check is a periodic tick: unexported is fine, ticks never cross the wire.
func (m *Monitor) check(ctx context.Context) error {
	m.Checks++
	m.notify(fmt.Sprintf("check #%d", m.Checks))
	return nil
}

func (m *Monitor) alert(ctx context.Context, note string) error {
	m.Alerts++
	m.notify(fmt.Sprintf("alert %q (alert #%d)", note, m.Alerts))
	return nil
}

// notify tells main what happened without ever blocking the actor.
func (m *Monitor) notify(s string) {
	select {
	case m.events <- s:
	default:
	}
}

// WatchArgs is Watch's argument.
type WatchArgs struct {
	Every, AlertIn time.Duration
}

var _ = casty.Message[WatchArgs](casty.Name("demo.WatchArgs"))

// Monitors never idle out: schedules do not count as use, so a monitor
// that must keep ticking needs casty.Forever.
var Monitors = casty.Actor[Monitor](casty.Name("demo.Monitor"), casty.IdleTimeout(casty.Forever))

// store stands in for replication in local mode.
type store struct {
	mu sync.Mutex
	m  map[string]Monitor
}

func (s *store) save(key string, m Monitor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = Monitor{Interval: m.Interval, Checks: m.Checks, Alerts: m.Alerts}
}

func (s *store) load(key string) (Monitor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.m[key]
	return m, ok
}

func main() {
	ctx := context.Background()
	events := make(chan string, 64)
	st := &store{m: map[string]Monitor{}}
	sys := casty.Local(casty.Inject(Monitors, func(m *Monitor) { m.store, m.events = st, events }))
	defer sys.Close(ctx)
	db := Monitors.Ref(sys, "db-primary")

	// waitFor prints events until one equal to want.
	waitFor := func(want string) {
		timeout := time.After(5 * time.Second)
		for {
			select {
			case ev := <-events:
				fmt.Println("  ", ev)
				if ev == want {
					return
				}
			case <-timeout:
				log.Fatalf("timed out waiting for %q", want)
			}
		}
	}

	fmt.Println("1. periodic check every 50ms, one-shot alert after 120ms:")
	if err := casty.Do(ctx, db, (*Monitor).Watch, WatchArgs{Every: 50 * time.Millisecond, AlertIn: 120 * time.Millisecond}); err != nil {
		log.Fatal(err)
	}
	waitFor("check #5") // the alert fires between check #2 and check #3
	m, err := casty.Call0(ctx, db, (*Monitor).Get)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("   5 checks in, the one-shot has fired exactly once: alerts=%d\n", m.Alerts)

	fmt.Println("2. deactivate, then call again: Activate re-arms from Interval")
	if err := casty.Do0(ctx, db, (*Monitor).Rest); err != nil {
		log.Fatal(err)
	}
	waitFor("[hook] deactivate db-primary: state saved, schedules gone")
	m, err = casty.Call0(ctx, db, (*Monitor).Get) // reactivates
	if err != nil {
		log.Fatal(err)
	}
	waitFor("[hook] activate db-primary: Interval=50ms in state, check re-armed")
	waitFor(fmt.Sprintf("check #%d", m.Checks+2))
	fmt.Println("   ticking again after reactivation: true")

	fmt.Println("3. unwatch, deactivate, call again: nothing to re-arm")
	if err := casty.Do0(ctx, db, (*Monitor).Unwatch); err != nil {
		log.Fatal(err)
	}
	if err := casty.Do0(ctx, db, (*Monitor).Rest); err != nil {
		log.Fatal(err)
	}
	waitFor("[hook] deactivate db-primary: state saved, schedules gone")
	if _, err := casty.Call0(ctx, db, (*Monitor).Get); err != nil {
		log.Fatal(err)
	}
	waitFor("[hook] activate db-primary: not watching, nothing to arm")
}

// Reactivation: a durable actor — Replicas(3), never idle — keeps a
// heartbeat with a periodic tick re-armed from its state in Activate. Its
// owner closes; another member activates it unprompted, with its state, and
// the heartbeat goes on. A Retire call ends it for good: it stays down.
//
//	go run ./examples/09_reactivation
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"github.com/casty-go/casty/casty"
)

// Sentinel beats while it watches. The decision to watch is state (it
// survives its owner); the schedule is its transient effect, re-armed by
// Activate wherever the actor comes back.
type Sentinel struct {
	Watching bool
	Beats    int
	Lives    int // how many times Activate ran
}

// Activate runs on every activation, after the state was restored.
func (s *Sentinel) Activate(ctx context.Context) error {
	s.Lives++
	if s.Watching {
		casty.Every(ctx, 50*time.Millisecond, (*Sentinel).beat)
	}
	return nil
}

// Watch starts the heartbeat.
func (s *Sentinel) Watch(ctx context.Context) error {
	s.Watching = true
	casty.Every(ctx, 50*time.Millisecond, (*Sentinel).beat)
	return nil
}

// beat is the tick: a message like any other, committed to the replicas.
func (s *Sentinel) beat(context.Context) error {
	s.Beats++
	return nil
}

// Retire ends the sentinel for good.
func (s *Sentinel) Retire(ctx context.Context) error {
	s.Watching = false
	casty.Self(ctx).Deactivate()
	return nil
}

// Sentinels are durable: replicated and never idle.
var Sentinels = casty.Actor[Sentinel](casty.Name("example.Sentinel"),
	casty.Replicas(3), casty.Write(casty.Majority), casty.IdleTimeout(casty.Forever))

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := casty.WithLogger(slog.New(slog.DiscardHandler))

	var members []*casty.System
	for i := range 4 {
		var seeds []string
		if i > 0 {
			seeds = []string{members[0].Addr()}
		}
		m, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(seeds...), quiet)
		if err != nil {
			log.Fatal(err)
		}
		members = append(members, m)
	}
	defer func() {
		for _, m := range slices.Backward(members) {
			m.Close(context.Background())
		}
	}()
	for _, m := range members {
		if err := m.WaitMembers(ctx, 4); err != nil { // placed and synced
			log.Fatal(err)
		}
	}

	if err := casty.Do0(ctx, Sentinels.Ref(members[0], "watchtower"), (*Sentinel).Watch); err != nil {
		log.Fatal(err)
	}
	before := waitBeats(ctx, members, 10)
	owner := ownerOf(members, "watchtower")
	fmt.Printf("watchtower beats on its owner (%d beats so far, life #%d)\n", min(before.Beats, 10), before.Lives)

	// The owner leaves gracefully; nobody calls the sentinel.
	if err := owner.Close(ctx); err != nil {
		log.Fatal(err)
	}
	members = slices.DeleteFunc(members, func(m *casty.System) bool { return m == owner })
	after := waitBeats(ctx, members, before.Beats+10)
	// Lives counts every Activate that committed: a member that picked it
	// up while the placement was changing may have started it once more
	// before the placement settled, so it is at least one more.
	fmt.Printf("after its owner left it resumed on another member, unprompted: a new life: %v, beats carried over: %v\n",
		after.Lives > before.Lives, after.Beats > before.Beats)

	// Retire: it deactivates and stays down.
	if err := casty.Do0(ctx, Sentinels.Ref(members[0], "watchtower"), (*Sentinel).Retire); err != nil {
		log.Fatal(err)
	}
	waitUntil(ctx, "the sentinel to stop", func() bool { _, ok := stateAnywhere(members, "watchtower"); return !ok })
	time.Sleep(500 * time.Millisecond) // a few heartbeats' worth: it must not come back
	_, back := stateAnywhere(members, "watchtower")
	fmt.Println("retired: running anywhere:", back)
}

// waitBeats waits until the sentinel, wherever it runs, has beaten n times.
func waitBeats(ctx context.Context, members []*casty.System, n int) Sentinel {
	var st Sentinel
	waitUntil(ctx, fmt.Sprintf("%d beats", n), func() bool {
		var ok bool
		st, ok = stateAnywhere(members, "watchtower")
		return ok && st.Beats >= n
	})
	return st
}

// stateAnywhere reads the live activation's state, wherever it runs.
func stateAnywhere(members []*casty.System, key string) (Sentinel, bool) {
	for _, m := range members {
		st, ok, err := Sentinels.StateOf(context.Background(), m, key)
		if err == nil && ok {
			return st, true
		}
	}
	return Sentinel{}, false
}

func ownerOf(members []*casty.System, key string) *casty.System {
	o, _ := members[0].OwnerOf(Sentinels.Name(), key)
	for _, m := range members {
		if m.Addr() == o.Addr {
			return m
		}
	}
	log.Fatal("no owner")
	return nil
}

func waitUntil(ctx context.Context, what string, cond func() bool) {
	for !cond() {
		select {
		case <-ctx.Done():
			log.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

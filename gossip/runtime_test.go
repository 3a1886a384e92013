package gossip

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/wait"
)

// fastConfig shrinks every interval so runtime tests finish in seconds.
func fastConfig(seeds ...string) *Config {
	c := DefaultConfig()
	c.ShuffleInterval = 200 * time.Millisecond
	c.SuspicionTimeout = 400 * time.Millisecond
	c.AntiEntropyInterval = 500 * time.Millisecond
	c.TombstoneTTL = 10 * time.Second
	c.GraftTimeout = 50 * time.Millisecond
	c.JoinTimeout = time.Second
	c.NeighborTimeout = 200 * time.Millisecond
	c.Seeds = seeds
	return c
}

// waitFor is wait.For: every module's tests poll at the same intervals.
var waitFor = wait.For

type memCluster struct {
	net    *MemNetwork
	agents []*Agent
	events []<-chan Event
	stop   []func()
}

func startMem(t *testing.T, n int) *memCluster {
	t.Helper()
	c := &memCluster{net: NewMemNetwork(1)}
	for i := range n {
		addr := fmt.Sprintf("m%d", i)
		tr, err := c.net.Transport(addr)
		if err != nil {
			t.Fatal(err)
		}
		var seeds []string
		if i > 0 {
			seeds = []string{"m0"}
		}
		a, err := Start(Peer{ID: NodeID{byte(i + 1)}, Addr: addr}, fastConfig(seeds...), tr)
		if err != nil {
			t.Fatal(err)
		}
		ch, stop := a.Subscribe()
		c.agents = append(c.agents, a)
		c.events = append(c.events, ch)
		c.stop = append(c.stop, stop)
	}
	t.Cleanup(func() {
		for i, a := range c.agents {
			c.stop[i]()
			a.Close()
		}
	})
	return c
}

// sees reports whether every agent in who (nil: all open) sees subject with status st.
func (c *memCluster) allSee(subject int, ok func(Member) bool, skip ...int) bool {
	id := c.agents[subject].Self().ID
outer:
	for i, a := range c.agents {
		for _, s := range skip {
			if s == i {
				continue outer
			}
		}
		found := false
		for _, m := range a.Members() {
			if m.ID == id {
				found = ok(m)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func isStatus(s Status) func(Member) bool { return func(m Member) bool { return m.Status == s } }

func TestAgentsConvergeOverMemNetwork(t *testing.T) {
	c := startMem(t, 8)
	waitFor(t, 5*time.Second, "every agent sees every agent ALIVE", func() bool {
		for i := range c.agents {
			if !c.allSee(i, isStatus(Alive)) {
				return false
			}
		}
		return true
	})
	if len(c.agents[0].Neighbors()) == 0 {
		t.Fatal("no overlay neighbours")
	}
}

func TestAgentCrashBecomesDeadAndLeaveBecomesLeft(t *testing.T) {
	c := startMem(t, 6)
	waitFor(t, 5*time.Second, "converged", func() bool { return c.allSee(5, isStatus(Alive)) && c.allSee(4, isStatus(Alive)) })
	c.net.Crash("m5")
	waitFor(t, 5*time.Second, "crashed node DEAD everywhere", func() bool { return c.allSee(5, isStatus(Dead), 5) })
	if err := c.agents[4].Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "leaver LEFT everywhere", func() bool { return c.allSee(4, isStatus(Left), 4, 5) })
}

// Since tells when each record took its status: a member crashed after
// the agents converged is DEAD since a time after the crash, on every
// agent; an id the table does not hold has none.
func TestAgentSinceIsWhenTheStatusWasTaken(t *testing.T) {
	c := startMem(t, 4)
	waitFor(t, 5*time.Second, "converged", func() bool { return c.allSee(3, isStatus(Alive)) })
	id := c.agents[3].Self().ID
	for i, a := range c.agents[:3] {
		if a.Since(id).IsZero() {
			t.Fatalf("agent %d: no time for an ALIVE record", i)
		}
	}
	crashed := time.Now()
	c.net.Crash("m3")
	waitFor(t, 5*time.Second, "crashed node DEAD everywhere", func() bool { return c.allSee(3, isStatus(Dead), 3) })
	for i, a := range c.agents[:3] {
		if since := a.Since(id); since.Before(crashed) || since.After(time.Now()) {
			t.Errorf("agent %d: DEAD since %v, want between the crash at %v and now", i, since, crashed)
		}
	}
	if !c.agents[0].Since(NodeID{0xee}).IsZero() {
		t.Error("a time for an id the table does not hold")
	}
}

func TestSubscribersSeeJoinedThenDead(t *testing.T) {
	c := startMem(t, 4)
	id := c.agents[3].Self().ID
	var got []EventKind
	deadline := time.After(5 * time.Second)
	waitFor(t, 5*time.Second, "converged", func() bool { return c.allSee(3, isStatus(Alive)) })
	c.net.Crash("m3")
	for len(got) < 2 || got[len(got)-1] != EventDead {
		select {
		case ev := <-c.events[0]:
			if ev.Member.ID == id {
				got = append(got, ev.Kind)
			}
		case <-deadline:
			t.Fatalf("events about the crashed node: %v", got)
		}
	}
	if got[0] != EventJoined {
		t.Fatalf("first event %v, want joined", got[0])
	}
}

func TestPartitionHealsWithRefutation(t *testing.T) {
	c := startMem(t, 6)
	waitFor(t, 5*time.Second, "converged", func() bool {
		for i := range c.agents {
			if !c.allSee(i, isStatus(Alive)) {
				return false
			}
		}
		return true
	})
	c.net.Partition([]string{"m0", "m1", "m2"}, []string{"m3", "m4", "m5"})
	waitFor(t, 5*time.Second, "each side declares the other dead", func() bool { return c.allSee(5, isStatus(Dead), 3, 4, 5) })
	c.net.Heal()
	waitFor(t, 10*time.Second, "everyone ALIVE again after the heal", func() bool {
		for i := range c.agents {
			if !c.allSee(i, isStatus(Alive)) {
				return false
			}
		}
		return true
	})
}

// A caller cancels Leave's ctx to cut the linger short (casty does once
// its handoff is done): the LEFT record must go out all the same, and
// Leave report no error. With the cancellation racing the announcement,
// a Leave that chose between them at random lost the record about every
// other time; eight leavers make that chance 1 in 256.
func TestLeaveAnnouncesThoughItsLingerIsCutShort(t *testing.T) {
	for i := range 8 {
		c := startMem(t, 2)
		waitFor(t, 5*time.Second, "converged", func() bool { return c.allSee(1, isStatus(Alive)) })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.agents[1].Leave(ctx); err != nil {
			t.Fatalf("leaver %d: Leave with its linger cut short: %v", i, err)
		}
		waitFor(t, 5*time.Second, "leaver LEFT for the other", func() bool { return c.allSee(1, isStatus(Left), 1) })
	}
}

// A node with nobody left to tell (every other member gone, or none ever
// there) has nobody to answer grafts for its LEFT record: Leave closes at
// once instead of lingering Config.LeaveLinger for nothing.
func TestALoneNodeLeavesWithoutLingering(t *testing.T) {
	net := NewMemNetwork(1)
	tr, err := net.Transport("m0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.LeaveLinger = time.Hour
	a, err := Start(Peer{ID: NodeID{1}, Addr: "m0"}, cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	left := make(chan error, 1)
	go func() { left <- a.Leave(context.Background()) }()
	select {
	case err := <-left:
		if err != nil {
			t.Fatalf("Leave: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a node alone still lingers after its LEFT (Config.LeaveLinger 1 h)")
	}
}

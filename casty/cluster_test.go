package casty_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/wire"
)

// quiet discards a test node's logs (set CASTY_TEST_LOGS=1 to see them).
func quiet() casty.Option {
	if os.Getenv("CASTY_TEST_LOGS") != "" {
		return casty.WithLogger(slog.Default())
	}
	return casty.WithLogger(slog.New(slog.DiscardHandler))
}

// fastCluster is a Config that makes membership react in test time. Its
// GraftTimeout also sets how long a closing member lingers after it
// announced its leave (twice it): a member with no range to hand off
// lingers all of it, so at the default 0.5 s most tests' cleanups spent a
// second per member doing nothing.
func fastCluster() casty.Config {
	return casty.Config{
		Actors: casty.ActorConfig{
			DrainTimeout: 5 * time.Second,
			CallTimeout:  5 * time.Second,
		},
		Transport: casty.TransportConfig{
			KeepAliveInterval: 200 * time.Millisecond,
			KeepAliveTimeout:  500 * time.Millisecond,
		},
		Membership: casty.MembershipConfig{
			SuspicionTimeout:    500 * time.Millisecond,
			ShuffleInterval:     time.Second,
			AntiEntropyInterval: time.Second,
			JoinTimeout:         10 * time.Second, // the default: 5 s ran out under CI's -race load
			GraftTimeout:        100 * time.Millisecond,
		},
	}
}

func startNode(t *testing.T, seeds []string, opts ...casty.Option) *casty.System {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // past JoinTimeout
	defer cancel()
	opts = append([]casty.Option{casty.WithConfig(fastCluster()), casty.Seeds(seeds...), quiet()}, opts...)
	sys, err := casty.Start(ctx, "127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, sys) })
	return sys
}

func closeSys(t *testing.T, sys *casty.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Close(ctx); err != nil {
		t.Errorf("Close %s: %v", sys.Addr(), err)
	}
}

// startCluster starts n members and waits until each sees all n.
func startCluster(t *testing.T, n int, opts ...casty.Option) []*casty.System {
	t.Helper()
	first := startNode(t, nil, opts...)
	nodes := []*casty.System{first}
	for range n - 1 {
		nodes = append(nodes, startNode(t, []string{first.Addr()}, opts...))
	}
	waitConverged(t, nodes, n)
	// And the agreed placement of replicated kinds, a round trip or two
	// later.
	waitFor(t, 15*time.Second, fmt.Sprintf("%d members placed everywhere", n), func() bool {
		for _, s := range nodes {
			if casty.Placed(s) != n {
				return false
			}
		}
		return true
	})
	return nodes
}

// waitConverged waits until every node's membership, and the ring it
// routes by (rebuilt from it a moment later), hold n members.
func waitConverged(t *testing.T, nodes []*casty.System, n int) {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("%d members everywhere", n), func() bool {
		for _, s := range nodes {
			if len(s.Members()) != n || casty.Routed(s) != n {
				return false
			}
		}
		return true
	})
}

// Where reports the node it runs on.
type Where struct{ Calls int }

func (w *Where) Hit(ctx context.Context) (string, error) {
	w.Calls++
	return fmt.Sprintf("%s#%d", casty.Self(ctx).System().Addr(), w.Calls), nil
}

var Wheres = casty.Actor[Where](casty.Name("test.Where"))

// Locator is a service that reports the node it runs on.
type Locator struct{}

func (*Locator) Where(ctx context.Context) (string, error) {
	return casty.Self(ctx).System().Addr(), nil
}

var Locators = casty.Service[Locator](casty.Name("test.Locator"))

func TestClusterSameKeyOneActivation(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx := context.Background()
	var hosts []string
	for i := range 9 {
		out, err := casty.Call0(ctx, Wheres.Ref(nodes[i%3], "the-key"), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		host, n, _ := strings.Cut(out, "#")
		if n != fmt.Sprint(i+1) {
			t.Fatalf("call %d saw count %s: not one activation", i+1, n)
		}
		hosts = append(hosts, host)
	}
	for _, h := range hosts {
		if h != hosts[0] {
			t.Fatalf("the key ran on %v", hosts)
		}
	}
	total := 0
	for _, s := range nodes {
		total += s.Active()
	}
	if total != 1 {
		t.Fatalf("%d activations across the cluster", total)
	}
}

// A membership event that leaves the live members as they were keeps the
// ring: building one hashes 128 tokens per member, and with tens of
// members in a process (castytest) rebuilding it on every event takes
// most of the CPU while the membership changes.
func TestAnEventThatChangesNoLiveMemberKeepsTheRing(t *testing.T) {
	nodes := startCluster(t, 2)
	s := nodes[0]
	waitFor(t, 10*time.Second, "both members live", func() bool { return casty.LiveRing(s).Size() == 2 })
	for range 3 {
		before := casty.LiveRing(s)
		casty.Refresh(s)
		if after := casty.LiveRing(s); after != before && slices.Equal(after.Members(), before.Members()) {
			t.Fatal("the live ring was rebuilt for the same members")
		}
	}
}

func TestClusterSpreadsKeys(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx := context.Background()
	per := map[string]int{}
	for i := range 60 {
		out, err := casty.Call0(ctx, Wheres.Ref(nodes[i%3], fmt.Sprint("k", i)), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := strings.Cut(out, "#")
		per[host]++
	}
	if len(per) != 3 {
		t.Fatalf("60 keys landed on %d members: %v", len(per), per)
	}
}

func TestClusterRemoteErrorsKeepTheirTypes(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	// Find a key owned by node 1 and call it from node 0.
	key := keyOn(t, nodes[1], nodes[0], Flakies.Name())
	err := casty.Do0(ctx, Flakies.Ref(nodes[0], key), (*Flaky).Fail)
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Method != "Fail" || fe.Key != key || fe.Message != "flaky" || fe.Kind != Flakies.Name() {
		t.Fatalf("remote failure: %#v", err)
	}
	key = keyOn(t, nodes[1], nodes[0], Hops.Name())
	_, err = casty.Call(ctx, Hops.Ref(nodes[0], key), (*Hop).Go, route{Keys: []string{key}})
	if !errors.Is(err, casty.ErrReentrancy) {
		t.Fatalf("remote A→A: %v", err)
	}
}

// keyOn finds a key of kind that owner owns on via's ring, skipping skip.
func keyOn(t *testing.T, owner, via *casty.System, kind string, skip ...string) string {
	t.Helper()
	for i := range 10000 {
		key := fmt.Sprint("key-", i)
		if m, ok := via.OwnerOf(kind, key); ok && m.Addr == owner.Addr() && !slices.Contains(skip, key) {
			return key
		}
	}
	t.Fatal("no key owned by", owner.Addr())
	return ""
}

// keyOwnedBy finds a key whose owner is owner, as seen from via.
func keyOwnedBy(t *testing.T, owner, via *casty.System) string {
	t.Helper()
	for i := range 1000 {
		key := fmt.Sprint("probe-", i)
		out, err := casty.Call0(context.Background(), Wheres.Ref(via, key), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(out, owner.Addr()+"#") {
			return key
		}
	}
	t.Fatal("no key owned by", owner.Addr())
	return ""
}

var _ = sync.Mutex{}

func TestClusterOwnerDeathMovesKeyWithFreshState(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx := context.Background()
	victim := nodes[2]
	key := keyOwnedBy(t, victim, nodes[0])
	for range 3 {
		casty.Call0(ctx, Wheres.Ref(nodes[0], key), (*Where).Hit)
	}
	casty.Crash(victim)
	waitConverged(t, nodes[:2], 2)
	out, err := casty.Call0(ctx, Wheres.Ref(nodes[1], key), (*Where).Hit)
	if err != nil {
		t.Fatal(err)
	}
	// keyOwnedBy's probe made call #1; three more made #4; fresh state is #1.
	if !strings.HasSuffix(out, "#1") || strings.HasPrefix(out, victim.Addr()) {
		t.Fatalf("after the owner died: %s", out)
	}
}

// A call whose owner dies while it runs may have taken effect: the
// caller is told so (ErrConnectionLost, indeterminate), not only that the
// actor was unavailable, which is definite when refused at the door.
func TestClusterCallCutOffByItsOwnersDeathIsIndeterminate(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	victim := nodes[2]
	key := keyOn(t, victim, nodes[0], Sleepers.Name())
	inflight := make(chan error, 1)
	go func() {
		inflight <- casty.Do(context.Background(), Sleepers.Ref(nodes[0], key), (*Sleeper).Sleep, 2*time.Second)
	}()
	waitFor(t, 5*time.Second, "the call to start on its owner", func() bool { return victim.Active() == 1 })
	casty.Crash(victim)
	err := <-inflight
	if !errors.Is(err, casty.ErrConnectionLost) || !errors.Is(err, casty.ErrActorUnavailable) {
		t.Fatalf("a call whose owner died under it: %v; want ErrConnectionLost and ErrActorUnavailable", err)
	}
}

func TestClusterGracefulCloseDrainsAndLeavesCleanly(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx := context.Background()
	leaver := nodes[2]
	key := keyOn(t, leaver, nodes[0], Sleepers.Name())
	watch, stop := casty.MemberEvents(nodes[0])
	defer stop()
	inflight := make(chan error, 1)
	go func() {
		inflight <- casty.Do(ctx, Sleepers.Ref(nodes[0], key), (*Sleeper).Sleep, 200*time.Millisecond)
	}()
	waitFor(t, 5*time.Second, "the call to start", func() bool { return leaver.Active() == 1 })
	closeSys(t, leaver)
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call across a graceful close: %v", err)
	}
	waitConverged(t, nodes[:2], 2)
	timeout := time.After(2 * time.Second) // any stray SUSPECT/DEAD would show by then
	for {
		select {
		case ev := <-watch:
			if strings.HasSuffix(ev, leaver.Addr()) && !strings.HasPrefix(ev, "left") {
				t.Fatalf("survivor saw %q for a node that left gracefully", ev)
			}
			continue
		case <-timeout:
		}
		break
	}
	if _, err := casty.Call0(ctx, Wheres.Ref(leaver, "x"), (*Where).Hit); !errors.Is(err, casty.ErrActorUnavailable) {
		t.Fatalf("call through a closed system: %v", err)
	}
}

func TestClusterLiteMemberRoutesAndOwnsNothing(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{nodes[0].Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeSys(t, lite)
	waitFor(t, 10*time.Second, "the lite member to see both members", func() bool { return len(lite.Members()) == 2 })
	for _, m := range nodes[0].Members() {
		if m.Addr == lite.Addr() {
			t.Fatal("the lite member is on the ring")
		}
	}
	hosts := map[string]bool{}
	for i := range 20 {
		out, err := casty.Call0(ctx, Wheres.Ref(lite, fmt.Sprint("lite-", i)), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := strings.Cut(out, "#")
		hosts[host] = true
	}
	if hosts[lite.Addr()] || len(hosts) != 2 {
		t.Fatalf("lite member's calls ran on %v", hosts)
	}
	if lite.Active() != 0 {
		t.Fatalf("the lite member hosts %d activations", lite.Active())
	}
	// A member serves its own service calls, with no hop; a lite member,
	// which hosts nothing, spreads its calls over the members.
	for _, m := range nodes {
		for range 4 {
			if at, err := casty.Call0(ctx, Locators.Ref(m), (*Locator).Where); err != nil || at != m.Addr() {
				t.Fatalf("service call on member %s ran on %q: %v", m.Addr(), at, err)
			}
		}
	}
	served := map[string]int{}
	for range 20 {
		at, err := casty.Call0(ctx, Locators.Ref(lite), (*Locator).Where)
		if err != nil {
			t.Fatal(err)
		}
		served[at]++
	}
	if served[nodes[0].Addr()] < 5 || served[nodes[1].Addr()] < 5 {
		t.Fatalf("a lite member's 20 service calls ran on %v, want both members", served)
	}
}

// A lite member keeps its ring current: a member that joins after it
// connected is on its ring, and its keys are routed to it in one hop.
func TestClusterLiteMemberFollowsJoins(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{nodes[0].Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeSys(t, lite)
	waitFor(t, 10*time.Second, "the lite member to see both members", func() bool { return len(lite.Members()) == 2 })
	joiner := startNode(t, []string{nodes[1].Addr()})
	waitConverged(t, append(nodes, joiner), 3)
	waitFor(t, 10*time.Second, "the lite member to see the joiner", func() bool { return len(lite.Members()) == 3 })
	key := keyOn(t, joiner, lite, Wheres.Name())
	if m, _ := nodes[0].OwnerOf(Wheres.Name(), key); m.Addr != joiner.Addr() {
		t.Fatalf("the lite member's ring and a member's disagree on %s: %s", key, m.Addr)
	}
	if out, err := casty.Call0(ctx, Wheres.Ref(lite, key), (*Where).Hit); err != nil || !strings.HasPrefix(out, joiner.Addr()+"#") {
		t.Fatalf("call through the lite member to the joiner's key: %q %v", out, err)
	}
}

// Tally is an argument that counts its encodings.
type Tally struct{ N int }

var tallyEncodes atomic.Int32

func (t Tally) MarshalMsgpack() ([]byte, error) {
	tallyEncodes.Add(1)
	return wire.Marshal(t.N)
}

func (t *Tally) UnmarshalMsgpack(b []byte) error { return wire.Unmarshal(b, &t.N) }

type Tallier struct{ Sum int }

func (a *Tallier) Add(_ context.Context, t Tally) (int, error) {
	a.Sum += t.N
	return a.Sum, nil
}

var Talliers = casty.Actor[Tallier](casty.Name("test.Tallier"))

// A call to a key the calling node owns runs there without being encoded;
// one to another node's key is encoded once.
func TestClusterLocallyOwnedCallsAreNotSerialized(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	local := keyOn(t, nodes[0], nodes[0], Talliers.Name())
	remote := keyOn(t, nodes[1], nodes[0], Talliers.Name())
	before := tallyEncodes.Load()
	for i := range 10 {
		if sum, err := casty.Call(ctx, Talliers.Ref(nodes[0], local), (*Tallier).Add, Tally{1}); err != nil || sum != i+1 {
			t.Fatalf("local call %d: %d %v", i, sum, err)
		}
	}
	if n := tallyEncodes.Load() - before; n != 0 {
		t.Fatalf("10 calls to a locally owned key encoded their argument %d times", n)
	}
	if sum, err := casty.Call(ctx, Talliers.Ref(nodes[0], remote), (*Tallier).Add, Tally{5}); err != nil || sum != 5 {
		t.Fatalf("remote call: %d %v", sum, err)
	}
	if n := tallyEncodes.Load() - before; n != 1 {
		t.Fatalf("a call to another node's key encoded its argument %d times, want 1", n)
	}
}

// TestClusterAdvertisedAddressIsWhatOthersDial: a node started with
// Advertise is known to the others by that address, and they reach it
// through it.
func TestClusterAdvertisedAddressIsWhatOthersDial(t *testing.T) {
	first := startNode(t, nil)
	// The node listens on 127.0.0.1 and advertises "localhost": the same
	// socket under a name only Advertise can give it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	adv := net.JoinHostPort("localhost", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second, err := casty.Start(ctx, ln.Addr().String(), casty.WithConfig(fastCluster()),
		casty.Seeds(first.Addr()), casty.Advertise(adv), quiet())
	if err != nil {
		t.Fatal(err) // the port was taken meanwhile: rare, and says so
	}
	defer closeSys(t, second)
	if second.Addr() != adv {
		t.Fatalf("Addr() = %q, want the advertised %q", second.Addr(), adv)
	}
	waitFor(t, 10*time.Second, "the first node to list the advertised address", func() bool {
		for _, m := range first.Members() {
			if m.Addr == adv {
				return true
			}
		}
		return false
	})
	key := keyOn(t, second, first, Wheres.Name())
	if out, err := casty.Call0(ctx, Wheres.Ref(first, key), (*Where).Hit); err != nil || !strings.HasPrefix(out, adv+"#") {
		t.Fatalf("call to a key the advertised node owns: %q %v", out, err)
	}
}

func TestClusterUnknownKindAndRemoteStateOf(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Orders.Name())
	casty.Call(ctx, Orders.Ref(nodes[0], key), (*Order).Add, 4)
	st, ok, err := Orders.StateOf(ctx, nodes[0], key)
	if err != nil || !ok || st.Lines != 4 {
		t.Fatalf("remote StateOf: %+v %v %v", st, ok, err)
	}
	if _, ok, err := Orders.StateOf(ctx, nodes[0], key+"-none"); ok || err != nil {
		t.Fatalf("remote StateOf of an inactive key: %v %v", ok, err)
	}
	casty.HideKind(nodes[1], Flakies.Name())
	key = keyOn(t, nodes[1], nodes[0], Flakies.Name())
	if _, err := casty.Call(ctx, Flakies.Ref(nodes[0], key), (*Flaky).Add, 1); !errors.Is(err, casty.ErrUnknownActorType) {
		t.Fatalf("kind unknown at the destination: %v", err)
	}
}

func TestClusterReentrancyAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	a := keyOn(t, nodes[0], nodes[0], Hops.Name())
	b := keyOn(t, nodes[1], nodes[0], Hops.Name())
	_, err := casty.Call(ctx, Hops.Ref(nodes[0], a), (*Hop).Go, route{Keys: []string{b, a}})
	if !errors.Is(err, casty.ErrReentrancy) {
		t.Fatalf("A→B→A across nodes: %v", err)
	}
	c := keyOn(t, nodes[1], nodes[0], Hops.Name(), b)
	if _, err := casty.Call(ctx, Hops.Ref(nodes[0], a), (*Hop).Go, route{Keys: []string{b, c}}); err != nil {
		t.Fatalf("A→B→C across nodes: %v", err)
	}
}

func TestClusterJoinFailureNamesSeeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 300 * time.Millisecond
	_, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds("127.0.0.1:1", "127.0.0.1:2"), quiet())
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "127.0.0.1:2") {
		t.Fatalf("join through dead seeds: %v", err)
	}
}

// The same seed list on every node, its own address included: the first
// node ignores itself and starts the cluster, the next joins through it.
func TestClusterSeedEqualToItselfIsIgnored(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 300 * time.Millisecond
	first, err := casty.Start(ctx, addr, casty.WithConfig(cfg), casty.Seeds(addr), quiet())
	if err != nil {
		t.Fatalf("a node whose only seed is itself: %v", err)
	}
	defer closeSys(t, first)
	second := startNode(t, []string{addr})
	waitConverged(t, []*casty.System{first, second}, 2)
}

func TestClusterJoinMovesOwnership(t *testing.T) {
	parallel(t)
	var mu sync.Mutex
	moved := map[string]bool{}
	spyMoves := casty.WithInterceptor(func(ev casty.Event) {
		if d, ok := ev.(casty.Deactivated); ok && d.Reason == casty.ReasonMoved {
			mu.Lock()
			moved[d.Key] = true
			mu.Unlock()
		}
	})
	nodes := startCluster(t, 2, spyMoves)
	ctx := context.Background()
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprint("move-", i)
		if _, err := casty.Call0(ctx, Wheres.Ref(nodes[i%2], keys[i]), (*Where).Hit); err != nil {
			t.Fatal(err)
		}
	}
	joiner := startNode(t, []string{nodes[0].Addr()}, spyMoves)
	all := append(nodes, joiner)
	waitConverged(t, all, 3)
	var toJoiner []string
	for _, k := range keys {
		if m, _ := nodes[0].OwnerOf(Wheres.Name(), k); m.Addr == joiner.Addr() {
			toJoiner = append(toJoiner, k)
		}
	}
	if len(toJoiner) == 0 {
		t.Fatal("no key moved to the joiner")
	}
	waitFor(t, 10*time.Second, "moved keys deactivated on their old owners", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range toJoiner {
			if !moved[k] {
				return false
			}
		}
		return true
	})
	mu.Lock()
	for k := range moved {
		if !slices.Contains(toJoiner, k) {
			t.Errorf("key %s was deactivated as moved but did not move to the joiner", k)
		}
	}
	mu.Unlock()
	for _, k := range toJoiner {
		out, err := casty.Call0(ctx, Wheres.Ref(nodes[0], k), (*Where).Hit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, joiner.Addr()+"#") {
			t.Fatalf("key %s ran on %s after moving to %s", k, out, joiner.Addr())
		}
	}
}

func TestClusterSpyFiltersAtSourceAndReportsGap(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := nodes[0].Spy(ctx, casty.SpyFilter{Kind: "shop.*", Key: "spied-*", Scope: casty.ScopeCluster, Payloads: true})
	if err != nil {
		t.Fatal(err)
	}
	// One spied key on each member, plus noise the filter must drop.
	want := map[string]string{}
	for _, n := range nodes {
		key := keyOn(t, n, nodes[0], Orders.Name())
		key = "spied-" + key
		for m, _ := nodes[0].OwnerOf(Orders.Name(), key); m.Addr != n.Addr(); m, _ = nodes[0].OwnerOf(Orders.Name(), key) {
			key += "x"
		}
		want[key] = n.Addr()
	}
	next, stop := iter.Pull(events)
	defer stop()
	for key := range want {
		casty.Call(context.Background(), Orders.Ref(nodes[1], key), (*Order).Add, 2)
		casty.Call(context.Background(), Orders.Ref(nodes[1], "noise-"+key), (*Order).Add, 2)
	}
	seen := map[string]string{}
	deadline := time.After(10 * time.Second)
	for len(seen) < len(want) {
		evc := make(chan casty.Event, 1)
		go func() { ev, _ := next(); evc <- ev }()
		var ev casty.Event
		select {
		case ev = <-evc:
		case <-deadline:
			t.Fatalf("saw %v of %v", seen, want)
		}
		if ev == nil {
			t.Fatal("spy ended")
		}
		i := ev.Info()
		if !strings.HasPrefix(i.Key, "spied-") || i.Kind != "shop.Order" {
			t.Fatalf("filter let through %+v", i)
		}
		if c, ok := ev.(casty.Completed); ok {
			node := i.Node
			if node == "" {
				node = nodes[0].Addr()
			}
			seen[i.Key] = node
			if fmt.Sprint(c.Result) != "2" {
				t.Fatalf("payload %v", c.Result)
			}
		}
	}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("key %s reported from %s, owned by %s", k, seen[k], n)
		}
	}
	casty.Crash(nodes[2])
	for {
		evc := make(chan casty.Event, 1)
		go func() { ev, _ := next(); evc <- ev }()
		select {
		case ev := <-evc:
			if g, ok := ev.(casty.Gap); ok {
				if g.Member != nodes[2].Addr() {
					t.Fatalf("gap names %s", g.Member)
				}
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no Gap after a member died")
		}
	}
}

func TestClusterCallTimeoutBoundsRemoteCallsWithoutDeadline(t *testing.T) {
	cfg := fastCluster()
	cfg.Actors.CallTimeout = 100 * time.Millisecond
	nodes := startCluster(t, 2, casty.WithConfig(cfg))
	key := keyOn(t, nodes[1], nodes[0], Sleepers.Name())
	start := time.Now()
	err := casty.Do(context.Background(), Sleepers.Ref(nodes[0], key), (*Sleeper).Sleep, 1500*time.Millisecond)
	var te *casty.TimeoutError
	if !errors.As(err, &te) || te.Method != "Sleep" || te.Key != key || !errors.Is(err, casty.ErrTimeout) {
		t.Fatalf("got %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("the call timed out after %v, not near CallTimeout", el)
	}
}

// An owner that refuses work as not its own (its ring disagrees) is asked
// again — nothing ran — and the second attempt lands; so does one after
// more refusals than RouteAttempts within the call's first seconds (views
// in motion converge); refused on every attempt, the call fails with
// ErrActorUnavailable naming the disagreement. Calls and stream opens
// share the routing, so both are checked.
func TestClusterWrongOwnerIsRetriedOnlyWhileNothingRan(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Logs.Name())
	ref := Logs.Ref(nodes[0], key)

	casty.RefuseAsWrongOwner(nodes[1], 1)
	if n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(3))); err != nil || n != 3 {
		t.Fatalf("stream open refused once: %d %v", n, err)
	}
	casty.RefuseAsWrongOwner(nodes[1], 1)
	var got []string
	for e, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != 3 {
		t.Fatalf("stream after one refusal: %d elements", len(got))
	}

	wkey := keyOn(t, nodes[1], nodes[0], Wheres.Name())
	casty.RefuseAsWrongOwner(nodes[1], 1)
	out, err := casty.Call0(ctx, Wheres.Ref(nodes[0], wkey), (*Where).Hit)
	if err != nil || !strings.HasPrefix(out, nodes[1].Addr()+"#") {
		t.Fatalf("call refused once: %q %v", out, err)
	}
	casty.RefuseAsWrongOwner(nodes[1], casty.RouteAttempts+2)
	out, err = casty.Call0(ctx, Wheres.Ref(nodes[0], wkey), (*Where).Hit)
	if err != nil || !strings.HasSuffix(out, "#2") {
		t.Fatalf("call refused %d times at once: %q %v (want the second hit)", casty.RouteAttempts+2, out, err)
	}
	const always = 1 << 30
	casty.RefuseAsWrongOwner(nodes[1], always)
	_, err = casty.Call0(ctx, Wheres.Ref(nodes[0], wkey), (*Where).Hit)
	if !errors.Is(err, casty.ErrActorUnavailable) || !strings.Contains(err.Error(), "does not own") {
		t.Fatalf("call refused on every attempt: %v", err)
	}
	var streamErr error
	for _, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		streamErr = err
		break
	}
	if !errors.Is(streamErr, casty.ErrActorUnavailable) || !strings.Contains(streamErr.Error(), "owners disagree") {
		t.Fatalf("stream refused on every attempt: %v", streamErr)
	}
	// The refusals ran nothing: the Where was hit exactly twice.
	casty.RefuseAsWrongOwner(nodes[1], 0)
	out, err = casty.Call0(ctx, Wheres.Ref(nodes[0], wkey), (*Where).Hit)
	if err != nil || !strings.HasSuffix(out, "#3") {
		t.Fatalf("after the refusals: %q %v (want the third hit)", out, err)
	}
}

// A member's orderly leave can take a while before the others learn of
// it: it refuses calls as leaving from the start, but announces LEFT only
// once its drain ends (here a handler holds it). Meanwhile the next member
// clockwise refuses its keys as not its own. A call with time left rides
// that out — nothing ran at either refusal — and lands on the next member
// once the leave is adopted, rather than failing after routeAttempts
// quick refusals.
func TestCallRidesOutASlowLeave(t *testing.T) {
	nodes := startCluster(t, 2)
	leaver, next := nodes[0], nodes[1]
	ctx := context.Background()
	lite, err := casty.Connect(ctx, []string{next.Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, lite) })
	waitFor(t, 10*time.Second, "the lite member to see both members", func() bool {
		_, ok := lite.OwnerOf(Wheres.Name(), "k")
		return ok && len(lite.Members()) == 2
	})

	hkey := keyOn(t, leaver, leaver, Tenants.Name())
	release := tenantGate(t, hkey)
	held := make(chan error, 1)
	go func() { held <- casty.Do0(ctx, Tenants.Ref(leaver, hkey), (*Tenant).Hold) }()
	waitFor(t, 10*time.Second, "the handler that holds the drain", func() bool { return holding.Load() == 1 })

	wkey := keyOn(t, leaver, lite, Wheres.Name())
	asked := casty.CountRequests(next, Wheres.Name(), wkey)
	closed := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		closed <- leaver.Close(cctx)
	}()
	waitFor(t, 10*time.Second, "the leaver to refuse calls as leaving", func() bool { return casty.Leaving(leaver) })

	type result struct {
		out string
		err error
	}
	got := make(chan result, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := casty.Call0(cctx, Wheres.Ref(lite, wkey), (*Where).Hit)
		got <- result{out, err}
	}()
	// The leave stays unannounced while the handler runs: the next member
	// refuses the key, more often than routeAttempts allows, or the call
	// gives up first.
	var r result
	done := false
	waitFor(t, 20*time.Second, "the next member to refuse the key routeAttempts times, or the call to end", func() bool {
		if done {
			return true
		}
		select {
		case r = <-got:
			done = true
		default:
		}
		return done || asked() >= casty.RouteAttempts
	})
	release()
	if !done {
		r = <-got
	}
	if r.err != nil {
		t.Fatalf("a call during a slow leave failed: %v (the next member was asked %d times)", r.err, asked())
	}
	if !strings.HasPrefix(r.out, next.Addr()+"#") {
		t.Fatalf("a call during a slow leave: %q, want it served by the next member %s", r.out, next.Addr())
	}
	if err := <-held; err != nil {
		t.Errorf("the handler that held the drain: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("the slow leave: %v", err)
	}
}

// A call carries its key's ring point so that the owner need not hash the
// key again; a point that does not match the key (a buggy or hostile
// caller) must never activate the actor on a node that does not own it.
func TestClusterMisplacedPointNeverActivatesOnANonOwner(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[0], nodes[0], Wheres.Name())
	lying := casty.Misplaced(Wheres.Ref(nodes[0], key), casty.PointOwnedBy(nodes[0], nodes[1]))
	out, err := casty.Call0(ctx, lying, (*Where).Hit)
	if !errors.Is(err, casty.ErrActorUnavailable) || !strings.Contains(err.Error(), "does not own") {
		t.Fatalf("call with a misplaced point: %q %v (want ErrActorUnavailable: does not own)", out, err)
	}
	if n := nodes[1].Active(); n != 0 {
		t.Fatalf("the non-owner has %d activations, want none", n)
	}
	// The owner serves the key; the lying point still finds no activation
	// on the other node to trust it for.
	if out, err := casty.Call0(ctx, Wheres.Ref(nodes[1], key), (*Where).Hit); err != nil || out != nodes[0].Addr()+"#1" {
		t.Fatalf("call through the right point: %q %v", out, err)
	}
	if _, err := casty.Call0(ctx, lying, (*Where).Hit); !errors.Is(err, casty.ErrActorUnavailable) {
		t.Fatalf("misplaced call once the owner is active: %v", err)
	}
	if n := nodes[1].Active(); n != 0 {
		t.Fatalf("the non-owner has %d activations, want none", n)
	}
}

// Reflected is only called through the reflective path on its owner.
type Reflected struct{ Sum int }

func (r *Reflected) Add(ctx context.Context, n int) (int, error) { r.Sum += n; return r.Sum, nil }

func (r *Reflected) Reset(ctx context.Context) error { r.Sum = 0; return nil }

func (r *Reflected) Refuse(ctx context.Context, why string) error {
	return errors.New("refused: " + why)
}

var Reflecteds = casty.Actor[Reflected](casty.Name("test.Reflected"))

// A node serves remote calls to a handler it never called itself through
// reflection; the result, a failure and a call without argument or result
// come back as through the typed invoker.
func TestClusterRemoteCallsThroughReflection(t *testing.T) {
	for _, m := range []string{"Add", "Reset", "Refuse"} {
		casty.Untyped(Reflecteds.Name(), m)
	}
	nodes := startCluster(t, 2)
	ctx := context.Background()
	ref := Reflecteds.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Reflecteds.Name()))
	for i, want := range []int{2, 5} {
		if got, err := casty.Call(ctx, ref, (*Reflected).Add, i+2); err != nil || got != want {
			t.Fatalf("Add %d: %d %v, want %d", i+2, got, err, want)
		}
	}
	if err := casty.Do0(ctx, ref, (*Reflected).Reset); err != nil {
		t.Fatal(err)
	}
	if got, err := casty.Call(ctx, ref, (*Reflected).Add, 1); err != nil || got != 1 {
		t.Fatalf("Add after Reset: %d %v", got, err)
	}
	err := casty.Do(ctx, ref, (*Reflected).Refuse, "no")
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Method != "Refuse" || !strings.Contains(fe.Message, "refused: no") {
		t.Fatalf("Refuse: %v", err)
	}
}

// Clock reports what its handler's context says about the deadline.
type Clock struct{}

func (c *Clock) Left(ctx context.Context) (time.Duration, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return -1, nil
	}
	return time.Until(d), nil
}

var Clocks = casty.Actor[Clock](casty.Name("test.Clock"))

// A handler on another node sees the caller's deadline: the one of its
// ctx, or CallTimeout when the caller's ctx has none.
func TestClusterRemoteHandlerSeesTheCallersDeadline(t *testing.T) {
	nodes := startCluster(t, 2)
	ref := Clocks.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Clocks.Name()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	left, err := casty.Call0(ctx, ref, (*Clock).Left)
	if err != nil || left <= 0 || left > 3*time.Second {
		t.Fatalf("with a 3 s ctx: %v left, %v", left, err)
	}
	callTimeout := nodes[0].Config().Actors.CallTimeout
	left, err = casty.Call0(context.Background(), ref, (*Clock).Left)
	if err != nil || left <= 0 || left > callTimeout {
		t.Fatalf("without a deadline: %v left, %v (CallTimeout %v)", left, err, callTimeout)
	}
}

// Bulk takes and makes blobs, counting the handlers that ran.
type Bulk struct{ Runs int }

func (b *Bulk) Put(_ context.Context, p []byte) (int, error) { b.Runs++; return len(p), nil }
func (b *Bulk) Make(_ context.Context, n int) ([]byte, error) {
	b.Runs++
	return make([]byte, n), nil
}

// Blobs streams one blob of n bytes.
func (b *Bulk) Blobs(_ context.Context, n int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) { yield(make([]byte, n), nil) }
}

var Bulks = casty.Actor[Bulk](casty.Name("test.Bulk"))

// A call whose argument or result is over MaxMessage fails saying so: the
// argument before anything is sent, the result as the handler's outcome
// (it ran). Neither breaks the connection; calls within a node have no limit.
func TestClusterOversizedCallsSaySo(t *testing.T) {
	cfg := fastCluster()
	cfg.Transport.MaxMessage, cfg.Transport.MaxFrame = 64<<10, 16<<10
	nodes := startCluster(t, 2, casty.WithConfig(cfg))
	ctx := context.Background()
	ref := Bulks.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Bulks.Name()))

	// The argument is refused by the caller (nothing ran), the result by
	// the owner (the handler ran), a stream's element by the reader: each
	// with ErrMessageTooLarge.
	_, err := casty.Call(ctx, ref, (*Bulk).Put, make([]byte, 100<<10))
	if !errors.Is(err, casty.ErrMessageTooLarge) || errors.Is(err, casty.ErrActorUnavailable) || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("oversized argument: %v", err)
	}
	_, err = casty.Call(ctx, ref, (*Bulk).Make, 100<<10)
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Kind != Bulks.Name() || fe.Method != "Make" || !strings.Contains(fe.Message, "the handler ran") || !errors.Is(err, casty.ErrMessageTooLarge) {
		t.Fatalf("oversized result: %#v", err)
	}
	for _, err := range casty.Stream(ctx, ref, (*Bulk).Blobs, 100<<10) {
		if !errors.Is(err, casty.ErrMessageTooLarge) {
			t.Fatalf("oversized stream element: %v", err)
		}
	}
	if n, err := casty.Call(ctx, ref, (*Bulk).Put, make([]byte, 1<<10)); err != nil || n != 1<<10 {
		t.Fatalf("a small call after the oversized ones: %d %v", n, err)
	}
	if st, ok, err := Bulks.StateOf(ctx, nodes[0], ref.Key()); err != nil || !ok || st.Runs != 2 {
		t.Fatalf("handlers run: %+v %v %v, want 2 (Make ran, the oversized Put did not)", st, ok, err)
	}
	local := Bulks.Ref(nodes[0], keyOn(t, nodes[0], nodes[0], Bulks.Name()))
	if n, err := casty.Call(ctx, local, (*Bulk).Put, make([]byte, 100<<10)); err != nil || n != 100<<10 {
		t.Fatalf("oversized argument to a locally owned key: %d %v", n, err)
	}
}

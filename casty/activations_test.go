package casty_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// Tenant is an actor whose activations the tests fill a member with: it
// counts its calls, records its deactivations, and Hold blocks until its
// key's gate opens.
type Tenant struct{ Calls int }

// tenantLog records the keys whose Deactivate hook ran, in order.
var tenantLog struct {
	sync.Mutex
	gone  []string
	gates map[string]chan struct{}
}

func (t *Tenant) Touch(ctx context.Context) (int, error) { t.Calls++; return t.Calls, nil }

func (t *Tenant) Hold(ctx context.Context) error {
	t.Calls++
	holding.Add(1)
	defer holding.Add(-1)
	tenantLog.Lock()
	gate := tenantLog.gates[casty.Self(ctx).Key()]
	tenantLog.Unlock()
	mux.HandOff(ctx) // about to wait: a call from another node may run on its connection's reader
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Tenant) Deactivate(ctx context.Context) error {
	tenantLog.Lock()
	tenantLog.gone = append(tenantLog.gone, casty.Self(ctx).Key())
	tenantLog.Unlock()
	return nil
}

var (
	Tenants           = casty.Actor[Tenant](casty.Name("test.Tenant"))
	ReplicatedTenants = casty.Actor[Tenant](casty.Name("test.TenantR2"), casty.Replicas(2), casty.Write(casty.Majority))
)

// holding counts the Hold handlers running.
var holding atomic.Int32

// gone returns the keys deactivated so far and forgets them.
func gone() []string {
	tenantLog.Lock()
	defer tenantLog.Unlock()
	g := tenantLog.gone
	tenantLog.gone = nil
	return g
}

// tenantGate makes Hold on key block until the returned func is called.
func tenantGate(t *testing.T, key string) (release func()) {
	gate := make(chan struct{})
	tenantLog.Lock()
	if tenantLog.gates == nil {
		tenantLog.gates = map[string]chan struct{}{}
	}
	tenantLog.gates[key] = gate
	tenantLog.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

func limited(n int) casty.Option {
	c := fastCluster()
	c.Actors.MaxActivations = n
	return casty.WithConfig(c)
}

// At the limit, a call to a new key deactivates an idle activation,
// through its Deactivate hook as an idle timeout would, never the one
// just used; the system never holds more than the limit; a key
// deactivated so comes back from its zero state, as after its idle
// timeout (it is not replicated). Which idle one goes is the least
// recently used (actor's TestCapacityEvictsTheLeastRecentlyUsedIdle);
// here a mailbox goroutine still finishing may keep b busy a moment.
func TestMaxActivationsEvictsAnIdleActivation(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t, limited(3))
	gone()
	for _, k := range []string{"a", "b", "c", "a"} {
		if _, err := casty.Call0(ctx, Tenants.Ref(sys, k), (*Tenant).Touch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := casty.Call0(ctx, Tenants.Ref(sys, "d"), (*Tenant).Touch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "one deactivation", func() bool { return len(peekGone()) == 1 })
	g := gone()
	if victim := g[0]; victim != "b" && victim != "c" {
		t.Fatalf("deactivated %v, want b or c", g)
	}
	if n := sys.Active(); n != 3 {
		t.Fatalf("%d active, want 3", n)
	}
	if n, err := casty.Call0(ctx, Tenants.Ref(sys, "a"), (*Tenant).Touch); err != nil || n != 3 {
		t.Fatalf("a kept its activation: %d, %v", n, err)
	}
	if n, err := casty.Call0(ctx, Tenants.Ref(sys, g[0]), (*Tenant).Touch); err != nil || n != 1 {
		t.Fatalf("%s starts again from zero: %d, %v", g[0], n, err)
	}
}

func peekGone() []string {
	tenantLog.Lock()
	defer tenantLog.Unlock()
	return slices.Clone(tenantLog.gone)
}

// With every activation busy, a call that needs a new one fails at once
// with ErrOverloaded, definite: nothing ran, and once an activation is
// idle again the same call succeeds.
func TestMaxActivationsOverloadedWhenAllBusy(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t, limited(2))
	var held sync.WaitGroup
	var releases []func()
	for _, k := range []string{"busy-1", "busy-2"} {
		releases = append(releases, tenantGate(t, k))
		held.Go(func() {
			if err := casty.Do0(ctx, Tenants.Ref(sys, k), (*Tenant).Hold); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, 5*time.Second, "two busy activations", func() bool { return sys.Active() == 2 })
	start := time.Now()
	_, err := casty.Call0(ctx, Tenants.Ref(sys, "new"), (*Tenant).Touch)
	if !errors.Is(err, casty.ErrOverloaded) {
		t.Fatalf("a new key with all busy: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the refusal took %v", took)
	}
	releases[0]()
	// Refused until busy-1's mailbox goroutine is done with its last call.
	waitFor(t, 5*time.Second, "the call to succeed once busy-1 is idle", func() bool {
		n, err := casty.Call0(ctx, Tenants.Ref(sys, "new"), (*Tenant).Touch)
		if err != nil && !errors.Is(err, casty.ErrOverloaded) {
			t.Fatal(err)
		}
		return err == nil && n == 1
	})
	releases[1]()
	held.Wait()
}

// In a cluster the limit is each member's: a replicated actor deactivated
// to make room comes back from its replicas, and a member whose
// activations are all busy refuses a caller on another member with
// ErrOverloaded.
func TestClusterMaxActivations(t *testing.T) {
	ctx := context.Background()
	nodes := startCluster(t, 2, limited(2))
	owner, via := nodes[1], nodes[0]
	waitFor(t, 15*time.Second, "replicas settled", func() bool { return casty.Settled(owner, 2) && casty.Settled(via, 2) })
	keys := make([]string, 0, 3)
	for len(keys) < 3 {
		keys = append(keys, keyOn(t, owner, via, ReplicatedTenants.Name(), keys...))
	}
	// The first key's state survives its eviction.
	for range 5 {
		if _, err := casty.Call0(ctx, ReplicatedTenants.Ref(via, keys[0]), (*Tenant).Touch); err != nil {
			t.Fatal(err)
		}
	}
	// Each of these keys' answers rides early to via (a member of its
	// replica set), so the owner may still be ending a key's commit when
	// the next call arrives and needs its slot: that activation is
	// settling, and the call waits for it rather than fail as overloaded.
	touch := func(k string) int {
		t.Helper()
		n, err := casty.Call0(ctx, ReplicatedTenants.Ref(via, k), (*Tenant).Touch)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	gone()
	// The other two keys need a third activation, so one goes: the least
	// recently used idle one, keys[0] — once its last commit has ended;
	// until then another goes, and calling the other two again evicts
	// again until keys[0] is the one.
	var evicted []string
	waitFor(t, 15*time.Second, keys[0]+" deactivated to make room", func() bool {
		for _, k := range keys[1:] {
			touch(k)
		}
		evicted = append(evicted, gone()...)
		return slices.Contains(evicted, keys[0])
	})
	if n := touch(keys[0]); n != 6 {
		t.Fatalf("%s after its eviction: %d; want 6 from its replicas", keys[0], n)
	}

	// All busy on the owner: a caller on the other member is refused.
	var held sync.WaitGroup
	var releases []func()
	busy := []string{keyOn(t, owner, via, Tenants.Name()), ""}
	busy[1] = keyOn(t, owner, via, Tenants.Name(), busy[0])
	for _, k := range busy {
		releases = append(releases, tenantGate(t, k))
		held.Go(func() {
			// An activation evicted above may still be finishing its
			// deactivation (it counts as busy until then): a Hold refused
			// as overloaded meanwhile is tried again.
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := casty.Do0(ctx, Tenants.Ref(via, k), (*Tenant).Hold)
				if errors.Is(err, casty.ErrOverloaded) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Error(err)
				}
				return
			}
		})
	}
	waitFor(t, 10*time.Second, "two busy activations on the owner", func() bool { return holding.Load() == 2 })
	fresh := keyOn(t, owner, via, Tenants.Name(), busy...)
	_, err := casty.Call0(ctx, Tenants.Ref(via, fresh), (*Tenant).Touch)
	if !errors.Is(err, casty.ErrOverloaded) {
		t.Fatalf("a new key on a member with all busy: %v", err)
	}
	for _, r := range releases {
		r()
	}
	held.Wait()
	waitFor(t, 5*time.Second, "the call to succeed once idle again", func() bool {
		_, err := casty.Call0(ctx, Tenants.Ref(via, fresh), (*Tenant).Touch)
		if err != nil && !errors.Is(err, casty.ErrOverloaded) {
			t.Fatal(err)
		}
		return err == nil
	})
}

// A flood of 100,000 keys against a limit of 1,000: the system never
// holds more than the limit, every call succeeds (idle activations make
// room), and memory and goroutines stay bounded.
func TestMaxActivationsBoundsAFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 calls")
	}
	const limit, keys, callers = 1000, 100_000, 32
	ctx := context.Background()
	sys := newSys(t, limited(limit))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	baseG := runtime.NumGoroutine()

	var next, failed, peakActive, peakG atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= keys {
					return
				}
				if _, err := casty.Call0(ctx, Tenants.Ref(sys, fmt.Sprint("flood-", i)), (*Tenant).Touch); err != nil {
					if failed.Add(1) == 1 {
						t.Error(err)
					}
				}
				if i%256 == 0 {
					storeMax(&peakActive, int64(sys.Active()))
					storeMax(&peakG, int64(runtime.NumGoroutine()))
				}
			}
		})
	}
	wg.Wait()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(base.HeapAlloc)
	t.Logf("%d keys, limit %d, %d callers: %d failed, peak %d active, peak %d goroutines (%d before), heap %+d KB after",
		keys, limit, callers, failed.Load(), peakActive.Load(), peakG.Load(), baseG, heap>>10)
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if n := sys.Active(); n > limit || peakActive.Load() > limit {
		t.Fatalf("%d active at the end, %d at the peak; limit %d", n, peakActive.Load(), limit)
	}
	// Callers, plus a mailbox goroutine each, plus evictions in flight.
	if g := peakG.Load(); g > int64(baseG+4*callers) {
		t.Fatalf("peak %d goroutines, from %d", g, baseG)
	}
	// 1,000 activations of ~0.5 KB; 100,000 would hold tens of megabytes.
	if heap > 8<<20 {
		t.Fatalf("heap grew %d KB", heap>>10)
	}
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// A member already handling mux.Config.MaxRequests (1024) requests from
// one connection refuses the next without running it; the caller sees
// ErrOverloaded, as for a member out of activations.
func TestClusterRequestLimitIsOverloaded(t *testing.T) {
	ctx := context.Background()
	// Keep-alives patient enough for 2,048 goroutines under the race
	// detector.
	cfg := fastCluster()
	cfg.Transport.KeepAliveInterval, cfg.Transport.KeepAliveTimeout = time.Second, 5*time.Second
	nodes := startCluster(t, 2, casty.WithConfig(cfg))
	owner, via := nodes[1], nodes[0]
	var keys []string
	for i := 0; len(keys) < 1025; i++ {
		k := fmt.Sprint("req-", i)
		if m, ok := via.OwnerOf(Tenants.Name(), k); ok && m.Addr == owner.Addr() {
			keys = append(keys, k)
		}
	}
	var held sync.WaitGroup
	var releases []func()
	for _, k := range keys[:1024] {
		releases = append(releases, tenantGate(t, k))
		held.Go(func() {
			if err := casty.Do0(ctx, Tenants.Ref(via, k), (*Tenant).Hold); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, 30*time.Second, "1024 calls held", func() bool { return holding.Load() == 1024 })
	_, err := casty.Call0(ctx, Tenants.Ref(via, keys[1024]), (*Tenant).Touch)
	if !errors.Is(err, casty.ErrOverloaded) {
		t.Errorf("the 1025th request: %v", err)
	}
	for _, r := range releases {
		r()
	}
	held.Wait()
	if _, err := casty.Call0(ctx, Tenants.Ref(via, keys[1024]), (*Tenant).Touch); err != nil {
		t.Fatalf("once the others are done: %v", err)
	}
}

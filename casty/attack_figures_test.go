package casty_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// TestAttackFigures measures a member under the two attacks that
// MaxActivations and MaxCallChain bound — a flood of new keys from
// one connection, and calls naming 4 million chain entries — while a
// legitimate member keeps calling it (BENCHMARKS.md, "Resource limits
// under attack"). Three members in this process: the victim, the
// attacker's member, the legitimate caller's member; memory and
// goroutines are the process's. Run with CASTY_FIGURES=1:
//
//	CASTY_FIGURES=1 go test -count=1 -run TestAttackFigures -v ./casty/
func TestAttackFigures(t *testing.T) {
	if os.Getenv("CASTY_FIGURES") == "" {
		t.Skip("CASTY_FIGURES=1 to measure")
	}
	for _, limit := range []int{10_000, 1_000_000} {
		t.Run(fmt.Sprint("flood/MaxActivations=", limit), func(t *testing.T) { attackFigures(t, limit, "flood", 64) })
	}
	for _, senders := range []int{1, 8} {
		t.Run(fmt.Sprint("chain/senders=", senders), func(t *testing.T) { attackFigures(t, 10_000, "chain", senders) })
	}
	t.Run("idle activation", func(t *testing.T) {
		// What one idle activation of a one-int actor holds, in a local
		// system: the figure MaxActivations is sized by.
		const n = 100_000
		sys := newSys(t)
		ctx := context.Background()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			if _, err := casty.Call0(ctx, Tenants.Ref(sys, fmt.Sprint("idle-", i)), (*Tenant).Touch); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		t.Logf("%d idle activations: %d B each (heap after GC)", sys.Active(), (int64(after.HeapAlloc)-int64(before.HeapAlloc))/n)
	})
}

// attackSample is what the sampler keeps: peaks over the attack.
type attackSample struct {
	heap, goroutines, active atomic.Int64
}

// attackFigures runs one attack from senders goroutines on the attacker's
// member.
func attackFigures(t *testing.T, limit int, attack string, senders int) {
	ctx := context.Background()
	cfg := fastCluster()
	cfg.Actors.MaxActivations = limit
	cfg.Transport.KeepAliveTimeout = 5 * time.Second
	nodes := startCluster(t, 3, casty.WithConfig(cfg))
	victim, attacker, legit := nodes[0], nodes[1], nodes[2]
	ownedBy := func(prefix string, n int) []string {
		keys := make([]string, 0, n)
		for i := 0; len(keys) < n; i++ {
			k := fmt.Sprint(prefix, i)
			if m, ok := attacker.OwnerOf(Tenants.Name(), k); ok && m.Addr == victim.Addr() {
				keys = append(keys, k)
			}
		}
		return keys
	}
	legitKeys := ownedBy("legit-", 100)
	var floodKeys []string
	if attack == "flood" {
		floodKeys = ownedBy("flood-", 100_000)
	}
	hostile := casty.HostileChain(Tenants.Name(), 4_000_000)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	baseG := runtime.NumGoroutine()

	stop := make(chan struct{})
	var peaks attackSample
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			storeMax(&peaks.heap, int64(m.HeapAlloc)-int64(base.HeapAlloc))
			storeMax(&peaks.goroutines, int64(runtime.NumGoroutine()))
			storeMax(&peaks.active, int64(victim.Active()))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})

	// The legitimate caller: one call at a time over its 100 keys.
	var legitOK, legitErr atomic.Int64
	var firstLegitErr atomic.Value
	var legitWG sync.WaitGroup
	legitWG.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := casty.Call0(ctx, Tenants.Ref(legit, legitKeys[i%len(legitKeys)]), (*Tenant).Touch); err != nil {
				legitErr.Add(1)
				firstLegitErr.CompareAndSwap(nil, err.Error())
			} else {
				legitOK.Add(1)
			}
		}
	})

	start := time.Now()
	var attackOK, overloaded, refused, otherErr atomic.Int64
	var attackers sync.WaitGroup
	switch attack {
	case "flood":
		var next atomic.Int64
		for range senders {
			attackers.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(len(floodKeys)) {
						return
					}
					_, err := casty.Call0(ctx, Tenants.Ref(attacker, floodKeys[i]), (*Tenant).Touch)
					switch {
					case err == nil:
						attackOK.Add(1)
					case errors.Is(err, casty.ErrOverloaded):
						overloaded.Add(1)
					default:
						otherErr.Add(1)
					}
				}
			})
		}
	case "chain":
		var sent atomic.Int64
		for range senders {
			attackers.Go(func() {
				for sent.Add(1) <= 200 {
					err := casty.RawCall(ctx, attacker, victim, hostile)
					switch {
					case errors.Is(err, casty.ErrCallChainTooLong):
						refused.Add(1)
					default:
						otherErr.Add(1)
					}
				}
			})
		}
	}
	attackers.Wait()
	took := time.Since(start)
	close(stop)
	legitWG.Wait()
	sampler.Wait()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	t.Logf("%s from %d goroutines, MaxActivations %d: %v; attack: %d ok, %d ErrOverloaded, %d ErrCallChainTooLong, %d other errors",
		attack, senders, limit, took.Round(time.Millisecond), attackOK.Load(), overloaded.Load(), refused.Load(), otherErr.Load())
	t.Logf("victim: peak %d activations; process: peak heap %+d MB, %+d MB held after (GC), peak %d goroutines (%d before)",
		peaks.active.Load(), peaks.heap.Load()>>20, (int64(after.HeapAlloc)-int64(base.HeapAlloc))>>20, peaks.goroutines.Load(), baseG)
	t.Logf("legitimate caller: %d calls ok, %d failed (first: %v)", legitOK.Load(), legitErr.Load(), firstLegitErr.Load())
}

// TestHandshakeStarvationFigures measures how long a new member takes to
// join a two-member cluster while 128 idle connections are held open
// against each member (reopened as soon as a member closes one), from one
// host or from 128 (127.0.0.2 on), in each mode, against the same
// cluster without the attack. Per trial: the time
// casty.Start takes to return (joined), and until all three members list
// three. Run with CASTY_FIGURES=1:
//
//	CASTY_FIGURES=1 go test -count=1 -run TestHandshakeStarvationFigures -v ./casty/
func TestHandshakeStarvationFigures(t *testing.T) {
	if os.Getenv("CASTY_FIGURES") == "" {
		t.Skip("CASTY_FIGURES=1 to measure")
	}
	const trials = 10
	for _, mode := range securityModes(t) {
		for _, hosts := range []int{0, 1, 128} {
			t.Run(fmt.Sprintf("%s/%d hosts", mode.name, hosts), func(t *testing.T) {
				nodes := startCluster(t, 2, mode.opts...)
				if hosts > 0 {
					h := holdIdle(t, []string{nodes[0].Addr(), nodes[1].Addr()}, loopbackHosts(2, hosts), 128)
					waitFor(t, 10*time.Second, "the attacker's connections open", func() bool {
						return h.dialled.Load() >= 2*128
					})
				}
				var joined, seen []time.Duration
				before := [2]mux.Admission{casty.Admission(nodes[0]), casty.Admission(nodes[1])}
				began := time.Now()
				for range trials {
					cfg := fastCluster()
					ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.Membership.JoinTimeout)
					start := time.Now()
					joiner, err := casty.Start(ctx, "127.0.0.1:0", append([]casty.Option{casty.WithConfig(cfg),
						casty.Seeds(nodes[0].Addr()), quiet()}, mode.opts...)...)
					cancel()
					if err != nil {
						t.Fatalf("join: %v", err)
					}
					joined = append(joined, time.Since(start))
					waitConverged(t, append(nodes[:2:2], joiner), 3)
					seen = append(seen, time.Since(start))
					closeSys(t, joiner)
					waitConverged(t, nodes[:2], 2)
				}
				took := time.Since(began)
				for i, n := range nodes[:2] {
					a, b := casty.Admission(n), before[i]
					t.Logf("member %d over the %d trials (%v): %d handshakes evicted, %d connections refused, %d silent",
						i, trials, took.Round(time.Millisecond), a.Evicted-b.Evicted, a.Refused-b.Refused, a.Silent-b.Silent)
				}
				slices.Sort(joined)
				slices.Sort(seen)
				t.Logf("%d trials: Start returned p50 %v, max %v; all three list three p50 %v, max %v",
					trials, joined[trials/2].Round(time.Millisecond), joined[trials-1].Round(time.Millisecond),
					seen[trials/2].Round(time.Millisecond), seen[trials-1].Round(time.Millisecond))
			})
		}
	}
}

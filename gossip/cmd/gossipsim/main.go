// Command gossipsim runs the membership simulator's scenarios and prints
// their figures as markdown (the numbers of BENCHMARKS.md, section Membership).
//
//	go run ./cmd/gossipsim -n 50,100,1000 -seeds 200
//
// Every figure is simulated time; a failing seed is printed and can be
// replayed with -seed0 and -seeds 1.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
	"github.com/casty-go/casty/gossip/sim"
)

func main() {
	sizes := flag.String("n", "50,100", "comma-separated cluster sizes")
	seeds := flag.Int("seeds", 20, "seeds per latency scenario")
	bigSeeds := flag.Int("bigseeds", 3, "seeds per latency scenario for n >= 500")
	seed0 := flag.Uint64("seed0", 1, "first seed")
	only := flag.String("only", "", "comma-separated scenarios (join,joinwarm,crash,nbhcrash,leave,slow,pause,mass50,mass80,steady,forged,liveness); empty = all")
	slowFor := flag.Duration("slow", time.Hour, "simulated duration of the slow-links scenario")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s != "" {
			want[s] = true
		}
	}
	run := func(s string) bool { return len(want) == 0 || want[s] }
	fail := false
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		k := *seeds
		if n >= 500 {
			k = *bigSeeds
		}
		fmt.Printf("\n### N = %d\n\n| scenario | seeds | figure | bound | wall |\n|---|---|---|---|---|\n", n)
		row := func(name string, seedsUsed int, fig, bound string, start time.Time) {
			fmt.Printf("| %s | %d | %s | %s | %.1fs |\n", name, seedsUsed, fig, bound, time.Since(start).Seconds())
		}
		cfg := func(seed uint64) sim.Config { return sim.Config{Seed: seed} }
		def := gossip.DefaultConfig()
		for _, warm := range []bool{false, true} {
			name := "join"
			if warm {
				name = "joinwarm"
			}
			if !run(name) {
				continue
			}
			t := time.Now()
			var ds []time.Duration
			for i := range k {
				d, err := sim.JoinLatency(cfg(*seed0+uint64(i)), n, warm)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				ds = append(ds, d)
			}
			label := "join, fresh cluster: all see joiner ALIVE"
			if warm {
				label = "join after 20 warm-up broadcasts: all see joiner ALIVE"
			}
			row(label, k, fmt.Sprintf("p50 %v, p99 %v, max %v", r(sim.Percentile(ds, 50)), r(sim.Percentile(ds, 99)), r(sim.Percentile(ds, 100))), "p99 <= 2s", t)
		}
		if run("crash") {
			t := time.Now()
			var ds []time.Duration
			var fd uint64
			dup := 0
			for i := range k {
				res, err := sim.CrashLatency(cfg(*seed0+uint64(i)), n)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				ds = append(ds, res.Latency)
				fd += res.FalseDeaths
				for _, c := range res.DeadEvents {
					if c != 1 {
						dup++
					}
				}
			}
			row("crash: all survivors see DEAD", k, fmt.Sprintf("p50 %v, p99 %v, max %v; false DEAD %d; observers with != 1 DEAD event %d", r(sim.Percentile(ds, 50)), r(sim.Percentile(ds, 99)), r(sim.Percentile(ds, 100)), fd, dup), fmt.Sprintf("p99 <= %v", def.SuspicionTimeout+2*time.Second), t)
		}
		if run("nbhcrash") {
			t := time.Now()
			limit := def.SuspicionTimeout + 3*def.AntiEntropyInterval + 5*time.Second
			var ds []time.Duration
			var fd uint64
			missed := 0
			for i := range k {
				res, err := sim.NeighbourhoodCrash(cfg(*seed0+uint64(i)), n, limit)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				if res.Latency == 0 {
					missed++
					fmt.Fprintf(os.Stderr, "nbhcrash: seed %d: %v not DEAD everywhere within %v\n", *seed0+uint64(i), res.Missing, limit)
					fail = true
					continue
				}
				ds = append(ds, res.Latency)
				fd += res.FalseDeaths
			}
			row("a node and its whole active view crash: all survivors see all DEAD", k, fmt.Sprintf("p50 %v, p99 %v, max %v; not within bound %d; false DEAD %d", r(sim.Percentile(ds, 50)), r(sim.Percentile(ds, 99)), r(sim.Percentile(ds, 100)), missed, fd), fmt.Sprintf("<= %v", limit), t)
		}
		if run("leave") {
			t := time.Now()
			var ds []time.Duration
			sus := 0
			for i := range k {
				res, err := sim.LeaveLatency(cfg(*seed0+uint64(i)), n)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				ds = append(ds, res.Latency)
				sus += res.Suspicions
			}
			row("leave: all see LEFT", k, fmt.Sprintf("p50 %v, p99 %v, max %v; suspicions %d", r(sim.Percentile(ds, 50)), r(sim.Percentile(ds, 99)), r(sim.Percentile(ds, 100)), sus), "<= 1s, 0 suspicions", t)
		}
		if run("slow") {
			t := time.Now()
			c := cfg(*seed0)
			c.SlowLinks, c.SlowDelay = 0.05, 2*time.Second
			res, err := sim.SlowLinks(c, n, *slowFor)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				fail = true
			}
			row(fmt.Sprintf("%v with 0-2 s delays on 5%% of links (keepalive timeout 1 s)", *slowFor), 1, fmt.Sprintf("false DEAD %d; suspicions raised+refuted %d; link failures %d; converged after %v", res.FalseDeaths, res.Suspicions, res.LinkDowns, res.Converged), "0 false DEAD", t)
		}
		if run("pause") {
			t := time.Now()
			ok, sus := 0, 0
			var fd uint64
			for i := range k {
				res, err := sim.Pause(cfg(*seed0+uint64(i)), n, def.SuspicionTimeout/2)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				if res.AliveEverywhere && res.Incarnation > 0 {
					ok++
				}
				if res.Suspected {
					sus++
				}
				fd += res.FalseDeaths
			}
			row("pause SuspicionTimeout/2", k, fmt.Sprintf("ALIVE everywhere with higher incarnation %d/%d (suspected in %d); false DEAD %d", ok, k, sus, fd), "all", t)
		}
		for _, mc := range []struct {
			name string
			frac float64
		}{{"mass50", 0.5}, {"mass80", 0.8}} {
			if !run(mc.name) {
				continue
			}
			t := time.Now()
			kk := max(1, k/10)
			var refill []time.Duration
			del, conn := 1.0, 0
			never := 0
			for i := range kk {
				res, err := sim.MassCrash(cfg(*seed0+uint64(i)), n, mc.frac, 50)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					fail = true
					continue
				}
				if res.Refill == 0 {
					never++
				} else {
					refill = append(refill, res.Refill)
				}
				del = min(del, res.Delivery)
				if res.ConnectedAtEnd {
					conn++
				}
			}
			row(fmt.Sprintf("%.0f%% crash at once", mc.frac*100), kk, fmt.Sprintf("connected %d/%d; views refilled p50 %v max %v, not within 10 periods %d; min delivery %.4f (50 broadcasts)", conn, kk, r(sim.Percentile(refill, 50)), r(sim.Percentile(refill, 100)), never, del), "refill <= 50s; delivery 100% (50%) / >= 99% (80%)", t)
		}
		if run("steady") {
			t := time.Now()
			res, err := sim.Steady(cfg(*seed0), n, 5*time.Minute, 1000, time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				fail = true
			}
			row("steady state", 1, fmt.Sprintf("RMR %.4f (1000 broadcasts, %d grafts); idle %.2f msgs/node/s, %.0f B/node/s; with 1 broadcast/s %.2f msgs/node/s, %.0f B/node/s", res.RMR, res.Grafts, res.MsgsPerNodeSec, res.BytesPerNodeSec, res.BroadcastMsgsPerNodeSec, res.BroadcastBytesPerNodeSec), "RMR <= 0.05", t)
		}
		if run("forged") {
			forged(n, k, *seed0, row, &fail)
		}
		if run("liveness") {
			liveness(n, k, *seed0, row, &fail)
		}
	}
	pprof.StopCPUProfile()
	if fail {
		os.Exit(1)
	}
}

func r(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// forged runs the forged-record scenarios (gossip/SPEC.md, Admission) on
// n-node clusters over k seeds and prints their rows.
func forged(n, k int, seed0 uint64, row func(string, int, string, string, time.Time), fail *bool) {
	t := time.Now()
	var cleared, joins []time.Duration
	fakeEvents, fakeRecords, maxUnverified := 0, 0, 0
	var maxProbes uint64
	for i := range k {
		res, err := sim.ForgedSync(sim.Config{Seed: seed0 + uint64(i)}, n, 1000, 10)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			*fail = true
			continue
		}
		cleared, joins = append(cleared, res.Cleared), append(joins, res.Join)
		fakeEvents += res.FakeEvents
		fakeRecords += res.FakeRecords
		maxUnverified = max(maxUnverified, res.MaxUnverified)
		maxProbes = max(maxProbes, res.Probes)
	}
	row("forged SYNC naming 1,000 members, to one member once a second for 10 s", k,
		fmt.Sprintf("fake events %d, fake records %d; most unverified at one node %d; probes (PING) max %d per run; cleared after the last frame max %v; a joiner after it ALIVE everywhere p99 %v",
			fakeEvents, fakeRecords, maxUnverified, maxProbes, r(sim.Percentile(cleared, 100)), r(sim.Percentile(joins, 99))),
		"0 fakes; cleared <= 3 × NeighborTimeout (6 s)", t)
	t = time.Now()
	removals, runs, notEnded := 0, 0, 0
	var spells []time.Duration
	for _, status := range []gossip.Status{gossip.Left, gossip.Dead} {
		for _, kind := range []core.Kind{core.KindGossip, core.KindSync} {
			for i := range k {
				res, err := sim.ForgedDeparture(sim.Config{Seed: seed0 + uint64(i)}, n, status, kind)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					*fail = true
					continue
				}
				runs++
				removals += res.Removals
				spells = append(spells, res.Longest)
				if !res.Ended {
					notEnded++
				}
			}
		}
	}
	row("forged LEFT or DEAD for a live member (by GOSSIP and by SYNC, to one member)", runs,
		fmt.Sprintf("LEFT/DEAD events for the victim %d; longest non-ALIVE spell at one node p99 %v, max %v; not ALIVE everywhere at the end %d",
			removals, r(sim.Percentile(spells, 99)), r(sim.Percentile(spells, 100)), notEnded),
		"0 removals; spell <= 2 s", t)
	for _, c := range []struct{ perSecond, conns int }{{0, 1}, {1000, 4}, {5000, 8}} {
		t = time.Now()
		var joins []time.Duration
		var refused uint64
		for i := range k {
			res, err := sim.ForgedFlood(sim.Config{Seed: seed0 + uint64(i)}, n, c.perSecond, c.conns, 60*time.Second)
			if err == nil && !res.Joined {
				err = fmt.Errorf("sim: seed %d: the joiner is not ALIVE everywhere after 60 s of flood", seed0+uint64(i))
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				*fail = true
				continue
			}
			joins = append(joins, res.Join)
			refused = max(refused, res.Refused)
		}
		name := "a join, no flood (baseline of the rows below)"
		if c.perSecond > 0 {
			name = fmt.Sprintf("a join while every member gets %d forged new-member claims a second over %d connections", c.perSecond, c.conns)
		}
		row(name, k, fmt.Sprintf("joiner ALIVE everywhere p50 %v, p99 %v, max %v; most refused by full tables in a run %d",
			r(sim.Percentile(joins, 50)), r(sim.Percentile(joins, 99)), r(sim.Percentile(joins, 100)), refused),
			"as without a flood", t)
	}
	// the forger holding only the client credential, answering its probes
	// (sim.ForgedClientFlood); MaxTableSize 256, which an answered flood by
	// a member-credential holder fills (TestForgedAnsweredFloodIsBoundedByTheTable)
	t = time.Now()
	joins = joins[:0]
	fakes, probes := 0, 0
	for i := range k {
		g := gossip.DefaultConfig()
		g.MaxTableSize = 256
		res, err := sim.ForgedClientFlood(sim.Config{Seed: seed0 + uint64(i), Gossip: g}, n, 1000, true, 30*time.Second)
		if err == nil && !res.Joined {
			err = fmt.Errorf("sim: seed %d: the joiner is not ALIVE everywhere after 30 s of the client-credential flood", seed0+uint64(i))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			*fail = true
			continue
		}
		joins = append(joins, res.Join)
		fakes = max(fakes, res.FakesHeld+res.FakeEvents)
		probes = max(probes, res.FakeProbes)
	}
	row("a join while a forger holding the client credential names 1,000 fake lite clients a second to every member and answers their probes (MaxTableSize 256)", k,
		fmt.Sprintf("joiner ALIVE everywhere p50 %v, p99 %v, max %v; most fakes held or evented in a run %d, probed %d",
			r(sim.Percentile(joins, 50)), r(sim.Percentile(joins, 99)), r(sim.Percentile(joins, 100)), fakes, probes),
		"as without a flood; 0 fakes", t)
	// the same forger opening a connection of its own per fake, so each
	// fake is admitted as its own record (sim.ForgedClientConnFlood):
	// what holds is Config.MaxClientRecords (a quarter of 256 here)
	t = time.Now()
	joins = joins[:0]
	fakes, refusedC := 0, uint64(0)
	for i := range k {
		g := gossip.DefaultConfig()
		g.MaxTableSize = 256
		res, err := sim.ForgedClientConnFlood(sim.Config{Seed: seed0 + uint64(i), Gossip: g}, n, 1000, true, 30*time.Second)
		if err == nil && !res.Joined {
			err = fmt.Errorf("sim: seed %d: the joiner is not ALIVE everywhere after 30 s of the connection-per-fake flood", seed0+uint64(i))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			*fail = true
			continue
		}
		joins = append(joins, res.Join)
		fakes = max(fakes, res.FakesHeld)
		refusedC = max(refusedC, res.Refused)
	}
	row("the same forger opening a connection per fake, each advertising the fake's address (MaxTableSize 256, MaxClientRecords 64)", k,
		fmt.Sprintf("joiner ALIVE everywhere p50 %v, p99 %v, max %v; most fakes held by all members in a run %d (%d members, at most 64 each); most refused %d",
			r(sim.Percentile(joins, 50)), r(sim.Percentile(joins, 99)), r(sim.Percentile(joins, 100)), fakes, n+1, refusedC),
		"joined; fakes within the client bound", t)
}

// liveness runs the scenarios of gossip/SPEC.md, Failure detection,
// "Liveness is proven by members": a lite client bridging a partition, and
// a forger sending a crashed member's ALIVE at the next incarnation.
func liveness(n, k int, seed0 uint64, row func(string, int, string, string, time.Time), fail *bool) {
	def := gossip.DefaultConfig()
	for _, bridged := range []bool{false, true} {
		t := time.Now()
		var dead, rejoin []time.Duration
		revived := 0
		for i := range k {
			res, err := sim.BridgedPartition(sim.Config{Seed: seed0 + uint64(i)}, n, 2, bridged, 30*time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				*fail = true
				continue
			}
			dead, rejoin = append(dead, res.Dead), append(rejoin, res.Rejoin)
			revived += res.Revived
		}
		name := "partition cutting 2 members off, a lite client on the majority's side"
		if bridged {
			name = "the same partition, the lite client linked to both sides"
		}
		row(name+": majority holds every cut member DEAD; rejoin after the heal", k,
			fmt.Sprintf("DEAD p50 %v, p99 %v, max %v; revived during 30 s %d; rejoin p50 %v, max %v",
				r(sim.Percentile(dead, 50)), r(sim.Percentile(dead, 99)), r(sim.Percentile(dead, 100)), revived,
				r(sim.Percentile(rejoin, 50)), r(sim.Percentile(rejoin, 100))), "bridged as not bridged; 0 revived", t)
	}
	for _, tc := range []struct {
		name          string
		forge, client bool
	}{{"crash, no forger", false, false}, {"crash, forger with the client credential sends ALIVE at inc+1 every 250 ms", true, true},
		{"crash, open-cluster stranger sends ALIVE at inc+1 every 250 ms", true, false}} {
		t := time.Now()
		var ds []time.Duration
		var fd uint64
		for i := range k {
			res, err := sim.ForgedAlive(sim.Config{Seed: seed0 + uint64(i)}, n, tc.forge, tc.client)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				*fail = true
				continue
			}
			ds = append(ds, res.Latency)
			fd += res.FalseDeaths
		}
		row(tc.name+": all survivors see DEAD", k, fmt.Sprintf("p50 %v, p99 %v, max %v; false DEAD %d",
			r(sim.Percentile(ds, 50)), r(sim.Percentile(ds, 99)), r(sim.Percentile(ds, 100)), fd),
			fmt.Sprintf("p99 <= %v", def.SuspicionTimeout+2*time.Second), t)
	}
}

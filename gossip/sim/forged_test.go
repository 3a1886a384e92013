package sim

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
)

// The forger is on the network but holds no member session: it sends
// frames with whatever sender it likes, and answers nothing.
var forger = gossip.Peer{ID: gossip.NodeID{0xee}, Addr: "forger:1"}

func fakeMembers(k int) []gossip.Member {
	out := make([]gossip.Member, k)
	for i := range out {
		var id gossip.NodeID
		id[0] = 0xfa
		binary.BigEndian.PutUint32(id[12:], uint32(i))
		out[i] = gossip.Member{ID: id, Addr: fmt.Sprintf("fake%d:7000", i), Status: gossip.Alive}
	}
	return out
}

// TestForgedSyncOfAThousandMembers replays the attack of issue 18: a SYNC
// frame naming 1,000 live members, sent to a member every second for 10 s.
// No fake may ever join any table (not one EventJoined), the second-hand
// records stay bounded, the probes they cost are bounded, and every one
// is gone (1 + probeAttempts) × NeighborTimeout after the last frame. The
// cluster stays converged and still admits a real joiner within 2 s.
func TestForgedSyncOfAThousandMembers(t *testing.T) {
	const n, frames = 10, 10
	for seed := range uint64(seeds(3, 20)) {
		joinedFake := 0
		cfg := Config{Seed: seed + 1, OnEvent: func(_ time.Duration, _ int, ev gossip.Event) {
			if ev.Member.ID[0] == 0xfa {
				joinedFake++
			}
		}}
		s, err := Build(cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		fs := fakeMembers(1000)
		victim := s.Running()[0]
		s.ResetStats()
		maxClaims := 0
		watch := func() bool {
			for _, i := range s.Running() {
				maxClaims = max(maxClaims, s.Node(i).Unverified())
			}
			return false
		}
		for range frames {
			s.Inject(victim, &core.Message{Kind: core.KindSync, From: forger, Members: fs})
			s.RunUntil(s.Now()+time.Second, watch)
		}
		nt := gossip.DefaultConfig().NeighborTimeout
		bound := s.Now() + 3*nt
		gone := func() bool {
			for _, i := range s.Running() {
				if s.Node(i).Unverified() != 0 {
					return false
				}
			}
			return true
		}
		if !s.RunUntil(bound, gone) {
			t.Fatalf("seed %d: unverified records remain %v after the last forged frame", cfg.Seed, 3*nt)
		}
		if joinedFake != 0 {
			t.Fatalf("seed %d: %d events about fake members", cfg.Seed, joinedFake)
		}
		for _, i := range s.Running() {
			if got := len(s.Node(i).Members()); got != n {
				t.Fatalf("seed %d: node %d holds %d records, want %d", cfg.Seed, i, got, n)
			}
		}
		// at most 64 probes in flight, each answer window NeighborTimeout,
		// two attempts: 64 PINGs per NeighborTimeout per attacked member
		window := s.Now() - s.Stats().Since
		maxPings := uint64(64 * (window/nt + 1))
		if pings := s.Stats().ByKind[core.KindPing]; pings > maxPings {
			t.Fatalf("seed %d: %d probes in %v, want at most %d", cfg.Seed, pings, window, maxPings)
		}
		if maxClaims > 1000 {
			t.Fatalf("seed %d: %d unverified records held at once", cfg.Seed, maxClaims)
		}
		if !s.Converged() {
			t.Fatalf("seed %d: the cluster is not converged after the attack", cfg.Seed)
		}
		t0 := s.Now()
		j := s.AddNode()
		if !s.RunUntil(t0+2*time.Second, func() bool { return s.AllSee(j, IsAlive) }) {
			t.Fatalf("seed %d: a real joiner was not ALIVE everywhere within 2 s of the attack", cfg.Seed)
		}
		t.Logf("seed %d: probes %d (%v), most unverified at once %d", cfg.Seed, s.Stats().ByKind[core.KindPing], window, maxClaims)
	}
}

// TestForgedDepartureDoesNotRemoveALiveMember sends one forged LEFT and one
// forged DEAD for a live member, by rumour and by table exchange, to one
// member. No node may emit LEFT or DEAD for it; a DEAD turns into a
// suspicion the victim refutes, so it may be non-ALIVE somewhere, but for
// at most 1 s.
func TestForgedDepartureDoesNotRemoveALiveMember(t *testing.T) {
	const n = 10
	var worst time.Duration
	defer func() { t.Logf("longest non-ALIVE spell of the victim at any observer: %v", worst) }()
	for _, status := range []gossip.Status{gossip.Left, gossip.Dead} {
		for _, kind := range []core.Kind{core.KindGossip, core.KindSync} {
			for seed := range uint64(seeds(3, 20)) {
				name := fmt.Sprintf("%v by %v, seed %d", status, kind, seed+1)
				var victimID gossip.NodeID
				removed := 0
				down := map[int]time.Duration{} // observer -> when it stopped seeing the victim ALIVE
				var longest time.Duration
				cfg := Config{Seed: seed + 1, OnEvent: func(at time.Duration, o int, ev gossip.Event) {
					if ev.Member.ID != victimID {
						return
					}
					switch ev.Kind {
					case gossip.EventLeft, gossip.EventDead:
						removed++
					case gossip.EventSuspect:
						down[o] = at
					case gossip.EventAlive, gossip.EventJoined:
						if t0, ok := down[o]; ok {
							longest = max(longest, at-t0)
							delete(down, o)
						}
					}
				}}
				s, err := Build(cfg, n)
				if err != nil {
					t.Fatal(err)
				}
				run := s.Running()
				victim, target := run[3], run[0]
				victimID = s.ID(victim)
				rec, _ := s.Node(target).Member(victimID)
				forged := rec
				forged.Status = status
				if status == gossip.Left {
					forged.Incarnation++ // outranks the live record
				}
				s.Inject(target, &core.Message{Kind: kind, From: forger, Members: []gossip.Member{forged}})
				s.Run(gossip.DefaultConfig().SuspicionTimeout + 5*time.Second)
				if removed != 0 {
					t.Fatalf("%s: %d LEFT/DEAD events for the live victim", name, removed)
				}
				if len(down) != 0 {
					t.Fatalf("%s: %d observers still suspect the victim", name, len(down))
				}
				worst = max(worst, longest)
				if longest > time.Second {
					t.Fatalf("%s: the victim was not ALIVE at some observer for %v, want <= 1s", name, longest)
				}
				if !s.AllSee(victim, IsAlive) || !s.Converged() {
					t.Fatalf("%s: the cluster did not end with the victim ALIVE everywhere", name)
				}
				if s.Stats().FalseDeaths != 0 {
					t.Fatalf("%s: false deaths %d", name, s.Stats().FalseDeaths)
				}
			}
		}
	}
}

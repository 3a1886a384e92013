package sim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
)

// The forged-record scenarios: a forger that can deliver frames
// to members but holds no member session (it writes any sender it likes
// and answers nothing) tries to add members to the table or to remove a
// live one (gossip/SPEC.md, Admission).

// Forger is the sender the forged frames claim; no node has its address.
var Forger = gossip.Peer{ID: gossip.NodeID{0xee}, Addr: "forger:7000"}

// FakeMembers returns k ALIVE records of members that do not exist: ids
// whose first byte is 0xfa, at addresses no node has.
func FakeMembers(k int) []gossip.Member {
	out := make([]gossip.Member, k)
	for i := range out {
		var id gossip.NodeID
		id[0] = 0xfa
		binary.BigEndian.PutUint32(id[12:], uint32(i))
		out[i] = gossip.Member{ID: id, Addr: fmt.Sprintf("fake%d:7000", i), Status: gossip.Alive}
	}
	return out
}

// ForgedSyncResult is what ForgedSync measures.
type ForgedSyncResult struct {
	FakeEvents    int           // member events about a fake, at any node (0 when admission holds)
	FakeRecords   int           // fake records in any table at the end
	MaxUnverified int           // most second-hand records one node held at once
	Probes        uint64        // PINGs sent from the first forged frame until Cleared
	Cleared       time.Duration // last forged frame -> no node holds an unverified record
	Join          time.Duration // then: a real joiner ALIVE everywhere
}

// ForgedSync settles an n-node cluster, then sends one member a SYNC
// naming fakes fake members every second, frames times (the attack it
// models is one 32 KB frame naming 1,000). It fails if the second-hand
// records are not all gone 3 × NeighborTimeout after the last frame or a
// real joiner is not ALIVE everywhere within 10 s after that.
func ForgedSync(cfg Config, n, fakes, frames int) (ForgedSyncResult, error) {
	var r ForgedSyncResult
	countFakeEvents(&cfg, &r.FakeEvents)
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	fs := FakeMembers(fakes)
	target := s.Running()[0]
	s.ResetStats()
	watch := func() bool {
		for _, i := range s.Running() {
			r.MaxUnverified = max(r.MaxUnverified, s.Node(i).Unverified())
		}
		return false
	}
	for range frames {
		s.Inject(target, &core.Message{Kind: core.KindSync, From: Forger, Members: fs})
		s.RunUntil(s.Now()+time.Second, watch)
	}
	last := s.Now() - time.Second + s.cfg.LatencyMin
	nt := s.cfg.Gossip.NeighborTimeout
	gone := func() bool {
		watch()
		for _, i := range s.Running() {
			if s.Node(i).Unverified() != 0 {
				return false
			}
		}
		return true
	}
	if !s.RunUntil(last+3*nt, gone) {
		return r, fmt.Errorf("sim: seed %d: unverified records remain %v after the last forged frame", cfg.Seed, 3*nt)
	}
	r.Cleared = s.Now() - last
	r.Probes = s.Stats().ByKind[core.KindPing]
	for _, i := range s.Running() {
		for _, m := range s.Node(i).Members() {
			if m.ID[0] == 0xfa {
				r.FakeRecords++
			}
		}
	}
	t0 := s.Now()
	j := s.AddNode()
	if !s.RunUntil(t0+10*time.Second, func() bool { return s.AllSee(j, IsAlive) }) {
		return r, fmt.Errorf("sim: seed %d: a joiner after the attack is not ALIVE everywhere after 10 s", cfg.Seed)
	}
	r.Join = s.Now() - t0
	return r, nil
}

// ForgedDepartureResult is what ForgedDeparture measures.
type ForgedDepartureResult struct {
	Removals int           // LEFT or DEAD events about the live victim, at any node
	Longest  time.Duration // longest spell the victim was not ALIVE at one node
	Ended    bool          // the victim ALIVE everywhere and the cluster converged at the end
}

// ForgedDeparture settles an n-node cluster and sends one member a record
// claiming another, live, member has status (Left or Dead), in a frame of
// kind (KindGossip or KindSync); a LEFT carries the victim's incarnation
// plus one, so that it outranks the live record. It then runs
// SuspicionTimeout + 5 s.
func ForgedDeparture(cfg Config, n int, status gossip.Status, kind core.Kind) (ForgedDepartureResult, error) {
	var r ForgedDepartureResult
	var victimID gossip.NodeID
	down := map[int]time.Duration{} // observer -> when it stopped seeing the victim ALIVE
	user := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, o int, ev gossip.Event) {
		if user != nil {
			user(at, o, ev)
		}
		if ev.Member.ID != victimID {
			return
		}
		switch ev.Kind {
		case gossip.EventLeft, gossip.EventDead:
			r.Removals++
		case gossip.EventSuspect:
			down[o] = at
		case gossip.EventAlive, gossip.EventJoined:
			if t0, ok := down[o]; ok {
				r.Longest = max(r.Longest, at-t0)
				delete(down, o)
			}
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	run := s.Running()
	victim, target := run[len(run)/2], run[0]
	victimID = s.ID(victim)
	rec, _ := s.Node(target).Member(victimID)
	forged := rec
	forged.Status = status
	if status == gossip.Left {
		forged.Incarnation++
	}
	s.Inject(target, &core.Message{Kind: kind, From: Forger, Members: []gossip.Member{forged}})
	s.Run(s.cfg.Gossip.SuspicionTimeout + 5*time.Second)
	for _, t0 := range down { // still suspected at the end
		r.Longest = max(r.Longest, s.Now()-t0)
	}
	r.Ended = s.AllSee(victim, IsAlive) && s.Converged()
	return r, nil
}

// fakeMembersFrom returns k fake ALIVE records numbered from first (see
// FakeMembers).
func fakeMembersFrom(first, k int) []gossip.Member {
	out := make([]gossip.Member, k)
	for i := range out {
		var id gossip.NodeID
		id[0] = 0xfa
		binary.BigEndian.PutUint32(id[12:], uint32(first+i))
		out[i] = gossip.Member{ID: id, Addr: fmt.Sprintf("fake%d:7000", first+i), Status: gossip.Alive}
	}
	return out
}

// ForgedFloodResult is what ForgedFlood measures.
type ForgedFloodResult struct {
	Join          time.Duration // joiner added -> ALIVE at every member (limit if never)
	Joined        bool          // within the limit
	FakeEvents    int           // member events about a fake, at any node
	Refused       uint64        // records refused by full tables, all members together
	MaxUnverified int           // most second-hand records one node held at once
	MaxHeld       int           // most table records plus second-hand records at one node (sampled every 100 ms)
	FakesHeld     int           // fake records in the tables at the end, all members together
	FakeProbes    int           // admission PINGs the answering forger saw at fake addresses
}

// ForgedFlood settles an n-node cluster, then has the forger send every
// member, every 100 ms, a SYNC naming perSecond/10 fake members never
// named before, at addresses nobody answers at, split over conns
// connections of the forger. After 5 s of it (every member's probe slots
// taken), a real node joins, and the flood goes on until the joiner is
// ALIVE at every member or limit has passed. With perSecond 0 it is the
// same join without a flood.
func ForgedFlood(cfg Config, n, perSecond, conns int, limit time.Duration) (ForgedFloodResult, error) {
	return floodJoin(cfg, n, perSecond, conns, false, false, true, limit)
}

// ForgedAnsweredFlood is ForgedFlood over one connection by the stronger
// forger of gossip/SPEC.md's stated limits: it answers the admission
// probes at the addresses it names (as an insider of the transport
// could), so its fakes are adopted until tables reach
// Config.Gossip.MaxTableSize. With keepFlooding false it stops naming new
// fakes when the real node joins (but goes on answering).
func ForgedAnsweredFlood(cfg Config, n, perSecond int, keepFlooding bool, limit time.Duration) (ForgedFloodResult, error) {
	return floodJoin(cfg, n, perSecond, 1, true, false, keepFlooding, limit)
}

// ForgedClientFlood is ForgedAnsweredFlood by a forger that holds only the
// client credential (a lite client's secret): its frames and its answers
// arrive over connections that proved no member credential
// (core.Message.ClientOnly), and its fakes are lite clients (a member-role
// record is refused from such a sender anyway). Besides the SYNC naming the
// fakes, it sends each fake's own record as a GOSSIP from that fake over
// the same connection, as if each fake spoke for itself.
func ForgedClientFlood(cfg Config, n, perSecond int, keepFlooding bool, limit time.Duration) (ForgedFloodResult, error) {
	return floodJoin(cfg, n, perSecond, 1, true, true, keepFlooding, limit)
}

// ForgedClientConnFlood is ForgedClientFlood by a forger that also opens a
// connection of its own for each fake, advertising the fake's address (so
// each fake's GOSSIP of its own record arrives over a connection whose
// peer is that address), as a client-credential holder reconnecting once
// per fake could: the rule that a client-only sender introduces only its
// own record then admits each fake, and what bounds them is
// Config.Gossip.MaxClientRecords (gossip/SPEC.md, Admission, 4).
func ForgedClientConnFlood(cfg Config, n, perSecond int, keepFlooding bool, limit time.Duration) (ForgedFloodResult, error) {
	return floodJoin(cfg, n, perSecond, -1, true, true, keepFlooding, limit)
}

func floodJoin(cfg Config, n, perSecond, conns int, answer, client, keep bool, limit time.Duration) (ForgedFloodResult, error) {
	var r ForgedFloodResult
	countFakeEvents(&cfg, &r.FakeEvents)
	cfg.AnswerClientOnly = client
	if answer {
		cfg.Answer = func(to gossip.Peer, m *core.Message) *core.Message {
			var k int
			if m.Kind != core.KindPing || m.Digest == 0 {
				return nil
			}
			if _, err := fmt.Sscanf(to.Addr, "fake%d:7000", &k); err != nil {
				return nil
			}
			r.FakeProbes++
			fake := fakeMembersFrom(k, 1)[0]
			if client {
				fake.Role = gossip.RoleClient
			}
			return &core.Message{Kind: core.KindPong, From: fake.Peer(), Digest: m.Digest}
		}
	}
	s, err := Build(cfg, n)
	if err != nil {
		return r, err
	}
	members := s.Running()
	named := 0
	flooding := true
	perFake := conns < 0 // ForgedClientConnFlood: one connection per fake
	if perFake {
		conns = 1
	}
	flood := func(until time.Duration, cond func() bool) bool {
		for s.Now() < until {
			if k := perSecond / 10; k > 0 && flooding {
				fs := fakeMembersFrom(named, k)
				named += k
				for _, i := range members {
					for c := range conns { // the frame split over the forger's connections
						part := fs[c*len(fs)/conns : (c+1)*len(fs)/conns]
						via := fmt.Sprintf("forger%d:7000", c)
						if !client {
							s.InjectVia(i, via, &core.Message{Kind: core.KindSync, From: Forger, Members: part})
							continue
						}
						for j := range part {
							part[j].Role = gossip.RoleClient
						}
						s.InjectClientVia(i, via, &core.Message{Kind: core.KindSync, From: Forger, Members: part})
						for _, f := range part { // each fake "speaking for itself", over the one connection or its own
							v := via
							if perFake {
								v = f.Addr
							}
							s.InjectClientVia(i, v, &core.Message{Kind: core.KindGossip, From: f.Peer(), Members: []gossip.Member{f}})
						}
					}
				}
			}
			if s.RunUntil(min(until, s.Now()+100*time.Millisecond), func() bool {
				for _, i := range s.Running() {
					r.MaxUnverified = max(r.MaxUnverified, s.Node(i).Unverified())
				}
				return cond != nil && cond()
			}) && cond != nil {
				return true
			}
			for _, i := range s.Running() {
				r.MaxHeld = max(r.MaxHeld, len(s.Node(i).Members())+s.Node(i).Unverified())
			}
		}
		return false
	}
	flood(s.Now()+5*time.Second, nil)
	flooding = keep
	t0 := s.Now()
	j := s.AddNode()
	r.Joined = flood(t0+limit, func() bool { return s.AllSee(j, IsAlive) })
	r.Join = s.Now() - t0
	for _, i := range s.Running() {
		r.Refused += s.Node(i).Refused()
		for _, m := range s.Node(i).Members() {
			if m.ID[0] == 0xfa && !m.Status.Gone() {
				r.FakesHeld++
			}
		}
	}
	return r, nil
}

// countFakeEvents makes cfg count into n the membership events about fake
// members (ids starting 0xfa) that any node reports, and still pass every
// event to the OnEvent cfg had.
func countFakeEvents(cfg *Config, n *int) {
	user := cfg.OnEvent
	cfg.OnEvent = func(at time.Duration, o int, ev gossip.Event) {
		if ev.Member.ID[0] == 0xfa {
			*n++
		}
		if user != nil {
			user(at, o, ev)
		}
	}
}

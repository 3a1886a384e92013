package core

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJoinThroughSeedExchangesTables(t *testing.T) {
	tn := newTestNet(t)
	a := tn.add("a:1", 1)
	b := tn.add("b:1", 2, "a:1")
	tn.run()
	if tn.status("a:1", "b:1") != Alive || tn.status("b:1", "a:1") != Alive {
		t.Fatal("the two nodes do not see each other ALIVE")
	}
	if len(a.Active()) != 1 || len(b.Active()) != 1 {
		t.Fatalf("active views %v / %v, want each other", a.Active(), b.Active())
	}
	if tn.count("a:1", EventJoined, "b:1") != 1 || tn.count("b:1", EventJoined, "a:1") != 1 {
		t.Fatal("want exactly one joined event each way")
	}
	if a.Digest() != b.Digest() {
		t.Fatal("tables differ after the join's anti-entropy")
	}
}

func TestClusterOfTenConverges(t *testing.T) {
	tn := cluster(t, 10)
	for _, a := range tn.order {
		if n := len(tn.nodes[a].Active()); n == 0 || n > DefaultConfig().ActiveViewSize {
			t.Fatalf("%s active view size %d", a, n)
		}
	}
}

func TestRefutationBumpsIncarnationAndBroadcastsAlive(t *testing.T) {
	tn := cluster(t, 3)
	victim := tn.nodes["a01:1"]
	accuser := tn.nodes["a0:1"]
	forged := victim.Self()
	forged.Status = Suspect
	tn.out("a0:1", accuser.Step(tn.now, &Message{Kind: KindGossip, From: tn.nodes["a02:1"].Self().Peer(), Members: []Member{forged}}))
	tn.run()
	if got := victim.Self().Incarnation; got != 1 {
		t.Fatalf("victim incarnation %d, want 1", got)
	}
	for _, o := range tn.order {
		m, _ := tn.nodes[o].Member(victim.Self().ID)
		if m.Status != Alive || m.Incarnation != 1 {
			t.Fatalf("%s sees the victim as %v, want ALIVE#1", o, m)
		}
	}
	tn.advance(DefaultConfig().SuspicionTimeout + time.Second)
	if got := tn.status("a0:1", "a01:1"); got != Alive {
		t.Fatalf("refuted node became %v", got)
	}
	// The accuser saw the suspicion, then the refutation: one ALIVE event.
	if s, a := tn.count("a0:1", EventSuspect, "a01:1"), tn.count("a0:1", EventAlive, "a01:1"); s != 1 || a != 1 {
		t.Fatalf("accuser emitted %d SUSPECT and %d ALIVE events, want 1 and 1", s, a)
	}
}

// A forged suspicion at an incarnation no honest node could have reached —
// the top of the range, or far above what is known — is dropped: it would
// leave its victim unable to outbid it (and wrap its incarnation to 0 if
// it tried). A suspicion a little ahead is refuted as usual.
func TestImplausibleIncarnationsAreDropped(t *testing.T) {
	tn := cluster(t, 3)
	victim := tn.nodes["a01:1"]
	accuser := tn.nodes["a0:1"]
	from := tn.nodes["a02:1"].Self().Peer()
	for _, inc := range []uint64{math.MaxUint64, maxIncarnationJump + 1} {
		forged := victim.Self()
		forged.Status, forged.Incarnation = Suspect, inc
		for _, n := range []*Node{accuser, victim} {
			if out := n.Step(tn.now, &Message{Kind: KindGossip, From: from, Members: []Member{forged}}); len(out.Sends) != 0 || len(out.Events) != 0 {
				t.Fatalf("incarnation %d reached %v: %+v", inc, n.Self(), out)
			}
		}
	}
	tn.advance(DefaultConfig().SuspicionTimeout + time.Second)
	for _, o := range tn.order {
		if m, _ := tn.nodes[o].Member(victim.Self().ID); m.Status != Alive || m.Incarnation != 0 {
			t.Fatalf("%s sees the victim as %v after implausible records, want ALIVE#0", o, m)
		}
	}
	forged := victim.Self()
	forged.Status, forged.Incarnation = Suspect, 5
	tn.out("a0:1", accuser.Step(tn.now, &Message{Kind: KindGossip, From: from, Members: []Member{forged}}))
	tn.run()
	for _, o := range tn.order {
		if m, _ := tn.nodes[o].Member(victim.Self().ID); m.Status != Alive || m.Incarnation != 6 {
			t.Fatalf("%s sees the victim as %v, want ALIVE#6", o, m)
		}
	}
}

func TestSuspicionOnlyFromActiveNeighbours(t *testing.T) {
	tn := cluster(t, 8)
	n := tn.nodes["a0:1"]
	active := map[string]bool{}
	for _, p := range n.Active() {
		active[p.Addr] = true
	}
	var other string
	for _, a := range tn.order[1:] {
		if !active[a] {
			other = a
			break
		}
	}
	if other == "" {
		t.Skip("every node is a0's neighbour at this size; nothing to check")
	}
	out := n.LinkDown(tn.now, other, LinkLost)
	for _, e := range out.Events {
		if e.Kind == EventSuspect {
			t.Fatalf("a data-path link loss raised a suspicion: %v", e)
		}
	}
	nb := n.Active()[0]
	out = n.LinkDown(tn.now, nb.Addr, KeepaliveFailed)
	found := false
	for _, e := range out.Events {
		found = found || (e.Kind == EventSuspect && e.Member.ID == nb.ID)
	}
	if !found {
		t.Fatal("losing an active neighbour's link did not raise a suspicion")
	}
}

func TestUnrefutedSuspicionBecomesDeadOnce(t *testing.T) {
	tn := cluster(t, 6)
	victim := "a03:1"
	tn.down[victim] = true
	for _, a := range tn.order {
		if a == victim {
			continue
		}
		tn.out(a, tn.nodes[a].LinkDown(tn.now, victim, KeepaliveFailed))
	}
	tn.run()
	tn.advance(DefaultConfig().SuspicionTimeout - 200*time.Millisecond)
	if got := tn.status("a0:1", victim); got != Suspect {
		t.Fatalf("before the timeout: %v, want suspect", got)
	}
	tn.advance(time.Second)
	for _, o := range tn.order {
		if o == victim {
			continue
		}
		if got := tn.status(o, victim); got != Dead {
			t.Fatalf("%s sees %v, want dead", o, got)
		}
		if c := tn.count(o, EventDead, victim); c != 1 {
			t.Fatalf("%s emitted %d DEAD events, want 1", o, c)
		}
	}
}

func TestLeaveMarksLeftWithoutSuspicion(t *testing.T) {
	tn := cluster(t, 6)
	leaver := "a02:1"
	tn.out(leaver, tn.nodes[leaver].Leave(tn.now))
	tn.run()
	tn.down[leaver] = true
	tn.advance(DefaultConfig().SuspicionTimeout + time.Second)
	for _, o := range tn.order {
		if o == leaver {
			continue
		}
		if got := tn.status(o, leaver); got != Left {
			t.Fatalf("%s sees %v, want left", o, got)
		}
		if tn.count(o, EventSuspect, leaver)+tn.count(o, EventDead, leaver) != 0 {
			t.Fatalf("%s suspected a node that left", o)
		}
		if tn.count(o, EventLeft, leaver) != 1 {
			t.Fatalf("%s: want exactly one left event", o)
		}
	}
}

func TestStaleRecordIsNotForwardedAndLeavesTableAlone(t *testing.T) {
	tn := cluster(t, 4)
	n := tn.nodes["a0:1"]
	subject := tn.nodes["a01:1"].Self()
	// make the subject refute once so incarnation 0 records are stale
	tn.out("a01:1", tn.nodes["a01:1"].Reannounce(tn.now))
	tn.run()
	before := n.Digest()
	stale := subject
	stale.Status = Dead // incarnation 0: older than the table's 1
	out := n.Step(tn.now, &Message{Kind: KindGossip, From: tn.nodes["a02:1"].Self().Peer(), Members: []Member{stale}})
	for _, s := range out.Sends {
		if s.Msg.Kind == KindGossip {
			t.Fatalf("stale record forwarded to %v", s.To)
		}
	}
	if n.Digest() != before || len(out.Events) != 0 {
		t.Fatal("a stale record changed the table")
	}
}

func TestBadInputIsDropped(t *testing.T) {
	tn := cluster(t, 4)
	n := tn.nodes["a0:1"]
	before := n.Digest()
	stranger := Peer{ID: NodeID{200}, Addr: "z:1"}
	big := make([]Peer, DefaultConfig().ShuffleActive+DefaultConfig().ShufflePassive+2)
	for i := range big {
		big[i] = Peer{ID: NodeID{100, byte(i)}, Addr: "p:1"}
	}
	inputs := []*Message{
		nil,
		{Kind: Kind(99), From: stranger},
		{Kind: KindShuffle, From: stranger, Subject: stranger, TTL: 1, Peers: big},
		{Kind: KindGraft, From: stranger, IDs: []MsgID{{Node: NodeID{77}}}},
		{Kind: KindIHave, From: stranger, IDs: []MsgID{{Node: NodeID{77}}}},
		{Kind: KindGossip, From: n.Self().Peer(), Members: []Member{{ID: NodeID{201}, Addr: "q:1"}}},
		{Kind: KindGossip, From: stranger},
		{Kind: KindSync, From: stranger, Members: []Member{{ID: NodeID{202}, Addr: "q:1"}}, Ages: []uint32{1, 2}},
	}
	var logged bytes.Buffer
	n.log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, m := range inputs {
		before := logged.Len()
		out := n.Step(tn.now, m)
		if len(out.Events) != 0 || len(out.Sends) != 0 {
			t.Fatalf("bad input %+v produced output %+v", m, out)
		}
		if logged.Len() == before {
			t.Errorf("bad input %+v was dropped without a log line", m)
		}
	}
	if n.Digest() != before {
		t.Fatal("bad input changed the table")
	}
	for _, p := range n.Passive() {
		if p.Addr == "p:1" {
			t.Fatal("an oversized sample reached the passive view")
		}
	}
}

func TestDeclaredDeadNodeRejoinsWithHigherIncarnation(t *testing.T) {
	tn := cluster(t, 4)
	victim := tn.nodes["a03:1"]
	// isolate the victim: it loses every link, the others declare it dead
	for _, p := range victim.Active() {
		victim.LinkDown(tn.now, p.Addr, LinkLost)
	}
	dead := victim.Self() // isolated, it may have bumped its incarnation already
	dead.Status = Dead
	for _, a := range tn.order[:3] {
		tn.nodes[a].apply(dead, 0, Peer{})
	}
	out := victim.Step(tn.now, &Message{Kind: KindSync, From: tn.nodes["a0:1"].Self().Peer(), Members: []Member{dead}})
	want := dead.Incarnation + 1
	if victim.Self().Incarnation != want {
		t.Fatalf("incarnation %d, want %d", victim.Self().Incarnation, want)
	}
	tn.out("a03:1", out)
	tn.run()
	tn.advance(3 * time.Second)
	for _, a := range tn.order {
		m, _ := tn.nodes[a].Member(victim.Self().ID)
		if m.Status != Alive || m.Incarnation != want {
			t.Fatalf("%s sees the rejoined node as %v", a, m)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(c *Config){
		func(c *Config) { c.ActiveViewSize = 0 },
		func(c *Config) { c.PassiveRandomWalkLength = c.ActiveRandomWalkLength + 1 },
		func(c *Config) { c.SuspicionTimeout = 0 },
		func(c *Config) { c.GraftTimeout = -1 },
		func(c *Config) { c.ShuffleActive = MaxSample },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: invalid config accepted", i)
		}
	}
	if _, err := NewNode(Peer{Addr: "x:1"}, nil); err == nil {
		t.Fatal("zero node id accepted")
	}
}

// A node that finds itself isolated — its links lost, nobody left to ask —
// rejoins under a higher incarnation, once per isolation, so it is ALIVE at
// it everywhere as soon as it is heard again.
func TestIsolatedNodeRejoinsWithHigherIncarnation(t *testing.T) {
	tn := cluster(t, 4)
	victim := tn.nodes["a03:1"]
	tn.cut["a03:1"] = true
	for _, p := range victim.Active() {
		tn.out("a03:1", victim.LinkDown(tn.now, p.Addr, LinkLost))
	}
	tn.advance(40 * time.Second)
	if got := victim.Self().Incarnation; got != 1 {
		t.Fatalf("isolated node's incarnation %d, want 1 (bumped once, before rejoining)", got)
	}
	tn.cut["a03:1"] = false
	tn.advance(15 * time.Second)
	for _, a := range tn.order {
		m, _ := tn.nodes[a].Member(victim.Self().ID)
		if m.Status != Alive || m.Incarnation != 1 {
			t.Fatalf("%s sees the rejoined node as %v", a, m)
		}
	}
}

// Plumtree: a record received a second time from an eager neighbour prunes
// that link — PRUNE goes back and the neighbour becomes lazy — while the
// first copy is applied and forwarded.
func TestDuplicateFromAnEagerPeerPrunesTheLink(t *testing.T) {
	tn := cluster(t, 4)
	n := tn.nodes["a0:1"]
	eager := n.Eager()
	if len(eager) == 0 {
		t.Fatal("no eager neighbour")
	}
	from := eager[0]
	rec := tn.nodes["a02:1"].Self()
	rec.Incarnation++ // news: a record the table does not hold yet
	msg := &Message{Kind: KindGossip, From: from, Members: []Member{rec}}
	if out := n.Step(tn.now, msg); len(out.Sends) == 0 {
		t.Fatal("the first copy was not forwarded")
	}
	out := n.Step(tn.now, msg)
	pruned := false
	for _, s := range out.Sends {
		if s.Msg.Kind == KindPrune && s.To.ID == from.ID {
			pruned = true
		}
	}
	if !pruned {
		t.Fatalf("the duplicate sent %+v, want a PRUNE to %v", out.Sends, from)
	}
	for _, p := range n.Eager() {
		if p.ID == from.ID {
			t.Fatalf("%v is still eager after the duplicate", from)
		}
	}
}

// HyParView NEIGHBOR: with a full active view, a low-priority request is
// refused (the asker goes to the passive view); a high-priority one — from
// a node whose active view is empty — is accepted, evicting a neighbour
// (told with DISCONNECT, kept as passive) so the view stays at its size.
func TestNeighborPriorityWithAFullActiveView(t *testing.T) {
	cfg := testCfg()
	n, err := NewNode(Peer{ID: NodeID{1}, Addr: "n:1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := testEpoch
	n.Start(now)
	for i := range cfg.ActiveViewSize {
		p := Peer{ID: NodeID{10, byte(i)}, Addr: fmt.Sprintf("p%d:1", i)}
		n.Step(now, &Message{Kind: KindNeighbor, From: p})
	}
	if got := len(n.Active()); got != cfg.ActiveViewSize {
		t.Fatalf("active view %d after %d requests, want full", got, cfg.ActiveViewSize)
	}
	reply := func(out Output, to NodeID) (*Message, bool) {
		for _, s := range out.Sends {
			if s.To.ID == to && s.Msg.Kind == KindNeighborReply {
				return s.Msg, true
			}
		}
		return nil, false
	}
	low := Peer{ID: NodeID{20}, Addr: "low:1"}
	r, ok := reply(n.Step(now, &Message{Kind: KindNeighbor, From: low}), low.ID)
	if !ok || r.Flag || slices.ContainsFunc(n.Active(), func(p Peer) bool { return p.ID == low.ID }) ||
		!slices.ContainsFunc(n.Passive(), func(p Peer) bool { return p.ID == low.ID }) {
		t.Fatalf("low priority into a full view: reply %+v, active %v, passive %v", r, n.Active(), n.Passive())
	}
	high := Peer{ID: NodeID{21}, Addr: "high:1"}
	out := n.Step(now, &Message{Kind: KindNeighbor, From: high, Flag: true})
	r, ok = reply(out, high.ID)
	if !ok || !r.Flag || !slices.ContainsFunc(n.Active(), func(p Peer) bool { return p.ID == high.ID }) {
		t.Fatalf("high priority into a full view: reply %+v, active %v", r, n.Active())
	}
	if got := len(n.Active()); got != cfg.ActiveViewSize {
		t.Fatalf("active view %d after the eviction, want %d", got, cfg.ActiveViewSize)
	}
	var evicted *Peer
	for _, s := range out.Sends {
		if s.Msg.Kind == KindDisconnect {
			evicted = &s.To
		}
	}
	if evicted == nil || !slices.ContainsFunc(n.Passive(), func(p Peer) bool { return p.ID == evicted.ID }) {
		t.Fatalf("no DISCONNECT to an evicted neighbour kept as passive: sends %+v, passive %v", out.Sends, n.Passive())
	}
}

// The passive view never grows past its size, however many peers are
// offered to it.
func TestPassiveViewIsCapped(t *testing.T) {
	cfg := testCfg()
	n, err := NewNode(Peer{ID: NodeID{1}, Addr: "n:1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Start(testEpoch)
	for i := range 3 * cfg.PassiveViewSize {
		n.addPassive(Peer{ID: NodeID{30, byte(i)}, Addr: fmt.Sprintf("q%d:1", i)})
		if got := len(n.Passive()); got > cfg.PassiveViewSize {
			t.Fatalf("passive view %d after %d peers, cap %d", got, i+1, cfg.PassiveViewSize)
		}
	}
	if got := len(n.Passive()); got != cfg.PassiveViewSize {
		t.Fatalf("passive view %d, want full at %d", got, cfg.PassiveViewSize)
	}
}

// Anti-entropy runs periodically, not only on new links: a record one node
// holds and another missed (no broadcast reached it) is repaired within
// AntiEntropyInterval, with no link opening meanwhile.
func TestPeriodicAntiEntropyRepairsAMissedRecord(t *testing.T) {
	tn := cluster(t, 3)
	missed := Member{ID: NodeID{99}, Addr: "gone:1", Role: RoleMember, Status: Left, Incarnation: 3}
	holder := tn.nodes["a02:1"]
	holder.table.put(missed, tn.now) // as if its broadcast reached only a02
	if _, ok := tn.nodes["a0:1"].Member(missed.ID); ok {
		t.Fatal("a0 knows the record already")
	}
	tn.advance(DefaultConfig().AntiEntropyInterval + 2*time.Second)
	for _, a := range tn.order {
		if m, ok := tn.nodes[a].Member(missed.ID); !ok || m != missed {
			t.Fatalf("%s after an anti-entropy period: %v %v, want %v", a, m, ok, missed)
		}
	}
}

// MaxClientRecords is valid from 0 (a quarter of the table bound) to the
// table bound in effect; the error names the field and the range.
func TestConfigValidateMaxClientRecords(t *testing.T) {
	for _, tc := range []struct {
		table, clients, limit int // limit: clientLimit, 0 for invalid
	}{
		{0, 0, DefaultMaxTableSize / 4},
		{256, 0, 64},
		{3, 0, 1},
		{0, DefaultMaxTableSize, DefaultMaxTableSize},
		{256, 256, 256},
		{256, 1, 1},
		{256, 257, 0},
		{0, DefaultMaxTableSize + 1, 0},
		{256, -1, 0},
	} {
		c := DefaultConfig()
		c.MaxTableSize, c.MaxClientRecords = tc.table, tc.clients
		err := c.Validate()
		if tc.limit == 0 {
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxClientRecords") {
				t.Errorf("MaxTableSize %d, MaxClientRecords %d: %v, want ErrInvalidConfig naming MaxClientRecords", tc.table, tc.clients, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MaxTableSize %d, MaxClientRecords %d: %v", tc.table, tc.clients, err)
		}
		if got := c.clientLimit(); got != tc.limit {
			t.Errorf("MaxTableSize %d, MaxClientRecords %d: bound %d, want %d", tc.table, tc.clients, got, tc.limit)
		}
	}
}

// A node whose active view is short of ActiveViewSize, with nobody left to
// ask (the cluster is smaller), has nothing to promote once it has
// reconnected a lost neighbour: its next tick waits for a timer of the
// protocol, not the 1 ms floor at which it would poll for candidates. Once
// a member it could ask joins, it asks it.
func TestNoPromotionPollingWithoutCandidates(t *testing.T) {
	tn := cluster(t, 3)
	a0 := tn.nodes["a0:1"]
	tn.out("a0:1", a0.LinkDown(tn.now, "a01:1", LinkLost))
	tn.run()
	tn.advance(time.Second)
	for _, a := range tn.order {
		n := tn.nodes[a]
		if got := len(n.Active()); got != 2 {
			t.Fatalf("%s has %d neighbours, want 2", a, got)
		}
		out := n.Tick(tn.now)
		tn.out(a, out)
		if d := out.Next.Sub(tn.now); d <= time.Millisecond {
			t.Fatalf("%s: next tick in %v with no candidate to promote", a, d)
		}
	}
	tn.run()
	tn.add(addrOf(3), 4, "a0:1")
	tn.run()
	tn.advance(2 * time.Second)
	for _, a := range tn.order {
		if got := len(tn.nodes[a].Active()); got != 3 {
			t.Fatalf("%s has %d neighbours after a fourth member joined, want 3", a, got)
		}
	}
}

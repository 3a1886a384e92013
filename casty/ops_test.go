package casty_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// OpsTally is an actor whose state StateOf reads.
type OpsTally struct {
	Count int
	Tags  []string `msgpack:"tags"`
}

func (t *OpsTally) Add(_ context.Context, tag string) (int, error) {
	t.Count++
	t.Tags = append(t.Tags, tag)
	return t.Count, nil
}

var (
	OpsTallies     = casty.Actor[OpsTally](casty.Name("test.ops.Tally"))
	OpsTallyCopies = casty.Actor[OpsTally](casty.Name("test.ops.TallyCopies"), casty.Replicas(3), casty.Write(casty.Majority))
)

// The member table lists every member with its state and incarnation, a
// lite member flagged; the placement and ownership views agree with
// OwnerOf and cover the whole key space.
func TestOpsMembersPlacementOwnership(t *testing.T) {
	parallel(t)
	nodes := startReplicated(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{nodes[0].Addr()}, casty.WithConfig(replicationConfig()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeSys(t, lite)
	// MemberTableVia below may ask any full member: each must list it.
	waitFor(t, 10*time.Second, "the lite member in every member's table", func() bool {
		for _, n := range nodes {
			if len(n.MemberTable()) != 4 {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "the lite member sees 3 members", func() bool { return len(lite.Members()) == 3 })
	// The lite member learns the agreed placement after the members.
	waitFor(t, 10*time.Second, "the lite member to place replicated keys on 3 members", func() bool {
		p, _ := lite.Placement(OpsTallyCopies.Name(), "a", 0)
		return len(p.Replicas) == 3
	})

	lites := 0
	for _, m := range nodes[0].MemberTable() {
		if m.State != "alive" {
			t.Errorf("member %s: state %q, want alive", m.Addr, m.State)
		}
		if m.Lite {
			lites++
			if m.Addr != lite.Addr() {
				t.Errorf("lite member at %s, want %s", m.Addr, lite.Addr())
			}
		}
	}
	if lites != 1 {
		t.Errorf("%d lite members in the table, want 1", lites)
	}
	// The lite member asks a full member for its table.
	from, table, err := lite.MemberTableVia(ctx)
	if err != nil || !slices.ContainsFunc(nodes, func(n *casty.System) bool { return n.Addr() == from.Addr }) || len(table) != 4 {
		t.Errorf("MemberTableVia from the lite member: %v from %v, %v; want the four records from a full member", table, from, err)
	}

	for _, key := range []string{"a", "b", "c", "d"} {
		p, ok := lite.Placement(OpsTallies.Name(), key, 0)
		owner, _ := nodes[0].OwnerOf(OpsTallies.Name(), key)
		if !ok || p.Owner != owner || len(p.Replicas) != 1 {
			t.Errorf("Placement(%s) = %+v, want owner %v alone", key, p, owner)
		}
		p, _ = lite.Placement(OpsTallyCopies.Name(), key, 0) // declared here with Replicas(3)
		owner, _ = nodes[0].OwnerOf(OpsTallyCopies.Name(), key)
		if p.Owner != owner || len(p.Replicas) != 3 || p.Replicas[0] != owner || len(p.Down) != 0 {
			t.Errorf("replicated Placement(%s) = %+v, want owner %v first of 3", key, p, owner)
		}
	}

	rows := lite.Ownership(3)
	if len(rows) != 3 {
		t.Fatalf("Ownership has %d rows, want 3: %+v", len(rows), rows)
	}
	var share float64
	for _, r := range rows {
		share += r.Share
		if r.Ranges != 128 {
			t.Errorf("%s owns %d ranges, want 128 (one per virtual node)", r.Member.Addr, r.Ranges)
		}
		if r.Held != 3*128 {
			t.Errorf("%s holds %d ranges with 3 replicas on 3 members, want all %d", r.Member.Addr, r.Held, 3*128)
		}
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares sum to %v, want 1", share)
	}
}

// StateOf by kind name returns the live state as generic values, found
// on the owner, for declared and undeclared kinds alike, replicated or not.
func TestOpsStateOfByName(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := casty.Call(ctx, OpsTallies.Ref(nodes[0], "k"), (*OpsTally).Add, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := casty.Call(ctx, OpsTallyCopies.Ref(nodes[1], "k"), (*OpsTally).Add, "y"); err != nil {
		t.Fatal(err)
	}
	check := func(what string, v any, ok bool, err error, tag string) {
		t.Helper()
		m, _ := v.(map[string]any)
		if err != nil || !ok || m == nil || m["Count"] != int8(1) && m["Count"] != int64(1) && m["Count"] != uint8(1) {
			t.Fatalf("%s = %#v, %v, %v; want Count 1", what, v, ok, err)
		}
		if tags, _ := m["tags"].([]any); len(tags) != 1 || tags[0] != tag {
			t.Errorf("%s tags = %#v, want [%s]", what, m["tags"], tag)
		}
	}
	for _, s := range nodes {
		v, ok, err := s.StateOf(ctx, OpsTallies.Name(), "k")
		check("StateOf from "+s.Addr(), v, ok, err, "x")
		v, ok, err = casty.StateOfUndeclared(ctx, s, OpsTallies.Name(), "k")
		check("undeclared StateOf from "+s.Addr(), v, ok, err, "x")
		v, ok, err = casty.StateOfUndeclared(ctx, s, OpsTallyCopies.Name(), "k")
		check("undeclared replicated StateOf from "+s.Addr(), v, ok, err, "y")
	}
	if _, ok, err := casty.StateOfUndeclared(ctx, nodes[0], OpsTallies.Name(), "never"); ok || err != nil {
		t.Errorf("StateOf of an inactive actor: ok %v, err %v; want false, nil", ok, err)
	}
	local := casty.Local()
	defer local.Close(ctx)
	if _, _, err := local.StateOf(ctx, "test.ops.Nope", "k"); err == nil {
		t.Error("local StateOf of an undeclared kind succeeded")
	}
}

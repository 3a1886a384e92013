package core_test

import (
	"fmt"
	"time"

	"github.com/casty-go/casty/gossip/internal/core"
)

// Driving the pure state machine by hand: a node with no seeds starts a
// cluster; a second node joins through it. Every Output is carried out by
// the caller (here: delivered at once).
func ExampleNode() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := core.NewNode(core.Peer{ID: core.NodeID{1}, Addr: "a:1"}, nil)
	cfg := core.DefaultConfig()
	cfg.Seeds = []string{"a:1"}
	b, _ := core.NewNode(core.Peer{ID: core.NodeID{2}, Addr: "b:1"}, cfg)
	nodes := map[string]*core.Node{"a:1": a, "b:1": b}
	queue := append(a.Start(now).Sends, b.Start(now).Sends...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m, _ := core.DecodeMessage(core.EncodeMessage(s.Msg))
		out := nodes[s.To.Addr].Step(now, m)
		for _, ev := range out.Events {
			fmt.Println(s.To.Addr, "event:", ev.Kind, ev.Member.Addr)
		}
		queue = append(queue, out.Sends...)
	}
	fmt.Println("a knows", len(a.Members()), "members; b knows", len(b.Members()))
	// Output:
	// b:1 event: joined a:1
	// a:1 event: joined b:1
	// a knows 2 members; b knows 2
}

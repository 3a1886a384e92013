package replica_test

import (
	"fmt"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/replica"
)

// Three replicas in memory: an owner activates an actor, commits one
// change to a write quorum, and a second owner (another node's view)
// adopts it.
func Example() {
	ids := []replica.NodeID{{1}, {2}, {3}}
	nodes := map[replica.NodeID]*replica.Replica{}
	for _, id := range ids {
		nodes[id] = replica.NewReplica(nil)
	}
	run := func(s *replica.Session, out []replica.Out) {
		for len(out) > 0 {
			o := out[0]
			out = append(out[1:], s.Step(o.To, nodes[o.To].Handle(o.Msg, 0))...)
		}
	}
	clock := func(id replica.NodeID, ms int64) *hlc.Clock {
		c, _ := hlc.New(hlc.Config{Node: id, Physical: func() int64 { return ms }})
		return c
	}

	c1 := clock(ids[0], 1000)
	a := replica.NewSession("shop.Cart", "c-1", replica.Set{Self: ids[0], Members: ids, W: 2}, nodes[ids[0]], c1.Now())
	run(a, a.Open())
	fmt.Println("activated:", a.Results()[0].Err)
	run(a, a.Commit(pager.Delta{Stamp: pager.Stamp(c1.Now()), Pages: []pager.Page{{Key: "Items", Data: []byte{0x91, 0x01}}}}))
	fmt.Println("committed:", a.Results()[0].Err)

	c2 := clock(ids[1], 2000)
	b := replica.NewSession("shop.Cart", "c-1", replica.Set{Self: ids[1], Members: ids, W: 2}, nodes[ids[1]], c2.Now())
	run(b, b.Open())
	fmt.Println("second owner adopted the commit:", b.Results()[0].State.Stamp == a.State().Stamp)
	// Output:
	// activated: <nil>
	// committed: <nil>
	// second owner adopted the commit: true
}

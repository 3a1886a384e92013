// Consumer of github.com/casty-go/casty/ring alone: places keys on a member
// set and checks that every member agrees, with no other casty module in the
// build.
package main

import (
	"fmt"
	"os"

	"github.com/casty-go/casty/ring"
)

func main() {
	var members []ring.NodeID
	for _, s := range []string{
		"11111111-1111-4111-8111-111111111111",
		"22222222-2222-4222-8222-222222222222",
		"33333333-3333-4333-8333-333333333333",
	} {
		id, err := ring.ParseNodeID(s)
		if err != nil {
			fail(err)
		}
		members = append(members, id)
	}
	r, err := ring.New(members)
	if err != nil {
		fail(err)
	}
	// The same members in another order build the same ring.
	other, err := ring.New([]ring.NodeID{members[2], members[0], members[1]})
	if err != nil {
		fail(err)
	}
	owned := map[ring.NodeID]int{}
	for i := range 1000 {
		p := ring.Point("user", fmt.Sprint(i))
		a, _ := r.Owner(p)
		b, _ := other.Owner(p)
		if a != b {
			fail(fmt.Errorf("key %d: owners differ: %v vs %v", i, a, b))
		}
		owned[a]++
	}
	if len(owned) != len(members) {
		fail(fmt.Errorf("1000 keys landed on %d of %d members", len(owned), len(members)))
	}
	owner, _ := r.Owner(ring.Point("user", "42"))
	fmt.Println("ring consumer: user/42 ->", owner)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ring consumer:", err)
	os.Exit(1)
}

package ring_test

import (
	"fmt"

	"github.com/casty-go/casty/ring"
)

func ids(ss ...string) []ring.NodeID {
	out := make([]ring.NodeID, len(ss))
	for i, s := range ss {
		id, err := ring.ParseNodeID(s)
		if err != nil {
			panic(err)
		}
		out[i] = id
	}
	return out
}

// Resolve a key to its owner and replicas, as every node does locally.
func Example() {
	members := ids(
		"11111111-1111-4111-8111-111111111111",
		"22222222-2222-4222-8222-222222222222",
		"33333333-3333-4333-8333-333333333333",
	)
	r, err := ring.New(members)
	if err != nil {
		panic(err)
	}
	p := ring.Point("user", "42") // H("user/42")
	owner, _ := r.Owner(p)
	fmt.Println("point:", p)
	fmt.Println("owner:", owner)
	fmt.Println("replicas:", r.Replicas(p, 2))
	// Output:
	// point: 3702068913261514561
	// owner: 33333333-3333-4333-8333-333333333333
	// replicas: [33333333-3333-4333-8333-333333333333 11111111-1111-4111-8111-111111111111]
}

// Diff says which ranges move when a member joins: all of them to the joiner.
func ExampleDiff() {
	all := ids(
		"11111111-1111-4111-8111-111111111111",
		"22222222-2222-4222-8222-222222222222",
		"33333333-3333-4333-8333-333333333333",
	)
	before, _ := ring.New(all[:2])
	after, _ := ring.New(all)
	share := 0.0
	toJoiner := true
	for _, m := range ring.Diff(before, after) {
		share += m.Share()
		toJoiner = toJoiner && m.To == all[2]
	}
	fmt.Printf("all moves go to the joiner: %v, share moved: %.2f\n", toJoiner, share)
	// Output:
	// all moves go to the joiner: true, share moved: 0.35
}

// The order members are given in never matters.
func ExampleNew() {
	a, _ := ring.New(ids("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"))
	b, _ := ring.New(ids("22222222-2222-4222-8222-222222222222", "11111111-1111-4111-8111-111111111111",
		"22222222-2222-4222-8222-222222222222"))
	fmt.Println(a.Size(), b.Size(), len(ring.Diff(a, b)))
	// Output: 2 2 0
}

// A member's owned ranges, e.g. to plan a handoff.
func ExampleRing_OwnedRanges() {
	members := ids("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222")
	r, _ := ring.New(members)
	total := 0.0
	for _, rg := range r.OwnedRanges(members[0]) {
		total += rg.Share()
	}
	fmt.Printf("ranges: %d, share: %.3f\n", len(r.OwnedRanges(members[0])), total)
	// Replicating with n >= members covers the whole circle.
	fmt.Println(r.ReplicaRanges(members[0], 2))
	// Output:
	// ranges: 69, share: 0.501
	// [(0, 0]]
}

// Collection items pick a shard by hashing their encoded bytes.
func ExampleShard() {
	fmt.Println(ring.Shard([]byte("sku-1234"), 32))
	// Output: 11
}

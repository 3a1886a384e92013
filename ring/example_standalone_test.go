package ring_test

import (
	"fmt"

	"github.com/casty-go/casty/ring"
)

// Placing keys on a member set, as a program using only this module would:
// every process that builds the ring from the same members puts each key on
// the same member, and when a member leaves only its keys move.
func Example_placeKeys() {
	members := ids(
		"11111111-1111-4111-8111-111111111111",
		"22222222-2222-4222-8222-222222222222",
		"33333333-3333-4333-8333-333333333333",
	)
	full, _ := ring.New(members)
	smaller, _ := ring.New(members[:2]) // the third member left
	moved := 0
	for _, key := range []string{"alice", "bob", "carol", "dave", "erin", "frank"} {
		p := ring.Point("session", key)
		before, _ := full.Owner(p)
		after, _ := smaller.Owner(p)
		fmt.Printf("%-5s -> %s\n", key, before.String()[:8])
		if before != after {
			moved++
			if before != members[2] {
				fmt.Println("a key of a member that stayed moved")
			}
		}
	}
	fmt.Println("moved when the third member left:", moved)
	// Output:
	// alice -> 22222222
	// bob   -> 33333333
	// carol -> 11111111
	// dave  -> 11111111
	// erin  -> 11111111
	// frank -> 22222222
	// moved when the third member left: 1
}

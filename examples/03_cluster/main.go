// Cluster: three members in one process on 127.0.0.1, 30 keys called from
// rotating members, a tally of which member hosts each key (placement by
// the token ring every member computes locally), and a lite member that
// routes calls in one hop while owning nothing.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"github.com/casty-go/casty/casty"
)

// Counter counts its calls and says where it runs.
type Counter struct {
	Calls int
}

// Hit counts a call and reports the member hosting this activation.
func (c *Counter) Hit(ctx context.Context) (string, error) {
	c.Calls++
	return casty.Self(ctx).System().Addr(), nil
}

// Counters is declared once; every member knows it.
var Counters = casty.Actor[Counter](casty.Name("example.Counter"))

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := casty.WithLogger(slog.New(slog.DiscardHandler))

	first, err := casty.Start(ctx, "127.0.0.1:0", quiet)
	if err != nil {
		log.Fatal(err)
	}
	members := []*casty.System{first}
	for range 2 {
		m, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(first.Addr()), quiet)
		if err != nil {
			log.Fatal(err)
		}
		members = append(members, m)
	}
	defer func() {
		for _, m := range slices.Backward(members) {
			m.Close(context.Background())
		}
	}()
	for _, m := range members {
		if err := m.WaitMembers(ctx, 3); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("3 members, each sees", len(first.Members()), "on its ring")

	// 30 keys, each called from a rotating member: the call goes straight to
	// the key's owner, whoever sends it.
	index := map[string]int{}
	for i, m := range members {
		index[m.Addr()] = i + 1
	}
	tally := map[int]int{}
	consistent := true
	for k := range 30 {
		key := fmt.Sprintf("key-%02d", k)
		var hosts []string
		for _, from := range members {
			host, err := casty.Call0(ctx, Counters.Ref(from, key), (*Counter).Hit)
			if err != nil {
				log.Fatal(err)
			}
			hosts = append(hosts, host)
		}
		consistent = consistent && hosts[0] == hosts[1] && hosts[1] == hosts[2]
		tally[index[hosts[0]]]++
	}
	fmt.Println("every key answered by one owner, whichever member called:", consistent)
	for i := 1; i <= 3; i++ {
		fmt.Printf("member %d hosts %d of 30 keys\n", i, tally[i])
	}

	// A lite member joins the membership and routes in one hop, but owns
	// nothing and is never placed on the ring.
	lite, err := casty.Connect(ctx, []string{first.Addr()}, quiet)
	if err != nil {
		log.Fatal(err)
	}
	defer lite.Close(context.Background())
	if err := lite.WaitMembers(ctx, 3); err != nil {
		log.Fatal(err)
	}
	same := true
	for k := range 30 {
		key := fmt.Sprintf("key-%02d", k)
		host, err := casty.Call0(ctx, Counters.Ref(lite, key), (*Counter).Hit)
		if err != nil {
			log.Fatal(err)
		}
		owner, _ := lite.OwnerOf(Counters.Name(), key)
		same = same && host == owner.Addr
	}
	fmt.Println("lite member routed 30 calls to their owners:", same)
	fmt.Println("lite member hosts", lite.Active(), "activations and is on the ring:", onRing(first, lite.Addr()))
}

func onRing(s *casty.System, addr string) bool {
	for _, m := range s.Members() {
		if m.Addr == addr {
			return true
		}
	}
	return false
}

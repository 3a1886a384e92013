// Processes: a cluster the way it is deployed — each member its own
// process, and a client process that joins as a lite member, calls actors
// on their owners and exits. One binary plays either role, chosen by
// -role.
//
// Build it, then start three members and a client, each in its own
// terminal or in the background (Linux also routes 127.0.0.2 and up to
// the loopback, if you want one address per member):
//
//	go build -o /tmp/casty-procs ./examples/13_processes
//	/tmp/casty-procs -role member -listen 127.0.0.1:7101 &
//	/tmp/casty-procs -role member -listen 127.0.0.1:7102 -seeds 127.0.0.1:7101 &
//	/tmp/casty-procs -role member -listen 127.0.0.1:7103 -seeds 127.0.0.1:7101 &
//	/tmp/casty-procs -role client -seeds 127.0.0.1:7101,127.0.0.1:7102 -members 3
//	kill %1 %2 %3 # each member leaves gracefully on SIGTERM or Ctrl-C
//
// A member prints "member ready at ADDR" once it is in the cluster (with
// -listen 127.0.0.1:0 it picks a free port and ADDR says which);
// go test ./examples runs exactly this with real processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/casty-go/casty/casty"
)

// Counter counts its calls and says which member hosts it.
type Counter struct {
	Calls int
}

// Hit counts a call and returns the address of the member it runs on.
func (c *Counter) Hit(ctx context.Context) (string, error) {
	c.Calls++
	return casty.Self(ctx).System().Addr(), nil
}

// Counters is declared in the one binary both roles run, so every member
// and the client agree on it.
var Counters = casty.Actor[Counter](casty.Name("example.ProcCounter"))

func main() {
	role := flag.String("role", "member", "member or client")
	listen := flag.String("listen", "127.0.0.1:7101", "member: the address to listen on (port 0: any free port)")
	seeds := flag.String("seeds", "", "comma-separated addresses of running members (none: start a new cluster)")
	members := flag.Int("members", 3, "client: how many members to wait for")
	flag.Parse()
	var seedList []string
	if *seeds != "" {
		seedList = strings.Split(*seeds, ",")
	}
	// Warnings and errors only: members coming and going are routine.
	logger := casty.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	switch *role {
	case "member":
		member(*listen, seedList, logger)
	case "client":
		client(seedList, *members, logger)
	default:
		log.Fatalf("-role %q: want member or client", *role)
	}
}

// member runs until SIGINT or SIGTERM, then leaves the cluster gracefully.
func member(listen string, seeds []string, logger casty.Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sys, err := casty.Start(start, listen, casty.Seeds(seeds...), logger)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("member ready at", sys.Addr())
	<-ctx.Done()
	closing, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sys.Close(closing); err != nil {
		log.Fatal(err)
	}
	fmt.Println("member left:", sys.Addr())
}

// client joins as a lite member, waits for the members, calls 30 actors
// and reports who answered.
func client(seeds []string, members int, logger casty.Option) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sys, err := casty.Connect(ctx, seeds, logger)
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close(context.Background())
	if err := sys.WaitMembers(ctx, members); err != nil {
		log.Fatal(err)
	}
	fmt.Println("client sees", len(sys.Members()), "members")

	hosts := map[string]int{}
	byOwner := true
	for k := range 30 {
		key := fmt.Sprintf("key-%02d", k)
		host, err := casty.Call0(ctx, Counters.Ref(sys, key), (*Counter).Hit)
		if err != nil {
			log.Fatal(err)
		}
		owner, _ := sys.OwnerOf(Counters.Name(), key)
		byOwner = byOwner && host == owner.Addr
		hosts[host]++
	}
	fmt.Println("30 keys, each answered by its owner's process:", byOwner)
	for _, m := range sys.Members() {
		fmt.Printf("  %s hosts %d of them\n", m.Addr, hosts[m.Addr])
	}
	fmt.Println("the client hosts", sys.Active(), "activations")
}

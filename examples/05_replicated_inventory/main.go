// Replicated inventory: a warehouse's stock in a replicated actor and its
// price list in a distributed map, on three member processes, through what
// production does to them: a deploy replaces one member, then a machine
// dies under another. The Warehouse actor is declared Replicas(3),
// Write(Majority); collections.NewMap keeps each shard of the prices the
// same way by default. Every unit and every price survives, read through a
// lite member, and the next write works.
//
// One binary plays every role. Run with no flags it is the demo: it starts
// the members by running itself with -role member, and stops them at the
// end. It takes about 12 s, 10 of them the last member's leave (step 6).
//
//	go run ./examples/05_replicated_inventory
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/collections"
)

// Warehouse holds the units on hand by SKU. A TrackedMap replicates one
// page per SKU a handler touched, not the whole map.
type Warehouse struct {
	Stock casty.TrackedMap[string, int]
}

// Lot is a quantity of one SKU, received or shipped.
type Lot struct {
	SKU string
	Qty int
}

var _ = casty.Message[Lot](casty.Name("example.Lot"))

// Receive adds a lot to the stock and returns the SKU's new stock.
func (w *Warehouse) Receive(ctx context.Context, l Lot) (int, error) {
	n, _ := w.Stock.Get(l.SKU)
	w.Stock.Set(l.SKU, n+l.Qty)
	return n + l.Qty, nil
}

// Ship takes a lot out of stock and returns what is left. Asking for more
// than there is gets an answer, not a failure: the state stands.
func (w *Warehouse) Ship(ctx context.Context, l Lot) (int, error) {
	n, _ := w.Stock.Get(l.SKU)
	if l.Qty > n {
		return n, casty.Answer(fmt.Errorf("%s: %d on hand, %d asked", l.SKU, n, l.Qty))
	}
	w.Stock.Set(l.SKU, n-l.Qty)
	return n - l.Qty, nil
}

// Count returns the units of a SKU on hand.
func (w *Warehouse) Count(ctx context.Context, sku string) (int, error) {
	n, _ := w.Stock.Get(sku)
	return n, nil
}

// Warehouses keep their state on 3 members, and a write is acknowledged
// once 2 of them hold it: any one copy may be lost.
var Warehouses = casty.Actor[Warehouse](casty.Name("example.Warehouse"),
	casty.Replicas(3), casty.Write(casty.Majority))

func main() {
	role := flag.String("role", "demo", "demo (starts its own members) or member")
	seeds := flag.String("seeds", "", "member: comma-separated addresses of running members")
	members := flag.Int("members", 1, "member: how many members to wait for before it is ready")
	flag.Parse()
	// Errors only: members leaving and dying is the point of the demo.
	logger := casty.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	switch *role {
	case "member":
		member(strings.FieldsFunc(*seeds, func(r rune) bool { return r == ',' }), *members, logger)
	case "demo":
		demo(logger)
	default:
		log.Fatalf("-role %q: want demo or member", *role)
	}
}

// member serves until SIGTERM, then leaves gracefully. Its program imports
// collections (this binary does), so it serves the map's shards too.
func member(seeds []string, n int, logger casty.Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sys, err := casty.Start(start, "127.0.0.1:0", casty.Seeds(seeds...), logger)
	if err != nil {
		log.Fatal(err)
	}
	// Ready means settled: n members placed and this member's copies synced.
	if err := sys.WaitMembers(start, n); err != nil {
		log.Fatal(err)
	}
	fmt.Println("member ready at", sys.Addr())
	<-ctx.Done()
	closing, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := sys.Close(closing); err != nil {
		log.Fatal(err)
	}
	fmt.Println("member left:", sys.Addr())
}

func demo(logger casty.Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// 1. Three member processes: the first founds the cluster, the other
	// two join through it. The demo joins as a lite member: it routes calls
	// and owns nothing.
	first := spawn(1)
	first.awaitReady(ctx)
	second, third := spawn(3, first.addr), spawn(3, first.addr)
	second.awaitReady(ctx)
	third.awaitReady(ctx)
	lite, err := casty.Connect(ctx, []string{first.addr}, logger)
	check(err)
	check(lite.WaitMembers(ctx, 3))
	fmt.Println("3 member processes; the demo joined as a lite member")

	// 2. Writes: stock received through the inventory actor, prices put in
	// the map. Each is acknowledged once 2 of its 3 copies hold it.
	const skus = 20
	store := Warehouses.Ref(lite, "warehouse-1")
	prices, err := collections.NewMap[string, float64](lite, "prices")
	check(err)
	units, value := 0, 0.0
	for i := range skus {
		sku, qty, price := fmt.Sprintf("sku-%02d", i), 10+i, 2.5+float64(i)
		_, err := casty.Call(ctx, store, (*Warehouse).Receive, Lot{sku, qty})
		check(err)
		check(prices.Put(ctx, sku, price))
		units, value = units+qty, value+float64(qty)*price
	}
	fmt.Printf("received %d units of %d SKUs, worth %.2f at list price\n", units, skus, value)

	// 3. A deploy: the first member is stopped as a deployment stops it
	// (SIGTERM). It drains, hands its copies off and exits; a new process
	// takes its place. The replacement must be in before anything else
	// fails: after the close the placement has two members, so each key has
	// two copies, and killing one of them would leave one, below the read
	// quorum of 2 (a majority of 3): their keys would be unavailable until
	// the dead member came back or an operator accepted its loss.
	check(first.stop(syscall.SIGTERM))
	next := spawn(3, second.addr, third.addr) // ready once it synced its copies
	next.awaitReady(ctx)
	for !routesTo(lite, second.addr, third.addr, next.addr) { // gossip may lag
		select {
		case <-ctx.Done():
			fatal("the lite member does not route to the new member:", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	fmt.Println("deploy: a member left gracefully, its replacement joined; the lite member routes to 3")

	// 4. A machine dies, the warehouse's owner: no drain, no handoff, no
	// goodbye.
	owner, _ := lite.OwnerOf(Warehouses.Name(), "warehouse-1")
	victim := slices.IndexFunc(children, func(c *child) bool { return c.addr == owner.Addr })
	if victim < 0 || children[victim].cmd.ProcessState != nil {
		fatal("warehouse-1 has no live owner:", owner)
	}
	children[victim].stop(syscall.SIGKILL)
	fmt.Println("machine failure: the warehouse's owner was killed:", owner.Addr)

	// 5. Reads through the lite member. The warehouse and the price shards
	// the dead member owned activate on a survivor, from the copies left.
	// A read is safe to repeat, so it is retried while its member is
	// unavailable: a call sent as the member died fails, and the next goes
	// to a survivor once the death is noticed.
	stockOK, pricesOK := true, 0
	for i := range skus {
		sku := fmt.Sprintf("sku-%02d", i)
		var n int
		var p float64
		var ok bool
		retry(ctx, func() (err error) { n, err = casty.Call(ctx, store, (*Warehouse).Count, sku); return })
		retry(ctx, func() (err error) { p, ok, err = prices.Get(ctx, sku); return })
		stockOK = stockOK && n == 10+i
		if ok && p == 2.5+float64(i) {
			pricesOK++
		}
	}
	fmt.Printf("after a graceful close and a kill: stock intact: %v, %d of %d prices intact: %v\n",
		stockOK, pricesOK, skus, pricesOK == skus)
	left, err := casty.Call(ctx, store, (*Warehouse).Ship, Lot{"sku-00", 1})
	check(err)
	fmt.Println("shipped 1 of sku-00: stock", left)

	// 6. Cleanup: the lite member leaves, and the members still running are
	// stopped gracefully and waited for. The last of them finds no majority
	// to agree its leave with (the killed member keeps its place in the
	// placement until Config.Replication.RemoveDeadAfter, 30 s), so it exits after
	// Config.Actors.DrainTimeout, 10 s.
	fmt.Println("stopping the members; the last one waits 10 s for a majority to agree its leave")
	lite.Close(ctx)
	for _, c := range children {
		check(c.stop(syscall.SIGTERM))
	}
}

// routesTo reports whether the lite member routes to exactly addrs.
func routesTo(lite *casty.System, addrs ...string) bool {
	var have []string
	for _, m := range lite.Members() {
		have = append(have, m.Addr)
	}
	slices.Sort(have)
	slices.Sort(addrs)
	return slices.Equal(have, addrs)
}

// child is a member process the demo started.
type child struct {
	cmd   *exec.Cmd
	addr  string
	ready chan string   // the address it printed once ready
	done  chan struct{} // its stdout ended: it exited
}

// children are the member processes started; fatal and the cleanup stop
// them, so none outlives the demo.
var children []*child

// spawn runs this binary as a member that joins through seeds and is ready
// once it sees members members. Its output is shown, indented.
func spawn(members int, seeds ...string) *child {
	self, err := os.Executable()
	check(err)
	c := &child{ready: make(chan string, 1), done: make(chan struct{})}
	c.cmd = exec.Command(self, "-role", "member", "-members", strconv.Itoa(members), "-seeds", strings.Join(seeds, ","))
	c.cmd.Stderr = os.Stderr
	out, err := c.cmd.StdoutPipe()
	check(err)
	check(c.cmd.Start())
	children = append(children, c)
	go func() {
		defer close(c.done)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			fmt.Println("  |", sc.Text())
			if addr, ok := strings.CutPrefix(sc.Text(), "member ready at "); ok {
				c.ready <- addr
			}
		}
	}()
	return c
}

// awaitReady waits for the member to say it is ready, and at which address.
func (c *child) awaitReady(ctx context.Context) {
	select {
	case c.addr = <-c.ready:
	case <-c.done:
		fatal("a member exited before it was ready")
	case <-ctx.Done():
		fatal("waiting for a member:", ctx.Err())
	}
}

// stop sends sig to the member, unless it was waited for already, and
// waits until it exited.
func (c *child) stop(sig syscall.Signal) error {
	if c.cmd.ProcessState != nil {
		return nil
	}
	_ = c.cmd.Process.Signal(sig) // fails only if it exited on its own
	<-c.done
	return c.cmd.Wait()
}

// retry runs read until it succeeds, again after a pause while the member
// serving it is unavailable, and ends the demo on any other error.
func retry(ctx context.Context, read func() error) {
	for {
		err := read()
		if err == nil {
			return
		}
		if !errors.Is(err, casty.ErrActorUnavailable) || ctx.Err() != nil {
			fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check ends the demo on an error, as fatal does.
func check(err error) {
	if err != nil {
		fatal(err)
	}
}

// fatal is log.Fatal that first kills every member process still running.
func fatal(v ...any) {
	for _, c := range children {
		c.stop(syscall.SIGKILL)
	}
	log.Fatalln(v...)
}

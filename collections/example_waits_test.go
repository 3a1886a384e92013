package collections_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/collections"
)

func ExampleQueue() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	jobs, err := collections.NewQueue[string](sys, "jobs")
	if err != nil {
		panic(err)
	}
	// A taker parks on the server until an element comes.
	took := make(chan string)
	go func() {
		job, err := jobs.Take(ctx)
		if err != nil {
			panic(err)
		}
		took <- job
	}()
	_ = jobs.Offer(ctx, "resize photo 1")
	fmt.Println("taken:", <-took)

	_ = jobs.Offer(ctx, "resize photo 2")
	_ = jobs.Offer(ctx, "resize photo 3")
	n, _ := jobs.Size(ctx)
	first, _, _ := jobs.Peek(ctx)
	fmt.Println(n, "queued, first:", first)
	rest, _ := jobs.Drain(ctx, 10)
	fmt.Println("drained:", rest)
	_, ok, _ := jobs.Poll(ctx)
	fmt.Println("anything left:", ok)
	// Output:
	// taken: resize photo 1
	// 2 queued, first: resize photo 2
	// drained: [resize photo 2 resize photo 3]
	// anything left: false
}

func ExampleSemaphore() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	slots, err := collections.NewSemaphore(sys, "gpu-slots", 2, collections.TTL(time.Minute))
	if err != nil {
		panic(err)
	}
	a, _ := slots.Acquire(ctx)
	b, _, _ := slots.TryAcquire(ctx)
	_, ok, _ := slots.TryAcquire(ctx)
	free, _ := slots.Available(ctx)
	fmt.Println("third permit:", ok, "free:", free)
	fmt.Println("tokens increase:", a.Token() < b.Token())

	// Acquire waits on the server until a permit is released.
	got := make(chan *collections.Lease)
	go func() {
		l, err := slots.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		got <- l
	}()
	_ = a.Release(ctx)
	c := <-got
	fmt.Println("the waiter's token is the newest:", c.Token() > b.Token())
	_ = b.Release(ctx)
	_ = c.Release(ctx)
	fmt.Println("released twice:", c.Release(ctx) != nil)
	// Output:
	// third permit: false free: 0
	// tokens increase: true
	// the waiter's token is the newest: true
	// released twice: true
}

func ExampleLock_Do() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	lock, err := collections.NewLock(sys, "ledger")
	if err != nil {
		panic(err)
	}
	// Do takes the lock, renews it while the function runs, and releases
	// it after; the token fences the protected resource.
	err = lock.Do(ctx, func(ctx context.Context, token uint64) error {
		fmt.Println("writing the ledger with token", token)
		return nil
	})
	fmt.Println(err)
	err = lock.Do(ctx, func(ctx context.Context, token uint64) error {
		fmt.Println("writing the ledger with token", token)
		return nil
	})
	fmt.Println(err)
	// Output:
	// writing the ledger with token 1
	// <nil>
	// writing the ledger with token 2
	// <nil>
}

func ExampleBarrier() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	start, err := collections.NewBarrier(sys, "start-line", 3)
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for range start.Parties() {
		wg.Go(func() {
			if err := start.Wait(ctx); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait() // every Wait returned: the round tripped once all 3 arrived
	n, _ := start.Waiting(ctx)
	fmt.Println("tripped; waiting now:", n)
	// Output:
	// tripped; waiting now: 0
}

package queue

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Pushes made while nobody reads are all delivered later, in order.
func TestPumpDeliversInOrderToASlowReader(t *testing.T) {
	p := New[int]()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); p.Run(stop) }()
	for i := range 1000 {
		p.Push(i) // must not block: nobody reads yet
	}
	p.Push(1000, 1001)
	for want := range 1002 {
		if got := <-p.Out(); got != want {
			t.Fatalf("got %d, want %d", got, want)
		}
	}
	close(stop)
	<-done
	if _, ok := <-p.Out(); ok {
		t.Fatal("Out is still open after Run returned")
	}
}

// After Run returns, Out is closed and Push keeps nothing.
func TestPumpDropsAfterStop(t *testing.T) {
	p := New[int]()
	stop := make(chan struct{})
	close(stop)
	p.Push(1)
	p.Run(stop)
	if _, ok := <-p.Out(); ok {
		t.Fatal("Out delivered after stop")
	}
	p.Push(2, 3)
	p.mu.Lock()
	n := len(p.q)
	p.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d values kept after Run returned", n)
	}
}

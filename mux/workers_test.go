package mux

import (
	"sync"
	"testing"
	"time"
)

// Workers stay in the pool after their job; the next job goes to the one
// that went idle last; retire stops the longest-idle ones; close stops the
// rest and refuses new jobs.
func TestWorkerPoolReusesRetiresAndCloses(t *testing.T) {
	n := newNode(t, testConfig(1))
	const burst = 4
	var started, release sync.WaitGroup
	started.Add(burst)
	release.Add(1)
	for range burst {
		if !n.goWorker(taskFunc(func() { started.Done(); release.Wait() })) {
			t.Fatal("goWorker refused on an open node")
		}
	}
	started.Wait()
	release.Done()
	waitFor(t, 5*time.Second, "the burst's workers to go idle", func() bool { return n.workers.idleCount() == burst })

	// LIFO: the worker on top of the idle stack takes the next job.
	n.workers.mu.Lock()
	top := n.workers.idle[burst-1]
	oldest := n.workers.idle[0]
	n.workers.mu.Unlock()
	done := make(chan struct{})
	n.goWorker(taskFunc(func() { close(done) }))
	<-done
	waitFor(t, 5*time.Second, "the worker to return", func() bool { return n.workers.idleCount() == burst })
	n.workers.mu.Lock()
	if n.workers.idle[burst-1] != top {
		t.Error("the job did not go to the most recently idle worker")
	}
	n.workers.mu.Unlock()

	n.workers.retire(1)
	n.workers.mu.Lock()
	for _, w := range n.workers.idle {
		if w == oldest {
			t.Error("retire kept the longest-idle worker")
		}
	}
	n.workers.mu.Unlock()
	if got := n.workers.idleCount(); got != burst-1 {
		t.Fatalf("%d idle after retiring one, want %d", got, burst-1)
	}

	n.Close() // waits for every worker goroutine (goleak checks the rest)
	if n.goWorker(taskFunc(func() { t.Error("a job ran after Close") })) {
		t.Fatal("goWorker accepted a job after Close")
	}
	if got := n.workers.idleCount(); got != 0 {
		t.Fatalf("%d idle workers after Close", got)
	}
}

package mux

import (
	"sync"
	"time"
)

// workerIdle is the janitor's period: each period it retires half of the
// workers that are idle at that moment.
const workerIdle = 2 * time.Second

// workerPool keeps the goroutines that ran request handlers, so the next
// request runs on a goroutine whose stack has already grown: a fresh
// goroutine per request would start on a small stack and regrow it on
// every request (reflection-heavy handlers copy their stack each time).
// The package doc's Goroutines section says why actor's mailboxes keep no
// such pool.
//
// Idle workers form a stack: a job goes to the one that went idle last,
// whose stack and caches are the warmest, and the janitor retires from
// the bottom. Each worker waits on a channel of its own, so handing it a
// job is one send to a parked receiver, with no select.
type workerPool struct {
	mu      sync.Mutex
	idle    []*worker
	closed  bool
	janitor bool // started
}

type worker struct {
	job chan task // capacity 1; nil retires the worker
}

// task is a unit of work for a worker: a request being served (inbound)
// or a function (taskFunc).
type task interface{ run() }

// taskFunc is a function as a task.
type taskFunc func()

func (f taskFunc) run() { f() }

// goWorker runs f on an idle worker goroutine if one is waiting, or on a
// new one that then stays in the pool. It reports false, and does not run
// f, once the node is closed.
func (n *Node) goWorker(f task) bool {
	p := &n.workers
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if k := len(p.idle); k > 0 {
		w := p.idle[k-1]
		p.idle[k-1] = nil
		p.idle = p.idle[:k-1]
		p.mu.Unlock()
		w.job <- f
		return true
	}
	startJanitor := !p.janitor
	p.janitor = true
	p.mu.Unlock()
	if startJanitor {
		n.goTracked(n.janitor)
	}
	return n.goTracked(func() {
		f.run()
		n.idleWorker(&worker{job: make(chan task, 1)})
	})
}

// idleWorker serves jobs until it is handed nil (retired by the janitor
// or the node's close).
func (n *Node) idleWorker(w *worker) {
	p := &n.workers
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		f := <-w.job
		if f == nil {
			return
		}
		f.run()
	}
}

// retire takes up to k of the longest-idle workers off the pool and
// stops them.
func (p *workerPool) retire(k int) {
	p.mu.Lock()
	k = min(k, len(p.idle))
	gone := p.idle[:k:k]
	p.idle = append(p.idle[:0:0], p.idle[k:]...)
	p.mu.Unlock()
	for _, w := range gone {
		w.job <- nil
	}
}

// close stops every idle worker; busy ones stop when their job returns.
func (p *workerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.retire(1 << 30)
}

func (p *workerPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// janitor retires half of the idle workers every workerIdle, so a burst's
// workers are gone within a few periods of it.
func (n *Node) janitor() {
	t := time.NewTicker(workerIdle)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
			n.workers.retire((n.workers.idleCount() + 1) / 2)
		}
	}
}

package actor

import "sync"

// drainers keeps the goroutines that ran mailboxes, so the next mailbox
// runs on a goroutine whose stack has already grown: a fresh goroutine per
// drain starts on a small stack and copies it to grow on every call's
// reply path (a fifth of a local call's CPU under load).
//
// Idle drainers form a stack: a mailbox goes to the one that went idle
// last, whose stack and caches are the warmest. Each waits on a channel of
// its own, so handing it work is one send to a parked receiver. The
// janitor retires half of the idle ones each sweep; Close retires them all.
type drainers struct {
	mu     sync.Mutex
	idle   []*drainer
	closed bool
}

type drainer struct {
	next chan *Activation // capacity 1; nil retires the drainer
}

// start runs a's mailbox (a is marked running) on an idle drainer, or on a
// new goroutine that then stays in the pool.
func (h *Host) start(a *Activation) {
	p := &h.drainers
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		d := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		d.next <- a
		return
	}
	p.mu.Unlock()
	go h.drainLoop(a)
}

// drainLoop runs mailboxes until it is retired, or finds the pool closed.
func (h *Host) drainLoop(a *Activation) {
	p := &h.drainers
	var d *drainer
	for a != nil {
		a.run()
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		if d == nil {
			d = &drainer{next: make(chan *Activation, 1)}
		}
		p.idle = append(p.idle, d)
		p.mu.Unlock()
		a = <-d.next
	}
}

// retire stops up to k of the longest-idle drainers.
func (p *drainers) retire(k int) {
	p.mu.Lock()
	k = min(k, len(p.idle))
	gone := p.idle[:k:k]
	p.idle = append(p.idle[:0:0], p.idle[k:]...)
	p.mu.Unlock()
	for _, d := range gone {
		d.next <- nil
	}
}

// idleCount returns how many drainers wait for work.
func (p *drainers) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// close retires every idle drainer; busy ones end when their mailbox does.
func (p *drainers) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.retire(1 << 30)
}

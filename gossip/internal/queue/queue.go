// Package queue holds Pump, an unbounded in-order queue that one goroutine
// drains into a channel. gossip hands transport frames and member events
// to readers through it: a writer never blocks on a slow reader, and
// nothing is dropped while the reader is there.
package queue

import "sync"

// Pump queues values in order and delivers them on Out while Run runs.
// Push never blocks. The zero value is not usable: make one with New.
type Pump[T any] struct {
	mu   sync.Mutex
	q    []T
	shut bool
	wake chan struct{}
	out  chan T
}

// New returns a Pump whose Out delivers nothing until Run is called.
func New[T any]() *Pump[T] {
	return &Pump[T]{wake: make(chan struct{}, 1), out: make(chan T)}
}

// Out is the channel values arrive on, in the order pushed; Run closes it
// when it returns.
func (p *Pump[T]) Out() <-chan T { return p.out }

// Push queues vs behind every value pushed before. Once Run has returned,
// Push drops them: nobody will read them.
func (p *Pump[T]) Push(vs ...T) {
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		return
	}
	p.q = append(p.q, vs...)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run delivers queued values on Out until stop is closed; then it drops
// what is still queued, closes Out and returns. Call it once, on a
// goroutine of its own.
func (p *Pump[T]) Run(stop <-chan struct{}) {
	defer func() {
		p.mu.Lock()
		p.shut, p.q = true, nil
		p.mu.Unlock()
		close(p.out)
	}()
	for {
		p.mu.Lock()
		var v T
		has := len(p.q) > 0
		if has {
			v = p.q[0]
			var zero T
			p.q[0] = zero // let the value be collected once read
			p.q = p.q[1:]
			if len(p.q) == 0 {
				p.q = nil
			}
		}
		p.mu.Unlock()
		if !has {
			select {
			case <-p.wake:
				continue
			case <-stop:
				return
			}
		}
		select {
		case p.out <- v:
		case <-stop:
			return
		}
	}
}

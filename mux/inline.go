package mux

import (
	"context"
	"sync/atomic"
	"time"
)

// A reader whose read ends with requests and nothing else buffered runs
// those requests itself, one after another, and then goes back to
// reading: no goroutine hand-off on their path, no wake-up of another
// goroutine just to find the socket empty, and their answers leave in one
// write. While it runs them nobody reads the connection, so it hands the
// reading on (to a worker, with the batch's remaining requests) as soon as
// a handler is about to wait (HandOff; Session.request calls it), and the
// node's watchdog does when a reader has run the same request for between
// one and two inlineGrace periods.
const inlineGrace = time.Millisecond

// Reader states, the low bits of readerWatch.word (the rest counts the
// requests run inline, so a replaced reader cannot mistake its successor's
// inline request for its own).
const (
	readerReading  uint64 = iota // reading, or dispatching what it read
	readerInline                 // running a request itself
	readerReplaced               // the watchdog gave the reading to another goroutine
	readerLent                   // a waiting handler reads in its place (WaitReading)
	stateBits      = 2
	stateMask      = 1<<stateBits - 1
)

// readerWatch is what the inline watchdog shares with a reader.
type readerWatch struct {
	word  atomic.Uint64 // epoch<<stateBits | state
	epoch uint64        // requests run inline so far (the reader only)
	seen  uint64        // the word the watchdog saw last (the watchdog only)
}

// HandOff is for request handlers about to wait (on an actor's mailbox, a
// lock, another node): if the handler whose context is ctx runs on its
// connection's reader, the reading moves to another goroutine now instead
// of after the watchdog's grace, and the rest of its batch to workers.
// Otherwise it does nothing. Request calls it itself.
func HandOff(ctx context.Context) {
	if ctx == nil {
		return
	}
	if rc, ok := ctx.Value(inlineKey{}).(*reqCtx); ok && rc.inline.takeOver(rc.word, false) {
		rc.inline.node.takeovers[takeoverWaiting].Add(1)
	}
}

// runBatch runs the reader's jobs on the reading goroutine, each answer
// but the last held back so they leave together, and reports whether
// this goroutine is still the reader afterwards.
func (s *Session) runBatch() bool {
	rd := s.rd
	rd.bmu.Lock()
	rd.batch, rd.jobs = rd.jobs, rd.batch[:0]
	rd.next = 0
	rd.bmu.Unlock()
	reader := true
	for reader {
		job, more := rd.take()
		if job == nil {
			break
		}
		reader = s.runInline(job, more)
	}
	if !reader {
		s.w.flush()
		return false
	}
	// The held answers are written as an inline job's are: a write that
	// waits for a socket the peer does not empty is the watchdog's to
	// take the reading from, as a handler that waits is.
	return s.runInline(taskFunc(s.w.flush), false)
}

// take returns the batch's next job, and whether more follow.
func (rd *reader) take() (task, bool) {
	rd.bmu.Lock()
	defer rd.bmu.Unlock()
	if rd.next >= len(rd.batch) {
		clear(rd.batch)
		rd.batch = rd.batch[:0]
		return nil, false
	}
	job := rd.batch[rd.next]
	rd.batch[rd.next] = nil
	rd.next++
	return job, rd.next < len(rd.batch)
}

// runInline runs job on the reading goroutine (its answer held when more
// of the batch follows) and reports whether that goroutine is still the
// reader afterwards.
func (s *Session) runInline(job task, held bool) bool {
	rd, n := s.rd, s.node
	rd.watch.epoch++
	mine := rd.watch.epoch<<stateBits | readerInline
	if in, ok := job.(*inbound); ok {
		in.held = held
		in.ctx.inline, in.ctx.word = s, mine
	}
	rd.watch.word.Store(mine)
	n.inline.Add(1)
	n.watchReaders()
	job.run()
	n.inline.Add(-1)
	lent := mine&^stateMask | readerLent
	for !rd.watch.word.CompareAndSwap(mine, mine&^stateMask|readerReading) {
		switch rd.watch.word.Load() {
		case mine: // a lending just ended: try again
		case lent:
			// Its request ended (its caller gave up) while a goroutine that
			// took the request's work on (an actor's mailbox) reads in its
			// place, which ends within lendLimit.
			yield()
		default:
			return false // replaced: its successor may be on later requests already
		}
	}
	return true
}

// handRest hands the rest of the reader's batch to workers, with nothing
// held.
func (s *Session) handRest() {
	rd, n := s.rd, s.node
	rd.bmu.Lock()
	if rd.next >= len(rd.batch) {
		rd.bmu.Unlock()
		return
	}
	rest := append([]task(nil), rd.batch[rd.next:]...)
	clear(rd.batch)
	rd.batch, rd.next = rd.batch[:0], 0
	rd.bmu.Unlock()
	for _, job := range rest {
		if in, ok := job.(*inbound); ok {
			in.held = false
		}
		if !n.goWorker(job) {
			job.run() // the node is closing: the handler sees a dead session
		}
	}
}

// takeOver hands the reading on from a reader that is still running the
// request of state word (else it does nothing): the rest of its batch goes
// to workers with nothing held, a worker reads on, and then what was held
// is written — by the caller (a handler about to wait), or by a worker
// when the caller is the watchdog (async). The replaced goroutine
// finishes its request and stops. The reading starts before the write:
// a peer that does not read its answers fills the socket, and a write
// that waits for it must not keep the connection from being read (its
// other requests, its answers to this node's requests).
func (s *Session) takeOver(word uint64, async bool) bool {
	rd, n := s.rd, s.node
	if !rd.watch.word.CompareAndSwap(word, word&^stateMask|readerReplaced) {
		return false
	}
	s.handRest()
	n.goWorker(rd.again) // refused only once the node closes, which fails the session
	if async {
		n.goWorker(taskFunc(s.w.flush))
	} else {
		s.w.flush()
	}
	return true
}

// watchInline replaces the readers that have been running one request for
// too long, and exits at its first tick with no reader running one: the
// next inline request starts it again (a goroutine per quiet millisecond
// at most, where lingering would add a timer wake-up per millisecond to
// every idle stretch, and on synctest's clock a step of virtual time).
func (n *Node) watchInline() {
	t := time.NewTicker(inlineGrace)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			n.watching.Store(false)
			return
		case <-t.C:
		}
		n.watchTicks.Add(1)
		// A request whose reader was replaced (or lent) may run on for
		// long — a call waiting for a quorum that is down, on the network
		// or a timer — but nobody waits for its connection's reading any
		// more: it is no reason to tick.
		if n.inline.Load() > 0 && n.replaceStuckReaders() {
			continue
		}
		// Stop, unless a reader started a request between the check and
		// the flag (it saw the flag still set).
		n.watching.Store(false)
		if n.inline.Load() == 0 || !n.anyInline() || !n.watching.CompareAndSwap(false, true) {
			return
		}
	}
}

// watchReaders starts the watchdog unless it runs: call it after a
// reader's state word becomes readerInline.
func (n *Node) watchReaders() {
	if !n.watching.Load() && n.watching.CompareAndSwap(false, true) {
		if !n.goTracked(n.watchInline) {
			n.watching.Store(false)
		}
	}
}

// anyInline reports whether some session's reader runs a request itself.
func (n *Node) anyInline() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for s := range n.all {
		if s.rd.watch.word.Load()&stateMask == readerInline {
			return true
		}
	}
	return false
}

// replaceStuckReaders starts a new reader for each session whose reader
// is still running the request it was running at the previous tick, and
// reports whether a reader still runs one it has not been replaced on (a
// request that started since).
func (n *Node) replaceStuckReaders() (inline bool) {
	n.mu.Lock()
	sessions := make([]*Session, 0, len(n.all))
	for s := range n.all {
		sessions = append(sessions, s)
	}
	n.mu.Unlock()
	for _, s := range sessions {
		w := &s.rd.watch
		cur := w.word.Load()
		if cur&stateMask != readerInline || cur != w.seen {
			w.seen = cur // new since the last tick: give it a period
			inline = inline || cur&stateMask == readerInline
			continue
		}
		if s.takeOver(cur, true) {
			n.takeovers[takeoverStuck].Add(1)
		} else {
			inline = true // it changed meanwhile: look again next tick
		}
	}
	return inline
}

// Why a reader was replaced (Node.takeovers counts each).
const (
	takeoverStuck   = iota // the watchdog found it on one request too long
	takeoverWaiting        // its request waited on the network
)

// flushAside writes what is queued from a worker rather than the calling
// goroutine: the reader's own envelopes (refusals, claim answers) are
// queued held and leave this way, since a write may wait for a socket
// the peer does not empty and the reader must go on reading.
func (s *Session) flushAside() {
	if !s.node.goWorker(taskFunc(s.w.flush)) {
		s.w.flush() // the node is closing
	}
}

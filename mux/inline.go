package mux

import (
	"sync/atomic"
	"time"
)

// A reader whose read ends with a lone request runs that request itself
// and then goes back to reading: no goroutine hand-off on the request's
// path, and no wake-up of another goroutine just to find the socket empty
// (64 callers on 3 members: 9 % faster than handing the reading on before
// running the request). While it runs the request nobody reads the
// connection, so a slow handler would hold up everything behind it: the
// node's watchdog hands the reading to a worker when a reader has been
// running the same request for between one and two inlineGrace periods.
const inlineGrace = time.Millisecond

// Reader states, the low bits of readerWatch.word (the rest counts the
// requests run inline, so a replaced reader cannot mistake its successor's
// inline request for its own).
const (
	readerReading  uint64 = iota // reading, or dispatching what it read
	readerInline                 // running a request itself
	readerReplaced               // the watchdog gave the reading to another goroutine
	stateBits      = 2
	stateMask      = 1<<stateBits - 1
)

// readerWatch is what the inline watchdog shares with a reader.
type readerWatch struct {
	word  atomic.Uint64 // epoch<<stateBits | state
	epoch uint64        // requests run inline so far (the reader only)
	seen  uint64        // the word the watchdog saw last (the watchdog only)
}

// runInline runs job on the reading goroutine and reports whether that
// goroutine is still the reader afterwards.
func (s *Session) runInline(job task) bool {
	rd, n := s.rd, s.node
	rd.watch.epoch++
	mine := rd.watch.epoch<<stateBits | readerInline
	rd.watch.word.Store(mine)
	n.inline.Add(1)
	if !n.watching.Load() && n.watching.CompareAndSwap(false, true) {
		if !n.goTracked(n.watchInline) {
			n.watching.Store(false)
		}
	}
	job.run()
	n.inline.Add(-1)
	return rd.watch.word.CompareAndSwap(mine, mine&^stateMask|readerReading)
}

// watchInline replaces the readers that have been running one request for
// too long, and exits once no reader has run one for a few periods.
func (n *Node) watchInline() {
	t := time.NewTicker(inlineGrace)
	defer t.Stop()
	quiet := 0
	for {
		select {
		case <-n.done:
			n.watching.Store(false)
			return
		case <-t.C:
		}
		if n.inline.Load() > 0 {
			quiet = 0
			n.replaceStuckReaders()
			continue
		}
		if quiet++; quiet < 4 {
			continue
		}
		// Stop, unless a reader started a request between the check and
		// the flag (it saw the flag still set).
		n.watching.Store(false)
		if n.inline.Load() == 0 || !n.watching.CompareAndSwap(false, true) {
			return
		}
	}
}

// replaceStuckReaders starts a new reader for each session whose reader
// is still running the request it was running at the previous tick.
func (n *Node) replaceStuckReaders() {
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
			continue
		}
		if w.word.CompareAndSwap(cur, cur&^stateMask|readerReplaced) && !n.goWorker(s.rd.again) {
			return // closing: Close fails every session
		}
	}
}

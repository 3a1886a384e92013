package mux

import (
	"context"
	"time"
)

// A request handler on its connection's reader that sends requests of its
// own and waits for their answers must hand the reading on first
// (HandOff): the answers may come on that very connection. That costs a
// goroutine hand-off each way — another goroutine woken to read, which
// reads the answer and wakes the handler. When every one of its requests
// went to the peer of that connection, the handler can instead read the
// connection itself until its answers are in: the reader lends it the
// reading (WaitReading). Records are read and dispatched just as the
// reader would (answers delivered, messages passed on). The lending ends
// at the first request read (the connection has other work, which should
// not wait for this handler: the request is left for the reader, and the
// handler hands off), at a yamux record (stream bytes wait while yamux is
// behind), and at lendLimit, the same grace the watchdog gives a reader
// running one request. A hot key's acknowledgement and its caller's next
// call leave in one write, acknowledgement first (SPEC.md, section 2): the
// lending reads the one and stops before the other.
var lendLimit = inlineGrace // tests lengthen it

// WaitReading is for a request handler about to wait for the answers to
// reqs, which report on wake (a buffered channel the answers' callbacks
// send to). If the handler whose context is ctx runs on its connection's
// reader and every request in reqs went out on that connection, it reads
// the connection until wake holds a value (it does not take it), for at
// most max and lendLimit; it reports whether wake then holds one.
// Otherwise, or when the reading ends early (a request read, nothing more
// within the time, a record too large to look at whole, a failing
// connection), it reports false and the handler goes on as without it:
// HandOff, then wait.
//
// wake is looked at between records: a value sent to it from elsewhere (a
// timeout, another connection) is seen when the next record arrives or at
// the bound.
//
// The goroutine that calls it need not be the one the request started on
// (an actor's mailbox may run the handler): the reader's state word says
// whether that goroutine is still inside the request, so exactly one
// goroutine reads at a time.
func WaitReading(ctx context.Context, reqs []AsyncRequest, wake <-chan struct{}, max time.Duration) bool {
	if ctx == nil || len(reqs) == 0 {
		return false
	}
	rc, ok := ctx.Value(inlineKey{}).(*reqCtx)
	if !ok {
		return false
	}
	s := rc.inline
	for _, r := range reqs {
		if r.s != s {
			return false
		}
	}
	return s.lend(rc.word, wake, max)
}

// lend reads s's connection in its reader's place, which is still running
// the request of state word, until wake holds a value; see WaitReading.
func (s *Session) lend(word uint64, wake <-chan struct{}, max time.Duration) bool {
	rd := s.rd
	lent := word&^stateMask | readerLent
	if word&stateMask != readerInline || !rd.watch.word.CompareAndSwap(word, lent) {
		return false // the request ended, or the reading moved on
	}
	// The rest of the batch would wait behind this handler's wait too.
	s.handRest()
	end := time.Now().Add(min(max, lendLimit))
	armed, ready := false, false
	for {
		if len(wake) > 0 {
			ready = true
			break
		}
		ch, whole := rd.bufferedRecord()
		if !whole {
			if !time.Now().Before(end) {
				break
			}
			dl := end
			if !rd.deadline.IsZero() && rd.deadline.Before(dl) {
				dl = rd.deadline // a partial message's bound comes first
			}
			if s.conn.SetReadDeadline(dl) != nil {
				break
			}
			armed = true
			if !rd.rr.peekRecord() {
				break // the reader meets whatever stopped it
			}
			ch, _ = rd.bufferedRecord()
		}
		if ch == chanYamux {
			// Stream bytes wait while yamux is behind: a handler must not
			// wait on a stream's reader. They are the reader's.
			break
		}
		jobs := len(rd.jobs)
		if err := s.readRecord(); err != nil {
			s.readFailed(err)
			break
		}
		if len(rd.jobs) > jobs {
			// The connection has other work: it is the reader's, at once,
			// not after this handler's wait.
			break
		}
	}
	if armed {
		_ = s.conn.SetReadDeadline(rd.deadline)
	}
	// Back to the request's state: its reader goes on reading once the
	// request ends, and HandOff and the watchdog work as before.
	rd.watch.word.Store(word)
	s.node.watchReaders() // it may have stopped while no reader ran a request
	return ready
}

// peekRecord waits until a whole record is buffered, consuming nothing, so
// a read deadline that interrupts it loses no bytes. It reports false
// when the read fails (what arrived stays buffered), when the header is
// invalid (the reader reports it), or when the record is larger than the
// buffer.
func (rr *recordReader) peekRecord() bool {
	h, err := rr.r.Peek(recordHeaderSize)
	if err != nil {
		return false
	}
	_, n, err := parseRecordHeader(h)
	if err != nil || recordHeaderSize+n > rr.r.Size() {
		return false
	}
	_, err = rr.r.Peek(recordHeaderSize + n)
	return err == nil
}

package mux

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Byte budgets. Counts and timeouts (MaxRequests, PartialMessageTimeout)
// bound how many things a peer makes a node hold and for how long; the
// budgets bound how many bytes, per connection:
//
//   - MaxQueuedBytes: the peer's requests held (waiting to run or
//     running, at their decoded size) and the answers of finished
//     handlers waiting for room to be sent (Session.queued), and
//     MaxQueuedBytesTotal, the same over all connections
//     (Node.queuedHeld). A request that does not fit is refused with
//     CodeOverloaded: its handler does not run; one whose connection
//     holds nothing always fits. A compressed request is judged by the size its frame
//     declares, before it is decompressed.
//   - Answers wait for room: a handler's answer waits while its lane
//     already has MaxMessage bytes queued for the socket (the same rule
//     as a request or message sent by this node), and while the lane is
//     that full the connection's handlers start one at a time
//     (awaitRoom), so a peer that reads slowly makes handlers wait, not
//     the queue grow; while they wait their answers count in
//     MaxQueuedBytes, so its further requests are refused. An answer is
//     never dropped: it leaves once the peer reads, or the connection
//     closes (the requester sees ErrConnectionLost, indeterminate, which
//     is the truth). Dropping it, or answering CodeOverloaded after the
//     handler ran, would tell the requester that work done was not.
//     The answers of handlers that were already running when the lane
//     filled wait too, counted; once those waiting take the connection
//     past MaxQueuedBytes it is closed with ErrAnswerBudget (the
//     requesters see ErrConnectionLost: indeterminate, their handlers
//     ran), which frees them.
//   - MaxPartialBytes and MaxPartialBytesTotal: the memory held for
//     partly received envelopes (each lane's buffer, sized for the whole
//     envelope once its header is in), of the connection and of the
//     whole node (Node.partialHeld); the connection whose record goes
//     past either closes with ErrPartialBudget.

// overloadCounters are a node's Overload.
type overloadCounters struct {
	refused, refusedBytes, partialClosed, answersWaited, answerClosed atomic.Uint64
}

// Overload counts what the per-connection limits on requests and bytes
// turned away, since the node started. Each field only grows;
// Node.Overload reads them.
type Overload struct {
	// Refused counts requests refused with CodeOverloaded because
	// Config.MaxRequests requests of their connection were in flight.
	Refused uint64
	// RefusedBytes counts requests refused with CodeOverloaded because
	// they did not fit in Config.MaxQueuedBytes or MaxQueuedBytesTotal.
	RefusedBytes uint64
	// PartialClosed counts connections closed with ErrPartialBudget.
	PartialClosed uint64
	// AnswerClosed counts connections closed with ErrAnswerBudget.
	AnswerClosed uint64
	// AnswersWaited counts the times a request found its lane's send
	// queue full (the peer reads slowly) and waited for room: before its
	// handler started, or with its answer.
	AnswersWaited uint64
}

// Overload reports what the per-connection request and byte limits
// refused or closed since the node started. It costs five atomic loads:
// metrics may poll it.
func (n *Node) Overload() Overload {
	c := &n.overload
	return Overload{Refused: c.refused.Load(), RefusedBytes: c.refusedBytes.Load(),
		PartialClosed: c.partialClosed.Load(), AnswersWaited: c.answersWaited.Load(),
		AnswerClosed: c.answerClosed.Load()}
}

// hold adds n (negative: releases) to the bytes the session holds for the
// peer's requests, and keeps the peak (tests read it).
func (s *Session) hold(n int) {
	peak(&s.queuedPeak, s.queued.Add(int64(n)))
	peak(&s.node.queuedPeak, s.node.queuedHeld.Add(int64(n)))
}

// peak raises p to v if v is more.
func peak(p *atomic.Int64, v int64) {
	for old := p.Load(); v > old && !p.CompareAndSwap(old, v); old = p.Load() {
	}
}

// admits reports whether a request of n decoded bytes fits in
// Config.MaxQueuedBytes and Config.MaxQueuedBytesTotal: always when the
// session holds nothing else.
func (s *Session) admits(n int) bool {
	q := s.queued.Load()
	cfg := &s.node.cfg
	return q == 0 || q+int64(n) <= int64(cfg.MaxQueuedBytes) &&
		s.node.queuedHeld.Load()+int64(n) <= int64(max(cfg.MaxQueuedBytesTotal, cfg.MaxQueuedBytes))
}

// refuse answers request id with CodeOverloaded, saying which limit
// refused it, and counts it (called by the reader, which never waits).
func (l *lane) refuse(id uint64, bytes bool) {
	s := l.s
	msg := fmt.Sprintf("%d requests in flight on this connection (MaxRequests)", s.node.cfg.MaxRequests)
	if bytes {
		s.node.overload.refusedBytes.Add(1)
		msg = fmt.Sprintf("requests hold %d bytes on this connection (MaxQueuedBytes %d), %d on the node (MaxQueuedBytesTotal %d)",
			s.queued.Load(), s.node.cfg.MaxQueuedBytes, s.node.queuedHeld.Load(), s.node.cfg.MaxQueuedBytesTotal)
	} else {
		s.node.overload.refused.Add(1)
	}
	// A peer that overloads the connection may not be reading either.
	_ = l.sendOpt(nil, frameError, id, encodeRemoteError(CodeOverloaded, msg, s.node.cfg.MaxMessage), true)
	s.flushAside()
}

// partialLimit is the effective Config.MaxPartialBytes: never below one
// whole message's buffer.
func (s *Session) partialLimit() int {
	return max(s.node.cfg.MaxPartialBytes, s.node.cfg.MaxMessage+envelopeHeaderSize+sealOverhead)
}

// checkPartial records that lane ch's buffer holds rest bytes (its
// capacity) for a partly received envelope and fails with
// ErrPartialBudget when the lanes together hold more than the budget.
func (s *Session) checkPartial(ch byte, rest int) error {
	rd := s.rd
	node := s.node.partialHeld.Add(int64(rest - rd.partialBytes[ch]))
	rd.partialBytes[ch] = rest
	total := 0
	for _, n := range rd.partialBytes {
		total += n
	}
	if limit := s.partialLimit(); total > limit {
		return fmt.Errorf("%w (%d bytes held on the connection, limit %d)", ErrPartialBudget, total, limit)
	}
	if limit := max(s.node.cfg.MaxPartialBytesTotal, s.partialLimit()); rest > 0 && node > int64(limit) {
		return fmt.Errorf("%w (%d bytes held by the node, MaxPartialBytesTotal %d)", ErrPartialBudget, node, limit)
	}
	return nil
}

// dropPartial gives back the node's count of the session's partly
// received bytes, once its reader has stopped.
func (s *Session) dropPartial() {
	rd := s.rd
	for ch, n := range rd.partialBytes {
		s.node.partialHeld.Add(-int64(n))
		rd.partialBytes[ch] = 0
	}
}

// awaitRoom is called before a handler starts. While its lane's send
// queue is full (the peer does not read its answers) the handler waits
// for room, and for its turn: one handler of the connection at a time
// runs then, so that handlers that would each add an answer to the
// queue do not all start when room appears. turn reports that it holds
// the turn (the caller gives it back once its answer is queued); ok is
// false when the request was cancelled or the connection failed
// meanwhile (the handler must not run).
func (r *inbound) awaitRoom() (turn, ok bool) {
	s, ch := r.s, byte(r.ln.id)
	if !s.w.full(ch) {
		return false, true
	}
	HandOff(&r.ctx) // do not wait on the connection's reader
	r.held = false
	s.node.overload.answersWaited.Add(1)
	s.starting.Add(1)
	defer s.starting.Add(-1)
	select {
	case s.turn <- struct{}{}:
	case <-r.ctx.Done():
		return false, false
	}
	if s.w.waitRoom(&r.ctx, ch) != nil {
		return true, false
	}
	return true, true
}

// answerCtx is the context answers are sent with: never done. An answer
// waits for room until the peer reads or the connection closes (the
// writer then fails every waiting sender), or, when it would wait while
// the connection holds more than MaxQueuedBytes, gives up with
// errAnswerBudget (connWriter.waitRoomLocked).
var answerCtx context.Context = &answerContext{context.Background()}

// sendAnswer queues a handler's answer, waiting for room in its lane's
// send queue. A handler running on the connection's reader hands the
// reading on first (HandOff), so the connection is still read while it
// waits. When it would wait while the connection holds more than
// MaxQueuedBytes (this answer included) it closes the connection with
// ErrAnswerBudget instead.
func (r *inbound) sendAnswer(typ uint8, payload []byte) {
	s, ln := r.s, r.ln
	if s.w.full(byte(ln.id)) {
		s.node.overload.answersWaited.Add(1)
		HandOff(&r.ctx)
		r.held = false // the queue is full: write, do not wait for the batch's end
	}
	if err := ln.sendOpt(answerCtx, typ, r.id, payload, r.held); errors.Is(err, errAnswerBudget) {
		// The peer does not read, and the answers waiting for it (those
		// of handlers that were running when it stopped) hold more than
		// the budget: waiting would keep them all. Closing frees them;
		// the requesters see the connection lost, indeterminate, which
		// is the truth (their handlers ran).
		// The first answer to find it closes the connection, counted
		// before it closes (Overload.AnswerClosed is there once Err
		// says ErrAnswerBudget); the others leave that to it.
		held := s.queued.Load()
		if s.answerClosed.CompareAndSwap(false, true) {
			s.node.overload.answerClosed.Add(1)
			s.node.log.Warn("mux: closing a connection whose peer does not read its answers",
				"peer", s.peer.String()[:8], "held", held, "MaxQueuedBytes", s.node.cfg.MaxQueuedBytes)
			s.fail(fmt.Errorf("%w (%d bytes held on the connection)", ErrAnswerBudget, held))
		}
	}
}

// errAnswerBudget is what an answer's wait for room returns when the
// connection holds more than MaxQueuedBytes (waitRoomLocked).
var errAnswerBudget = errors.New("mux: answers waiting exceed MaxQueuedBytes")

// answerContext is answerCtx's type: a pointer, so that the writer can
// tell an answer's wait from any other.
type answerContext struct{ context.Context }

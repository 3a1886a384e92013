package mux

import "sync"

// inboxLimit bounds the bytes of one-way messages received on one lane of
// one session and not yet handled, as a multiple of Config.MaxMessage.
const inboxLimit = 4

// inbox holds one lane's received one-way messages until its handler takes
// them, so that a slow handler on one lane (state fan-out on the
// replication lane, say) does not hold up the connection's reader, and with
// it the other lanes' calls and answers. One drain task per lane runs at a
// time, on a worker, so a lane's messages stay in order. Past inboxLimit ×
// MaxMessage bytes the reader waits for the handler after all: memory
// stays bounded and the peer's sends slow down through TCP.
type inbox struct {
	mu      sync.Mutex
	space   sync.Cond // signalled when the queue shrinks, or the session ends
	q       [][]byte
	bytes   int
	running bool // a drain task owns the queue's head
}

// deliverMessage queues a one-way message for its lane's handler (called by
// the connection's reader).
func (s *Session) deliverMessage(l Lane, payload []byte) {
	if s.node.msgHandlers[l].Load() == nil {
		return
	}
	in := &s.inboxes[l]
	limit := inboxLimit * s.node.cfg.MaxMessage
	in.mu.Lock()
	for in.bytes > 0 && in.bytes+len(payload) > limit && !s.isDone() {
		in.space.Wait()
	}
	in.q = append(in.q, payload)
	in.bytes += len(payload)
	start := !in.running
	in.running = true
	in.mu.Unlock()
	if start && !s.node.goWorker(taskFunc(func() { s.drainInbox(l) })) {
		s.drainInbox(l) // the node is closing: deliver here, as before
	}
}

// drainInbox hands a lane's queued messages to its handler, in order,
// until the queue is empty.
func (s *Session) drainInbox(l Lane) {
	in := &s.inboxes[l]
	for {
		in.mu.Lock()
		if len(in.q) == 0 {
			in.q, in.running = in.q[:0], false
			in.mu.Unlock()
			return
		}
		p := in.q[0]
		in.q[0] = nil
		in.q = in.q[1:]
		in.bytes -= len(p)
		in.space.Signal()
		in.mu.Unlock()
		s.handleMessage(l, p)
	}
}

// handleMessage runs the lane's handler on one message.
func (s *Session) handleMessage(l Lane, payload []byte) {
	hp := s.node.msgHandlers[l].Load()
	if hp == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.node.log.Error("mux: message handler panicked", "lane", l.String(), "panic", p)
		}
	}()
	(*hp)(s, payload)
}

// wakeInboxes releases a reader waiting for inbox space (the session ended).
func (s *Session) wakeInboxes() {
	for l := range s.inboxes {
		in := &s.inboxes[l]
		in.mu.Lock()
		in.space.Broadcast()
		in.mu.Unlock()
	}
}

func (s *Session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

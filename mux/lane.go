package mux

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
)

// lane is one long-lived message channel of a session: a yamux stream
// carrying envelopes both ways.
//
// Writes are combined: a sender appends its envelope to the lane buffer;
// if no write is in progress it becomes the writer and writes the whole
// buffer (everyone's envelopes queued so far) in one Write, otherwise it
// returns at once and the current writer picks its envelope up. Several
// small envelopes therefore leave in one frame and one syscall, and an
// idle lane costs no goroutine hand-off.
type lane struct {
	s     *Session
	id    Lane
	ready chan struct{} // closed once conn is set
	conn  net.Conn
	w     writerState // the combining writer, under its own lock
}

type writerState struct {
	mu      sync.Mutex
	buf     []byte
	spare   []byte
	writing bool
	err     error
	space   chan struct{} // closed when the buffer drains; replaced after
}

func (l *lane) lock()   { l.w.mu.Lock() }
func (l *lane) unlock() { l.w.mu.Unlock() }

// highWater bounds the bytes queued on a lane; senders wait beyond it.
func (l *lane) highWater() int { return l.s.node.cfg.MaxMessage }

// send queues one envelope. A nil ctx means "do not wait for space"
// (used for answers and cancels, which must not be dropped for
// backpressure and are bounded by the requests that caused them).
func (l *lane) send(ctx context.Context, typ uint8, id uint64, payload []byte) error {
	if ctx != nil {
		select {
		case <-l.ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.s.done:
			return connectionLost(l.s.Err())
		}
	} else {
		select {
		case <-l.ready:
		case <-l.s.done:
			return connectionLost(l.s.Err())
		}
	}
	var flags uint8
	if c := l.s.codec; c != nil {
		if th := l.s.node.cfg.CompressThreshold; th >= 0 && len(payload) >= th && len(payload) > 0 {
			if z := c.compress(nil, payload); len(z) < len(payload) {
				payload, flags = z, flagCompressed
			}
		}
	}
	l.lock()
	for ctx != nil && len(l.w.buf) >= l.highWater() && l.w.err == nil {
		space := l.w.space
		l.unlock()
		select {
		case <-space:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.lock()
	}
	if l.w.err != nil {
		err := l.w.err
		l.unlock()
		return err
	}
	l.w.buf = appendEnvelopeHeader(l.w.buf, typ, flags, id, len(payload))
	l.w.buf = append(l.w.buf, payload...)
	if l.w.writing {
		l.unlock()
		return nil
	}
	l.w.writing = true
	l.unlock()
	// Let the goroutines that are already runnable (requesters woken by
	// the same batch of replies, handlers spawned by the same batch of
	// requests) append their envelopes before we write: without this the
	// scheduler would run the yamux send loop first and every envelope
	// would leave alone.
	runtime.Gosched()
	l.lock()
	// Write one round ourselves; if more piled up meanwhile, hand the
	// rest to a goroutine so this caller is not held hostage.
	if !l.writeRound() {
		return nil
	}
	if !l.s.node.goTracked(l.drain) {
		l.abort(ErrClosed)
	}
	return nil
}

// writeRound is called locked with writing set. It writes the buffer and
// returns, locked state released, whether more data is waiting (writing
// then stays set and the caller must arrange a drain).
func (l *lane) writeRound() (more bool) {
	out := l.w.buf
	l.w.buf = l.w.spare[:0]
	l.unlock()
	err := writeFramed(l.conn, out, l.s.node.cfg.MaxFrame)
	l.lock()
	if cap(out) <= 1<<20 {
		l.w.spare = out[:0]
	} else {
		l.w.spare = nil
	}
	close(l.w.space)
	l.w.space = make(chan struct{})
	if err != nil {
		l.w.writing = false
		if l.w.err == nil {
			l.w.err = connectionLost(err)
		}
		l.unlock()
		l.s.fail(connectionLost(err))
		return false
	}
	if len(l.w.buf) == 0 {
		l.w.writing = false
		l.unlock()
		return false
	}
	l.unlock()
	return true
}

func (l *lane) drain() {
	for {
		runtime.Gosched()
		l.lock()
		if !l.writeRound() {
			return
		}
	}
}

func (l *lane) abort(err error) {
	l.lock()
	l.w.writing = false
	if l.w.err == nil {
		l.w.err = err
	}
	l.unlock()
}

// closeWriter fails all later sends with err and wakes blocked senders.
func (l *lane) closeWriter(err error) {
	l.lock()
	if l.w.err == nil {
		l.w.err = err
	}
	close(l.w.space)
	l.w.space = make(chan struct{})
	l.unlock()
}

// writeFramed writes b in chunks of at most max bytes, so no yamux frame
// exceeds the frame limit.
func writeFramed(w io.Writer, b []byte, max int) error {
	for len(b) > 0 {
		n := min(len(b), max)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// readLoop decodes envelopes until the stream ends; any violation closes
// the whole connection.
func (l *lane) readLoop() {
	s := l.s
	max := s.node.cfg.MaxMessage
	er := newEnvelopeReader(l.conn, max)
	for {
		env, err := er.next()
		if err != nil {
			if errors.Is(err, ErrProtocol) {
				s.violation(err)
			} else {
				s.fail(connectionLost(err))
			}
			return
		}
		payload := env.payload
		if env.flags&flagCompressed != 0 {
			if s.codec == nil {
				s.violation(protocolError("compressed envelope without a negotiated codec"))
				return
			}
			if payload, err = s.codec.decompress(payload, max); err != nil {
				s.violation(protocolError("decompression failed: %v", err))
				return
			}
		}
		switch env.typ {
		case frameRequest:
			if err := s.serveRequest(l, env.id, payload); err != nil {
				s.violation(err)
				return
			}
		case frameResponse:
			s.complete(env.id, result{payload: payload})
		case frameError:
			if len(payload) < 2 {
				s.violation(protocolError("error envelope shorter than its code"))
				return
			}
			s.complete(env.id, result{err: decodeRemoteError(payload)})
		case frameMessage:
			s.deliverMessage(l.id, payload)
		case frameCancel:
			s.cancelInflight(env.id)
		}
	}
}

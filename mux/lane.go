package mux

import (
	"context"
	"errors"
)

// errOverloaded is prepareRequest's answer to a request beyond
// Config.MaxRequests, errOverBudget to one beyond Config.MaxQueuedBytes:
// the reader refuses it with CodeOverloaded.
var (
	errOverloaded = errors.New("mux: too many requests in flight")
	errOverBudget = errors.New("mux: requests hold too many bytes")
)

// lane is one message channel of a session: a stream of envelopes in
// each direction, carried in the connection's records (see conn.go).
type lane struct {
	s  *Session
	id Lane
}

// send queues one envelope. A nil ctx means "do not wait for space"
// (used for answers and cancels, which must not be dropped for
// backpressure and are bounded by the requests that caused them).
func (l *lane) send(ctx context.Context, typ uint8, id uint64, payload []byte) error {
	return l.sendOpt(ctx, typ, id, payload, false)
}

// sendOpt is send; with held set the envelope is queued without starting a
// write (the sender flushes later, see connWriter.flush).
func (l *lane) sendOpt(ctx context.Context, typ uint8, id uint64, payload []byte, held bool) error {
	var flags uint8
	if c := l.s.codec; c != nil {
		if th := l.s.node.cfg.CompressThreshold; th >= 0 && len(payload) >= th && len(payload) > 0 {
			if z := c.compress(nil, payload); len(z) < len(payload) {
				payload, flags = z, flagCompressed
			}
		}
	}
	return l.s.w.enqueue(ctx, byte(l.id), func(q []byte) []byte {
		q = appendEnvelopeHeader(q, typ, flags, id, len(payload))
		return append(q, payload...)
	}, held)
}

// sendPlain queues one envelope that is never compressed (mux's own claim
// check messages); held as for sendOpt.
func (l *lane) sendPlain(ctx context.Context, typ uint8, id uint64, payload []byte, held bool) error {
	return l.s.w.enqueue(ctx, byte(l.id), func(q []byte) []byte {
		q = appendEnvelopeHeader(q, typ, 0, id, len(payload))
		return append(q, payload...)
	}, held)
}

// dispatch handles one envelope read from the lane; a request's job is
// appended to *jobs for the reader to run. An error is a protocol
// violation.
func (l *lane) dispatch(env envelope, jobs *[]task) error {
	s := l.s
	payload := env.payload
	if env.flags&flagCompressed != 0 {
		if s.codec == nil {
			return protocolError("compressed envelope without a negotiated codec")
		}
		if env.typ == frameRequest {
			if n, ok := s.codec.declaredSize(payload); ok && n <= s.node.cfg.MaxMessage && !s.admits(n) {
				l.refuse(env.id, true) // judged by its declared size, before decompressing it
				return nil
			}
		}
		var err error
		if payload, err = s.codec.decompress(payload, s.node.cfg.MaxMessage); err != nil {
			return protocolError("decompression failed: %v", err)
		}
	}
	switch env.typ {
	case frameRequest:
		job, err := s.prepareRequest(l, env.id, payload)
		if err == errOverloaded || err == errOverBudget {
			l.refuse(env.id, err == errOverBudget)
			return nil
		}
		if job != nil {
			*jobs = append(*jobs, job)
		}
		return err
	case frameResponse:
		s.complete(env.id, result{payload: payload})
	case frameError:
		if len(payload) < 2 {
			return protocolError("error envelope shorter than its code")
		}
		s.complete(env.id, result{err: decodeRemoteError(payload)})
	case frameMessage:
		s.deliverMessage(l.id, payload)
	case frameCancel:
		s.cancelInflight(env.id)
	case frameClaim, frameClaimAnswer:
		if l.id != LaneControl || s.version < claimVersion {
			return protocolError("claim envelope on lane %s of a version %d session", l.id, s.version)
		}
		if env.typ == frameClaim {
			s.answerClaim(env.id, payload)
		} else {
			s.claimAnswered(env.id, payload[0] == 1)
		}
	}
	return nil
}

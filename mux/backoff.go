package mux

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff computes reconnect delays: Min, doubling on every failure up to
// Max, each spread uniformly over ±Jitter×delay. It is a pure value: no
// clock, no goroutine; randomness comes from Rand. Not safe for
// concurrent use.
type Backoff struct {
	Min, Max time.Duration
	Jitter   float64
	Rand     *rand.Rand
	attempt  int
}

// NewBackoff returns the Backoff described by cfg's Reconnect fields,
// drawing jitter from r (a fresh PCG from the runtime's entropy if nil).
func NewBackoff(cfg Config, r *rand.Rand) *Backoff {
	if r == nil {
		r = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Backoff{Min: cfg.ReconnectMin, Max: cfg.ReconnectMax, Jitter: cfg.ReconnectJitter, Rand: r}
}

// Next returns the delay before the next attempt and advances.
func (b *Backoff) Next() time.Duration {
	d := b.Min
	for i := 0; i < b.attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	b.attempt++
	if b.Jitter > 0 && b.Rand != nil {
		f := 1 + b.Jitter*(2*b.Rand.Float64()-1)
		d = time.Duration(float64(d) * f)
	}
	return d
}

// Reset starts over at Min (call it after a successful connection).
func (b *Backoff) Reset() { b.attempt = 0 }

// Redial dials addr until it succeeds or ctx ends, waiting Backoff delays
// (from the node's Config and Rand) between attempts. A handshake
// rejection (*HandshakeError other than CodeMalformed) is returned at
// once: retrying cannot fix a wrong cluster. Redial is the only retry the
// package performs; it never retries requests.
func (n *Node) Redial(ctx context.Context, addr string) (*Session, error) {
	n.mu.Lock()
	seed1, seed2 := n.rand.Uint64(), n.rand.Uint64()
	n.mu.Unlock()
	b := NewBackoff(n.cfg, rand.New(rand.NewPCG(seed1, seed2)))
	for {
		s, err := n.Dial(ctx, addr)
		if err == nil {
			return s, nil
		}
		var he *HandshakeError
		if errors.As(err, &he) && he.Code != CodeMalformed {
			return nil, err
		}
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		t := time.NewTimer(b.Next())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-n.done:
			t.Stop()
			return nil, ErrClosed
		}
	}
}

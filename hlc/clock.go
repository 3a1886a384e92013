package hlc

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Config configures a Clock. The zero Config is not valid (it has no
// physical clock); start from DefaultConfig.
type Config struct {
	// Node is the id of the node owning the clock, copied into every
	// Timestamp it issues to break ties between nodes. Default: the zero
	// id; every node of a cluster must use its own (its member id).
	Node [16]byte

	// Physical returns the physical time in milliseconds since the Unix
	// epoch. It may jump backwards or stall; the Clock stays monotonic
	// regardless. It is called once per Now or Observe, under the Clock's
	// lock, so it must be cheap and must not call back into the Clock.
	// Default: SystemMillis. Required (nil is an error).
	Physical func() int64

	// MaxDrift bounds how far ahead of the local physical clock a remote
	// timestamp may be for Observe to accept it, so that one node with a
	// wildly wrong clock cannot drag every clock it talks to into the
	// future. Resolution: milliseconds. Default 0: no limit (Observe
	// accepts every remote stamp). Negative, or between 0 and 1 ms (which
	// the millisecond resolution would turn into no limit), is an error.
	MaxDrift time.Duration
}

// DefaultConfig returns the defaults: zero Node, Physical = SystemMillis,
// no drift limit.
func DefaultConfig() Config {
	return Config{Physical: SystemMillis}
}

// Validate reports whether c can build a Clock: ErrNoPhysicalClock when
// Physical is nil, ErrBadConfig (wrapped) for a negative MaxDrift or one
// below the clock's 1 ms resolution.
func (c Config) Validate() error {
	if c.Physical == nil {
		return ErrNoPhysicalClock
	}
	if c.MaxDrift < 0 {
		return fmt.Errorf("%w: MaxDrift %v is negative", ErrBadConfig, c.MaxDrift)
	}
	if c.MaxDrift > 0 && c.MaxDrift < time.Millisecond {
		return fmt.Errorf("%w: MaxDrift %v is below the clock's 1 ms resolution (0 means no limit)", ErrBadConfig, c.MaxDrift)
	}
	return nil
}

// SystemMillis is the system wall clock in milliseconds since the Unix
// epoch: time.Now().UnixMilli(). It is the default Config.Physical;
// deterministic code and tests inject their own function instead.
func SystemMillis() int64 { return time.Now().UnixMilli() }

// Clock is a hybrid logical clock (Kulkarni et al., "Logical Physical Clocks",
// 2014). It is safe for concurrent use.
//
// Every timestamp a Clock issues, from Now or Observe, is strictly greater
// than every timestamp it issued or observed before, whatever its physical
// clock does. Wall never falls behind the physical clock and runs ahead of it
// only by what was observed from other nodes (plus 1 ms per 2^32 stamps
// issued within one physical millisecond, see Now). A Clock starts from the
// zero Timestamp, so its stamps never have a negative Wall: physical readings
// before the epoch count as 0.
type Clock struct {
	node     [16]byte
	physical func() int64
	maxDrift int64 // ms; 0 = none

	mu   sync.Mutex
	last Timestamp // greatest (Wall, Counter) issued or observed; Node = node
}

// New returns a Clock configured by cfg, which must be valid.
func New(cfg Config) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Clock{
		node:     cfg.Node,
		physical: cfg.Physical,
		maxDrift: cfg.MaxDrift.Milliseconds(),
		last:     Timestamp{Node: cfg.Node},
	}, nil
}

// Node returns the node id stamped on this clock's timestamps.
func (c *Clock) Node() [16]byte { return c.node }

// Last returns the greatest (Wall, Counter) this clock has issued or
// observed, with this clock's Node; the zero Timestamp's Wall and Counter
// before the first call to Now or Observe. The next stamp will be greater.
func (c *Clock) Last() Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// next returns the smallest (Wall, Counter) pair strictly after (wall, ctr):
// the next counter value, or — when the counter is at math.MaxUint32 — the
// next millisecond with counter 0. The counter never wraps silently: an
// overflow moves Wall logically 1 ms ahead of what was observed. ok is false
// only when wall is math.MaxInt64 and the counter is exhausted.
func next(wall int64, ctr uint32) (int64, uint32, bool) {
	switch {
	case ctr < math.MaxUint32:
		return wall, ctr + 1, true
	case wall < math.MaxInt64:
		return wall + 1, 0, true
	}
	return wall, ctr, false
}

// Now returns a new timestamp for a local event (a commit, a send), strictly
// greater than every timestamp this clock issued or observed before.
//
// If the physical clock is ahead of the last stamp, the stamp is (physical,
// 0); otherwise the last stamp's counter is incremented. When the counter is
// already math.MaxUint32, Wall advances by 1 ms with counter 0 — the clock
// runs logically 1 ms ahead of physical time rather than wrapping. Now panics
// with ErrExhausted only if Wall would have to pass math.MaxInt64 (a
// physical clock returning the end of time), which no real clock reaches.
func (c *Clock) Now() Timestamp {
	c.mu.Lock()
	pt := c.physical()
	if pt > c.last.Wall {
		c.last.Wall, c.last.Counter = pt, 0
	} else {
		w, n, ok := next(c.last.Wall, c.last.Counter)
		if !ok {
			c.mu.Unlock()
			panic(ErrExhausted)
		}
		c.last.Wall, c.last.Counter = w, n
	}
	ts := c.last
	c.mu.Unlock()
	return ts
}

// Observe merges a timestamp received from another node (or one read back
// from storage after a restart) and returns the stamp of the receive event:
// strictly greater than remote and than everything this clock issued or
// observed before. Every later Now is greater still.
//
// It fails, leaving the clock unchanged, with a *DriftError (ErrDrift) when
// Config.MaxDrift is set and remote.Wall is more than MaxDrift ahead of the
// physical clock, and with ErrExhausted when remote is the greatest
// representable (Wall, Counter).
func (c *Clock) Observe(remote Timestamp) (Timestamp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.physical()
	if c.maxDrift > 0 && remote.Wall > pt && uint64(remote.Wall-pt) > uint64(c.maxDrift) {
		return Timestamp{}, &DriftError{Remote: remote, Physical: pt, MaxDrift: time.Duration(c.maxDrift) * time.Millisecond}
	}
	wall := max(c.last.Wall, remote.Wall, pt)
	var w int64
	var n uint32
	ok := true
	switch {
	case wall == c.last.Wall && wall == remote.Wall:
		w, n, ok = next(wall, max(c.last.Counter, remote.Counter))
	case wall == c.last.Wall:
		w, n, ok = next(wall, c.last.Counter)
	case wall == remote.Wall:
		w, n, ok = next(wall, remote.Counter)
	default: // the physical clock is ahead of both
		w, n = pt, 0
	}
	if !ok {
		return Timestamp{}, ErrExhausted
	}
	c.last.Wall, c.last.Counter = w, n
	return c.last, nil
}

package core

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Config is gossip.Config's twin: the same fields, in the same order, of the
// same types, so that gossip converts one into the other (and the compiler
// rejects any drift). Every field is documented on gossip.Config. A nil
// *Config means DefaultConfig().
type Config struct {
	ActiveViewSize          int
	PassiveViewSize         int
	ActiveRandomWalkLength  int
	PassiveRandomWalkLength int
	ShuffleInterval         time.Duration
	ShuffleActive           int
	ShufflePassive          int
	SuspicionTimeout        time.Duration
	AntiEntropyInterval     time.Duration
	TombstoneTTL            time.Duration
	ReconnectInterval       time.Duration
	ReconnectTimeout        time.Duration
	GraftTimeout            time.Duration
	JoinTimeout             time.Duration
	NeighborTimeout         time.Duration
	SeenTTL                 time.Duration
	LeaveLinger             time.Duration
	MaxTableSize            int
	MaxClientRecords        int
	Seeds                   []string
	Rand                    *rand.Rand
	Clock                   func() time.Time
	Logger                  *slog.Logger
}

// DefaultConfig returns the membership defaults (gossip.Config documents
// each).
func DefaultConfig() *Config {
	return &Config{
		ActiveViewSize:          5,
		PassiveViewSize:         30,
		ActiveRandomWalkLength:  6,
		PassiveRandomWalkLength: 3,
		ShuffleInterval:         10 * time.Second,
		ShuffleActive:           3,
		ShufflePassive:          4,
		SuspicionTimeout:        5 * time.Second,
		AntiEntropyInterval:     30 * time.Second,
		TombstoneTTL:            60 * time.Second,
		ReconnectInterval:       30 * time.Second,
		ReconnectTimeout:        24 * time.Hour,
		GraftTimeout:            500 * time.Millisecond,
		JoinTimeout:             10 * time.Second,
		NeighborTimeout:         2 * time.Second,
		MaxTableSize:            DefaultMaxTableSize,
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	bad := func(f string, v any) error { return fmt.Errorf("%w: %s = %v", ErrInvalidConfig, f, v) }
	switch {
	case c.ActiveViewSize < 1 || c.ActiveViewSize > MaxSample:
		return bad("ActiveViewSize", c.ActiveViewSize)
	case c.PassiveViewSize < 1 || c.PassiveViewSize > 1024:
		return bad("PassiveViewSize", c.PassiveViewSize)
	case c.ActiveRandomWalkLength < 0 || c.ActiveRandomWalkLength > 255:
		return bad("ActiveRandomWalkLength", c.ActiveRandomWalkLength)
	case c.PassiveRandomWalkLength < 0 || c.PassiveRandomWalkLength > c.ActiveRandomWalkLength:
		return bad("PassiveRandomWalkLength", c.PassiveRandomWalkLength)
	case c.ShuffleInterval <= 0:
		return bad("ShuffleInterval", c.ShuffleInterval)
	case c.ShuffleActive < 0 || c.ShufflePassive < 0 || c.ShuffleActive+c.ShufflePassive+1 > MaxSample:
		return bad("ShuffleActive+ShufflePassive", c.ShuffleActive+c.ShufflePassive)
	case c.SuspicionTimeout <= 0:
		return bad("SuspicionTimeout", c.SuspicionTimeout)
	case c.AntiEntropyInterval <= 0:
		return bad("AntiEntropyInterval", c.AntiEntropyInterval)
	case c.TombstoneTTL <= 0:
		return bad("TombstoneTTL", c.TombstoneTTL)
	case c.ReconnectInterval <= 0:
		return bad("ReconnectInterval", c.ReconnectInterval)
	case c.ReconnectTimeout <= 0:
		return bad("ReconnectTimeout", c.ReconnectTimeout)
	case c.GraftTimeout <= 0:
		return bad("GraftTimeout", c.GraftTimeout)
	case c.JoinTimeout <= 0:
		return bad("JoinTimeout", c.JoinTimeout)
	case c.NeighborTimeout <= 0:
		return bad("NeighborTimeout", c.NeighborTimeout)
	case c.SeenTTL < 0:
		return bad("SeenTTL", c.SeenTTL)
	case c.LeaveLinger < 0:
		return bad("LeaveLinger", c.LeaveLinger)
	case c.MaxTableSize < 0 || c.MaxTableSize > MaxMembers:
		return bad("MaxTableSize", c.MaxTableSize)
	case c.MaxClientRecords < 0 || c.MaxClientRecords > c.tableLimit():
		return fmt.Errorf("%w: MaxClientRecords = %d, want 0 (default) to MaxTableSize (%d)",
			ErrInvalidConfig, c.MaxClientRecords, c.tableLimit())
	}
	return nil
}

// tableLimit is the member table bound in effect (MaxTableSize, zero
// meaning DefaultMaxTableSize).
func (c *Config) tableLimit() int {
	if c.MaxTableSize > 0 {
		return c.MaxTableSize
	}
	return DefaultMaxTableSize
}

// clientLimit is the bound on lite-client records in effect
// (MaxClientRecords, zero meaning a quarter of the table bound, at least 1).
func (c *Config) clientLimit() int {
	if c.MaxClientRecords > 0 {
		return c.MaxClientRecords
	}
	return max(1, c.tableLimit()/4)
}

func (c *Config) seenTTL() time.Duration {
	if c.SeenTTL > 0 {
		return c.SeenTTL
	}
	return c.TombstoneTTL
}

package pager

import "fmt"

// Config holds the limits of a Tracker. The zero value of a field means its
// default; a nil *Config means DefaultConfig().
type Config struct {
	// MaxPageSize is the largest encoded page in bytes. A page over it makes
	// Prepare fail with *PageTooLargeError and keeps the previous committed
	// value. Default 4 MiB (the transport's message cap); zero means default.
	MaxPageSize int
	// BatchSize is the size in bytes above which a delta is split into parts
	// sharing one stamp (Delta.Split). Default 256 KiB (the replication batch);
	// zero means default.
	BatchSize int
}

// Default limits, matching casty's: mux's message cap (mux.Config.MaxMessage)
// and casty's replication batch (casty.Config.Replication.Batch).
const (
	DefaultMaxPageSize = 4 << 20   // bytes: the transport's message cap
	DefaultBatchSize   = 256 << 10 // bytes: the replication batch
)

// DefaultConfig returns the default limits: 4 MiB pages, 256 KiB batches.
func DefaultConfig() Config {
	return Config{MaxPageSize: DefaultMaxPageSize, BatchSize: DefaultBatchSize}
}

// Validate reports a negative limit; zero fields are valid (they mean default).
func (c *Config) Validate() error {
	if c.MaxPageSize < 0 {
		return fmt.Errorf("%w: MaxPageSize %d < 0", ErrConfig, c.MaxPageSize)
	}
	if c.BatchSize < 0 {
		return fmt.Errorf("%w: BatchSize %d < 0", ErrConfig, c.BatchSize)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxPageSize == 0 {
		c.MaxPageSize = DefaultMaxPageSize
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	return c
}

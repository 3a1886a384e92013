package arrowpager

import "fmt"

// DefaultBlockRows is the default number of rows per block page.
const DefaultBlockRows = 16384

// Config tunes how a Table is paged. The zero value of a field means its
// default.
type Config struct {
	// BlockRows is the number of rows per page of each column. Default
	// 16,384 rows (128 KiB of float64); zero means default. It travels in
	// the table's schema page, so replicas always decode with the owner's
	// value; changing it re-pages the whole table once.
	BlockRows int
	// TrustBuffers, when true, assumes a block whose buffers were not
	// replaced is unchanged and skips hashing it: a commit then costs
	// O(columns) instead of one hash pass over the table, but a write made
	// in place into a values slice (arr.Float64Values()[i] = x) is MISSED and
	// silently not replicated. Default false: every block is hashed, which
	// catches every write path. Only set it when no code writes in place.
	TrustBuffers bool
}

// DefaultConfig returns 16,384-row blocks with every block verified.
func DefaultConfig() Config { return Config{BlockRows: DefaultBlockRows} }

// Validate reports a negative block size.
func (c *Config) Validate() error {
	if c.BlockRows < 0 {
		return fmt.Errorf("%w: BlockRows %d < 0", ErrConfig, c.BlockRows)
	}
	return nil
}

func (c Config) blockRows() int {
	if c.BlockRows <= 0 {
		return DefaultBlockRows
	}
	return c.BlockRows
}

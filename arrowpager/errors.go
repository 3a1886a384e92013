package arrowpager

import "errors"

// Errors returned by the arrowpager.
var (
	// ErrShape is returned when columns do not fit a table: a length that
	// differs from the table's row count, a duplicate or empty column name,
	// an appended record with another schema.
	ErrShape = errors.New("arrowpager: column does not fit the table")
	// ErrCorrupt is returned when pages received from the network do not
	// decode into a table (bad bytes, a missing block, a block of the wrong
	// type or length). Decoding never panics.
	ErrCorrupt = errors.New("arrowpager: corrupt page")
	// ErrConfig is returned by Config.Validate for an invalid configuration.
	ErrConfig = errors.New("arrowpager: invalid config")
)

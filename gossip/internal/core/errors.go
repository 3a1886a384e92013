package core

import "errors"

// The errors of the core. Package gossip re-exports ErrInvalidConfig.
var (
	// ErrInvalidConfig is returned (wrapped, naming the field) by
	// Config.Validate and NewNode when a knob is out of range.
	ErrInvalidConfig = errors.New("gossip: invalid config")
	// ErrMalformed is returned (wrapped) by DecodeMessage when a frame is
	// truncated, oversized, carries an unknown kind or breaks a field bound.
	// The caller drops the frame; the table is untouched.
	ErrMalformed = errors.New("gossip: malformed message")
)

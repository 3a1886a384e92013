package gossip

import "errors"

// The package's errors.
var (
	// ErrInvalidConfig is returned (wrapped, naming the field) by
	// Config.Validate and the constructors when a knob is out of range.
	ErrInvalidConfig = errors.New("gossip: invalid config")
	// ErrMalformed is returned (wrapped) by DecodeMessage when a frame is
	// truncated, oversized, carries an unknown kind or breaks a field bound.
	// The caller drops the frame; the table is untouched.
	ErrMalformed = errors.New("gossip: malformed message")
	// ErrClosed is returned by Agent and transport methods after Close.
	ErrClosed = errors.New("gossip: closed")
	// ErrUnreachable is returned by a Transport's Send when no link to the
	// address can be had; the same failure is also reported as a link event.
	ErrUnreachable = errors.New("gossip: unreachable")
)

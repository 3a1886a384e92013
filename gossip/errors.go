package gossip

import (
	"errors"

	"github.com/casty-go/casty/gossip/internal/core"
)

// The package's errors.
var (
	// ErrInvalidConfig is returned (wrapped, naming the field) by
	// Config.Validate and Start when a knob is out of range.
	ErrInvalidConfig = core.ErrInvalidConfig
	// ErrClosed is returned by Agent and transport methods after Close.
	ErrClosed = errors.New("gossip: closed")
	// ErrUnreachable is returned by a Transport's Send when no link to the
	// address can be had; the same failure is also reported as a link event.
	ErrUnreachable = errors.New("gossip: unreachable")
)

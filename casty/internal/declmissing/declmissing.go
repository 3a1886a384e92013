// Package declmissing declares an actor and a message that use types never
// registered. Its test checks that the package initialises (a missing
// registration is not a panic at init) and that no system starts with the
// registrations missing, each named with the line to add.
package declmissing

import (
	"context"

	"github.com/casty-go/casty/casty"
)

// Ledger is an actor whose state, argument and result use unregistered
// types.
type Ledger struct {
	Last Stamp
}

// Post takes an unregistered Entry.
func (l *Ledger) Post(ctx context.Context, e Entry) error { return nil }

// Batch takes a pointer to an unregistered Entry: reported once, with Post.
func (l *Ledger) Batch(ctx context.Context, e *Entry) error { return nil }

// Balance returns a registered Total whose field is an unregistered Amount.
func (l *Ledger) Balance(ctx context.Context) (Total, error) { return Total{}, nil }

// Ledgers uses Stamp, Entry and Amount, none of them registered.
var Ledgers = casty.Actor[Ledger](casty.Name("declmissing.Ledger"))

// Entry is never registered.
type Entry struct{ N int }

// Stamp is never registered.
type Stamp struct{ At int64 }

// Amount is never registered.
type Amount struct{ Cents int64 }

// Total is registered; its Amount is not.
type Total struct{ Sum Amount }

// Invoice is registered; its Note is not.
type Invoice struct{ Notes []Note }

// Note is never registered.
type Note struct{ Text string }

var (
	_ = casty.Message[Total]()
	_ = casty.Message[Invoice]()
)

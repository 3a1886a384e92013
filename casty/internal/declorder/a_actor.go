// Package declorder declares an actor in a file named before the file that
// registers its handler's argument and result types, so that Go initialises
// the actor's variable first. Its test checks that a system starts and
// serves it all the same: declaration order never matters.
package declorder

import (
	"context"

	"github.com/casty-go/casty/casty"
)

// Stock is an inventory of one warehouse, by SKU.
type Stock struct {
	Lines []Line
}

// Apply adds a change's lines to the stock and returns a receipt.
func (s *Stock) Apply(ctx context.Context, c Change) (Receipt, error) {
	s.Lines = append(s.Lines, c.Lines...)
	return Receipt{Lines: len(s.Lines)}, nil
}

// Stocks is declared here, before b_messages.go registers Change, Line and
// Receipt: package-level variables initialise file by file.
var Stocks = casty.Actor[Stock](casty.Name("declorder.Stock"))

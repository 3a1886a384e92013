package declorder

import "github.com/casty-go/casty/casty"

// Change is Apply's argument.
type Change struct {
	Lines []Line
}

// Line is one SKU's quantity.
type Line struct {
	Sku string
	N   int
}

// Receipt is Apply's result.
type Receipt struct{ Lines int }

var (
	_ = casty.Message[Change]()
	_ = casty.Message[Line]()
	_ = casty.Message[Receipt]()
)

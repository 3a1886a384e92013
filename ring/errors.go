package ring

import "errors"

// Errors returned by this package. Compare with errors.Is.
var (
	// ErrNilNode is returned by New when a member is the nil node id
	// (00000000-0000-0000-0000-000000000000), which this package reserves
	// to mean "no node".
	ErrNilNode = errors.New("ring: nil node id is not a valid member")

	// ErrBadNodeID is returned (wrapped, with the offending text) by
	// ParseNodeID and NodeID.UnmarshalText when the text is not a node id in
	// the canonical UUID form.
	ErrBadNodeID = errors.New("ring: malformed node id")
)

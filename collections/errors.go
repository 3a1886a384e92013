package collections

import "errors"

// Sentinels for errors.Is. Infrastructure failures are casty's own
// (casty.ErrTimeout, casty.ErrQuorumUnavailable, …) and pass through.
var (
	// ErrInvalidName: a collection's name is empty or longer than MaxName.
	ErrInvalidName = errors.New("collections: invalid name")
	// ErrInvalidOption: an option's value is out of range.
	ErrInvalidOption = errors.New("collections: invalid option")
	// ErrUndeclared: the replication triple's shard kind is not declared
	// in this process (see Declare).
	ErrUndeclared = errors.New("collections: replication triple not declared")
	// ErrMismatch: a collection of this name exists with another type,
	// replication triple, shard count, capacity or party count.
	ErrMismatch = errors.New("collections: opened differently before")
	// ErrTooLarge: an encoded key, value or element exceeds MaxItem.
	ErrTooLarge = errors.New("collections: item too large")
	// ErrNotEncodable: a key, value or element type cannot cross the
	// wire; the error names the type.
	ErrNotEncodable = errors.New("collections: type cannot be encoded")
	// ErrLeaseLost: a lease expired or was released, so Renew or Release
	// found it gone (another holder may have it now).
	ErrLeaseLost = errors.New("collections: lease lost")
)

package replica

import "errors"

// Errors returned by an owner's Session. Each says whether the write it
// refused may have taken effect: see Failure.Applied.
var (
	// ErrQuorumUnavailable is returned when fewer replicas than the quorum
	// answered in time (or could still answer: too many refused). A failed
	// commit is indeterminate: a minority may hold it and a later owner may
	// adopt it.
	ErrQuorumUnavailable = errors.New("replica: quorum unavailable")
	// ErrFenced is returned when a replica has promised a higher ballot: a
	// newer owner exists and this session must end.
	ErrFenced = errors.New("replica: fenced by a newer owner")
	// ErrFull is returned, wrapped with ErrQuorumUnavailable, when too many
	// replicas refused because they are at their limit (Replica.SetLimit)
	// and hold nothing of the actor: no new replicated state fits.
	ErrFull = errors.New("replica: replicas are full")
	// ErrCorrupt is returned for a malformed message, and in replies to one.
	ErrCorrupt = errors.New("replica: corrupt message")
	// ErrBusy is returned when a session is asked to start a round while
	// another runs: rounds are sequential per activation.
	ErrBusy = errors.New("replica: a round is in progress")
	// ErrClosed is returned by a session that already failed or ended.
	ErrClosed = errors.New("replica: session ended")
)

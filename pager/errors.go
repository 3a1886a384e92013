package pager

import (
	"errors"
	"fmt"
)

// Errors returned by the pager. Refusals from Store.Apply (ErrStaleOwner,
// ErrNeedFull) are definite: the store did not change.
var (
	// ErrStaleOwner is returned by Store.Apply when the store holds a commit
	// newer than the delta's basis: another owner wrote since, or a failed
	// commit left an orphan there. The replication layer tells the two apart
	// by ballot; a full page set is never refused with it.
	ErrStaleOwner = errors.New("pager: stale owner")
	// ErrNeedFull is returned by Store.Apply when the store is older than the
	// delta's basis (it missed a commit): the owner must resend the complete
	// page set (Pending.Full or Tracker.Full).
	ErrNeedFull = errors.New("pager: need full page set")
	// ErrPageTooLarge is matched (errors.Is) by *PageTooLargeError.
	ErrPageTooLarge = errors.New("pager: page too large")
	// ErrSchema is matched (errors.Is) by *SchemaError.
	ErrSchema = errors.New("pager: invalid state type")
	// ErrCorrupt is returned when bytes received from the network do not
	// decode as a delta, a page or a stamp.
	ErrCorrupt = errors.New("pager: corrupt data")
	// ErrPending is returned by Tracker.Prepare while an earlier prepared
	// commit has been neither committed nor rolled back.
	ErrPending = errors.New("pager: a prepared commit is pending")
	// ErrNotPending is returned by Commit and Rollback when given a commit that
	// is not the tracker's pending one.
	ErrNotPending = errors.New("pager: commit is not pending")
	// ErrWrongType is returned when a value of another type than the
	// tracker's schema is passed in.
	ErrWrongType = errors.New("pager: value of the wrong type")
	// ErrConfig is returned by Config.Validate for an invalid configuration.
	ErrConfig = errors.New("pager: invalid config")
)

// PageTooLargeError reports a page whose encoding exceeds Config.MaxPageSize.
// The commit is refused and the tracker keeps its previous committed page
// set and marks, as if Prepare had not run.
type PageTooLargeError struct {
	Key   string // full page key
	Size  int    // encoded size in bytes
	Limit int    // Config.MaxPageSize
}

// Error describes the page and the limit.
func (e *PageTooLargeError) Error() string {
	return fmt.Sprintf("pager: page %q is %d bytes, over the %d-byte limit", e.Key, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrPageTooLarge) true.
func (e *PageTooLargeError) Is(target error) bool { return target == ErrPageTooLarge }

// SchemaError reports a state field whose type cannot be paged, naming it.
type SchemaError struct {
	Field  string // dotted Go field path, e.g. "Orders"
	Reason string // why the field cannot be paged
}

// Error names the field and the reason.
func (e *SchemaError) Error() string {
	return fmt.Sprintf("pager: field %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

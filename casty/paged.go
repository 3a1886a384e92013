package casty

import (
	"reflect"

	"github.com/casty-go/casty/pager"
)

// TrackedMap is a map state field whose every mutator marks the keys it
// touches, so replication ships one page per touched entry instead of the
// whole map. V must be immutable (numbers, strings, bools, time.Time, and
// arrays and structs of those). It lives in package pager.
type TrackedMap[K comparable, V any] = pager.TrackedMap[K, V]

// Explanation lists each state field's paging regime; String renders it
// as a table.
type Explanation = pager.Explanation

// Explain reports how each state field of T is paged for replication:
// integral (re-encoded and compared, the default), tracked (a TrackedMap:
// one page per entry) or paged by its own pager (e.g. arrowpager.Table).
// The regime follows from the field's type, so it is never a surprise.
func Explain[T any]() (Explanation, error) {
	return pager.Explain(reflect.TypeFor[T]())
}

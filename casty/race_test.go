//go:build race

package casty_test

// Under the race detector sync.Pool drops items at random, so the pooled
// reply waiter is sometimes allocated afresh.
const maxCallAllocs = 3

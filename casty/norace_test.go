//go:build !race

package casty_test

const maxCallAllocs = 2

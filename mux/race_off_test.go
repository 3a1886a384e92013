//go:build !race

package mux_test

const raceEnabled = false

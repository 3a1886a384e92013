//go:build race

package mux_test

const raceEnabled = true

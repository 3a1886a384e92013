//go:build !unix

package casty_test

import "time"

// processCPU is not measured here: the CPU ratios are not reported.
func processCPU() time.Duration { return 0 }

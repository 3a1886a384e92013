package castytest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// porcupine's checker starts goroutines and must have finished with each
// by the time Verify returns; a cluster's members must have stopped every
// goroutine of theirs by the end of the test's cleanup.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

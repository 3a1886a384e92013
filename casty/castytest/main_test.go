package castytest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutine of its own; porcupine's checker starts
// some and must have finished with each by the time Verify returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

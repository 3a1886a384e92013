package hlc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (the concurrency
// test starts some).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

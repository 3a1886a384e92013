package virtual_test

import (
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// Members must have stopped every goroutine of theirs by the end of each
// test's cleanup; porcupine's checker must have finished with its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// envInt reads the integer environment variable name, or def when it is
// unset or not a number.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

package casty_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

// parallelTests is how many parallel tests (parallel in casty_test.go)
// run at once unless -parallel says otherwise. They mostly wait on the
// cluster's real-time timers (suspicion, RemoveDeadAfter, handoffs), so
// more of them than the machine has cores keeps it busy rather than
// overloaded; go test's default is GOMAXPROCS.
const parallelTests = "4"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", parallelTests)
	}
	goleak.VerifyTestMain(m)
}

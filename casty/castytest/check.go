package castytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CheckTimeout bounds Check's search. A history the checker cannot decide
// in this time fails the test as unknown: record fewer operations per
// object, or give the model a Partition.
const CheckTimeout = 30 * time.Second

// Check fails t unless h is linearizable under m. On failure it writes
// porcupine's visualisation to VisualizationPath(t) and names the file in
// the failure message (open it in a browser). It returns the result.
func Check[S, I, O any](t testing.TB, m Model[S, I, O], h *History[I, O]) Result {
	t.Helper()
	res := Verify(m, h.Ops(), CheckTimeout)
	if res.Ok() {
		return res
	}
	path := VisualizationPath(t)
	where := "visualisation: " + path
	if err := res.WriteHTML(path); err != nil {
		where = "writing the visualisation failed: " + err.Error()
	}
	t.Errorf("castytest: %s history of %d operations (%d indeterminate) is %s; %s",
		m.Name, res.Ops, res.Indeterminate, res.Verdict, where)
	return res
}

// VisualizationPath is where Check writes a failing test's visualisation:
// os.TempDir()/castytest/<test name>.html, the name made safe for a file
// system. It outlives the test (t.TempDir would not).
func VisualizationPath(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, t.Name())
	dir := filepath.Join(os.TempDir(), "castytest")
	_ = os.MkdirAll(dir, 0o755) // WriteHTML reports a missing directory
	return filepath.Join(dir, name+".html")
}

// Package examples runs every numbered example and checks what it prints.
package examples

import (
	"os/exec"
	"strings"
	"testing"
)

// Each example is a main package; run it the way the README says and check
// the lines that show what it demonstrates.
func TestExamples(t *testing.T) {
	cases := []struct {
		dir  string
		want []string
	}{
		{"01_hello_world", []string{"hello, world! (greeting #1)", "hello, again! (greeting #2)"}},
		{"02_lifecycle", []string{
			"[hook] activate alice: cache warmed",
			"welcome back, ALICE (visit #1)", "welcome back, ALICE (visit #2)",
			"[hook] deactivate alice after 2 visit(s)",
			"welcome back, ALICE (visit #1) - local state starts over",
			"[hook] deactivate alice after 1 visit(s)",
			"logged out: alice",
		}},
		{"04_supervision", []string{
			"total before failures: 150",
			`strike 1: "refused deposit of -1" -> keep`,
			`strike 2: "refused deposit of -1" -> keep`,
			`strike 3: "refused deposit of -1" -> reset`,
			"total after reset: 0",
		}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command("go", "run", "./"+c.dir).CombinedOutput()
			if err != nil {
				t.Fatalf("go run ./%s: %v\n%s", c.dir, err, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

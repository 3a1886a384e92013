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
		{"03_cluster", []string{
			"3 members, each sees 3 on its ring",
			"every key answered by one owner, whichever member called: true",
			"lite member routed 30 calls to their owners: true",
			"lite member hosts 0 activations and is on the ring: false",
		}},
		{"09_reactivation", []string{
			"watchtower beats on its owner (10 beats so far, life #1)",
			"after its owner left it resumed on another member, unprompted: a new life: true, beats carried over: true",
			"retired: running anywhere: false",
		}},
		{"04_supervision", []string{
			"total before failures: 150",
			`strike 1: "refused deposit of -1" -> keep`,
			`strike 2: "refused deposit of -1" -> keep`,
			`strike 3: "refused deposit of -1" -> reset`,
			"total after reset: 0",
		}},
		{"06_streaming", []string{
			"ingested 4 lines",
			"tail: listening on :8080", "tail: GET /health 200", "tail: shutdown requested",
			`len("boot") = 4`, `len("listening on :8080") = 18`, `len("shutdown requested") = 18`,
			"got 0\n", "got 4\n",
			"throttled by the consumer: true",
			"actor free again after break: true",
			`last entry: "numbers: stopped when the consumer left"`,
		}},
		{"07_service", []string{
			"stock of sku-1: 10",
			"elapsed under 1s: true",
			"all 12 in flight at once: true",
			"sold 10, refused 2, stock left 0",
			"oversold: false",
		}},
		{"08_paged_table", []string{
			"5 members, each replicating on a placement of 5",
			"Readings  Readings  arrowpager.Table  paged",
			"loaded 2000000 rows x 5 columns (80 MB)",
			"one cell shipped under 258 KiB: true",
			"owner left; the new owner restored c2[1234567] = -1.5 from the replicas: true",
		}},
		{"10_schedule", []string{
			"[hook] activate db-primary: not watching, nothing to arm",
			"check #1\n", "check #5\n",
			`alert "boot" (alert #1)`,
			"5 checks in, the one-shot has fired exactly once: alerts=1",
			"[hook] deactivate db-primary: state saved, schedules gone",
			"[hook] activate db-primary: Interval=50ms in state, check re-armed",
			"ticking again after reactivation: true",
		}},
		{"11_inspection", []string{
			"#1 shop.Order/order-1 activated",
			"#2 shop.Order/order-1 received Add arg={SKU:sku-1 Qty:2 Price:500}",
			"#3 shop.Order/order-1 completed Add result=1000 changed=true",
			"#5 shop.Order/order-1 completed Add result=2200 changed=true",
			"#7 shop.Order/order-1 completed Amount result=2200 changed=false",
			"#9 shop.Order/order-1 completed Pay result=<nil> changed=true",
			"#3 shop.Order/order-2 failed Pay: nothing to pay -> keep",
			"billing.Invoice.Issue: 1 call(s), 0 failed",
			"shop.Order.Add: 3 call(s), 0 failed",
			"shop.Order.Pay: 2 call(s), 1 failed",
			"order-1 active=true items=[sku-1 sku-2] total=2200 paid=true",
			"order-99 active=false",
		}},
		{"12_observability", []string{
			"2 members, metrics on http://127.0.0.1:",
			"one trace spans both members: true",
			"member-b  server   shop.Order.Pay",
			"member-a  client   shop.Order.Pay",
			`casty_calls_total{casty_actor_kind="shop.Order",casty_actor_method="Pay",casty_call_outcome="ok"} 1`,
			`casty_calls_total{casty_actor_kind="shop.Order",casty_actor_method="Cancel",casty_call_outcome="failed"} 1`,
			`casty_membership_members{casty_member_state="alive",casty_node=`,
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

package main

import (
	"bytes"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runMemberIfChild() // the members this test starts are this binary
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

// TestAttacksQuick runs every attack of the harness at small sizes
// against member processes (this test binary in member mode) and expects
// each to pass: what `castyattack -quick` does.
func TestAttacksQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts member processes; about a minute")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	results, err := runAttacks(exe, quickSizes, nil, false, func(r result) {
		t.Logf("%s  %s [%s]: %s", verdict(r), r.attack, r.mode, r.outcome)
	})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	printTable(&table, results)
	t.Log("\n" + table.String())
	// The failed rows come last, where a log's tail shows them.
	want := map[string]bool{"relay": false, "hello": false, "starve": false, "claim": false, "flood": false}
	for _, r := range results {
		want[r.group] = true
		if !r.pass {
			t.Errorf("FAIL %s [%s]: %s", r.attack, r.mode, r.outcome)
			for _, w := range r.warnings {
				t.Logf("  %s", w)
			}
		}
	}
	for k, ran := range want {
		if !ran {
			t.Errorf("no %s attack ran", k)
		}
	}
}

// TestRunExitsNonZeroOnAFailedRow: the command's exit code is 1 when a
// row fails, 0 when all pass, 2 on bad flags.
func TestRunExitsNonZeroOnAFailedRow(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
	if code := exitCode([]result{{pass: true}, {pass: false}}); code != 1 {
		t.Fatalf("a failed row: exit %d, want 1", code)
	}
	if code := exitCode([]result{{pass: true}}); code != 0 {
		t.Fatalf("all passed: exit %d, want 0", code)
	}
}

// The compressed flood's verdict: past the connections' budgets some must
// be refused; within one connection's none may be; within two
// connections' together (a redial under load) all may run.
func TestCompressedVerdictAcrossRedials(t *testing.T) {
	const size = 4 << 20
	for _, tc := range []struct {
		n, conns, admitted, overloaded, other int64
		pass                                  bool
	}{
		{20, 1, 16, 4, 0, true},  // past one connection's budget: refusals
		{20, 1, 20, 0, 0, false}, // past it, nothing refused
		{20, 2, 20, 0, 0, true},  // two connections hold all 80 MiB
		{20, 2, 17, 3, 0, true},  // or one of them overflowed
		{20, 2, 19, 0, 1, false}, // any other failure
		{40, 2, 40, 0, 0, false}, // past two connections' budgets, nothing refused
		{10, 1, 10, 0, 0, true},  // within one connection's budget
		{10, 1, 9, 1, 0, false},  // a refusal within the budget
	} {
		pass, _ := compressedVerdict(tc.n, size, tc.conns, tc.admitted, tc.overloaded, tc.other)
		if pass != tc.pass {
			t.Errorf("%d requests over %d connection(s), %d run, %d refused, %d other: pass %v, want %v",
				tc.n, tc.conns, tc.admitted, tc.overloaded, tc.other, pass, tc.pass)
		}
	}
}

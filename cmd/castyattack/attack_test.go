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
	want := map[string]bool{"relay": false, "hello": false, "starve": false, "claim": false, "flood": false}
	for _, r := range results {
		want[r.group] = true
		if !r.pass {
			t.Errorf("FAIL %s [%s]: %s", r.attack, r.mode, r.outcome)
		}
	}
	for k, ran := range want {
		if !ran {
			t.Errorf("no %s attack ran", k)
		}
	}
	var table bytes.Buffer
	printTable(&table, results)
	t.Log("\n" + table.String())
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

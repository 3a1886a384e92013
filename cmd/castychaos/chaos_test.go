package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	runFakeMember()
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			println("goleak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build compiles castychaos once per test binary into a directory the
// tests share (members re-execute it, so it must be a real executable).
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "castychaos-test-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "castychaos")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + ": " + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// chaosRun runs castychaos with args, bounded by duration + 2 min, and
// returns its exit code and output.
func chaosRun(t *testing.T, duration time.Duration, args ...string) (int, string) {
	t.Helper()
	bin := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-duration", duration.String()}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	// A failed run keeps its member logs and visualisation for a person
	// to read. The test removes them when it passes (a run that failed a
	// check the test expects, such as -replicas 1 losing writes); when the
	// test fails they stay, since CI prints only the head of its output.
	for _, m := range logsRE.FindAllStringSubmatch(out.String(), -1) {
		if strings.HasPrefix(filepath.Base(m[1]), "castychaos-") {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("castychaos member logs kept in %s", m[1])
					return
				}
				os.RemoveAll(m[1])
			})
		}
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("castychaos %v: %v\n%s", args, err, out.String())
	return -1, ""
}

// logsRE finds the run's log directory in its output.
var logsRE = regexp.MustCompile(`logs in (/\S+)`)

// rowRE matches a summary row: workload, operations, ok, failed,
// indeterminate, lost, linearizable, result.
var rowRE = regexp.MustCompile(`(?m)^(register|set|counter|ledger|cset|ccounter|cqueue|clock|cregister)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(PASS|FAIL)`)

type summaryRow struct {
	workload     string
	ops, lost    int
	linearizable string
	pass         bool
}

func parseSummary(t *testing.T, out string) []summaryRow {
	t.Helper()
	var rows []summaryRow
	for _, m := range rowRE.FindAllStringSubmatch(out, -1) {
		ops, _ := strconv.Atoi(m[2])
		lost, _ := strconv.Atoi(m[6])
		rows = append(rows, summaryRow{workload: m[1], ops: ops, lost: lost, linearizable: m[7], pass: m[8] == "PASS"})
	}
	if len(rows) == 0 {
		t.Fatalf("no summary table in the output:\n%s", out)
	}
	return rows
}

// With a single copy of each actor, killing its owner loses its state by
// design: the tool must find that loss, report it and fail the run.
func TestChaosFindsTheLossOfASingleCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs member processes for ~15 s")
	}
	code, out := chaosRun(t, 12*time.Second, "-seed", "1", "-members", "3", "-replicas", "1",
		"-nemesis", "kill", "-interval", "2s", "-workload", "register,set,counter,ledger")
	t.Logf("castychaos -replicas 1:\n%s", out)
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (a check failed)", code)
	}
	if !strings.Contains(out, "seed 1 ") || !strings.Contains(out, "kill -9 member") {
		t.Fatalf("the output does not print its seed and the faults it injected")
	}
	lost := 0
	for _, r := range parseSummary(t, out) {
		lost += r.lost
		if r.lost > 0 && r.pass {
			t.Errorf("%s reports %d lost and passes", r.workload, r.lost)
		}
	}
	if lost == 0 {
		t.Fatalf("members holding the only copy were killed and no workload reports a loss")
	}
}

// With three copies and majority quorums nothing acknowledged may be lost,
// and the register's history must be linearizable, through kills, pauses
// and partitions of real member processes.
func TestChaosReplicatedLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs member processes for ~20 s")
	}
	code, out := chaosRun(t, 15*time.Second, "-seed", "2", "-members", "5", "-replicas", "3", "-interval", "2s")
	t.Logf("castychaos -replicas 3:\n%s", out)
	parseSummary(t, out)
	if code != 0 {
		t.Fatalf("castychaos -replicas 3 failed a check (exit %d):\n%s", code, summaryOf(out))
	}
	for _, r := range parseSummary(t, out) {
		if r.lost != 0 || !r.pass {
			t.Errorf("%s: %d lost, pass=%v", r.workload, r.lost, r.pass)
		}
	}
	// Half the register operations ran through members, which replicas
	// answer early: the history above covers early answers under kills,
	// pauses and partitions.
	m := relayedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no relay line in the summary:\n%s", summaryOf(out))
	}
	if relayed, early := atoi(t, m[1]), atoi(t, m[2]); relayed == 0 || early == 0 {
		t.Fatalf("%d register operations ran through a member, %d while it answered a call early: early answers were not exercised", relayed, early)
	}
}

var relayedRE = regexp.MustCompile(`(\d+) ran through a member \(Relay\), (\d+) of them while it answered a call early`)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Clock skew, alone and combined with kills and partitions: every member
// starts with its replication clock off by up to ±500 ms (-max-drift 1s)
// and the nemesis restarts members with new skews. Nothing acknowledged
// may be lost and the register's history must be linearizable.
func TestChaosSkewLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs member processes for ~20 s")
	}
	code, out := chaosRun(t, 15*time.Second, "-seed", "3", "-members", "5", "-replicas", "3", "-interval", "2s",
		"-nemesis", "skew,kill,partition", "-max-drift", "1s", "-registers", "8")
	t.Logf("castychaos -nemesis skew,kill,partition:\n%s", out)
	if !strings.Contains(out, "clock skews within ±500ms") || !strings.Contains(out, "gracefully with clock skew") {
		t.Fatalf("the run did not skew the members' clocks:\n%s", out)
	}
	if !regexp.MustCompile(`register: \d+ operations on 8 registers checked`).MatchString(out) {
		t.Fatalf("the register workload did not use -registers 8:\n%s", summaryOf(out))
	}
	rows := parseSummary(t, out)
	if code != 0 {
		t.Fatalf("castychaos under skew failed a check (exit %d):\n%s", code, summaryOf(out))
	}
	if len(rows) != 4 {
		t.Fatalf("%d workloads in the summary, want 4:\n%s", len(rows), summaryOf(out))
	}
	for _, r := range rows {
		if r.lost != 0 || !r.pass || r.ops == 0 {
			t.Errorf("%s: %d operations, %d lost, pass=%v", r.workload, r.ops, r.lost, r.pass)
		}
		if r.workload == "register" && r.linearizable != "yes" {
			t.Errorf("register: linearizable %q, want yes", r.linearizable)
		}
	}
}

// The collection workloads (Set, Counter, Queue, Lock and Register of
// package collections, whose shards are replicated actors on the member
// processes) through kills and pauses of their owners: nothing
// acknowledged lost, queue values seen no more often than offered, lock
// tokens increasing with no two holders overlapping, and a linearizable
// register history.
func TestChaosCollectionsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs member processes for ~25 s")
	}
	code, out := chaosRun(t, 15*time.Second, "-seed", "5", "-members", "5", "-replicas", "3", "-interval", "2s",
		"-nemesis", "kill,pause", "-workload", "collections")
	t.Logf("castychaos -workload collections -nemesis kill,pause:\n%s", out)
	if !strings.Contains(out, "workloads cset,ccounter,cqueue,clock,cregister,") {
		t.Fatalf("-workload collections did not select the five collection workloads:\n%s", out)
	}
	if !regexp.MustCompile(`(kill -9|SIGSTOP) member`).MatchString(out) {
		t.Fatalf("no kill or pause injected:\n%s", out)
	}
	rows := parseSummary(t, out)
	if code != 0 {
		t.Fatalf("castychaos -workload collections failed a check (exit %d):\n%s", code, summaryOf(out))
	}
	if len(rows) != 5 {
		t.Fatalf("%d workloads in the summary, want 5:\n%s", len(rows), summaryOf(out))
	}
	for _, r := range rows {
		if r.lost != 0 || !r.pass || r.ops == 0 {
			t.Errorf("%s: %d operations, %d lost, pass=%v", r.workload, r.ops, r.lost, r.pass)
		}
		if r.workload == "cregister" && r.linearizable != "yes" {
			t.Errorf("cregister: linearizable %q, want yes", r.linearizable)
		}
	}
	for _, want := range []string{
		"cset: ", "0 not contained at the end", "0 never added",
		"cqueue: ", "0 copies seen beyond the Offers that may have succeeded; 0 values never offered",
		"clock: ", "0 times a token did not exceed the previous holder's, 0 critical sections interleaved",
		"0 holders refused although their Do reported nothing lost",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, summaryOf(out))
		}
	}
}

// TestChaosSoak is the long run behind CASTY_CHAOS_SOAK=1 (duration from
// CASTY_CHAOS_SOAK_DURATION, default 10m): every workload, every nemesis
// (clock skew included), replicas 3, the workloads running the whole
// duration (-max-ops high) over 16 registers so porcupine can decide the
// history. It fails on any loss.
func TestChaosSoak(t *testing.T) {
	if os.Getenv("CASTY_CHAOS_SOAK") != "1" {
		t.Skip("set CASTY_CHAOS_SOAK=1 for the long soak")
	}
	d := 10 * time.Minute
	if s := os.Getenv("CASTY_CHAOS_SOAK_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-members", "5", "-replicas", "3", "-max-ops", "1000000", "-registers", "16"}
	if s := os.Getenv("CASTY_CHAOS_SEED"); s != "" {
		args = append(args, "-seed", s)
	}
	code, out := chaosRun(t, d, args...)
	t.Logf("castychaos soak:\n%s", out)
	if code != 0 {
		t.Fatalf("the soak failed (exit %d)", code)
	}
}

// heldModes are the nemeses that exercise the faults removal by
// agreement must survive, each with what its log line shows, and whether
// it cuts links (iptables, root only).
var heldModes = []struct {
	nemesis string
	logged  *regexp.Regexp
	cuts    bool
}{
	{faultIsolate, regexp.MustCompile(`isolate member \[\d+\]: cut off from every other member and the lite member`), true},
	{faultMinority, regexp.MustCompile(`minority partition: members \[\d+ \d+\] \(members \d+ and \d+ hold two of the 3 copies of reg-\d+\) cut off from the majority and the lite member`), true},
	{faultOneWay, regexp.MustCompile(`one-way cut: nothing`), true},
	{faultBridged, regexp.MustCompile(`bridged partition: members \[\d+ \d+\] cut off from the other members, the lite member reaching both sides`), true},
	{faultClose, regexp.MustCompile(`close member \d+ \(\S+\) gracefully \(SIGTERM\) right after an acknowledged write to castychaos\.\w+ \S+, which it owns`), false},
}

// heldRun runs one held mode for d with faults held past RemoveDeadAfter
// and checks it: the fault was injected and logged, the cluster settled
// after healing, nothing acknowledged was lost and the register history
// is linearizable.
func heldRun(t *testing.T, d time.Duration, nemesis string, logged *regexp.Regexp, cuts bool, extra ...string) {
	t.Helper()
	if cuts && os.Geteuid() != 0 {
		t.Skip("cuts links with iptables: needs root")
	}
	args := append([]string{"-seed", "4", "-members", "5", "-replicas", "3", "-interval", "2s", "-hold", "4s..6s",
		"-nemesis", nemesis, "-registers", "8"}, extra...)
	code, out := chaosRun(t, d, args...)
	t.Logf("castychaos -nemesis %s:\n%s", nemesis, out)
	if strings.Contains(out, "nemesis skipped") {
		t.Skip("iptables unavailable: " + lastLine(out))
	}
	if !strings.Contains(out, "faults held 4s..6s; members remove a member a majority saw dead for Replication.RemoveDeadAfter 3s") {
		t.Fatalf("the run does not print its hold and RemoveDeadAfter:\n%s", out)
	}
	if !logged.MatchString(out) {
		t.Fatalf("no %s fault logged (want %s):\n%s", nemesis, logged, out)
	}
	if !strings.Contains(out, "settled ") || !strings.Contains(out, "every one of the 13 keys has its replicas up and answers a read") {
		t.Fatalf("the run did not report the cluster settled before the final reads:\n%s", summaryOf(out))
	}
	rows := parseSummary(t, out)
	if code != 0 {
		t.Fatalf("castychaos -nemesis %s failed a check (exit %d):\n%s", nemesis, code, summaryOf(out))
	}
	for _, r := range rows {
		if r.lost != 0 || !r.pass || r.ops == 0 {
			t.Errorf("%s: %d operations, %d lost, pass=%v", r.workload, r.ops, r.lost, r.pass)
		}
		if r.workload == "register" && r.linearizable != "yes" {
			t.Errorf("register: linearizable %q, want yes", r.linearizable)
		}
	}
}

// Each fault that used to lose acknowledged writes, held past the
// members' RemoveDeadAfter (3 s) so the majority removes the member it
// hits: nothing acknowledged may be lost, the register's history must be
// linearizable and the cluster must settle after healing.
func TestChaosHeldFaultsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs member processes for ~20 s per mode")
	}
	for _, m := range heldModes {
		t.Run(m.nemesis, func(t *testing.T) {
			heldRun(t, 12*time.Second, m.nemesis, m.logged, m.cuts)
		})
	}
}

// TestChaosHeldSoak runs each held mode for CASTY_CHAOS_SOAK_HELD_DURATION
// (default 3m) behind CASTY_CHAOS_SOAK=1, every workload running the
// whole time.
func TestChaosHeldSoak(t *testing.T) {
	if os.Getenv("CASTY_CHAOS_SOAK") != "1" {
		t.Skip("set CASTY_CHAOS_SOAK=1 for the long soak")
	}
	d := 3 * time.Minute
	if s := os.Getenv("CASTY_CHAOS_SOAK_HELD_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range heldModes {
		t.Run(m.nemesis, func(t *testing.T) {
			heldRun(t, d, m.nemesis, m.logged, m.cuts, "-max-ops", "1000000")
		})
	}
}

// summaryOf is the output from the summary line on.
func summaryOf(out string) string {
	if i := strings.LastIndex(out, "castychaos: seed "); i >= 0 {
		return out[i:]
	}
	return out
}

// The flags are checked before anything starts.
func TestChaosRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workload", "queue"},
		{"-workload", "collections,lock"},
		{"-nemesis", "meteor"},
		{"-members", "0"},
		{"-registers", "0"},
		{"-max-drift", "-1s"},
		{"-hold", "0s"},
		{"-hold", "3s..1s"},
		{"-hold", "1s..31s"},
		{"-hold", "soon"},
	} {
		var out bytes.Buffer
		if code := run(args, &out, &out); code != 2 {
			t.Errorf("run(%v) = %d, want 2:\n%s", args, code, out.String())
		}
	}
}

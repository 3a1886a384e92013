package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/casty-go/casty/casty/castytest"
)

// fakeMemberEnv, set to a file's path, makes the test binary run as a
// fake member when the nemesis starts it ("member" and the member's
// flags): it listens on its address, appends "start <addr> <skew>" to the
// file, and on SIGTERM appends "term <addr>" and exits. No casty runs, so
// the nemesis's plumbing is tested in milliseconds.
const fakeMemberEnv = "CASTYCHAOS_FAKE_MEMBER"

func fakeMember(path string, args []string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fs := flag.NewFlagSet("fake member", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	fs.String("seeds", "", "")
	fs.Int("replicas", 0, "")
	fs.String("cluster", "", "")
	fs.Bool("v", false, "")
	skew := fs.Duration("skew", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 1
	}
	defer ln.Close()
	record := func(line string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
	record(fmt.Sprintf("start %s %s", *addr, *skew))
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-term:
		record("term " + *addr)
	case <-eof:
	}
	return 0
}

// TestMain's first lines (chaos_test.go) run fakeMember when the
// environment asks for it.
func runFakeMember() {
	if path := os.Getenv(fakeMemberEnv); path != "" && len(os.Args) > 1 && os.Args[1] == "member" {
		os.Exit(fakeMember(path, os.Args[2:]))
	}
}

func TestDrawSkewStaysWithinHalfTheDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var neg, pos bool
	for range 10000 {
		d := drawSkew(rng, 300*time.Millisecond)
		if d < -150*time.Millisecond || d > 150*time.Millisecond || d%time.Millisecond != 0 {
			t.Fatalf("drawSkew(300ms) = %v, want whole milliseconds within ±150ms", d)
		}
		neg, pos = neg || d < 0, pos || d > 0
	}
	if !neg || !pos {
		t.Fatalf("10000 skews drawn, negative %v, positive %v: want both", neg, pos)
	}
	if d := drawSkew(rng, time.Millisecond); d != 0 {
		t.Fatalf("drawSkew(1ms) = %v, want 0 (no whole millisecond fits in ±0.5ms)", d)
	}
}

// The skew fault, alone and combined with kills, over fake member
// processes: a skewed restart is graceful (SIGTERM) and hands the new
// process a -skew within ±maxDrift/2, the one it logs; a kill restarts a
// member with the skew it had; every fault is logged and counted, and
// every member runs after each round.
func TestNemesisSkewRestartsMembersWithinMaxDrift(t *testing.T) {
	events := t.TempDir() + "/events"
	t.Setenv(fakeMemberEnv, events)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProcs(exe, "test", 5, 3, false, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stopAll(5 * time.Second) })
	const maxDrift = 400 * time.Millisecond
	rng := rand.New(rand.NewPCG(7, skewStream))
	for _, m := range p.members {
		m.setSkew(drawSkew(rng, maxDrift))
		if err := p.start(m, nil); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	n := &nemesis{procs: p, faults: []string{faultSkew, faultKill}, combine: true, interval: time.Second, maxDrift: maxDrift,
		rng: rand.New(rand.NewPCG(7, 0)), out: &out, start: time.Now(), counts: map[string]int{}}
	ended, cancel := context.WithCancel(context.Background())
	cancel() // every hold ends at once: inject, heal, next round
	// Every fake listens once it has recorded its start and is ready
	// for SIGTERM.
	ready := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, m := range p.members {
			if err := waitListening(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	ready()
	const rounds = 16
	for range rounds {
		n.round(ended)
		ready()
		for _, m := range p.members {
			if st := m.current(); st != running {
				t.Fatalf("member %d is %v after a round, want running:\n%s", m.index, st, out.String())
			}
		}
	}
	p.stopAll(5 * time.Second) // every fake has recorded its last start

	logged := map[string][]time.Duration{} // addr → skews the nemesis logged, in order
	for _, mm := range skewLogRE.FindAllStringSubmatch(out.String(), -1) {
		d, err := time.ParseDuration(strings.TrimPrefix(mm[2], "+"))
		if err != nil {
			t.Fatal(err)
		}
		logged[mm[1]] = append(logged[mm[1]], d)
	}
	skews, kills := n.counts[faultSkew], n.counts[faultKill]
	if skews == 0 || kills == 0 || strings.Count(out.String(), "kill -9 member") != kills {
		t.Fatalf("%d skew and %d kill faults counted, want both and each logged:\n%s", skews, kills, out.String())
	}
	total := 0
	for _, l := range logged {
		total += len(l)
	}
	if total != skews {
		t.Fatalf("%d skewed restarts logged, %d counted:\n%s", total, skews, out.String())
	}

	// Replay the fakes' events per address.
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type life struct {
		skew    time.Duration
		termed  bool // the last process got SIGTERM (a graceful restart or the end)
		starts  int
		changed []time.Duration // skews started with after a SIGTERM, in order
	}
	lives := map[string]*life{}
	starts, terms := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		addr := fields[1]
		l := lives[addr]
		switch fields[0] {
		case "start":
			starts++
			d, err := time.ParseDuration(fields[2])
			if err != nil {
				t.Fatal(err)
			}
			if d < -maxDrift/2 || d > maxDrift/2 {
				t.Errorf("%s started with skew %v, beyond ±%v", addr, d, maxDrift/2)
			}
			if l == nil {
				lives[addr] = &life{skew: d, starts: 1}
				continue
			}
			switch {
			case l.termed:
				l.changed = append(l.changed, d)
			case d != l.skew:
				t.Errorf("%s restarted after a kill with skew %v, want the %v it had", addr, d, l.skew)
			}
			l.skew, l.termed = d, false
			l.starts++
		case "term":
			terms++
			l.termed = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if want := len(p.members) + skews + kills; starts != want {
		t.Errorf("%d processes started, want %d (5 + %d skews + %d kills)", starts, want, skews, kills)
	}
	if want := skews + len(p.members); terms != want {
		t.Errorf("%d SIGTERMs recorded, want %d (one per skewed restart, one per member at the end)", terms, want)
	}
	for _, m := range p.members {
		l := lives[m.addr]
		if l == nil {
			t.Fatalf("member %d never started", m.index)
		}
		if !slices.Equal(l.changed, logged[m.addr]) {
			t.Errorf("member %d was restarted gracefully with skews %v, the nemesis logged %v", m.index, l.changed, logged[m.addr])
		}
		if l.skew != m.clockSkew() {
			t.Errorf("member %d's last process ran with skew %v, the controller records %v", m.index, l.skew, m.clockSkew())
		}
	}
}

// skewLogRE matches the nemesis's line for a skewed restart: address and
// new skew.
var skewLogRE = regexp.MustCompile(`restart member \d+ \((\S+)\) gracefully with clock skew (\S+) \(was`)

// -hold parses a range or one duration, and draws within it.
func TestHoldRange(t *testing.T) {
	var h holdRange
	if err := h.Set("6s..9s"); err != nil {
		t.Fatal(err)
	}
	if h.String() != "6s..9s" {
		t.Fatalf("String() = %q", h.String())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		if d := h.draw(rng); d < 6*time.Second || d > 9*time.Second {
			t.Fatalf("draw = %v, want within 6s..9s", d)
		}
	}
	if err := h.Set("5s"); err != nil || h.draw(rng) != 5*time.Second || h.String() != "5s" {
		t.Fatalf("Set(5s): %v, %v", err, h)
	}
	if err := h.Set("30s"); err != nil {
		t.Fatalf("Set(30s) = %v, want accepted (10 × RemoveDeadAfter)", err)
	}
	for _, bad := range []string{"", "0s", "-1s..2s", "3s..1s", "1s..31s", "1s..x"} {
		if err := h.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	if defaultHold.String() != "1s..3s" {
		t.Fatalf("default hold %s, want 1s..3s", &defaultHold)
	}
}

// The close fault over fake members (no lite member to ask where keys
// live): it stops a member gracefully, counts and logs it, and restarts it
// at the heal.
func TestNemesisCloseRestartsGracefully(t *testing.T) {
	events := t.TempDir() + "/events"
	t.Setenv(fakeMemberEnv, events)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProcs(exe, "test", 3, 3, false, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stopAll(5 * time.Second) })
	for _, m := range p.members {
		if err := p.start(m, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range p.members {
		if err := waitListening(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	n := &nemesis{procs: p, faults: []string{faultClose}, interval: time.Second, hold: holdRange{time.Millisecond, time.Millisecond},
		rng: rand.New(rand.NewPCG(9, 0)), out: &out, start: time.Now(), counts: map[string]int{}}
	n.round(context.Background())
	if n.counts[faultClose] != 1 || !strings.Contains(out.String(), "gracefully (SIGTERM) owning no workload key") ||
		!strings.Contains(out.String(), "after close") {
		t.Fatalf("one close logged, then its restart, want both:\n%s", out.String())
	}
	for _, m := range p.members {
		if err := waitListening(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	p.stopAll(5 * time.Second)
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "term "); got != 4 {
		t.Fatalf("%d SIGTERMs recorded, want 4 (the close and 3 at the end):\n%s", got, b)
	}
}

// The ack feed hands a waiter the first acknowledged write to one of its
// keys, ignores others, and gives up after its bound.
func TestAckFeed(t *testing.T) {
	f := newAckFeed()
	want := []kindKey{{"k", "a"}, {"k", "b"}}
	got := make(chan kindKey, 1)
	go func() {
		kk, _ := f.wait(context.Background(), want, 10*time.Second)
		got <- kk
	}()
	for {
		f.mu.Lock()
		n := len(f.waiters)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.acked("k", "c")
	f.acked("other", "a")
	f.acked("k", "b")
	f.acked("k", "a")
	if kk := <-got; kk != (kindKey{"k", "b"}) {
		t.Fatalf("wait = %v, want k/b", kk)
	}
	if _, ok := f.wait(context.Background(), want, time.Millisecond); ok {
		t.Fatal("wait with no write returned one")
	}
	var nilFeed *ackFeed
	nilFeed.acked("k", "a")
}

// verifyEach says, register by register, which histories are
// linearizable: a read of a value never written is not.
func TestVerifyEachNamesTheRegister(t *testing.T) {
	h := castytest.NewHistory[registerOp, registerResult]()
	h.Begin(0, castytest.WriteOp("reg-0", int64(5))).Return(castytest.Written[int64](), nil)
	h.Begin(0, castytest.ReadOp[int64]("reg-0")).Return(castytest.Read(int64(5)), nil)
	h.Begin(1, castytest.WriteOp("reg-1", int64(7))).Return(castytest.Written[int64](), nil)
	h.Begin(1, castytest.ReadOp[int64]("reg-1")).Return(castytest.Read(int64(8)), nil)
	got := verifyEach(h.Ops())
	if !strings.HasPrefix(got, "1 of 2 linearizable, reg-1 not linearizable (2 operations, 0 indeterminate)") {
		t.Fatalf("verifyEach = %q", got)
	}
}

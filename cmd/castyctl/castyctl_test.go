package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/casty/schema"
	"github.com/casty-go/casty/internal/wait"
	"go.uber.org/goleak"
)

// A test binary started with CASTYCTL_WRITE_SCHEMA set is a program that
// writes its schema (what `castyctl schema -- PROG` runs).
func TestMain(m *testing.M) {
	if os.Getenv("CASTYCTL_WRITE_SCHEMA") != "" {
		if err := casty.WriteSchema(os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// Counter is the test cluster's actor.
type Counter struct {
	N    int
	Last string `msgpack:"last"`
}

func (c *Counter) Add(_ context.Context, by string) (int, error) {
	c.N++
	c.Last = by
	return c.N, nil
}

// Account is a replicated actor.
type Account struct{ Balance int64 }

func (a *Account) Deposit(_ context.Context, n int64) (int64, error) {
	a.Balance += n
	return a.Balance, nil
}

var (
	Counters = casty.Actor[Counter](casty.Name("ctl.Counter"))
	Accounts = casty.Actor[Account](casty.Name("ctl.Account"), casty.Replicas(3), casty.Write(casty.Majority))
)

func fastConfig() casty.Config {
	return casty.Config{
		Actors: casty.ActorConfig{
			DrainTimeout: 5 * time.Second,
			CallTimeout:  5 * time.Second,
		},
		Replication: casty.ReplicationConfig{
			Timeout:         2 * time.Second,
			RemoveDeadAfter: time.Hour,
		},
		Transport: casty.TransportConfig{
			KeepAliveInterval: 200 * time.Millisecond,
			KeepAliveTimeout:  500 * time.Millisecond,
		},
		Membership: casty.MembershipConfig{
			SuspicionTimeout:    500 * time.Millisecond,
			ShuffleInterval:     time.Second,
			AntiEntropyInterval: time.Second,
			JoinTimeout:         5 * time.Second,
		},
	}
}

func quiet() casty.Option { return casty.WithLogger(slog.New(slog.DiscardHandler)) }

// startCluster starts n real members on loopback and waits until every
// one sees all and has synced what it replicates.
func startCluster(t *testing.T, n int, opts ...casty.Option) []*casty.System {
	t.Helper()
	var nodes []*casty.System
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		o := append([]casty.Option{casty.WithConfig(fastConfig()), quiet()}, opts...)
		if i > 0 {
			o = append(o, casty.Seeds(nodes[0].Addr()))
		}
		sys, err := casty.Start(ctx, "127.0.0.1:0", o...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sys.Close(ctx)
		})
		nodes = append(nodes, sys)
	}
	wait.For(t, 20*time.Second, "every member ready with all members", func() bool {
		for _, s := range nodes {
			if len(s.Members()) != n || !s.Health().Ready {
				return false
			}
		}
		return true
	})
	return nodes
}

// ctl runs castyctl against seed and returns its exit code and output.
func ctl(t *testing.T, seed string, args ...string) (int, string, string) {
	t.Helper()
	return ctlWith(t, seed, nil, args...)
}

func ctlWith(t *testing.T, seed string, spyReady func(), args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o := &options{seeds: seed, timeout: 10 * time.Second, settle: 300 * time.Millisecond,
		stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
		connectOverrides: []casty.Option{casty.WithConfig(fastConfig())}, spyReady: spyReady}
	code := o.run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

func TestCastyctlAgainstACluster(t *testing.T) {
	nodes := startCluster(t, 3)
	seed := nodes[0].Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("members", func(t *testing.T) {
		code, out, errOut := ctl(t, seed, "members")
		t.Logf("castyctl members:\n%s", out)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !strings.HasPrefix(lines[0], "ADDRESS") || !strings.Contains(lines[0], "INCARNATION") {
			t.Errorf("header %q", lines[0])
		}
		for _, n := range nodes {
			if !strings.Contains(out, n.Addr()+"  "+n.ID()) || !strings.Contains(out, "member  alive") {
				t.Errorf("members output lacks %s alive:\n%s", n.Addr(), out)
			}
		}
		code, out, _ = ctl(t, seed, "members", "-json")
		var rows []inspect.MemberStatus
		if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil {
			t.Fatalf("members -json: exit %d, %v:\n%s", code, err, out)
		}
		full := 0
		for _, r := range rows {
			if !r.Lite && r.State == "alive" {
				full++
			}
		}
		if full != 3 {
			t.Errorf("members -json lists %d alive full members, want 3: %+v", full, rows)
		}
		for _, r := range rows {
			if r.Lite && r.State == "left" {
				t.Errorf("members lists a lite member that left (an earlier castyctl) without -all: %+v", r)
			}
		}
		// The castyctl runs above left: -all lists them.
		wait.For(t, 20*time.Second, "members -all to list a lite member that left", func() bool {
			code, out, _ = ctl(t, seed, "members", "-all", "-json")
			return code == exitOK && json.Unmarshal([]byte(out), &rows) == nil &&
				slices.ContainsFunc(rows, func(r inspect.MemberStatus) bool { return r.Lite && r.State == "left" })
		})
	})

	t.Run("ring", func(t *testing.T) {
		// Each castyctl run is a new lite member, whose view of the live
		// members can briefly miss one (a suspicion under the test's short
		// timeouts): ask again until it shows all three.
		var code int
		var out string
		wait.For(t, 20*time.Second, "castyctl ring to list the three members", func() bool {
			code, out, _ = ctl(t, seed, "ring")
			return code == exitOK && strings.Count(out, "  128  ") == 3
		})
		t.Logf("castyctl ring:\n%s", out)
		for _, n := range nodes {
			if !strings.Contains(out, n.Addr()) {
				t.Errorf("ring output lacks %s:\n%s", n.Addr(), out)
			}
		}
		var rows []inspect.RangeShare
		wait.For(t, 20*time.Second, "castyctl ring -json to list the three members", func() bool {
			code, out, _ = ctl(t, seed, "ring", "-json")
			return code == exitOK && json.Unmarshal([]byte(out), &rows) == nil && len(rows) == 3
		})
		var share float64
		for _, r := range rows {
			share += r.Share
		}
		if math.Abs(share-1) > 1e-9 {
			t.Errorf("shares sum to %v", share)
		}

		owner, _ := nodes[0].OwnerOf(Counters.Name(), "alice")
		wait.For(t, 20*time.Second, "castyctl ring ctl.Counter alice to name its owner alone", func() bool {
			code, out, _ = ctl(t, seed, "ring", Counters.Name(), "alice")
			return code == exitOK && strings.Contains(out, "owner  "+owner.Addr) && strings.Count(out, "\n") == 3
		})
		t.Logf("castyctl ring ctl.Counter alice:\n%s", out)
		code, out, _ = ctl(t, seed, "ring", "-replicas", "3", "-json", Accounts.Name(), "acct")
		var p inspect.KeyPlacement
		if err := json.Unmarshal([]byte(out), &p); code != exitOK || err != nil {
			t.Fatalf("ring -replicas 3 -json: exit %d %v:\n%s", code, err, out)
		}
		aowner, _ := nodes[0].OwnerOf(Accounts.Name(), "acct")
		if p.Owner != aowner || len(p.Replicas) != 3 {
			t.Errorf("replicated placement %+v, want owner %v of 3 replicas", p, aowner)
		}
	})

	t.Run("state", func(t *testing.T) {
		if _, err := casty.Call(ctx, Counters.Ref(nodes[1], "bob"), (*Counter).Add, "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := casty.Call(ctx, Accounts.Ref(nodes[2], "acct"), (*Account).Deposit, 42); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := ctl(t, seed, "state", Counters.Name(), "bob")
		var st map[string]any
		if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || st["N"] != 1.0 || st["last"] != "x" {
			t.Errorf("state: exit %d, %v, %v: %s%s", code, st, err, out, errOut)
		}
		code, out, errOut = ctl(t, seed, "state", Accounts.Name(), "acct")
		if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || st["Balance"] != 42.0 {
			t.Errorf("replicated state: exit %d, %v, %v: %s%s", code, st, err, out, errOut)
		}
		code, _, errOut = ctl(t, seed, "state", Counters.Name(), "nobody")
		if code != exitNotFound || !strings.Contains(errOut, "not active") {
			t.Errorf("state of an inactive actor: exit %d (%s), want %d", code, errOut, exitNotFound)
		}
	})

	t.Run("spy", func(t *testing.T) {
		ready := make(chan struct{})
		var wg sync.WaitGroup
		var code int
		var out, errOut string
		wg.Go(func() {
			code, out, errOut = ctlWith(t, seed, func() { close(ready) },
				"spy", "-kind", "ctl.*", "-key", "carol", "-payloads", "-n", "3")
		})
		select {
		case <-ready:
		case <-time.After(15 * time.Second):
			t.Fatal("the spy did not subscribe")
		}
		// Another key first: the -key glob must keep it out.
		if _, err := casty.Call(ctx, Counters.Ref(nodes[0], "dave"), (*Counter).Add, "d"); err != nil {
			t.Fatal(err)
		}
		if _, err := casty.Call(ctx, Counters.Ref(nodes[0], "carol"), (*Counter).Add, "hello"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		t.Logf("castyctl spy:\n%s", out)
		if code != exitOK {
			t.Fatalf("spy: exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || strings.Contains(out, "dave") {
			t.Fatalf("spy printed %d lines, want 3 about carol:\n%s", len(lines), out)
		}
		for i, want := range []string{"activated  ctl.Counter/carol", `received     ctl.Counter/carol.Add  arg="hello"`, "completed    ctl.Counter/carol.Add"} {
			if !strings.Contains(strings.Join(strings.Fields(lines[i]), " "), strings.Join(strings.Fields(want), " ")) {
				t.Errorf("line %d = %q, want it to contain %q", i, lines[i], want)
			}
		}
		if !strings.Contains(lines[2], "result=1") {
			t.Errorf("completed line lacks the result: %q", lines[2])
		}
	})

	t.Run("spy-json", func(t *testing.T) {
		ready := make(chan struct{})
		var wg sync.WaitGroup
		var out string
		wg.Go(func() {
			_, out, _ = ctlWith(t, seed, func() { close(ready) }, "spy", "-json", "-key", "erin", "-n", "1")
		})
		<-ready
		if _, err := casty.Call(ctx, Counters.Ref(nodes[2], "erin"), (*Counter).Add, "e"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		var ev spyEvent
		if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Event != "activated" || ev.Key != "erin" || ev.Arg != nil {
			t.Errorf("spy -json: %+v, %v:\n%s", ev, err, out)
		}
	})
}

// The exit codes: usage mistakes (an invalid seed among them) are 2, a cluster that cannot be joined 3.
func TestCastyctlExitCodes(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"state", "onlykind"}, {"ring", "a"}, {"members", "-bogus"},
		{"members", "-tls-cert", "c.pem"}, {"schema"}, {"schema", "check", "one"}} {
		if code, _, errOut := ctl(t, "127.0.0.1:1", args...); code != exitUsage {
			t.Errorf("castyctl %q: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
	if code, _, _ := ctl(t, "", "members"); code != exitUsage {
		t.Errorf("no seeds: exit %d, want %d", code, exitUsage)
	}
	if code, _, errOut := ctl(t, "127.0.0.1:70001", "members"); code != exitUsage || !strings.Contains(errOut, "127.0.0.1:70001") {
		t.Errorf("a seed with an invalid port: exit %d, want %d naming it (%s)", code, exitUsage, errOut)
	}
	var stdout, stderr bytes.Buffer
	o := &options{seeds: "127.0.0.1:1", timeout: 500 * time.Millisecond, stdout: &stdout, stderr: &stderr,
		connectOverrides: []casty.Option{casty.WithConfig(casty.Config{Transport: casty.TransportConfig{ConnectTimeout: 200 * time.Millisecond}, Membership: casty.MembershipConfig{JoinTimeout: 500 * time.Millisecond}})}}
	if code := o.run(context.Background(), []string{"members"}); code != exitUnreachable {
		t.Errorf("unreachable seed: exit %d, want %d: %s", code, exitUnreachable, stderr.String())
	}
	if code, _, _ := ctl(t, "", "-h"); code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
}

// schema -- PROG runs a program that writes its schema; schema check
// passes added and removed fields and fails, with a readable report, on a
// changed field type, a reused wire name, a changed replica count and a
// changed handler signature.
func TestCastyctlSchema(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CASTYCTL_WRITE_SCHEMA", "1")
	code, out, errOut := ctl(t, "", "schema", "-json", "--", exe)
	if code != exitOK {
		t.Fatalf("schema -- PROG: exit %d: %s", code, errOut)
	}
	var s schema.Schema
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(casty.Schemas())
	got, _ := json.Marshal(s)
	if !bytes.Equal(got, want) {
		t.Errorf("the program's schema through castyctl differs from casty.Schemas():\n%s\n%s", got, want)
	}
	dir := t.TempDir()
	write := func(name string, s schema.Schema) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(s)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldPath := write("old.json", s)
	code, out, _ = ctl(t, "", "schema", oldPath)
	t.Logf("castyctl schema:\n%s", out)
	if code != exitOK || !strings.Contains(out, "ctl.Counter") || !strings.Contains(out, "last") {
		t.Errorf("schema FILE: exit %d:\n%s", code, out)
	}

	edit := func(f func(s *schema.Schema)) string {
		var c schema.Schema
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &c)
		f(&c)
		return write(fmt.Sprintf("new%d.json", time.Now().UnixNano()), c)
	}
	kind := func(c *schema.Schema, name string) *schema.Kind {
		for i := range c.Kinds {
			if c.Kinds[i].Name == name {
				return &c.Kinds[i]
			}
		}
		t.Fatalf("no kind %s", name)
		return nil
	}

	compatible := edit(func(c *schema.Schema) {
		k := kind(c, "ctl.Counter")
		k.State = append(k.State[1:], schema.Field{Name: "Since", Type: "time"}) // N removed, Since added
		k.Methods = append(k.Methods, schema.Method{Name: "Reset", Shape: "unary"})
	})
	code, out, _ = ctl(t, "", "schema", "check", oldPath, compatible)
	if code != exitOK || !strings.Contains(out, "0 breaking") || !strings.Contains(out, "state field Since time added") {
		t.Errorf("compatible change: exit %d:\n%s", code, out)
	}

	cases := []struct {
		name   string
		edit   func(c *schema.Schema)
		report string
	}{
		{"field type", func(c *schema.Schema) { kind(c, "ctl.Counter").State[0].Type = "string" },
			"state field N changed type int → string"},
		{"wire name reused", func(c *schema.Schema) {
			k := kind(c, "ctl.Counter")
			k.GoType, k.State = "example.com/other.Invoice", []schema.Field{{Name: "Total", Type: "float64"}}
		}, "wire name reused for another type"},
		{"replicas", func(c *schema.Schema) { kind(c, "ctl.Account").Replicas = 5 }, "replicas changed 3 → 5"},
		{"handler", func(c *schema.Schema) { kind(c, "ctl.Account").Methods[0].Arg = "string" },
			"handler Deposit argument changed type int64 → string"},
	}
	for _, tc := range cases {
		code, out, _ := ctl(t, "", "schema", "check", oldPath, edit(tc.edit))
		t.Logf("castyctl schema check (%s):\n%s", tc.name, out)
		if code != exitBreaking || !strings.Contains(out, tc.report) || !strings.Contains(out, "NOT safe") {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", tc.name, code, exitBreaking, tc.report, out)
		}
	}
	code, out, _ = ctl(t, "", "schema", "check", "-json", oldPath, edit(cases[0].edit))
	var r checkReport
	if err := json.Unmarshal([]byte(out), &r); code != exitBreaking || err != nil || r.Breaking != 1 || r.Changes[0].Severity != breaking {
		t.Errorf("check -json: exit %d, %+v, %v", code, r, err)
	}
	for _, bad := range []string{`{"kinds": 3}`, `{"version": 1, "kinds": [{"name": "a"}, {"name": "a"}]}`} {
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(bad), 0o644)
		if code, _, errOut := ctl(t, "", "schema", "check", oldPath, p); code != exitFailed || !strings.Contains(errOut, "not a casty schema") {
			t.Errorf("schema %s: exit %d, want %d: %s", bad, code, exitFailed, errOut)
		}
	}
}

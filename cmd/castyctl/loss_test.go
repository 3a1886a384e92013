package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/casty/inspect"
	"github.com/casty-go/casty/internal/wait"
)

// accept-loss needs member ids and the -yes confirmation; waiting takes
// no arguments: usage errors (exit 2) before anything is joined.
func TestCastyctlAcceptLossUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"accept-loss"}, "ids of the removed or departed members"},
		{[]string{"accept-loss", "-yes"}, "ids of the removed or departed members"},
		{[]string{"accept-loss", "0b7c5f7e-1111-2222-3333-444455556666"}, "confirm with -yes"},
		{[]string{"waiting", "extra"}, "waiting takes no arguments"},
	}
	for _, tc := range cases {
		code, out, errOut := ctl(t, "127.0.0.1:1", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("castyctl %q: exit %d, stdout %q, stderr %q; want %d with %q", tc.args, code, out, errOut, exitUsage, tc.want)
		}
	}
	if code, _, errOut := ctl(t, "127.0.0.1:1", "accept-loss", "some-id"); !strings.Contains(errOut, "writes only they held are lost") || code != exitUsage {
		t.Errorf("accept-loss without -yes does not say what it costs: exit %d: %s", code, errOut)
	}
}

// On a cluster with credentials, waiting and accept-loss need the
// operator role: with the client credential they fail with
// casty.ErrForbidden (exit 4); with the operator secret waiting lists
// every member and accept-loss of a member still placed is refused with
// casty.ErrNotRemoved, said plainly.
func TestCastyctlAcceptLossNeedsTheOperatorRole(t *testing.T) {
	member := []byte("member secret of 32 bytes.......")
	operator := []byte("operator secret of 32 bytes.....")
	client := []byte("client secret of 32 bytes.......")
	nodes := startCluster(t, 2, casty.WithClusterSecret(member), casty.WithOperatorSecret(operator), casty.WithClientSecret(client))
	asClient := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		o := &options{seeds: nodes[0].Addr(), timeout: 10 * time.Second, settle: 300 * time.Millisecond,
			stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
			connectOverrides: []casty.Option{casty.WithConfig(fastConfig()), casty.WithClientSecret(client)}}
		code := o.run(context.Background(), args)
		return code, stdout.String(), stderr.String()
	}
	for _, args := range [][]string{{"accept-loss", "-yes", nodes[1].ID()}, {"waiting"}} {
		if code, out, errOut := asClient(args...); code != exitFailed || !strings.Contains(errOut, "forbidden") {
			t.Errorf("castyctl %q with the client credential: exit %d, want %d and forbidden: %s%s", args, code, exitFailed, out, errOut)
		}
	}
	file := filepath.Join(t.TempDir(), "operator.secret")
	if err := os.WriteFile(file, operator, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ctl(t, nodes[0].Addr(), "-operator-secret-file", file, "waiting")
	t.Logf("castyctl waiting:\n%s", out)
	if code != exitOK || !strings.Contains(out, "no sync waits") {
		t.Errorf("waiting: exit %d: %s%s", code, out, errOut)
	}
	for _, n := range nodes {
		if !strings.Contains(out, n.Addr()+"  "+n.ID()) {
			t.Errorf("waiting lacks %s:\n%s", n.Addr(), out)
		}
	}
	code, out, errOut = ctl(t, nodes[0].Addr(), "-operator-secret-file", file, "accept-loss", "-yes", nodes[1].ID())
	if code != exitFailed || !strings.Contains(errOut, "refused: only a member taken out of the placement") || out != "" {
		t.Errorf("accept-loss of a live member: exit %d, want %d and a refusal: %s%s", code, exitFailed, out, errOut)
	}
}

// ctlOn runs castyctl through lite, a castytest cluster's lite member.
func ctlOn(t *testing.T, lite *casty.System, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	o := &options{timeout: 10 * time.Second, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, lite: lite}
	code := o.run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

// Two of a Replicas(3) key's three holders crash and are removed as dead:
// its range waits for them (the one copy left may lack writes only they
// acknowledged) and no owner serves the key. castyctl waiting names them;
// castyctl accept-loss -yes gives their copies up, and the key is served
// again with nothing waiting.
func TestCastyctlAcceptLossUnblocksAWaitingRange(t *testing.T) {
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = 2 * time.Second
	c := castytest.NewCluster(t, 5, castytest.MemberOptions(casty.WithConfig(cfg)))
	lite := c.Lite()
	ctx := context.Background()
	key := "acct-lost"
	if _, err := casty.Call(ctx, Accounts.Ref(lite, key), (*Account).Deposit, 5); err != nil {
		t.Fatal(err)
	}
	// The lite member's placement may still be catching up with the
	// members' agreed one: wait until it names the key's three holders.
	var holders []int
	wait.For(t, 20*time.Second, "the lite member to place the key on three members", func() bool {
		p, _ := lite.Placement(Accounts.Name(), key, 3)
		holders = holders[:0]
		for i := range c.N() {
			if slices.ContainsFunc(p.Replicas, func(m casty.Member) bool { return m.Addr == c.Addr(i) }) {
				holders = append(holders, i)
			}
		}
		return len(holders) == 3
	})
	var crashed []string
	for _, i := range holders[:2] {
		crashed = append(crashed, c.Member(i).ID())
		c.Crash(i)
	}
	var out string
	wait.For(t, cfg.Replication.RemoveDeadAfter+20*time.Second, "castyctl waiting to name both crashed members", func() bool {
		var code int
		code, out, _ = ctlOn(t, lite, "waiting")
		return code == exitOK && strings.Contains(out, Accounts.Name()) &&
			strings.Contains(out, crashed[0]) && strings.Contains(out, crashed[1]) && strings.Contains(out, "accept-loss -yes")
	})
	t.Logf("castyctl waiting:\n%s", out)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := casty.Call(cctx, Accounts.Ref(lite, key), (*Account).Deposit, 1)
	cancel()
	if err == nil {
		t.Fatal("the key is served while its range waits for two of its three holders")
	}
	code, out, errOut := ctlOn(t, lite, "accept-loss", "-yes", crashed[0], crashed[1])
	t.Logf("castyctl accept-loss:\n%s", out)
	if code != exitOK || strings.Count(out, "accepted the loss of") != 2 {
		t.Fatalf("accept-loss: exit %d: %s%s", code, out, errOut)
	}
	wait.For(t, 20*time.Second, "the key served again", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := casty.Call(cctx, Accounts.Ref(lite, key), (*Account).Deposit, 1)
		return err == nil
	})
	wait.For(t, 20*time.Second, "castyctl waiting -json: nothing waits, two members lost", func() bool {
		code, out, _ := ctlOn(t, lite, "waiting", "-json")
		var rows []inspect.MemberPlacement
		if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 3 {
			return false
		}
		for _, r := range rows {
			if r.Err != "" || len(r.Waiting) != 0 || r.LostMembers != 2 {
				return false
			}
		}
		return true
	})
}

// A member that stops answering shows in castyctl members as suspect, with
// how long, at once — also to a castyctl that joins after it stopped,
// whose own table cannot hold it (its liveness cannot be checked): the
// table is a full member's.
func TestCastyctlMembersShowsAMemberJustCrashedAsSuspect(t *testing.T) {
	cfg := castytest.TestConfig()
	cfg.Membership.SuspicionTimeout = time.Minute // suspect, not yet dead, for the whole test
	c := castytest.NewCluster(t, 3, castytest.MemberOptions(casty.WithConfig(cfg)))
	crashed := c.Member(2)
	c.Crash(2)
	const least = 300 * time.Millisecond
	wait.For(t, 20*time.Second, "the live members to suspect the crashed member for a while", func() bool {
		for _, i := range []int{0, 1} {
			if !slices.ContainsFunc(c.Member(i).MemberTable(), func(m inspect.MemberStatus) bool {
				return m.ID == crashed.ID() && m.State == "suspect" && m.For >= least
			}) {
				return false
			}
		}
		return true
	})
	lite := c.Lite() // joins after the crash
	code, out, errOut := ctlOn(t, lite, "members")
	t.Logf("castyctl members:\n%s", out)
	if code != exitOK {
		t.Fatalf("members: exit %d: %s", code, errOut)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[1] == crashed.ID() {
			row = f
		}
	}
	if row == nil || row[3] != "suspect" {
		t.Fatalf("members does not list %s as suspect:\n%s", crashed.ID(), out)
	}
	if d, err := time.ParseDuration(row[4]); err != nil || d < least {
		t.Errorf("FOR column %q: want how long it has been suspect, at least %v", row[4], least)
	}
	code, out, _ = ctlOn(t, lite, "members", "-json")
	var rows []inspect.MemberStatus
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil {
		t.Fatalf("members -json: exit %d, %v:\n%s", code, err, out)
	}
	if i := slices.IndexFunc(rows, func(m inspect.MemberStatus) bool { return m.ID == crashed.ID() }); i < 0 || rows[i].State != "suspect" || rows[i].For < least {
		t.Errorf("members -json: %+v, want %s suspect for some time", rows, crashed.ID())
	}
}

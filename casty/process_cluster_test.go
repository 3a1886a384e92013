package casty_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// The tests in this file run members in child processes — the test binary
// run again as TestHelperMember — so that SIGKILL, SIGSTOP and SIGTERM
// act on real processes: the kernel resets a killed process's connections,
// a stopped one answers nothing while its sockets stay open.

// processConfig is replicationConfig for the member processes ("fast")
// and their lite client, with a keepalive that tolerates CI's load: five
// processes built with -race beside the rest of the suite on two cores
// can miss fastCluster's 500 ms ping deadline, and a connection closed for
// it fails the calls on it (CI once: "keepalive failed: i/o deadline
// reached" in TestRollingRestartOfProcessesLosesNothing, which restarts
// members gracefully and so needs no fast failure detection).
func processConfig() casty.Config {
	c := replicationConfig()
	c.Transport.KeepAliveTimeout = 2 * time.Second
	return c
}

// TestHelperMember is not a test: run by the process tests as a child, it
// starts a member (seeds and config from the environment), prints its
// address, then a STATUS line whenever its placement or sync state
// changes, and serves until killed. SIGTERM closes it gracefully (a leave
// with handoff) and prints CLOSED.
func TestHelperMember(t *testing.T) {
	if os.Getenv("CASTY_HELPER_MEMBER") == "" {
		t.Skip("runs only as a child process of the process tests")
	}
	cfg := casty.Config{Replication: casty.ReplicationConfig{RemoveDeadAfter: time.Hour}}
	if os.Getenv("CASTY_HELPER_CONFIG") == "fast" {
		cfg = processConfig()
		cfg.Replication.RepairInterval = time.Second // anti-entropy and pruning in test time
	}
	var seeds []string
	if s := os.Getenv("CASTY_HELPER_SEEDS"); s != "" {
		seeds = strings.Split(s, ",")
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(seeds...), quiet())
	cancel()
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", sys.Addr())
	last := ""
	tick := time.NewTicker(10 * time.Millisecond)
	for {
		select {
		case <-term:
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := sys.Close(ctx)
			cancel()
			fmt.Println("CLOSED", err)
			os.Exit(0)
		case <-tick.C:
			if s := fmt.Sprintf("STATUS %d %v %d", casty.Placed(sys), casty.Synced(sys), sys.Replication().Keys); s != last {
				fmt.Println(s)
				last = s
			}
		}
	}
}

// procMember is a member running in a child process.
type procMember struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}

	mu     sync.Mutex
	status string // the last STATUS line
	closed string // the CLOSED line, once printed
}

// startProcMember starts a child member joining through seeds, with the
// default Config ("default", RemoveDeadAfter an hour so that a killed
// member's keys wait for no removal) or processConfig ("fast"). It is
// killed at the end of the test.
func startProcMember(t *testing.T, seeds []string, config string) *procMember {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMember$", "-test.v")
	cmd.Env = append(os.Environ(), "CASTY_HELPER_MEMBER=1", "CASTY_HELPER_CONFIG="+config, "CASTY_HELPER_SEEDS="+strings.Join(seeds, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &procMember{cmd: cmd, exited: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	addr := make(chan string, 1)
	go func() {
		defer close(p.exited)
		defer cmd.Wait()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "ADDR "):
				addr <- strings.TrimPrefix(line, "ADDR ")
			case strings.HasPrefix(line, "ERROR"):
				addr <- line
			case strings.HasPrefix(line, "STATUS "):
				p.mu.Lock()
				p.status = line
				p.mu.Unlock()
			case strings.HasPrefix(line, "CLOSED"):
				p.mu.Lock()
				p.closed = line
				p.mu.Unlock()
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok || strings.HasPrefix(a, "ERROR") {
			t.Fatalf("child member did not start: %q", a)
		}
		p.addr = a
	case <-time.After(30 * time.Second):
		t.Fatal("child member printed no address within 30 s")
	}
	return p
}

// settled reports whether the child has adopted a placement of n members
// and finished its syncs.
func (p *procMember) settled(n int) bool {
	placed, synced, _ := p.state()
	return placed == n && synced
}

// state is the child's last STATUS: the members of the placement it acts
// on, whether its syncs are done, and the actors it holds a copy of.
func (p *procMember) state() (placed int, synced bool, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Sscanf(p.status, "STATUS %d %t %d", &placed, &synced, &keys)
	return placed, synced, keys
}

// stopped reports whether the child is stopped (SIGSTOP), as Linux's
// /proc tells; elsewhere it reports true.
func (p *procMember) stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}

func (p *procMember) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v to %s: %v", sig, p.addr, err)
	}
}

// startProcCluster starts n child members and a lite member in this
// process, and waits until every child has synced a placement of n.
func startProcCluster(t *testing.T, n int, config string) ([]*procMember, *casty.System) {
	t.Helper()
	members := []*procMember{startProcMember(t, nil, config)}
	for range n - 1 {
		members = append(members, startProcMember(t, []string{members[0].addr}, config))
	}
	cfg := casty.Config{}
	if config == "fast" {
		cfg = processConfig()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{members[0].addr}, casty.WithConfig(cfg), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, lite) })
	waitProcSettled(t, members, lite, n)
	return members, lite
}

// waitProcSettled waits until every child in members has synced a
// placement of n members and the lite member sees and places n.
func waitProcSettled(t *testing.T, members []*procMember, lite *casty.System, n int) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("%d child members synced on a placement of %d", len(members), n), func() bool {
		// The lite member routes replicated keys by its own copy of the
		// agreed placement, which may lag the members' for a moment.
		if len(lite.Members()) != n || casty.Placed(lite) != n {
			return false
		}
		for _, p := range members {
			if !p.settled(n) {
				return false
			}
		}
		return true
	})
}

// procOwning returns the child that owns key of kind, as the lite member
// routes it.
func procOwning(t *testing.T, members []*procMember, lite *casty.System, kind, key string) *procMember {
	t.Helper()
	m, ok := lite.OwnerOf(kind, key)
	if !ok {
		t.Fatalf("no owner of %s/%s", kind, key)
	}
	for _, p := range members {
		if p.addr == m.Addr {
			return p
		}
	}
	t.Fatalf("%s/%s is owned by %s, not a child member", kind, key, m.Addr)
	return nil
}

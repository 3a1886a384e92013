package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memberState is what the nemesis has done to a member process.
type memberState int

const (
	running memberState = iota
	killed              // SIGKILLed, not restarted yet
	paused              // SIGSTOPped
)

// proc is one member process: its address, the uid it runs as (for the
// partition rules; 0 means the controller's own) and the live process.
type proc struct {
	index int
	addr  string // 127.0.0.x:port
	ip    string
	uid   int

	skew atomic.Int64 // time.Duration its next start skews its clock by (-skew)

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser // held open: EOF tells the member to exit
	state  memberState
	exits  chan struct{} // closed when the current process has been reaped
	starts int
}

// procs runs the member processes of one run.
type procs struct {
	exe      string // the binary to re-execute in member mode
	cluster  string
	replicas int
	verbose  bool
	logDir   string
	members  []*proc
	// maxDrift, when set, is each member's Config.Replication.MaxClockDrift: the
	// skews the controller draws stay within it.
	maxDrift time.Duration
}

// newProcs picks an address for each of n members on 127.0.0.(10+i): a
// free port, found by listening on it once.
func newProcs(exe, cluster string, n, replicas int, uids bool, logDir string, verbose bool) (*procs, error) {
	p := &procs{exe: exe, cluster: cluster, replicas: replicas, verbose: verbose, logDir: logDir}
	for i := range n {
		ip := "127.0.0." + strconv.Itoa(10+i)
		l, err := net.Listen("tcp", ip+":0")
		if err != nil {
			return nil, fmt.Errorf("no free port on %s: %w", ip, err)
		}
		addr := l.Addr().String()
		l.Close()
		m := &proc{index: i, addr: addr, ip: ip}
		if uids {
			m.uid = 61000 + 100*(os.Getpid()%100) + i
		}
		p.members = append(p.members, m)
	}
	return p, nil
}

func (p *procs) addrs() []string {
	out := make([]string, len(p.members))
	for i, m := range p.members {
		out[i] = m.addr
	}
	return out
}

// start launches m with the given seeds.
func (p *procs) start(m *proc, seeds []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	args := []string{"member", "-addr", m.addr, "-seeds", strings.Join(seeds, ","),
		"-replicas", strconv.Itoa(p.replicas), "-cluster", p.cluster}
	if d := m.clockSkew(); d != 0 {
		args = append(args, "-skew", d.String())
	}
	if p.maxDrift > 0 {
		args = append(args, "-max-drift", p.maxDrift.String())
	}
	if p.verbose {
		args = append(args, "-v")
	}
	cmd := exec.Command(p.exe, args...)
	cmd.Dir = "/"
	log, err := os.OpenFile(filepath.Join(p.logDir, fmt.Sprintf("member-%d.log", m.index)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child holds its own copy
	fmt.Fprintf(log, "--- start %d at %s, clock skew %s\n", m.starts, time.Now().Format(time.RFC3339Nano), signed(m.clockSkew()))
	cmd.Stdout, cmd.Stderr = log, log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	// Setpgid: signals reach the member and anything it starts. Pdeathsig
	// kills a member whose controller died, even a stopped one (which
	// cannot read the EOF on its stdin).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if m.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(m.uid), Gid: uint32(m.uid)}
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return fmt.Errorf("starting member %d: %w", m.index, err)
	}
	exits := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exits) }()
	m.cmd, m.stdin, m.state, m.exits = cmd, stdin, running, exits
	m.starts++
	return nil
}

// waitListening waits until m accepts connections, or ctx ends.
func waitListening(ctx context.Context, m *proc) error {
	for {
		c, err := net.DialTimeout("tcp", m.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %d (%s) not listening: %w", m.index, m.addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// seedsFor is every other member's address.
func (p *procs) seedsFor(m *proc) []string {
	var out []string
	for _, o := range p.members {
		if o != m {
			out = append(out, o.addr)
		}
	}
	return out
}

// kill SIGKILLs m's process group and waits until it is reaped.
func (p *procs) kill(m *proc) {
	m.mu.Lock()
	cmd, exits, stdin := m.cmd, m.exits, m.stdin
	m.state = killed
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exits
	stdin.Close()
}

// stop ends m as an operator restarting it would: SIGTERM, so its
// member closes gracefully (drains, hands its actors off, leaves), and
// SIGKILL if it is still running after grace. It waits until the process
// is reaped and leaves m killed, ready for start.
func (p *procs) stop(m *proc, grace time.Duration) {
	m.mu.Lock()
	cmd, exits, stdin, state := m.cmd, m.exits, m.stdin, m.state
	m.state = killed
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	if state != killed {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT) // a stopped process cannot die of SIGTERM
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-exits:
		case <-t.C:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		t.Stop()
	}
	<-exits
	stdin.Close()
}

// setSkew sets the clock skew m's next start runs with.
func (m *proc) setSkew(d time.Duration) { m.skew.Store(int64(d)) }

// clockSkew is the clock skew m's current (or next) process runs with.
func (m *proc) clockSkew() time.Duration { return time.Duration(m.skew.Load()) }

// signed formats d with its sign: +250ms, -1.2s, 0s.
func signed(d time.Duration) string {
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}

// signal sends sig to m's process group and records the new state.
func (p *procs) signal(m *proc, sig syscall.Signal, state memberState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.state != killed {
		_ = syscall.Kill(-m.cmd.Process.Pid, sig)
		m.state = state
	}
}

func (m *proc) current() memberState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// stopAll ends every member: SIGCONT (a stopped process cannot die of
// SIGTERM), SIGTERM for a graceful close, SIGKILL after grace. It is safe
// to call more than once and on every exit path.
func (p *procs) stopAll(grace time.Duration) {
	for _, m := range p.members {
		m.mu.Lock()
		if m.cmd != nil && m.state != killed {
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
		}
		m.mu.Unlock()
	}
	deadline := time.Now().Add(grace)
	for _, m := range p.members {
		m.mu.Lock()
		cmd, exits, stdin := m.cmd, m.exits, m.stdin
		m.state = killed
		m.mu.Unlock()
		if cmd == nil {
			continue
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-exits:
		case <-t.C:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exits
		}
		t.Stop()
		stdin.Close()
	}
}

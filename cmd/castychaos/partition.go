package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// partitioner cuts links between member processes with iptables. Every
// member dials from 127.0.0.1 whatever address it listens on, so a rule
// cannot name the sender by address; instead each member runs as a uid of
// its own, and a rule in OUTPUT drops packets a member's uid sends to
// another member's address. Cutting both directions of a pair stops every
// TCP connection between them, whoever dialed. Rules live in a chain of
// this run's own and match only its members' uids, so nothing else on the
// machine is affected; remove deletes the chain on every exit path.
//
// A one-way cut (oneWay) must also drop what a member sends back on a
// connection the other member dialed, which leaves from its listening
// address to 127.0.0.1 and names no peer: marks tells those apart. The
// chain's first rules mark each connection with the index of the member
// that dialed it (CONNMARK, the conntrack entry's mark), so a rule can
// drop what one member sends on the connections another dialed. The mark
// rules stay for the whole run; heal deletes only the cuts.
type partitioner struct {
	chain string
	mu    sync.Mutex
	rules [][]string // the cuts in place, as appended
}

// partitionSupport says why partitions are unavailable ("" when they are):
// they need root (for iptables and for running members as other uids)
// and the iptables command, which it installs with apt-get (bounded by
// installBound, its output to log) when it is missing.
func partitionSupport(log io.Writer) string {
	if os.Geteuid() != 0 {
		return "not root (run as root for iptables partitions)"
	}
	if _, err := exec.LookPath("iptables"); err == nil {
		return ""
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "iptables not installed, and no apt-get to install it"
	}
	fmt.Fprintln(log, "castychaos: iptables missing: apt-get install -y iptables")
	ctx, cancel := context.WithTimeout(context.Background(), installBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "iptables")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("installing iptables failed: %v: %s", err, lastLine(string(out)))
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return "iptables still missing after apt-get install"
	}
	return ""
}

// installBound bounds installing iptables.
const installBound = 3 * time.Minute

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// chainPrefix starts the name of every run's chain; the run's pid ends it.
const chainPrefix = "CASTYCHAOS-"

// newPartitioner creates this run's chain and hooks it into OUTPUT, after
// removing the chains of runs that died without removing theirs.
func newPartitioner() (*partitioner, error) {
	removeStaleChains()
	p := &partitioner{chain: chainPrefix + strconv.Itoa(os.Getpid())}
	if err := iptables("-N", p.chain); err != nil {
		return nil, err
	}
	if err := iptables("-I", "OUTPUT", "-j", p.chain); err != nil {
		_ = iptables("-X", p.chain)
		return nil, err
	}
	return p, nil
}

// connMark is the conntrack mark of connections member index dialed.
func connMark(index int) string { return fmt.Sprintf("0x%x", connMarkBase+index) }

// connMarkBase keeps this tool's marks away from small values others use.
const connMarkBase = 0xca5700

// marks adds, ahead of any cut, a rule per member marking each
// connection it dials (its first packet, sent as its uid) with its index.
func (p *partitioner) marks(members []*proc) error {
	for _, m := range members {
		if err := iptables("-I", p.chain, "1", "-m", "owner", "--uid-owner", strconv.Itoa(m.uid),
			"-m", "conntrack", "--ctstate", "NEW", "-j", "CONNMARK", "--set-mark", connMark(m.index)); err != nil {
			return err
		}
	}
	return nil
}

// cut drops every packet a sends to b's listening address and every
// packet b sends to a's: each TCP connection between them, whoever
// dialed, loses one direction entirely and stalls.
func (p *partitioner) cut(a, b *proc) error {
	if err := p.drop(a, b); err != nil {
		return err
	}
	return p.drop(b, a)
}

func (p *partitioner) drop(from, to *proc) error {
	host, port, err := net.SplitHostPort(to.addr)
	if err != nil {
		return err
	}
	return p.add("-m", "owner", "--uid-owner", strconv.Itoa(from.uid), "-p", "tcp", "-d", host, "--dport", port, "-j", "DROP")
}

// oneWay drops every packet from sends to to, and nothing to sends to
// from: what from sends on the connections it dialed to to (to's
// listening address) and on the connections to dialed to it (marked
// with to's index). to's packets still reach from, but from's
// acknowledgements do not reach to: to hears nothing from from, while
// from receives what to sends until to's connections time out, and no
// new connection between them opens.
func (p *partitioner) oneWay(from, to *proc) error {
	if err := p.drop(from, to); err != nil {
		return err
	}
	return p.add("-m", "owner", "--uid-owner", strconv.Itoa(from.uid), "-p", "tcp",
		"-m", "connmark", "--mark", connMark(to.index), "-j", "DROP")
}

// cutClient drops every packet the controller's processes (the lite
// member, root) send to m's listening address: the lite member's
// connections to m stall, and a lite member listens on nothing, so m
// cannot reach it either. It also cuts the controller's own dials to m.
func (p *partitioner) cutClient(m *proc) error {
	host, port, err := net.SplitHostPort(m.addr)
	if err != nil {
		return err
	}
	return p.add("-m", "owner", "--uid-owner", strconv.Itoa(os.Geteuid()), "-p", "tcp", "-d", host, "--dport", port, "-j", "DROP")
}

func (p *partitioner) add(rule ...string) error {
	if err := iptables(append([]string{"-A", p.chain}, rule...)...); err != nil {
		return err
	}
	p.mu.Lock()
	p.rules = append(p.rules, rule)
	p.mu.Unlock()
	return nil
}

// heal removes every cut (the mark rules stay).
func (p *partitioner) heal() error {
	p.mu.Lock()
	rules := p.rules
	p.rules = nil
	p.mu.Unlock()
	var first error
	for _, r := range rules {
		if err := iptables(append([]string{"-D", p.chain}, r...)...); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// remove heals and deletes the chain.
func (p *partitioner) remove() {
	_ = iptables("-F", p.chain)
	_ = iptables("-D", "OUTPUT", "-j", p.chain)
	_ = iptables("-X", p.chain)
}

// removeStaleChains deletes the chains of castychaos runs whose process is
// gone (killed before its cleanup ran).
func removeStaleChains() {
	out, err := exec.Command("iptables", "-w", "5", "-S").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, ok := strings.CutPrefix(line, "-N "+chainPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + name); err == nil {
			continue // that run is alive
		}
		(&partitioner{chain: chainPrefix + strconv.Itoa(pid)}).remove()
	}
}

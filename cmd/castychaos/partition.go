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
type partitioner struct {
	chain string
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
	return iptables("-A", p.chain, "-m", "owner", "--uid-owner", strconv.Itoa(from.uid),
		"-p", "tcp", "-d", host, "--dport", port, "-j", "DROP")
}

// heal removes every cut.
func (p *partitioner) heal() error { return iptables("-F", p.chain) }

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

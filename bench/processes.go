package main

import (
	"bufio"
	"context"
	"fmt"
	"github.com/casty-go/casty/internal/procstat"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/casty-go/casty/casty"
)

// processes measures the shapes users deploy with every member in a
// process of its own, as members run in production, each beside its floor
// measured in the same turns (a run of each, then the next round): calls
// and replicated writes from a caller in this process to a key another
// process owns, one caller at a time and 64 callers at once, with the CPU
// (user and system) each operation costs in each process. The caller is
// either a lite client (casty.Connect) in this process with three member
// processes behind it, or a full member in this process with two more
// member processes; either way the cluster has three members, so R=3 puts
// a copy on each. The floors are raw TCP between this process and the
// owner's: a 64-byte ping-pong on one connection, and for 64 callers the
// same on 64 connections, one caller each, so that no message shares a
// system call with another (pipelined, unbatched).
//
// In one process the members share one Go scheduler, which hands a message
// from one member's goroutine to another's without the kernel waking
// anyone; the cost of a call there is CPU. Between processes every message
// wakes a process, as it does between machines, and the count of messages
// on the caller's path is what the ratio measures.
//
// It runs twice: with each process's default GOMAXPROCS (every core, so
// three or four processes keep several times as many Ps as the machine has
// cores, and each one's idle Ps spin and wake threads on cores the others
// are using), and with each process given its share of the cores, as
// members would have on machines of their own.
func processes() {
	defaults := runtime.GOMAXPROCS(0)
	processesWith(0)
	if share := max(1, runtime.NumCPU()/3); share < defaults {
		runtime.GOMAXPROCS(share)
		processesWith(share)
		runtime.GOMAXPROCS(defaults)
	}
}

// clusterSize is the full members of every processes cluster: a copy of a
// replicated key on each.
const clusterSize = 3

// processCallers and processKeys are the concurrent shapes' callers and
// the keys they walk, all owned by one member process.
const processCallers, processKeys = 64, 1000

// The operations every side measures, with one caller and with
// processCallers: a raw TCP round trip to the owner's process, an
// unreplicated call, a replicated write.
const (
	opTCP = iota
	opCall
	opWrite
	opCount
)

// opNames name the operations, for one caller and for processCallers.
var opNames = [2][opCount]string{
	{"raw TCP ping-pong, 64 B, between the same two processes, 1 connection",
		"unreplicated (Replicas(1)) call to a key of the same owner",
		"replicated write"},
	{fmt.Sprintf("unbatched pipelined TCP between the same two processes: %d connections, one 64 B write + read in flight on each, so no message shares a system call", processCallers),
		fmt.Sprintf("unreplicated (Replicas(1)) calls, %d callers over the same owner's 1,000 keys", processCallers),
		"replicated writes"},
}

// side is where a row's callers run: in this process, on a lite client or
// on a full member.
type side struct {
	name string
	lite bool
}

var (
	liteSide   = side{"lite → member (a lite client in this process, 3 member processes)", true}
	memberSide = side{"member → member (a member in this process, 2 more member processes)", false}
)

// processRows are the rows of the processes group: each is a figure and
// its floor, measured on one side in the same turns (group 0: one caller;
// group 1: processCallers).
var processRows = []struct {
	what       string
	group      int
	fig, floor int
	sides      []side
	byTime     bool // the ratio is of time per op (else of rates)
	goal       string
}{
	{"sequential call, unreplicated (Replicas(1)), key owned by a member process", 0, opCall, opTCP,
		[]side{liteSide, memberSide}, true, "goal ≤ 1.5× the raw TCP round trip, CPU per call ≤ 1.3× raw TCP's"},
	{fmt.Sprintf("%d concurrent callers over 1,000 keys, unreplicated, every key owned by one member process", processCallers), 1, opCall, opTCP,
		[]side{liteSide, memberSide}, false, "goal ≥ 1.0× unbatched pipelined TCP"},
	{"replicated write, R=3 W=Majority, one hot key owned by a member process, sequential", 0, opWrite, opCall,
		[]side{memberSide, liteSide}, false, "goal ≥ 10 k ops/s and ≥ 0.8× the unreplicated call between the same processes"},
	{fmt.Sprintf("replicated writes, R=3 W=Majority, %d concurrent callers over 1,000 keys owned by one member process", processCallers), 1, opWrite, opCall,
		[]side{liteSide, memberSide}, false, "no goal of its own (the sequential one: ≥ 0.8× the unreplicated call)"},
}

// processesWith measures every row of processes, each side's members
// started afresh; procs > 0 sets every process's GOMAXPROCS.
func processesWith(procs int) {
	shape := fmt.Sprintf("GOMAXPROCS %d in each process (the default) on %d cores", runtime.GOMAXPROCS(0), runtime.NumCPU())
	if procs > 0 {
		shape = fmt.Sprintf("GOMAXPROCS %d in each process (its share of the %d cores)", procs, runtime.NumCPU())
	}
	got := map[side][2][]measured{}
	for _, s := range []side{liteSide, memberSide} {
		got[s] = measureSide(s, procs)
	}
	for _, r := range processRows {
		for _, s := range r.sides {
			fig, floor := got[s][r.group][r.fig], got[s][r.group][r.floor]
			ratio := fmt.Sprintf("%.2f× the floor's rate (by round: %s)", floor.ns()/fig.ns(), paired(floor.timing, fig.timing))
			if r.byTime {
				ratio = fmt.Sprintf("%.2f× the floor's time per op (by round: %s)", fig.ns()/floor.ns(), pairedTime(floor.timing, fig.timing))
			}
			note := r.goal
			if s.lite && r.fig == opWrite {
				note += "; a lite caller holds no copy, so no early answer: the write waits for two round trips, the call to the owner and the owner's commit to a replica"
			}
			add(r.what+"; "+s.name+"; "+shape,
				fig.String(),
				opNames[r.group][r.floor]+": "+floor.String(),
				fmt.Sprintf("%s; CPU per op %.2f× the floor's", ratio, float64(sum(fig.cpu))/float64(sum(floor.cpu))),
				note)
		}
	}
}

// measureSide starts a cluster of member processes with its callers on
// side s, and measures each operation with one caller, then with
// processCallers, every key owned by the same member process.
func measureSide(s side, procs int) [2][]measured {
	ctx := context.Background()
	c := startProcCluster(s.lite, procs)
	defer c.close()
	conns := make([]net.Conn, processCallers)
	bufs := make([][]byte, processCallers)
	for i := range conns {
		conn, err := net.Dial("tcp", c.owner.echo)
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		conns[i], bufs[i] = conn, make([]byte, 64)
	}
	// Key 0 is the sequential rows' key; the concurrent rows walk them all.
	singles := ownedRefs(c.caller, Singles, c.owner.addr, "pu", processKeys)
	writes := ownedRefs(c.caller, Majorities, c.owner.addr, "pw", processKeys)
	var out [2][]measured
	for g, callers := range []int{1, processCallers} {
		out[g] = turns(c.pids, replicationRuns,
			load{callers, processKeys, func(w, _ int) error { return pingPong(conns[w], bufs[w]) }},
			load{callers, processKeys, func(_, i int) error { _, err := casty.Call(ctx, singles[i], (*Register).Add, 1); return err }},
			load{callers, processKeys, func(_, i int) error { _, err := casty.Call(ctx, writes[i], (*Register).Add, 1); return err }})
	}
	return out
}

// pingPong writes buf to conn and reads as many bytes back.
func pingPong(conn net.Conn, buf []byte) error {
	if _, err := conn.Write(buf); err != nil {
		return err
	}
	_, err := io.ReadFull(conn, buf)
	return err
}

// ownedRefs returns refs, through via, to n keys of kind k owned by the
// member at addr, each activated.
func ownedRefs(via *casty.System, k *casty.Kind[Register], addr, prefix string, n int) []casty.Ref[Register] {
	refs := make([]casty.Ref[Register], n)
	for i, key := range ownedKeys(via, k.Name(), addr, prefix, n) {
		refs[i] = k.Ref(via, key)
		if _, err := casty.Call(context.Background(), refs[i], (*Register).Add, 0); err != nil {
			panic(err)
		}
	}
	return refs
}

// procCluster is a processes cluster: the callers' system in this
// process, and the member processes, the owner of every key called first.
type procCluster struct {
	caller  *casty.System
	owner   *memberProc
	members []*memberProc
	pids    []int // the member processes', owner first
}

// startProcCluster starts clusterSize members, all in processes of their
// own with a lite client in this process as the caller, or the caller a
// full member in this process and the rest in processes; it returns once
// every member has settled its placement of clusterSize members and a
// replicated write through the caller succeeds.
func startProcCluster(lite bool, procs int) *procCluster {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &procCluster{}
	seed := firstMember
	if !lite {
		a, err := casty.Start(ctx, "127.0.0.1:0", quietLog)
		if err != nil {
			panic(err)
		}
		c.caller, seed = a, a.Addr()
	}
	inProcesses := clusterSize
	if !lite {
		inProcesses--
	}
	for range inProcesses {
		p := spawnMember(seed, procs)
		if seed == firstMember {
			seed = p.addr
		}
		c.members = append(c.members, p)
		c.pids = append(c.pids, p.pid)
	}
	c.owner = c.members[0]
	if lite {
		l, err := casty.Connect(ctx, []string{seed}, quietLog)
		if err != nil {
			panic(err)
		}
		c.caller = l
	}
	for _, p := range c.members {
		p.waitReady()
	}
	if err := c.caller.WaitMembers(ctx, clusterSize); err != nil {
		panic(err)
	}
	waitWrites(ctx, c.caller)
	return c
}

// close closes the caller's system, then stops the member processes, all
// at once.
func (c *procCluster) close() {
	c.caller.Close(context.Background())
	for _, p := range c.members {
		p.in.Close()
	}
	for _, p := range c.members {
		p.cmd.Wait()
	}
}

// firstMember, as a member process's seed, starts the cluster.
const firstMember = "first"

// memberProc is a member process started by spawnMember.
type memberProc struct {
	addr, echo string // its cluster address, its echo server's
	pid        int
	cmd        *exec.Cmd
	in         io.Closer      // closing it stops the process
	out        *bufio.Scanner // its standard output, past ADDR and ECHO
}

// waitReady waits until the process says it sees clusterSize members and
// has settled its placement of them.
func (p *memberProc) waitReady() {
	for p.out.Scan() {
		if p.out.Text() == "READY" {
			return
		}
	}
	panic("bench: a member process never saw the cluster settle")
}

// spawnMember starts this binary as a member joined to seed (-member; the
// first member when seed is firstMember), with GOMAXPROCS procs when
// procs > 0, and returns once it has said its addresses.
func spawnMember(seed string, procs int) *memberProc {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd := exec.Command(exe, "-member", seed)
	if procs > 0 {
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		panic(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	p := &memberProc{pid: cmd.Process.Pid, cmd: cmd, in: in, out: bufio.NewScanner(out)}
	for (p.addr == "" || p.echo == "") && p.out.Scan() {
		if v, ok := strings.CutPrefix(p.out.Text(), "ADDR "); ok {
			p.addr = v
		}
		if v, ok := strings.CutPrefix(p.out.Text(), "ECHO "); ok {
			p.echo = v
		}
	}
	if p.addr == "" || p.echo == "" {
		in.Close()
		cmd.Wait()
		panic("bench: a member process did not start")
	}
	return p
}

// measured is a load's timing, and the CPU (user and system) per
// operation it cost this process and each process in turns' pids, over all
// its runs (testing.Benchmark's warm-up runs too, as the count of
// operations does; the member processes' figures include their background
// work).
type measured struct {
	timing
	cpu []time.Duration
}

// String formats the rate, the latency percentiles of a sequential load,
// the spread of the runs and the CPU per operation.
func (m measured) String() string {
	lat := ""
	if m.p50 > 0 {
		lat = fmt.Sprintf(", p50 %.0f µs, p99 %.0f µs", us(m.p50), us(m.p99))
	}
	return fmt.Sprintf("%.1f k ops/s%s (%s); CPU per op %s", m.opsPerSec()/1e3, lat, m.spread(), cpuString(m.cpu))
}

// cpuString prints CPU times per operation: the caller's process's, the
// owner's, then the other members'.
func cpuString(d []time.Duration) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = fmt.Sprintf("%.1f", us(x))
		switch i {
		case 0:
			parts[i] = "caller " + parts[i]
		case 1:
			parts[i] = "owner " + parts[i]
		case 2:
			parts[i] = "others " + parts[i]
		}
	}
	return fmt.Sprintf("%.1f µs (%s)", us(sum(d)), strings.Join(parts, " + "))
}

// sum adds d up.
func sum(d []time.Duration) time.Duration {
	var s time.Duration
	for _, x := range d {
		s += x
	}
	return s
}

// cpuTimes is the CPU time this process and each process in pids have
// used so far.
func cpuTimes(pids []int) []time.Duration {
	out := []time.Duration{procstat.Self()}
	for _, p := range pids {
		out = append(out, procstat.Of(p))
	}
	return out
}

// member runs a member joined to seed (the first member when seed is
// firstMember), and a raw TCP echo server for the floors, until its
// standard input closes (the parent stopped it or died). It prints its
// addresses, then READY once it sees clusterSize members and has settled
// its placement of them.
func member(seed string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := []casty.Option{quietLog}
	if seed != firstMember {
		opts = append(opts, casty.Seeds(seed))
	}
	s, err := casty.Start(ctx, "127.0.0.1:0", opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench member:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench member:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	fmt.Printf("ADDR %s\nECHO %s\n", s.Addr(), ln.Addr())
	if err := s.WaitMembers(ctx, clusterSize); err != nil {
		fmt.Fprintln(os.Stderr, "bench member:", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
	s.Close(context.Background())
}

package main

import (
	"bufio"
	"context"
	"fmt"
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

// processes measures the hot-key write with every member in a process of
// its own, as members run in production: this process holds the caller's
// member, and two more run this binary with -member. The floor is the same
// pair of calls the in-process rows compare (an unreplicated call to a key
// the other member owns), plus a raw TCP ping-pong between the processes,
// and the CPU (user and system) each operation costs in each process.
//
// In one process the members share one Go scheduler, which hands a message
// from one member's goroutine to another's without the kernel waking
// anyone; the cost of a call there is CPU. Between processes every message
// wakes a process, as it does between machines, and the count of messages
// on the caller's path is what the ratio measures.
//
// It runs twice: with each process's default GOMAXPROCS (every core, so
// three processes keep three times as many Ps as the machine has cores,
// and each one's idle Ps spin and wake threads on cores the others are
// using), and with each process given its share of the cores, as three
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

// processesWith measures one row of processes; procs > 0 sets every
// process's GOMAXPROCS.
func processesWith(procs int) {
	ctx := context.Background()
	a, err := casty.Start(ctx, "127.0.0.1:0", quietLog)
	if err != nil {
		panic(err)
	}
	defer a.Close(ctx)
	var echo []string
	var members []string
	var pids []int
	for range 2 {
		m, e, stop, pid := spawnMember(a.Addr(), procs)
		pids = append(pids, pid)
		defer stop()
		members, echo = append(members, m), append(echo, e)
	}
	waitReplicated([]*casty.System{a}, 3)
	b := members[0]

	conn, err := net.Dial("tcp", echo[0])
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	buf := make([]byte, 64)
	var raw timing
	rawCPU := cpuPerOp(pids, func(count func()) {
		raw = sequential(replicationRuns, func() error {
			count()
			if _, err := conn.Write(buf); err != nil {
				return err
			}
			_, err := io.ReadFull(conn, buf)
			return err
		})[0]
	})
	single := Singles.Ref(a, ownedBy(a, Singles.Name(), b, "ps"))
	hot := Majorities.Ref(a, ownedBy(a, Majorities.Name(), b, "phot"))
	var floor, write timing
	floorCPU := cpuPerOp(pids, func(count func()) {
		floor = sequential(replicationRuns, func() error { count(); _, err := casty.Call(ctx, single, (*Register).Add, 1); return err })[0]
	})
	writeCPU := cpuPerOp(pids, func(count func()) {
		write = sequential(replicationRuns, func() error { count(); _, err := casty.Call(ctx, hot, (*Register).Add, 1); return err })[0]
	})
	shape := fmt.Sprintf("each member a process of its own, GOMAXPROCS %d each (the default: %d Ps on %d cores)", runtime.GOMAXPROCS(0), 3*runtime.GOMAXPROCS(0), runtime.NumCPU())
	if procs > 0 {
		shape = fmt.Sprintf("each member a process with its share of the cores, GOMAXPROCS %d each (%d Ps on %d cores)", procs, 3*procs, runtime.NumCPU())
	}
	add("replicated write, R=3 W=Majority, one hot key, sequential caller on a non-owner member; "+shape,
		fmt.Sprintf("%.1f k ops/s, p50 %.0f µs, p99 %.0f µs (%s); CPU per write %s",
			write.opsPerSec()/1e3, us(write.p50), us(write.p99), write.spread(), cpuString(writeCPU)),
		fmt.Sprintf("unreplicated (Replicas(1)) cross-node call between the same processes %.1f k/s, p50 %.0f µs, p99 %.0f µs (%s), CPU per call %s; raw TCP ping-pong between them, 64 B, %.1f k/s, p50 %.0f µs, CPU per round trip %s",
			floor.opsPerSec()/1e3, us(floor.p50), us(floor.p99), floor.spread(), cpuString(floorCPU), raw.opsPerSec()/1e3, us(raw.p50), cpuString(rawCPU)),
		fmt.Sprintf("%.2f× the cross-node call's rate, %.2f× raw TCP", floor.ns()/write.ns(), raw.ns()/write.ns()),
		"goal ≥ 0.5× and ≥ 10 k ops/s; three processes on this machine's cores")
}

// spawnMember starts this binary as a member joined to seed (-member),
// with GOMAXPROCS procs when procs > 0, and returns its cluster address,
// its echo address, and how to stop it.
func spawnMember(seed string, procs int) (addr, echo string, stop func(), pid int) {
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
	stop = func() { in.Close(); cmd.Wait() }
	pid = cmd.Process.Pid
	sc := bufio.NewScanner(out)
	for (addr == "" || echo == "") && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = v
		}
		if v, ok := strings.CutPrefix(sc.Text(), "ECHO "); ok {
			echo = v
		}
	}
	if addr == "" || echo == "" {
		stop()
		panic("bench: a member process did not start")
	}
	return addr, echo, stop, pid
}

// cpuString prints the CPU times of cpuPerOp: caller's process, owner's,
// third's.
func cpuString(d []time.Duration) string {
	var sum time.Duration
	parts := make([]string, len(d))
	for i, x := range d {
		sum += x
		parts[i] = fmt.Sprintf("%.0f", float64(x)/1e3)
	}
	return fmt.Sprintf("%.0f µs (%s in the caller's, the owner's and the third process)", float64(sum)/1e3, strings.Join(parts, " + "))
}

// cpuPerOp runs f, which counts its operations, and returns the CPU time
// per operation of this process and of each process in pids (user and
// system time; the members' figures include every operation of the group,
// the warm-up runs of testing.Benchmark too, as does the count).
func cpuPerOp(pids []int, f func(count func())) []time.Duration {
	n := 0
	before := []time.Duration{processCPU()}
	for _, p := range pids {
		before = append(before, pidCPU(p))
	}
	f(func() { n++ })
	out := []time.Duration{processCPU() - before[0]}
	for i, p := range pids {
		out = append(out, pidCPU(p)-before[i+1])
	}
	for i := range out {
		out[i] /= time.Duration(max(n, 1))
	}
	return out
}

// pidCPU is the user and system time process pid has used so far (Linux;
// 0 elsewhere).
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// member runs a member joined to seed, and a raw TCP echo server for the
// floor, until its standard input closes (the parent stopped it or died).
func member(seed string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(seed), quietLog)
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
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
	s.Close(context.Background())
}

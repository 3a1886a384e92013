// Command peers runs the same request/response shapes on Casty and on
// Proto.Actor Go, in one run, and prints one markdown table: each shape's
// calls per second and median latency on both, their ratio, and a floor
// (a raw TCP ping-pong between the same two processes) measured beside
// them. Run it from this directory with go run . (see README.md); -only
// picks shapes, -duration sets each timed run.
//
// The remote shapes run a server process: this program, re-executed with
// PEERS_SERVE=1 in its environment.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/casty-go/casty/casty"
)

// payloadSize is the size of every request and answer's payload.
const payloadSize = 64

// keys is how many actors (or grains) the 64-caller shapes spread over.
const keys = 1000

// callers is the number of concurrent callers of the parallel shapes.
const callers = 64

// members is the size of the cluster shapes' clusters.
const members = 3

// serveEnv in the environment makes this program the server process.
const serveEnv = "PEERS_SERVE"

func payload() []byte {
	p := make([]byte, payloadSize)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

// shape is one row of the table.
type shape struct {
	name    string // what -only matches
	title   string // the table's first column
	callers int
	keys    int
}

var shapes = []shape{
	{"local", "local, sequential: 1 caller, 1 actor", 1, 1},
	{"local-64", "local, 64 callers over 1,000 actors", callers, keys},
	{"remote", "remote (2 processes), sequential: 1 caller, 1 actor", 1, 1},
	{"remote-64", "remote (2 processes), 64 callers over 1,000 actors", callers, keys},
	{"cluster", "cluster grains (3 members), sequential, grain on another member", 1, 1},
	{"cluster-64", "cluster grains (3 members), 64 callers over 1,000 keys, each on another member", callers, keys},
}

// floorTitles are the floor rows' titles, by the remote shape they go with.
var floorTitles = map[string]string{
	"remote":    "floor: raw TCP ping-pong, 64 B, between the same two processes, 1 connection",
	"remote-64": "floor: the same, 64 connections, one caller each",
}

// result is one row measured.
type result struct {
	shape
	casty, proto sample
	floor        *sample // the remote shapes' raw TCP floor
}

// options are the command's flags.
type options struct {
	only     string
	duration time.Duration
	runs     int
}

func main() {
	if os.Getenv(serveEnv) != "" {
		if err := serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "peers server:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.only, "only", "", "run only the shapes whose name contains this: local, local-64, remote, remote-64, cluster, cluster-64")
	flag.DurationVar(&o.duration, "duration", time.Second, "length of each timed run")
	flag.IntVar(&o.runs, "runs", 3, "timed runs of each side per shape (the best is shown)")
	flag.Parse()
	rs, err := bench(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
	printTable(os.Stdout, rs)
}

// bench measures the shapes o selects.
func bench(o options) ([]result, error) {
	slog.SetDefault(slog.New(slog.DiscardHandler)) // Proto.Actor logs some things through the default logger
	fmt.Fprintf(os.Stderr, "peers: %s, %d CPUs, GOMAXPROCS %d, %v per run, best of %d\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), o.duration, o.runs)
	var picked []shape
	for _, s := range shapes {
		if strings.Contains(s.name, o.only) {
			picked = append(picked, s)
		}
	}
	if len(picked) == 0 {
		return nil, fmt.Errorf("no shape matches -only %q", o.only)
	}
	var out []result
	for _, group := range []struct {
		prefix string
		run    func(options, []shape) ([]result, error)
	}{{"local", localShapes}, {"remote", remoteShapes}, {"cluster", clusterShapes}} {
		var these []shape
		for _, s := range picked {
			if strings.HasPrefix(s.name, group.prefix) {
				these = append(these, s)
			}
		}
		if len(these) == 0 {
			continue
		}
		rs, err := group.run(o, these)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", group.prefix, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// measure runs one shape's contestants (Casty, Proto.Actor, then any
// floor) and logs its progress.
func measure(o options, s shape, pids []int, cs ...contestant) ([]sample, error) {
	fmt.Fprintf(os.Stderr, "  %s\n", s.title)
	return rounds(o.runs, o.duration, s.callers, s.keys, pids, cs...)
}

func localShapes(o options, ss []shape) ([]result, error) {
	crefs, cstop, err := castyLocal(keys)
	if err != nil {
		return nil, err
	}
	defer cstop()
	root, pids, pstop := protoLocal(keys)
	defer pstop()
	var out []result
	for _, s := range ss {
		got, err := measure(o, s, nil,
			contestant{"Casty", castyCall([][]casty.Ref[Echo]{crefs})},
			contestant{"Proto.Actor", protoCall(root, [][]*actor.PID{pids})})
		if err != nil {
			return nil, err
		}
		out = append(out, result{shape: s, casty: got[0], proto: got[1]})
	}
	return out, nil
}

func remoteShapes(o options, ss []shape) ([]result, error) {
	srv, err := startServer()
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	crefs, cstop, err := castyRemote(srv.casty, keys)
	if err != nil {
		return nil, err
	}
	defer cstop()
	root, pids, pstop, err := protoRemote(srv.proto, keys)
	if err != nil {
		return nil, err
	}
	defer pstop()
	var out []result
	for _, s := range ss {
		floor, closeFloor, err := tcpFloor(srv.tcp, s.callers)
		if err != nil {
			return nil, err
		}
		got, err := measure(o, s, []int{srv.pid},
			contestant{"Casty", castyCall([][]casty.Ref[Echo]{crefs})},
			contestant{"Proto.Actor", protoCall(root, [][]*actor.PID{pids})},
			contestant{"raw TCP", floor})
		closeFloor()
		if err != nil {
			return nil, err
		}
		out = append(out, result{shape: s, casty: got[0], proto: got[1], floor: &got[2]})
	}
	return out, nil
}

func clusterShapes(o options, ss []shape) ([]result, error) {
	crefs, cstop, err := castyCluster(members, keys)
	if err != nil {
		return nil, err
	}
	defer cstop()
	clusters, owned, pstop, err := protoCluster(members, keys)
	if err != nil {
		return nil, err
	}
	defer pstop()
	var out []result
	for _, s := range ss {
		got, err := measure(o, s, nil,
			contestant{"Casty", castyCall(crefs)},
			contestant{"Proto.Actor", protoGrainCall(clusters, owned)})
		if err != nil {
			return nil, err
		}
		out = append(out, result{shape: s, casty: got[0], proto: got[1]})
	}
	return out, nil
}

// tcpFloor dials n connections to the server's echo listener and returns
// a contestant whose caller w writes 64 bytes on connection w%n and reads
// them back.
func tcpFloor(addr string, n int) (call func(w, i int) error, closeAll func(), err error) {
	conns := make([]net.Conn, 0, n)
	closeAll = func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, c)
	}
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = payload()
	}
	return func(w, _ int) error {
		c, b := conns[w%n], bufs[w%n]
		if _, err := c.Write(b); err != nil {
			return err
		}
		_, err := io.ReadFull(c, b)
		return err
	}, closeAll, nil
}

// server is the server process of the remote shapes.
type server struct {
	casty, proto, tcp string // its Casty member's, Proto.Actor system's and echo listener's addresses
	pid               int
	stop              func()
}

// startServer re-executes this program as the server process and reads
// its addresses.
func startServer() (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{pid: cmd.Process.Pid, stop: func() { in.Close(); cmd.Wait() }}
	sc := bufio.NewScanner(out)
	for (s.casty == "" || s.proto == "" || s.tcp == "") && sc.Scan() {
		name, addr, _ := strings.Cut(sc.Text(), " ")
		switch name {
		case "CASTY":
			s.casty = addr
		case "PROTO":
			s.proto = addr
		case "TCP":
			s.tcp = addr
		}
	}
	if s.casty == "" || s.proto == "" || s.tcp == "" {
		s.stop()
		return nil, errors.New("the server process did not start")
	}
	go io.Copy(io.Discard, out)
	return s, nil
}

// serve runs the server process: a Casty member, a Proto.Actor remote
// actor system with keys echo actors, and a raw TCP echo listener, all on
// 127.0.0.1, until in closes. It writes their addresses to out.
func serve(in io.Reader, out io.Writer) error {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	sys, err := castyServe()
	if err != nil {
		return err
	}
	defer sys.Close(context.Background())
	paddr, pstop, err := protoServe(keys)
	if err != nil {
		return err
	}
	defer pstop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
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
	fmt.Fprintf(out, "CASTY %s\nPROTO %s\nTCP %s\n", sys.Addr(), paddr, ln.Addr())
	io.Copy(io.Discard, in)
	return nil
}

// printTable writes the results as one markdown table.
func printTable(w io.Writer, rs []result) {
	fmt.Fprintf(w, "| shape | Casty | Proto.Actor | ratio (Casty/Proto.Actor) |\n|---|---|---|---|\n")
	var floors []result
	for _, r := range rs {
		c, p := cell(r.casty), cell(r.proto)
		if r.floor != nil {
			c = fmt.Sprintf("%s (%.2f× floor)", c, r.casty.rate()/r.floor.rate())
			p = fmt.Sprintf("%s (%.2f× floor)", p, r.proto.rate()/r.floor.rate())
			floors = append(floors, r)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× |\n", r.title, c, p, r.casty.rate()/r.proto.rate())
	}
	for _, r := range floors {
		fmt.Fprintf(w, "| %s | %s | — | — |\n", floorTitles[r.name], cell(*r.floor))
	}
}

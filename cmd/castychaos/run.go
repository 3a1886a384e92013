package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/casty-go/casty/casty"
)

// options are the controller's flags.
type options struct {
	duration time.Duration
	seed     int64
	members  int
	replicas int
	clients  int
	rate     int
	maxOps   int64
	interval time.Duration
	hold     holdRange
	maxDrift time.Duration
	regs     int
	relay    float64 // register workload: share sent through a member
	workload string
	nemesis  string
	verbose  bool
}

// setupBound bounds everything outside the run's duration: starting the
// members, converging, healing and the final reads.
const setupBound = 90 * time.Second

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("castychaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long the workloads and the nemesis run")
	fs.Int64Var(&o.seed, "seed", 0, "seed of every random choice (0: from the clock; printed)")
	fs.IntVar(&o.members, "members", 5, "member processes")
	fs.IntVar(&o.replicas, "replicas", 3, "copies of each actor (Write and Read quorums are Majority when > 1)")
	fs.IntVar(&o.clients, "clients", 4, "concurrent clients per workload")
	fs.IntVar(&o.rate, "rate", 100, "operations per second per workload, at most")
	fs.Int64Var(&o.maxOps, "max-ops", 20000, "operations per workload, at most")
	fs.DurationVar(&o.interval, "interval", 3*time.Second, "mean time between faults")
	o.hold = defaultHold
	fs.Var(&o.hold, "hold", fmt.Sprintf("how long each fault is held: a `range` min..max drawn from uniformly, or one duration; up to %d × the members' Replication.RemoveDeadAfter (%s), so a fault can outlast removal", maxHoldFactor, removeDeadAfter))
	fs.IntVar(&o.regs, "registers", 4, "register and cregister workloads: registers each (porcupine checks each one's history on its own, so more registers keep a long run's history checkable)")
	fs.StringVar(&o.workload, "workload", "all", "workloads: "+strings.Join(allWorkloads, ",")+", all (the first four) or collections (the last five)")
	fs.Float64Var(&o.relay, "relay", 0.5, "register workload: share of operations sent through a member (the Relay service), whose calls replicas may answer early; the rest go from the lite member")
	fs.DurationVar(&o.maxDrift, "max-drift", time.Second, "skew nemesis: bound on the skew between two members' clocks (each within ±max-drift/2)")
	fs.StringVar(&o.nemesis, "nemesis", "all", "faults: "+strings.Join(allFaults, ",")+", all or none")
	fs.BoolVar(&o.verbose, "v", false, "members log to their log files")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano()
	}
	if o.members < 1 || o.replicas < 1 || o.clients < 1 || o.rate < 1 || o.duration <= 0 || o.interval <= 0 || o.maxDrift <= 0 || o.regs < 1 {
		fmt.Fprintln(stderr, "castychaos: -members, -replicas, -clients, -rate, -duration, -interval, -max-drift and -registers must be positive")
		return 2
	}
	if o.relay < 0 || o.relay > 1 {
		fmt.Fprintln(stderr, "castychaos: -relay must be between 0 and 1")
		return 2
	}
	fmt.Fprintf(stdout, "castychaos: seed %d (rerun with -seed %d)\n", o.seed, o.seed)
	code, err := chaos(o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "castychaos: %v\n", err)
	}
	return code
}

// Workloads: the actor workloads "all" selects, then the collection
// workloads "collections" selects.
var (
	actorWorkloads      = []string{"register", "set", "counter", "ledger"}
	collectionWorkloads = []string{"cset", "ccounter", "cqueue", "clock", "cregister"}
	allWorkloads        = append(slices.Clone(actorWorkloads), collectionWorkloads...)
)

// parseWorkloads parses -workload: names from allWorkloads, "all" for
// the actor workloads, "collections" for the collection workloads.
func parseWorkloads(s string) ([]string, error) {
	if s == "all" {
		return slices.Clone(actorWorkloads), nil
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		names := []string{w}
		if w == "collections" {
			names = collectionWorkloads
		}
		for _, n := range names {
			if !slices.Contains(allWorkloads, n) {
				return nil, fmt.Errorf("unknown %q (want one of %s, all or collections)", n, strings.Join(allWorkloads, ", "))
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func parseList(s string, all []string) ([]string, error) {
	switch s {
	case "all":
		return slices.Clone(all), nil
	case "none", "":
		return nil, nil
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		if !slices.Contains(all, w) {
			return nil, fmt.Errorf("unknown %q (want one of %s)", w, strings.Join(all, ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// chaos runs one experiment; every exit path stops the member processes
// and removes the partition rules.
func chaos(o options, stdout io.Writer) (int, error) {
	workloads, err := parseWorkloads(o.workload)
	if err != nil {
		return 2, fmt.Errorf("-workload: %w", err)
	}
	if len(workloads) == 0 {
		return 2, errNoWorkload
	}
	faults, err := parseList(o.nemesis, allFaults)
	if err != nil {
		return 2, fmt.Errorf("-nemesis: %w", err)
	}
	if slices.ContainsFunc(faults, cutsLinks) {
		if why := partitionSupport(stdout); why != "" {
			skipped := slices.DeleteFunc(slices.Clone(faults), func(f string) bool { return !cutsLinks(f) })
			fmt.Fprintf(stdout, "castychaos: %s nemesis skipped: %s\n", strings.Join(skipped, ","), why)
			faults = slices.DeleteFunc(faults, cutsLinks)
		}
	}
	fmt.Fprintf(stdout, "castychaos: %d members, replicas %d, %d clients per workload, workloads %s, nemesis %s, duration %s\n",
		o.members, o.replicas, o.clients, strings.Join(workloads, ","), orNone(faults), o.duration)
	fmt.Fprintf(stdout, "castychaos: faults held %s; members remove a member a majority saw dead for Replication.RemoveDeadAfter %s\n", &o.hold, removeDeadAfter)

	// A hard bound on the whole run, and Ctrl-C or SIGTERM end it early;
	// either way the deferred cleanup below runs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.duration+o.hold.max+2*setupBound+settleBound)
	defer cancel()

	logDir, err := os.MkdirTemp("", "castychaos-")
	if err != nil {
		return 2, err
	}
	keepLogs := true
	defer func() {
		if !keepLogs {
			os.RemoveAll(logDir)
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return 2, err
	}
	partitions := slices.ContainsFunc(faults, cutsLinks)
	if partitions {
		// Members run as uids of their own (see partitioner): they need a
		// binary and a log directory they can reach.
		if err := os.Chmod(logDir, 0o755); err != nil {
			return 2, err
		}
		if exe, err = copyExecutable(exe, logDir); err != nil {
			return 2, err
		}
	}
	var part *partitioner
	if partitions {
		if part, err = newPartitioner(); err != nil {
			return 2, err
		}
		defer part.remove()
	}
	cluster := fmt.Sprintf("castychaos-%d-%d", os.Getpid(), o.seed)
	procs, err := newProcs(exe, cluster, o.members, o.replicas, partitions, logDir, o.verbose)
	if err != nil {
		return 2, err
	}
	procs.maxDrift = o.maxDrift
	if part != nil {
		if err := part.marks(procs.members); err != nil {
			return 2, err
		}
	}
	defer procs.stopAll(5 * time.Second)
	if slices.Contains(faults, faultSkew) {
		// Skewed from the start, each member by its own offset.
		rng := rand.New(rand.NewPCG(uint64(o.seed), skewStream))
		for _, m := range procs.members {
			m.setSkew(drawSkew(rng, o.maxDrift))
		}
		fmt.Fprintf(stdout, "castychaos: clock skews within ±%s (-max-drift %s): %s\n", o.maxDrift/2, o.maxDrift, skews(procs))
	}

	k := declare(o.replicas)
	k.acks = newAckFeed()
	client, err := startCluster(ctx, procs, cluster)
	if err != nil {
		return 2, fmt.Errorf("%w (member logs in %s)", err, logDir)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = client.Close(cctx)
	}()
	fmt.Fprintf(stdout, "castychaos: cluster up: %s; logs in %s\n", strings.Join(procs.addrs(), " "), logDir)

	ws := make([]workload, 0, len(workloads))
	for _, name := range workloads {
		switch name {
		case "register":
			ws = append(ws, newRegisterWorkload(k, client, o.regs, o.clients, o.relay, logDir))
		case "set":
			ws = append(ws, newSetWorkload(k, client, o.clients))
		case "counter":
			ws = append(ws, &counterWorkload{kinds: k, sys: client})
		case "ledger":
			ws = append(ws, &ledgerWorkload{kinds: k, sys: client})
		default:
			w, err := newCollectionWorkload(name, k, client, o, logDir)
			if err != nil {
				return 2, fmt.Errorf("opening the %s workload: %w", name, err)
			}
			ws = append(ws, w)
		}
	}

	// The run: clients and nemesis until the duration is over.
	start := time.Now()
	runCtx, endRun := context.WithTimeout(ctx, o.duration)
	defer endRun()
	keys := k.keys(workloads, o.regs)
	nem := &nemesis{procs: procs, part: part, faults: faults, combine: len(faults) > 1, interval: o.interval, hold: o.hold, maxDrift: o.maxDrift,
		rng: rand.New(rand.NewPCG(uint64(o.seed), 0)), out: stdout, start: start, counts: map[string]int{},
		sys: client, keys: keys, regKind: k.registers.Name(), regs: o.regs, acks: k.acks}
	var wg sync.WaitGroup
	wg.Go(func() { nem.run(runCtx) })
	var watch *placementWatch
	if o.replicas > 1 {
		watch = &placementWatch{}
		wg.Go(func() { watch.run(runCtx, client) })
	}
	pace := time.Duration(o.clients) * time.Second / time.Duration(o.rate)
	for wi, w := range ws {
		var issued atomicCounter
		var capped sync.Once
		for c := range o.clients {
			rng := rand.New(rand.NewPCG(uint64(o.seed), uint64(1+wi*1000+c)))
			wg.Go(func() {
				for runCtx.Err() == nil {
					if issued.next() > o.maxOps {
						capped.Do(func() {
							fmt.Fprintf(stdout, "castychaos: t=%6.2fs %s reached -max-ops %d and stops; the nemesis goes on\n",
								time.Since(start).Seconds(), w.name(), o.maxOps)
						})
						return
					}
					w.op(runCtx, c, rng)
					if !sleepCtx(runCtx, pace) {
						return
					}
				}
			})
		}
	}
	wg.Wait() // the nemesis has healed everything it broke

	// The end: every member running, the cluster settled (placement
	// agreed and whole, every key served), then the final reads.
	healed(procs)
	settledOK := true
	if msg, err := settle(ctx, client, o.members, o.replicas, keys, ws, settleBound); err != nil {
		fmt.Fprintf(stdout, "castychaos: FAIL: %v\n", err)
		settledOK = false
	} else {
		fmt.Fprintf(stdout, "castychaos: %s\n", msg)
	}
	fctx, fcancel := context.WithTimeout(ctx, setupBound)
	defer fcancel()
	rows := make([]row, len(ws))
	for i, w := range ws {
		rows[i] = w.final(fctx)
	}
	elapsed := time.Since(start)

	pass := summary(stdout, o, nem, rows, elapsed) && settledOK
	if watch != nil {
		fmt.Fprintf(stdout, "castychaos: %s\n", watch)
	}
	if !settledOK {
		fmt.Fprintf(stdout, "castychaos: the cluster did not settle within %s of healing\n", settleBound)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "castychaos: run interrupted or over its bound: %v\n", ctx.Err())
		pass = false
	}
	if pass {
		keepLogs = false
		return 0, nil
	}
	fmt.Fprintf(stdout, "castychaos: FAIL: a check failed; member logs kept in %s\n", logDir)
	return 1, nil
}

// skewStream is the rng stream of the members' first skews (the nemesis
// draws from stream 0, the workloads' clients from 1 up to a few
// thousand).
const skewStream = 1 << 32

// skews lists each member's clock skew.
func skews(p *procs) string {
	parts := make([]string, len(p.members))
	for i, m := range p.members {
		parts[i] = fmt.Sprintf("member %d %s", m.index, signed(m.clockSkew()))
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// atomicCounter hands out operation numbers shared by a workload's clients.
type atomicCounter struct {
	mu sync.Mutex
	n  int64
}

func (a *atomicCounter) next() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return a.n
}

// startCluster starts member 0, then the others seeded with it, then a
// lite member in this process, and waits until it sees every member.
func startCluster(ctx context.Context, p *procs, cluster string) (*casty.System, error) {
	sctx, cancel := context.WithTimeout(ctx, setupBound)
	defer cancel()
	first := p.members[0]
	if err := p.start(first, nil); err != nil {
		return nil, err
	}
	if err := waitListening(sctx, first); err != nil {
		return nil, err
	}
	for _, m := range p.members[1:] {
		if err := p.start(m, []string{first.addr}); err != nil {
			return nil, err
		}
	}
	for _, m := range p.members[1:] {
		if err := waitListening(sctx, m); err != nil {
			return nil, err
		}
	}
	client, err := casty.Connect(sctx, p.addrs(), casty.WithConfig(clusterConfig()), casty.ClusterName(cluster),
		casty.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, fmt.Errorf("connecting the lite member: %w", err)
	}
	if err := waitMembers(sctx, client, len(p.members)); err != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = client.Close(cctx)
		return nil, err
	}
	return client, nil
}

// waitMembers waits until sys sees exactly n live members.
func waitMembers(ctx context.Context, sys *casty.System, n int) error {
	for {
		got := len(sys.Members())
		if got == n {
			return nil
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return fmt.Errorf("the lite member sees %d members, want %d: %w", got, n, ctx.Err())
		}
	}
}

// healed checks that the nemesis left every member running.
func healed(p *procs) {
	for _, m := range p.members {
		switch m.current() {
		case killed:
			_ = p.start(m, p.seedsFor(m))
		case paused:
			p.signal(m, syscall.SIGCONT, running)
		}
	}
}

// copyExecutable copies exe into dir, world-executable.
func copyExecutable(exe, dir string) (string, error) {
	b, err := os.ReadFile(exe)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "castychaos")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return "", err
	}
	return dst, nil
}

// summary prints the faults and the table, and reports whether every
// check passed.
func summary(w io.Writer, o options, n *nemesis, rows []row, elapsed time.Duration) bool {
	n.mu.Lock()
	var parts []string
	total := 0
	for _, f := range n.faults {
		c := n.counts[f]
		parts = append(parts, fmt.Sprintf("%s %d", f, c))
		total += c
	}
	n.mu.Unlock()
	fmt.Fprintf(w, "\ncastychaos: seed %d, %d members, replicas %d, %s (%.1fs to the final reads), held %s, faults injected: %d (%s)\n",
		o.seed, o.members, o.replicas, o.duration, elapsed.Seconds(), &o.hold, total, strings.Join(parts, ", "))
	if slices.Contains(n.faults, faultSkew) {
		fmt.Fprintf(w, "castychaos: clock skews at the end: %s\n", skews(n.procs))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\toperations\tok\tfailed\tindeterminate\tlost\tlinearizable\tresult\t")
	pass := true
	for _, r := range rows {
		result := "PASS"
		if !r.pass {
			result, pass = "FAIL", false
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", r.workload, r.ops, r.ok, r.failed, r.indeterminate, r.lost, r.linearizable, result)
	}
	tw.Flush()
	for _, r := range rows {
		fmt.Fprintf(w, "  %s: %s\n", r.workload, r.detail)
	}
	for _, r := range rows {
		if r.failures != "" {
			fmt.Fprintf(w, "  %s definite failures: %s\n", r.workload, r.failures)
		}
	}
	return pass
}

// Command castyattack runs the attacks of SECURITY.md against real casty
// members — member processes of this binary on 127.0.0.1, reached over
// real sockets — in each mode where they apply, and asserts each one's
// outcome:
//
//   - a relayed secret-mode handshake gives the relay nothing (sealed
//     records), and, as the control, everything with auth-only;
//   - a hello naming a credential its sender does not hold gets the same
//     answer for the right and a wrong cluster name, with nothing of the
//     member in it;
//   - idle TCP connections from one host do not keep a new member out
//     (open, secret, mutual TLS with identity);
//   - byte floods — compressed large requests queued behind a busy key,
//     a slow reader of large answers, partial messages, idle sessions
//     from many client addresses — stay within the member's budgets while
//     a legitimate caller's calls keep succeeding (open, and secret with
//     the client credential);
//   - in an open cluster, a second connection cannot claim a live
//     member's node id.
//
// It prints one row per attack and mode (PASS or FAIL, the member's heap
// and resident set before, at the peak and after each flood, the
// legitimate caller's p50/p99) and exits 1 if any row failed.
//
// Usage:
//
//	go run ./cmd/castyattack [-quick] [-only relay,hello,starve,claim,flood] [-v]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	runMemberIfChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it parses args, runs the attacks and prints the
// table; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("castyattack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes (what the package's test runs)")
	only := fs.String("only", "", "comma-separated attacks to run: relay, hello, starve, claim, flood (default all)")
	verbose := fs.Bool("v", false, "members log to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	sz := defaultSizes
	if *quick {
		sz = quickSizes
	}
	var sel map[string]bool
	if *only != "" {
		sel = map[string]bool{}
		for _, a := range strings.Split(*only, ",") {
			sel[strings.TrimSpace(a)] = true
		}
	}
	results, err := runAttacks(exe, sz, sel, *verbose, func(r result) {
		fmt.Fprintf(stderr, "%s  %s [%s]: %s\n", verdict(r), r.attack, r.mode, r.outcome)
		for _, w := range r.warnings {
			fmt.Fprintf(stderr, "  %s\n", w)
		}
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	printTable(stdout, results)
	return exitCode(results)
}

// exitCode is 1 when a row failed, else 0.
func exitCode(results []result) int {
	for _, r := range results {
		if !r.pass {
			return 1
		}
	}
	return 0
}

// runAttacks runs the selected attacks (all when sel is nil) in their
// modes, reporting each result as it comes.
func runAttacks(exe string, sz sizes, sel map[string]bool, verbose bool, report func(result)) ([]result, error) {
	dir, err := os.MkdirTemp("", "castyattack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	var results []result
	var group string
	add := func(r result) {
		r.group = group
		results = append(results, r)
		report(r)
	}
	harnessOf := func(mode string) (*harness, error) { return newHarness(exe, mode, dir, verbose) }
	want := func(a string) bool { return sel == nil || sel[a] }
	type step struct {
		attack string
		modes  []string
		run    func(h *harness)
	}
	steps := []step{
		{"relay", []string{"secret", "authonly"}, func(h *harness) { add(h.attackRelay(ctx, sz)) }},
		{"hello", []string{"secret"}, func(h *harness) { add(h.attackHello(ctx)) }},
		{"starve", []string{"open", "secret", "mtls"}, func(h *harness) { add(h.attackStarvation(ctx, sz)) }},
		{"claim", []string{"open"}, func(h *harness) { add(h.attackClaim(ctx, sz)) }},
		{"flood", []string{"open", "secret"}, func(h *harness) {
			add(h.flood(ctx, "compressed 4 MiB requests behind a busy key", "MaxQueuedBytes 64 MiB/conn, x3 heap", sz, floodCompressed))
			add(h.flood(ctx, "slow reader of 3 MiB answers", "MaxQueuedBytes 64 MiB of answers waiting; peak: running handlers", sz, floodSlowReader))
			add(h.flood(ctx, "partial messages", "MaxPartialBytesTotal 256 MiB/node, x2 for GC", sz, floodPartial))
			if h.mode.Mode == "open" {
				add(h.flood(ctx, "partial messages, only started", "MaxPartialBytesTotal 256 MiB/node, x2 for GC", sz, floodPartialStarted))
			}
			add(h.flood(ctx, "idle sessions from many addresses", "MaxClientConns 1024, 64/host (count)", sz, floodIdleSessions))
		}},
	}
	for _, s := range steps {
		if !want(s.attack) {
			continue
		}
		for _, m := range s.modes {
			h, err := harnessOf(m)
			if err != nil {
				return results, err
			}
			group = s.attack
			s.run(h)
		}
	}
	return results, nil
}

func verdict(r result) string {
	if r.pass {
		return "PASS"
	}
	return "FAIL"
}

// printTable prints the results: one row each, the outcomes below.
func printTable(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tattack\tmode\tresult\theap MB before→peak→after\tRSS MB before→peak→after\tlegit p50 / p99 (ok/failed)\tbudget")
	for i, r := range results {
		heap, rss, legit := "-", "-", "-"
		if len(r.mem) == 3 {
			heap = fmt.Sprintf("%d→%d→%d", r.mem[0].heap/1e6, r.mem[1].heap/1e6, r.mem[2].heap/1e6)
			rss = fmt.Sprintf("%d→%d→%d", r.mem[0].rss/1e6, r.mem[1].rss/1e6, r.mem[2].rss/1e6)
		}
		if l := r.legit; l != nil {
			legit = fmt.Sprintf("%v / %v (%d/%d)", l.p50.Round(10*time.Microsecond), l.p99.Round(10*time.Microsecond), l.ok, l.failed)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, r.attack, r.mode, verdict(r), heap, rss, legit, r.budget)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for i, r := range results {
		fmt.Fprintf(w, "%d. %s\n", i+1, r.outcome)
	}
}

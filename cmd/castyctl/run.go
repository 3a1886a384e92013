package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/inspect"
)

// The exit codes (doc.go lists them).
const (
	exitOK          = 0 // done
	exitBreaking    = 1 // schema check: a change breaks a rolling deploy
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // could not join the cluster
	exitFailed      = 4 // the operation failed (cluster error, unreadable input)
	exitNotFound    = 5 // state: the actor is not active
)

// options are the flags every subcommand takes.
type options struct {
	seeds            string
	cert, key, ca    string
	tlsIdentity      bool
	secretFile       string
	cluster          string
	json             bool
	timeout, settle  time.Duration
	verbose          bool
	stdin            io.Reader
	stdout, stderr   io.Writer
	connectOverrides []casty.Option // tests: faster membership
	spyReady         func()         // tests: called once the spy is subscribed
	lite             *casty.System  // tests: the lite member to use instead of joining (castytest's)
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.seeds, "seeds", o.seeds, "comma-separated `addresses` of members to join through (default $CASTY_SEEDS)")
	fs.StringVar(&o.cert, "tls-cert", o.cert, "PEM `file` of this tool's certificate (with -tls-key: TLS)")
	fs.StringVar(&o.key, "tls-key", o.key, "PEM `file` of the certificate's key")
	fs.StringVar(&o.ca, "tls-ca", o.ca, "PEM `file` of the CA that signs the members (mutual TLS)")
	fs.BoolVar(&o.tlsIdentity, "tls-identity", o.tlsIdentity, "the cluster binds peers to their certificates (casty.TLS.Identity); this tool's certificate must carry the URI casty://role/operator for state, spy, waiting and accept-loss")
	fs.StringVar(&o.secretFile, "operator-secret-file", o.secretFile, "`file` holding the cluster's operator secret (casty.WithOperatorSecret), needed by state, spy, waiting and accept-loss on a cluster with secrets (default $CASTY_OPERATOR_SECRET_FILE)")
	fs.StringVar(&o.cluster, "cluster", o.cluster, "the cluster's `name` (casty.ClusterName; default casty)")
	fs.BoolVar(&o.json, "json", o.json, "print JSON (JSON Lines for spy) instead of tables")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "bound on joining and on each request")
	fs.DurationVar(&o.settle, "settle", o.settle, "after joining, wait until the member table is unchanged this long (bounded by -timeout)")
	fs.BoolVar(&o.verbose, "v", o.verbose, "log the lite member's activity to stderr")
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code other than exitFailed.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

const usage = `usage: castyctl [flags] COMMAND [flags] [args]

Cluster commands (join as a lite member through -seeds):
  members [-all]               the member table as a full member sees it: address,
                               id, role, state, for how long, incarnation
  ring [-replicas N]           ranges and share of the key space each member owns
  ring [-replicas N] KIND KEY  the owner and replicas of one key
  spy [-kind G] [-key G] [-payloads] [-n N] [-for D]
                               tail lifecycle events (globs as in path.Match)
  state KIND KEY               the live state of one actor, as JSON
  waiting                      each member's syncs waiting for removed or departed members
  accept-loss -yes ID...       give up for good the copies of removed or departed members
                               (writes only they held are lost; needs -yes)

Schema commands (no cluster):
  schema FILE|-                print a schema written by casty.WriteSchema
  schema -- PROG [ARGS...]     run PROG ARGS (which writes its schema) and print it
  schema check OLD NEW         exit 1 if NEW breaks a rolling deploy from OLD

Flags (before or after COMMAND):
`

// run is castyctl: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &options{seeds: os.Getenv("CASTY_SEEDS"), secretFile: os.Getenv("CASTY_OPERATOR_SECRET_FILE"), timeout: 10 * time.Second, settle: 300 * time.Millisecond,
		stdin: stdin, stdout: stdout, stderr: stderr}
	return o.run(ctx, args)
}

func (o *options) run(ctx context.Context, args []string) int {
	global := flag.NewFlagSet("castyctl", flag.ContinueOnError)
	global.SetOutput(o.stderr)
	o.register(global)
	global.Usage = func() {
		fmt.Fprint(o.stderr, usage)
		global.PrintDefaults()
		fmt.Fprint(o.stderr, "\nExit codes: 0 ok, 1 breaking schema change, 2 usage, 3 cannot join, 4 failed, 5 actor not active.\n")
	}
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	args = global.Args()
	if len(args) == 0 {
		global.Usage()
		return exitUsage
	}
	cmd, args := args[0], args[1:]
	var err error
	switch cmd {
	case "members":
		err = o.members(ctx, args)
	case "ring":
		err = o.ring(ctx, args)
	case "spy":
		err = o.spy(ctx, args)
	case "state":
		err = o.state(ctx, args)
	case "waiting":
		err = o.waiting(ctx, args)
	case "accept-loss":
		err = o.acceptLoss(ctx, args)
	case "schema":
		err = o.schema(ctx, args)
	case "help":
		global.Usage()
		return exitOK
	default:
		err = usagef("unknown command %q", cmd)
	}
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(o.stderr, "castyctl %s: %v\n(castyctl -h for help)\n", cmd, err)
		return exitUsage
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(o.stderr, "castyctl %s: %v\n", cmd, ee.err)
		}
		return ee.code
	default:
		fmt.Fprintf(o.stderr, "castyctl %s: %v\n", cmd, err)
		return exitFailed
	}
}

// flags returns a subcommand's flag set, with the common flags.
func (o *options) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("castyctl "+name, flag.ContinueOnError)
	fs.SetOutput(o.stderr)
	o.register(fs)
	return fs
}

// parse parses a subcommand's flags, which may come before or after its
// positional arguments, and returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// The flag package ate the "--": what follows is verbatim.
			return append(append(pos, "--"), rest...), nil
		}
		args = rest
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// connect joins the cluster as a lite member and waits for its member
// table to settle.
func (o *options) connect(ctx context.Context) (*casty.System, error) {
	if o.lite != nil {
		return o.lite, nil
	}
	var seeds []string
	for s := range strings.SplitSeq(o.seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, usagef("no seeds: set -seeds or $CASTY_SEEDS")
	}
	logger := slog.New(slog.DiscardHandler)
	if o.verbose {
		logger = slog.New(slog.NewTextHandler(o.stderr, nil))
	}
	cfg := casty.Config{Actors: casty.ActorConfig{CallTimeout: o.timeout}, Membership: casty.MembershipConfig{JoinTimeout: o.timeout}}
	opts := []casty.Option{casty.WithLogger(logger), casty.WithConfig(cfg)}
	if o.cluster != "" {
		opts = append(opts, casty.ClusterName(o.cluster))
	}
	switch {
	case o.cert != "" && o.key != "":
		opts = append(opts, casty.WithTLS(casty.TLS{Cert: o.cert, Key: o.key, CA: o.ca, Identity: o.tlsIdentity}))
	case o.cert != "" || o.key != "" || o.ca != "" || o.tlsIdentity:
		return nil, usagef("TLS needs both -tls-cert and -tls-key (and -tls-ca for mutual TLS and -tls-identity)")
	}
	if o.secretFile != "" {
		secret, err := os.ReadFile(o.secretFile)
		if err != nil {
			return nil, usagef("operator secret: %v", err)
		}
		opts = append(opts, casty.WithOperatorSecret(bytes.TrimRight(secret, "\r\n")))
	}
	opts = append(opts, o.connectOverrides...)
	jctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	sys, err := casty.Connect(jctx, seeds, opts...)
	if errors.Is(err, casty.ErrInvalidSeed) {
		return nil, usagef("%v", err)
	}
	if err != nil {
		return nil, exitError{exitUnreachable, err}
	}
	// The lite member learns the table by gossip: wait until it knows a
	// full member and the table has been still for -settle.
	deadline := time.Now().Add(o.timeout)
	var last []inspect.MemberStatus
	stillSince := time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t := sys.MemberTable()
		for i := range t {
			t[i].For = 0 // grows by itself: not a change
		}
		if !slices.Equal(t, last) {
			last, stillSince = t, time.Now()
		} else if len(sys.Members()) > 0 && time.Since(stillSince) >= o.settle {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(sys.Members()) == 0 {
		sys.Close(context.Background())
		return nil, exitError{exitUnreachable, fmt.Errorf("joined through %s but learned of no full member within %v", o.seeds, o.timeout)}
	}
	return sys, nil
}

// release closes the lite member connect joined with (not a test's).
func (o *options) release(sys *casty.System) {
	if sys != o.lite {
		closeSys(sys)
	}
}

// closeSys leaves the cluster: the lite member announces its departure.
func closeSys(sys *casty.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sys.Close(ctx)
}

func (o *options) printJSON(v any) error {
	enc := json.NewEncoder(o.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

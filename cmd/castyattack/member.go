package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Blob is the actor the attacks and the legitimate caller use. Its
// handlers keep nothing of what they are sent: whatever a member holds
// during a flood is the transport's and the call path's.
type Blob struct{ Hits int }

// Touch counts a call: the legitimate caller's request.
func (b *Blob) Touch(ctx context.Context) (int, error) { b.Hits++; return b.Hits, nil }

// Put takes data and keeps only its length: the large request of the
// compressed-requests flood.
func (b *Blob) Put(ctx context.Context, data []byte) (int, error) { b.Hits++; return len(data), nil }

// Busy holds the activation until gate is opened (Open, on any key of
// the same member) or the call is given up: the busy key requests queue
// behind.
func (b *Blob) Busy(ctx context.Context, gate string) (int, error) {
	select {
	case <-gateOf(gate):
	case <-ctx.Done():
	}
	return 0, nil
}

// Open opens gate on this member.
func (b *Blob) Open(ctx context.Context, gate string) (int, error) {
	gates.Lock()
	defer gates.Unlock()
	ch := gateLocked(gate)
	select {
	case <-ch:
	default:
		close(ch)
	}
	return 0, nil
}

// gates are the member's Busy gates, by name.
var gates struct {
	sync.Mutex
	m map[string]chan struct{}
}

func gateOf(name string) chan struct{} {
	gates.Lock()
	defer gates.Unlock()
	return gateLocked(name)
}

func gateLocked(name string) chan struct{} {
	if gates.m == nil {
		gates.m = map[string]chan struct{}{}
	}
	ch, ok := gates.m[name]
	if !ok {
		ch = make(chan struct{})
		gates.m[name] = ch
	}
	return ch
}

// Big answers n random bytes, which do not compress: the large answer of
// the slow-reader flood.
func (b *Blob) Big(ctx context.Context, n int) ([]byte, error) {
	out := make([]byte, n)
	_, _ = rand.Read(out)
	return out, nil
}

// Where answers the address of the member that hosts the activation.
func (b *Blob) Where(ctx context.Context) (string, error) { return hostAddr(), nil }

// Via calls Where on key from the member hosting this activation: the
// call crosses that member's session to key's owner.
func (b *Blob) Via(ctx context.Context, key string) (string, error) {
	sys := hostSystem()
	if sys == nil {
		return "", fmt.Errorf("castyattack: no system")
	}
	return casty.Call0(ctx, Blobs.Ref(sys, key), (*Blob).Where)
}

// Note is a replicated actor: what it is told crosses the members'
// connections as replication traffic.
type Note struct{ Text string }

// Set replaces the note.
func (n *Note) Set(ctx context.Context, text string) (int, error) {
	n.Text = text
	return len(text), nil
}

var (
	// Blobs is the kind every attack calls.
	Blobs = casty.Actor[Blob](casty.Name("castyattack.Blob"))
	// Notes is replicated on every member of a three-member cluster.
	Notes = casty.Actor[Note](casty.Name("castyattack.Note"), casty.Replicas(3), casty.Write(casty.Majority))
)

// host is the system this process runs as a member (member mode).
var host struct {
	sync.Mutex
	sys *casty.System
}

func hostSystem() *casty.System {
	host.Lock()
	defer host.Unlock()
	return host.sys
}

func hostAddr() string {
	if s := hostSystem(); s != nil {
		return s.Addr()
	}
	return ""
}

// memberEnv, set in a child's environment, makes the binary (the command
// or its test binary) run as a member instead of the harness.
const memberEnv = "CASTYATTACK_MEMBER"

// runMemberIfChild runs member mode and exits when memberEnv is set.
func runMemberIfChild() {
	if os.Getenv(memberEnv) == "" {
		return
	}
	os.Exit(member(strings.Split(os.Getenv(memberEnv), argSep), os.Stdin, os.Stdout, os.Stderr))
}

// member runs one casty member until its stdin closes. It prints
// "ready <addr> <id>" once started, "mem <heapInuse> <rss>" every
// 50 ms, and answers a "gc" line with a collection and "gcmem <heapInuse>
// <rss>".
func member(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("castyattack member", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	seeds := fs.String("seeds", "", "comma-separated seed addresses")
	m := modeFlags(fs)
	verbose := fs.Bool("v", false, "log to stderr at level Info (Warn without it)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Warnings always go to stderr: the harness keeps the last ones for a
	// failed row's report (warnLog).
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts, err := m.options("member")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	opts = append(opts, casty.WithLogger(logger))
	if *seeds != "" {
		opts = append(opts, casty.Seeds(strings.Split(*seeds, ",")...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	sys, err := casty.Start(ctx, *addr, opts...)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "castyattack member:", err)
		return 1
	}
	host.Lock()
	host.sys = sys
	host.Unlock()
	var out sync.Mutex
	say := func(format string, a ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(stdout, format+"\n", a...)
	}
	say("ready %s %s", sys.Addr(), sys.ID())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			heap, rss := memNow()
			say("mem %d %d", heap, rss)
		}
	})
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		if sc.Text() == "gc" {
			runtime.GC()
			debug.FreeOSMemory()
			heap, rss := memNow()
			say("gcmem %d %d", heap, rss)
		}
	}
	close(stop)
	wg.Wait()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sys.Close(ctx)
	return 0
}

// memNow returns this process's heap in use (runtime.MemStats.HeapInuse)
// and resident set (VmRSS), in bytes.
func memNow() (heap, rss int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse), vmRSS("/proc/self/status")
}

// vmRSS reads VmRSS from a /proc status file, in bytes; 0 where there is
// none.
func vmRSS(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// modeSettings is how a node of the harness is secured.
type modeSettings struct {
	Mode                  string // open, secret, authonly, mtls
	ClusterHex, ClientHex string // secrets, hex (secret, authonly)
	CertDir               string // CA and certificates (mtls)
	Cert                  string // this node's certificate's base name in CertDir (mtls)
	Cluster               string // the cluster's name
}

func modeFlags(fs *flag.FlagSet) *modeSettings {
	m := &modeSettings{}
	fs.StringVar(&m.Mode, "mode", "open", "open, secret, authonly or mtls")
	fs.StringVar(&m.ClusterHex, "cluster-secret", "", "cluster secret, hex")
	fs.StringVar(&m.ClientHex, "client-secret", "", "client secret, hex")
	fs.StringVar(&m.CertDir, "cert-dir", "", "directory of ca.pem and <cert>.pem, <cert>.key (mtls)")
	fs.StringVar(&m.Cert, "cert", "", "base name of this node's certificate (mtls)")
	fs.StringVar(&m.Cluster, "cluster", "castyattack", "cluster name")
	return m
}

// args is the member command line of these settings, with cert as the
// node's certificate.
func (m modeSettings) args(cert string) []string {
	return []string{"-mode", m.Mode, "-cluster-secret", m.ClusterHex, "-client-secret", m.ClientHex,
		"-cert-dir", m.CertDir, "-cert", cert, "-cluster", m.Cluster}
}

// sealed reports whether the mode seals records.
func (m modeSettings) sealed() bool { return m.Mode == "secret" }

// options are the casty options of a node of this mode; role is "member"
// or "client" (a lite client, which gets only the client secret).
func (m modeSettings) options(role string) ([]casty.Option, error) {
	opts := []casty.Option{casty.ClusterName(m.Cluster)}
	secret := func(h string) ([]byte, error) {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) < 16 {
			return nil, fmt.Errorf("castyattack: mode %s needs secrets of at least 16 bytes, hex", m.Mode)
		}
		return b, nil
	}
	switch m.Mode {
	case "open":
	case "secret", "authonly":
		if role == "member" {
			s, err := secret(m.ClusterHex)
			if err != nil {
				return nil, err
			}
			opts = append(opts, casty.WithClusterSecret(s))
		}
		c, err := secret(m.ClientHex)
		if err != nil {
			return nil, err
		}
		opts = append(opts, casty.WithClientSecret(c))
		if m.Mode == "authonly" {
			opts = append(opts, casty.WithAuthOnly())
		}
	case "mtls":
		cert := m.Cert
		if cert == "" {
			cert = role
		}
		opts = append(opts, casty.WithTLS(casty.TLS{
			Cert: filepath.Join(m.CertDir, cert+".pem"), Key: filepath.Join(m.CertDir, cert+".key"),
			CA: filepath.Join(m.CertDir, "ca.pem"), Identity: true,
		}))
	default:
		return nil, fmt.Errorf("castyattack: unknown mode %q", m.Mode)
	}
	return opts, nil
}

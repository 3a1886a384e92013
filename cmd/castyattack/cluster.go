package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// argSep separates a member's arguments in memberEnv (an argument may be
// empty).
const argSep = "\x1f"

// proc is one member process and what it last said of its memory.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	id    string
	done  chan struct{} // closed when its output ends

	mu                sync.Mutex
	heap, rss         int64 // last sample
	peakHeap, peakRSS int64 // since resetPeak
	gc                chan [2]int64
	warns             warnLog // its last warnings (its stderr), unless the harness is verbose
}

// mem is a heap (HeapInuse) and resident set figure, in bytes.
type mem struct{ heap, rss int64 }

// resetPeak starts a new peak at the last sample.
func (p *proc) resetPeak() {
	p.mu.Lock()
	p.peakHeap, p.peakRSS = p.heap, p.rss
	p.mu.Unlock()
}

// peak is the largest heap and resident set sampled since resetPeak.
func (p *proc) peak() mem {
	p.mu.Lock()
	defer p.mu.Unlock()
	return mem{p.peakHeap, p.peakRSS}
}

// settled has the member collect its garbage and return its memory to
// the system, and reports what it then holds.
func (p *proc) settled(ctx context.Context) (mem, error) {
	if _, err := io.WriteString(p.stdin, "gc\n"); err != nil {
		return mem{}, err
	}
	select {
	case m := <-p.gc:
		return mem{m[0], m[1]}, nil
	case <-p.done:
		return mem{}, errors.New("castyattack: member exited")
	case <-ctx.Done():
		return mem{}, ctx.Err()
	}
}

// read follows the member's output.
func (p *proc) read(out io.Reader, ready chan<- error) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "ready":
			p.addr, p.id = f[1], f[2]
			ready <- nil
		case len(f) == 3 && (f[0] == "mem" || f[0] == "gcmem"):
			h, _ := strconv.ParseInt(f[1], 10, 64)
			r, _ := strconv.ParseInt(f[2], 10, 64)
			p.mu.Lock()
			p.heap, p.rss = h, r
			p.peakHeap, p.peakRSS = max(p.peakHeap, h), max(p.peakRSS, r)
			p.mu.Unlock()
			if f[0] == "gcmem" {
				select {
				case p.gc <- [2]int64{h, r}:
				default:
				}
			}
		}
	}
	ready <- errors.New("castyattack: member exited before it was ready")
}

// stop ends the member: its stdin closes, then it is killed if it has
// not exited within 15 s.
func (p *proc) stop() {
	p.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
}

// harness starts member processes of one mode and the harness's own
// nodes (lite clients, joiners, attackers) with the same settings.
type harness struct {
	exe     string
	verbose bool
	mode    modeSettings
	warns   warnLog // the last warnings of the harness's own nodes
}

// newHarness prepares mode: fresh secrets, and certificates in dir for
// mtls.
func newHarness(exe, mode, dir string, verbose bool) (*harness, error) {
	h := &harness{exe: exe, verbose: verbose, mode: modeSettings{Mode: mode, Cluster: "castyattack"}}
	switch mode {
	case "secret", "authonly":
		h.mode.ClusterHex, h.mode.ClientHex = randomHex(32), randomHex(32)
	case "mtls":
		h.mode.CertDir = dir
		if err := issueCerts(dir); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secret returns a secret of the mode as bytes.
func (h *harness) secret(which string) []byte {
	s := h.mode.ClusterHex
	if which == "client" {
		s = h.mode.ClientHex
	}
	b, _ := hex.DecodeString(s)
	return b
}

// start runs a member process that joins through seeds (founds a cluster
// without), with certificate cert (mtls), and waits until it has started.
func (h *harness) start(ctx context.Context, cert string, seeds ...string) (*proc, error) {
	args := append(h.mode.args(cert), "-seeds", strings.Join(seeds, ","))
	if h.verbose {
		args = append(args, "-v")
	}
	cmd := exec.Command(h.exe)
	cmd.Env = append(os.Environ(), memberEnv+"="+strings.Join(args, argSep))
	p := &proc{cmd: cmd, done: make(chan struct{}), gc: make(chan [2]int64, 1)}
	cmd.Stderr = &p.warns
	if h.verbose {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.stdin = stdin
	ready := make(chan error, 2)
	go p.read(stdout, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// cluster starts n member processes, the first founding the cluster, and
// a lite client (the legitimate caller) that sees all of them.
func (h *harness) cluster(ctx context.Context, n int) ([]*proc, *casty.System, error) {
	var ps []*proc
	fail := func(err error) ([]*proc, *casty.System, error) {
		stopAll(ps)
		return nil, nil, err
	}
	for i := range n {
		var seeds []string
		if i > 0 {
			seeds = []string{ps[0].addr}
		}
		p, err := h.start(ctx, fmt.Sprint("member-", i), seeds...)
		if err != nil {
			return fail(fmt.Errorf("member %d: %w", i, err))
		}
		ps = append(ps, p)
	}
	lite, err := h.connect(ctx, ps[0].addr)
	if err != nil {
		return fail(fmt.Errorf("legitimate client: %w", err))
	}
	if err := lite.WaitMembers(ctx, n); err != nil {
		closeSys(lite)
		return fail(fmt.Errorf("legitimate client sees %d of %d members: %w", len(lite.Members()), n, err))
	}
	return ps, lite, nil
}

// connect starts a lite client of the mode (client credential) through
// seed.
func (h *harness) connect(ctx context.Context, seed string, extra ...casty.Option) (*casty.System, error) {
	opts, err := h.mode.options("client")
	if err != nil {
		return nil, err
	}
	opts = append(opts, h.logs())
	return casty.Connect(ctx, []string{seed}, append(opts, extra...)...)
}

// join starts a member in this process (cert "joiner" in mtls) through
// seed, and returns it and how long casty.Start took.
func (h *harness) join(ctx context.Context, seed string) (*casty.System, time.Duration, error) {
	m := h.mode
	m.Cert = "joiner"
	opts, err := m.options("member")
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	sys, err := casty.Start(ctx, "127.0.0.1:0", append(opts, casty.Seeds(seed), h.logs())...)
	return sys, time.Since(start), err
}

// muxNode is a bare transport node of the mode, holding the client
// credential (role client), for attackers that speak mux themselves.
func (h *harness) muxNode(edit func(*mux.Config)) (*mux.Node, error) {
	mc := mux.DefaultConfig()
	mc.NodeID, _ = mux.NewNodeID(nil)
	mc.ClusterName = h.mode.Cluster
	mc.Role = mux.RoleClient
	mc.Logger = discard
	if h.mode.Mode == "secret" || h.mode.Mode == "authonly" {
		mc.ClientSecret = h.secret("client")
		mc.AuthOnly = h.mode.Mode == "authonly"
	}
	if edit != nil {
		edit(&mc)
	}
	return mux.New(mc)
}

func stopAll(ps []*proc) {
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(p.stop)
	}
	wg.Wait()
}

func closeSys(s *casty.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Close(ctx)
}

// issueCerts writes a CA (ca.pem) and certificates signed by it for
// 127.0.0.1 to dir: member-0 … member-9 and joiner (casty://member/<name>)
// and client (casty://role/client), each <name>.pem and <name>.key.
func issueCerts(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "castyattack CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	names := map[string]string{"joiner": "casty://member/joiner", "client": "casty://role/client"}
	for i := range 10 {
		names[fmt.Sprint("member-", i)] = fmt.Sprint("casty://member/member-", i)
	}
	for name, uri := range names {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		u, _ := url.Parse(uri)
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		tmpl := &x509.Certificate{
			SerialNumber: serial, Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			URIs:        []*url.URL{u},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".pem"), "CERTIFICATE", der); err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kb); err != nil {
			return err
		}
	}
	return nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

package mux

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/wait"
)

// connType names one way of carrying a session, as in yamux's tests.
type connType string

const (
	viaPipe connType = "pipe"
	viaTCP  connType = "tcp"
	viaTLS  connType = "tls"
)

var connTypes = []connType{viaPipe, viaTCP, viaTLS}

func testID(b byte) NodeID {
	var id NodeID
	id[0] = b
	id[15] = b
	return id
}

func testConfig(id byte) Config {
	c := DefaultConfig()
	c.NodeID = testID(id)
	c.ClusterName = "test"
	c.HandshakeTimeout = 2 * time.Second
	c.Logger = slog.New(slog.DiscardHandler)
	c.SupersedeGrace = time.Second // losers of simultaneous dials drain in 100 ms
	return c
}

func newNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// testPKI is a CA plus one certificate for "127.0.0.1" that every node
// uses both as server and client certificate.
type testPKI struct {
	pool *x509.CertPool
	cert tls.Certificate
}

var (
	pkiOnce sync.Once
	pki     testPKI
)

func getPKI(t testing.TB) testPKI {
	pkiOnce.Do(func() {
		ca, caKey := selfSignedCA("casty test CA")
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			panic(err)
		}
		pki.pool = x509.NewCertPool()
		pki.pool.AddCert(ca)
		pki.cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	})
	return pki
}

// selfSignedCA creates a certificate authority valid for a day around now.
func selfSignedCA(name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return ca, key
}

// withTLS adds mutual TLS (CA given, so peers are verified both ways).
func withTLS(t testing.TB, c Config) Config {
	p := getPKI(t)
	c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{p.cert}, ClientCAs: p.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	c.ClientTLS = &tls.Config{Certificates: []tls.Certificate{p.cert}, RootCAs: p.pool,
		MinVersion: tls.VersionTLS13}
	return c
}

// listen starts n serving on a fresh loopback port and returns the address.
func listen(t testing.TB, n *Node) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go n.Serve(ln)
	return ln.Addr().String()
}

// connect builds two nodes from ca, cb joined by one session over ct and
// returns the dialler's and the listener's view of it.
func connect(t testing.TB, ct connType, ca, cb Config, setup func(a, b *Node)) (a, b *Node, sa, sb *Session) {
	t.Helper()
	if ct == viaTLS {
		ca, cb = withTLS(t, ca), withTLS(t, cb)
	}
	got := make(chan *Session, 1)
	prev := cb.OnSession
	cb.OnSession = func(s *Session) {
		if prev != nil {
			prev(s)
		}
		select {
		case got <- s:
		default:
		}
	}
	a, b = newNode(t, ca), newNode(t, cb)
	if setup != nil {
		setup(a, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	switch ct {
	case viaPipe:
		c1, c2 := net.Pipe()
		errc := make(chan error, 1)
		go func() { _, err := b.Accept(ctx, c2); errc <- err }()
		sa, err = a.DialConn(ctx, c1)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	default:
		addr := listen(t, b)
		if sa, err = a.Dial(ctx, addr); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case sb = <-got:
	case <-ctx.Done():
		t.Fatal("listener never saw the session")
	}
	return a, b, sa, sb
}

// waitFor is wait.For: every module's tests poll at the same intervals.
var waitFor = wait.For

func echo(ctx context.Context, _ *Session, p []byte) ([]byte, error) { return p, nil }

func x509EmptyPool() *x509.CertPool { return x509.NewCertPool() }

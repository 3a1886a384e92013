package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// testCA signs certificates for a test cluster.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	path string
}

func newCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, dir: dir, path: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.path, "CERTIFICATE", der)
	return ca
}

func (ca *testCA) issue(t *testing.T, name string) casty.TLS {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	out := casty.TLS{Cert: filepath.Join(ca.dir, name+".pem"), Key: filepath.Join(ca.dir, name+".key"), CA: ca.path}
	writePEM(t, out.Cert, "CERTIFICATE", der)
	writePEM(t, out.Key, "EC PRIVATE KEY", kb)
	return out
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// On a mutual-TLS cluster castyctl joins with the certificate flags, and
// without them, or with a certificate of another CA, it cannot (exit 3).
func TestCastyctlMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "cluster")
	nodes := startCluster(t, 2, casty.WithTLS(ca.issue(t, "node")))
	seed := nodes[0].Addr()
	op := ca.issue(t, "operator")
	code, out, errOut := ctl(t, seed, "-tls-cert", op.Cert, "-tls-key", op.Key, "-tls-ca", op.CA, "members")
	if code != exitOK || strings.Count(out, "member  alive") != 2 {
		t.Fatalf("members over mTLS: exit %d:\n%s%s", code, out, errOut)
	}

	rogue := newCA(t, dir, "rogue").issue(t, "intruder")
	for name, args := range map[string][]string{
		"plaintext":      {"members"},
		"foreign issuer": {"members", "-tls-cert", rogue.Cert, "-tls-key", rogue.Key, "-tls-ca", rogue.CA},
	} {
		var stdout, stderr strings.Builder
		o := &options{seeds: seed, timeout: time.Second, stdout: &stdout, stderr: &stderr,
			connectOverrides: []casty.Option{casty.WithConfig(casty.Config{JoinTimeout: time.Second, ConnectTimeout: 500 * time.Millisecond})}}
		if code := o.run(context.Background(), args); code != exitUnreachable {
			t.Errorf("%s: exit %d, want %d: %s", name, code, exitUnreachable, stderr.String())
		}
	}
}

package casty_test

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
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

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

func TestClusterMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "cluster")
	nodes := startCluster(t, 2, casty.WithTLS(ca.issue(t, "node")))
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Wheres.Name())
	if _, err := casty.Call0(ctx, Wheres.Ref(nodes[0], key), (*Where).Hit); err != nil {
		t.Fatalf("call over mTLS: %v", err)
	}

	// A node whose certificate another CA signed can neither join nor call.
	rogue := newCA(t, dir, "rogue")
	cfg := fastCluster()
	cfg.JoinTimeout = 500 * time.Millisecond
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if sys, err := casty.Start(jctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(nodes[0].Addr()),
		casty.WithTLS(rogue.issue(t, "intruder")), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a node with a foreign certificate joined")
	}
	// Nor can a lite member that would only call.
	if sys, err := casty.Connect(jctx, []string{nodes[0].Addr()}, casty.WithConfig(cfg),
		casty.WithTLS(rogue.issue(t, "caller")), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a lite member with a foreign certificate connected")
	}
	// Nor can a plaintext node.
	if sys, err := casty.Start(jctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(nodes[0].Addr()), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a plaintext node joined a TLS cluster")
	}
	// Nor a node of another cluster name, even with a valid certificate.
	if sys, err := casty.Start(jctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(nodes[0].Addr()),
		casty.WithTLS(ca.issue(t, "other")), casty.ClusterName("other"), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a node of another cluster joined")
	}
	if len(nodes[0].Members()) != 2 {
		t.Fatalf("members after the intruders: %v", nodes[0].Members())
	}
}

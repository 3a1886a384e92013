package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/internal/testcert"
)

// testCA signs certificates for a test cluster (internal/testcert).
type testCA struct{ *testcert.CA }

func newCA(t *testing.T, dir, name string) *testCA {
	return &testCA{testcert.NewCA(t, dir, name)}
}

// issue returns the TLS options of a node holding a certificate for name.
func (ca *testCA) issue(t *testing.T, name string) casty.TLS {
	cert, key := ca.Issue(t, name)
	return casty.TLS{Cert: cert, Key: key, CA: ca.Path}
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
			connectOverrides: []casty.Option{casty.WithConfig(casty.Config{Transport: casty.TransportConfig{ConnectTimeout: 500 * time.Millisecond}, Membership: casty.MembershipConfig{JoinTimeout: time.Second}})}}
		if code := o.run(context.Background(), args); code != exitUnreachable {
			t.Errorf("%s: exit %d, want %d: %s", name, code, exitUnreachable, stderr.String())
		}
	}
}

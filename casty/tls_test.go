package casty_test

import (
	"context"
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

// issue returns the TLS options of a member holding a certificate for name.
func (ca *testCA) issue(t *testing.T, name string) casty.TLS {
	cert, key := ca.Issue(t, name)
	return casty.TLS{Cert: cert, Key: key, CA: ca.Path}
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
	cfg.Membership.JoinTimeout = 500 * time.Millisecond
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

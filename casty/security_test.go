package casty_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

var (
	testClusterSecret  = []byte("cluster secret of 32 bytes......")
	testOperatorSecret = []byte("operator secret of 32 bytes.....")
	testClientSecret   = []byte("client secret of 32 bytes.......")
)

// secured is the option set of a member of a cluster with all three
// credentials.
func secured() []casty.Option {
	return []casty.Option{casty.WithClusterSecret(testClusterSecret),
		casty.WithOperatorSecret(testOperatorSecret), casty.WithClientSecret(testClientSecret)}
}

func connectLite(t *testing.T, seed string, opts ...casty.Option) (*casty.System, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lite, err := casty.Connect(ctx, []string{seed}, append([]casty.Option{casty.WithConfig(fastCluster()), quiet()}, opts...)...)
	if err == nil {
		t.Cleanup(func() { closeSys(t, lite) })
	}
	return lite, err
}

// A lite client may call actors; reading their state and spying need the
// operator role, refused with ErrForbidden without it.
func TestLiteClientNeedsOperatorRoleForStateAndSpy(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2, secured()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := casty.Call(ctx, Orders.Ref(nodes[0], "secret-order"), (*Order).Add, 4); err != nil {
		t.Fatal(err)
	}
	client, err := connectLite(t, nodes[0].Addr(), casty.WithClientSecret(testClientSecret))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the client sees both members", func() bool { return len(client.Members()) == 2 })
	if n, err := casty.Call(ctx, Orders.Ref(client, "secret-order"), (*Order).Add, 1); err != nil || n != 5 {
		t.Fatalf("a client's call: %d %v", n, err)
	}
	if _, _, err := Orders.StateOf(ctx, client, "secret-order"); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client Kind.StateOf: %v, want ErrForbidden", err)
	}
	if _, _, err := client.StateOf(ctx, Orders.Name(), "secret-order"); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client System.StateOf: %v, want ErrForbidden", err)
	}
	if _, err := client.Spy(ctx, casty.SpyFilter{Scope: casty.ScopeCluster}); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client Spy: %v, want ErrForbidden", err)
	}

	op, err := connectLite(t, nodes[0].Addr(), casty.WithOperatorSecret(testOperatorSecret))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the operator sees both members", func() bool { return len(op.Members()) == 2 })
	if st, ok, err := Orders.StateOf(ctx, op, "secret-order"); err != nil || !ok || st.Lines != 5 {
		t.Fatalf("operator StateOf: %+v %v %v", st, ok, err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if _, err := op.Spy(sctx, casty.SpyFilter{Scope: casty.ScopeCluster}); err != nil {
		t.Fatalf("operator Spy: %v", err)
	}
}

// A cluster with a secret seals every connection between its nodes, a
// lite client's included. With WithAuthOnly on every member, connections
// between members are unsealed, while a lite client without it still
// gets sealed connections, both ways; calls work either way.
func TestSecretClusterSealsItsConnections(t *testing.T) {
	parallel(t)
	for _, authOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("authOnly=%v", authOnly), func(t *testing.T) {
			var mu sync.Mutex
			sealed := map[string][]bool{} // by "member-member", "member-lite", "lite-member"
			watch := func(local string) casty.Option {
				return casty.WithMuxConfig(func(c *mux.Config) {
					prev := c.OnSession
					c.OnSession = func(s *mux.Session) {
						pair := local + "-member"
						if s.PeerRole() == mux.RoleClient {
							pair = local + "-lite"
						}
						mu.Lock()
						sealed[pair] = append(sealed[pair], s.Sealed())
						mu.Unlock()
						if prev != nil {
							prev(s)
						}
					}
				})
			}
			opts := append(secured(), watch("member"))
			if authOnly {
				opts = append(opts, casty.WithAuthOnly())
			}
			nodes := startCluster(t, 2, opts...)
			lite, err := connectLite(t, nodes[0].Addr(), casty.WithClientSecret(testClientSecret), watch("lite"))
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the lite client sees both members", func() bool { return len(lite.Members()) == 2 })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := casty.Call(ctx, Orders.Ref(lite, "sealed-order"), (*Order).Add, 1); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for pair, want := range map[string]bool{"member-member": !authOnly, "member-lite": true, "lite-member": true} {
				if len(sealed[pair]) == 0 {
					t.Fatalf("no %s session", pair)
				}
				for _, got := range sealed[pair] {
					if got != want {
						t.Fatalf("%s sessions sealed: %v, want all %v", pair, sealed[pair], want)
					}
				}
			}
		})
	}
}

// Without the secret, neither a member nor a lite client gets in, and a
// stranger's handshake is answered with a bare refusal: nothing of the
// member table, the cluster's name or its members.
func TestSecretClusterRefusesStrangers(t *testing.T) {
	nodes := startCluster(t, 2, secured()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 500 * time.Millisecond
	if _, err := connectLite(t, nodes[0].Addr(), casty.WithConfig(cfg)); err == nil {
		t.Fatal("a lite client without a secret joined")
	}
	wrong := []byte("a wrong secret of 32 bytes......")
	if sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(nodes[0].Addr()),
		casty.WithClusterSecret(wrong), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a member with the wrong secret joined")
	}
	for _, n := range nodes {
		if len(n.Members()) != 2 {
			t.Fatalf("%s sees %d members", n.Addr(), len(n.Members()))
		}
	}
	// A stranger speaking the protocol by hand.
	mc := mux.DefaultConfig()
	mc.NodeID, _ = mux.NewNodeID(nil)
	mc.Logger = slog.New(slog.DiscardHandler)
	stranger, err := mux.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	_, err = stranger.Dial(ctx, nodes[0].Addr())
	var he *mux.HandshakeError
	if !errors.As(err, &he) || he.Code != mux.CodeUnauthenticated {
		t.Fatalf("stranger: %v", err)
	}
	for _, n := range nodes {
		if strings.Contains(err.Error(), n.Addr()) || strings.Contains(err.Error(), n.ID()) {
			t.Fatalf("the refusal names a member: %v", err)
		}
	}
}

func TestSpySubscriptionsAreCapped(t *testing.T) {
	cfg := casty.Config{Actors: casty.ActorConfig{MaxSpies: 2}}
	sys := casty.Local(casty.WithConfig(cfg), quiet())
	defer closeSys(t, sys)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, cancelFirst := context.WithCancel(ctx)
	if _, err := sys.Spy(first, casty.SpyFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Spy(ctx, casty.SpyFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Spy(ctx, casty.SpyFilter{}); !errors.Is(err, casty.ErrTooManySpies) {
		t.Fatalf("third spy: %v, want ErrTooManySpies", err)
	}
	cancelFirst()
	waitFor(t, 5*time.Second, "the first spy's slot is free", func() bool {
		_, err := sys.Spy(ctx, casty.SpyFilter{})
		return err == nil
	})
	if casty.DefaultConfig().Actors.MaxSpies != 64 {
		t.Fatalf("documented default 64, got %d", casty.DefaultConfig().Actors.MaxSpies)
	}
}

// A member at its cap refuses other members' cluster spies too, and the
// spying member reports it as ErrTooManySpies.
func TestClusterSpyRefusedByAMemberAtItsCap(t *testing.T) {
	cfg := fastCluster()
	cfg.Actors.MaxSpies = 1
	nodes := startCluster(t, 2, casty.WithConfig(cfg))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := nodes[0].Spy(ctx, casty.SpyFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].Spy(ctx, casty.SpyFilter{Scope: casty.ScopeCluster}); !errors.Is(err, casty.ErrTooManySpies) {
		t.Fatalf("cluster spy through a full member: %v, want ErrTooManySpies", err)
	}
	// nodes[1] gave its own slot back: a local spy there succeeds.
	if _, err := nodes[1].Spy(ctx, casty.SpyFilter{}); err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a bytes.Buffer safe for a logger and a test to share.
type logBuffer struct {
	mu chan struct{}
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return l.b.String()
}

func TestOpenClusterWarnsWhenReachable(t *testing.T) {
	cases := []struct {
		addr string
		opts []casty.Option
		warn bool
	}{
		{"0.0.0.0:0", nil, true},
		{"127.0.0.1:0", nil, false},
		{"0.0.0.0:0", []casty.Option{casty.WithClusterSecret(testClusterSecret)}, false},
	}
	for _, c := range cases {
		logs := &logBuffer{mu: make(chan struct{}, 1)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		opts := append([]casty.Option{casty.WithConfig(fastCluster()),
			casty.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})))}, c.opts...)
		sys, err := casty.Start(ctx, c.addr, opts...)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		closeSys(t, sys)
		if got := strings.Contains(logs.String(), "cluster is open"); got != c.warn {
			t.Errorf("%s with %d options: warned %v, want %v: %s", c.addr, len(c.opts), got, c.warn, logs.String())
		}
	}
}

// issueWith issues a certificate carrying uris (subject alternative
// names), for a system with TLS.Identity.
func (ca *testCA) issueWith(t *testing.T, name string, uris ...string) casty.TLS {
	cert, key := ca.Issue(t, name, uris...)
	return casty.TLS{Cert: cert, Key: key, CA: ca.Path, Identity: true}
}

// With TLS.Identity the certificate decides the role: a client
// certificate calls but may not read state, an operator's may.
func TestCertIdentityRoles(t *testing.T) {
	parallel(t)
	ca := newCA(t, t.TempDir(), "cluster")
	nodes := startCluster(t, 2, casty.WithTLS(ca.issueWith(t, "member", "casty://member/m")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := casty.Call(ctx, Orders.Ref(nodes[0], "cert-order"), (*Order).Add, 2); err != nil {
		t.Fatal(err)
	}
	client, err := connectLite(t, nodes[0].Addr(), casty.WithTLS(ca.issueWith(t, "client", "casty://role/client")))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the client sees both members", func() bool { return len(client.Members()) == 2 })
	if _, err := casty.Call(ctx, Orders.Ref(client, "cert-order"), (*Order).Add, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Orders.StateOf(ctx, client, "cert-order"); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client certificate StateOf: %v, want ErrForbidden", err)
	}
	op, err := connectLite(t, nodes[0].Addr(), casty.WithTLS(ca.issueWith(t, "operator", "casty://role/operator")))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the operator sees both members", func() bool { return len(op.Members()) == 2 })
	if st, ok, err := Orders.StateOf(ctx, op, "cert-order"); err != nil || !ok || st.Lines != 3 {
		t.Fatalf("operator certificate StateOf: %+v %v %v", st, ok, err)
	}
	// A certificate without a casty identity gets nowhere.
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 500 * time.Millisecond
	if _, err := connectLite(t, nodes[0].Addr(), casty.WithConfig(cfg), casty.WithTLS(ca.issueWith(t, "anon"))); err == nil {
		t.Fatal("a certificate without identity connected")
	}
}

// A lite client's credential does not let it talk replication to a
// member: replicas are members' business.
func TestClientCredentialCannotTalkReplication(t *testing.T) {
	nodes := startCluster(t, 2, secured()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ask := func(role mux.Role, edit func(*mux.Config)) error {
		mc := mux.DefaultConfig()
		mc.NodeID, _ = mux.NewNodeID(nil)
		mc.Role = role
		mc.Logger = slog.New(slog.DiscardHandler)
		edit(&mc)
		n, err := mux.New(mc)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		s, err := n.Dial(ctx, nodes[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Request(ctx, mux.LaneReplication, []byte{0xff})
		return err
	}
	err := ask(mux.RoleClient, func(c *mux.Config) { c.ClientSecret = testClientSecret })
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a client's replication request: %v, want forbidden", err)
	}
	err = ask(mux.RoleClient, func(c *mux.Config) { c.OperatorSecret = testOperatorSecret })
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("an operator's replication request: %v, want forbidden", err)
	}
	err = ask(mux.RoleMember, func(c *mux.Config) { c.ClusterSecret = testClusterSecret })
	if err == nil || strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a member's (bad) replication request: %v, want an unknown-request error", err)
	}
}

// A node holding only the client secret that announces itself as a
// member in the gossip never gets on the members' ring: gossip refuses a
// member-role record over a connection that proved no member credential
// (gossip/SPEC.md, Admission). An honest lite client with the same
// secret, connected after it, is in both members' tables as lite; the
// rogue is in neither, and hosts nothing.
func TestClientCredentialClaimingMembershipStaysOffTheRing(t *testing.T) {
	nodes := startCluster(t, 2, secured()...)
	rogue := startNode(t, []string{nodes[0].Addr()}, casty.WithClientSecret(testClientSecret),
		casty.WithMuxConfig(func(c *mux.Config) { c.Role = mux.RoleClient }))
	lite, err := connectLite(t, nodes[1].Addr(), casty.WithClientSecret(testClientSecret))
	if err != nil {
		t.Fatal(err)
	}
	holds := func(s *casty.System, id string, lite bool) bool {
		for _, m := range s.MemberTable() {
			if m.ID == id && m.Lite == lite && m.State == "alive" {
				return true
			}
		}
		return false
	}
	waitFor(t, 10*time.Second, "the lite client in both members' tables, both members in the rogue's", func() bool {
		for _, n := range nodes {
			if !holds(n, lite.ID(), true) || !holds(rogue, n.ID(), false) {
				return false
			}
		}
		return true
	})
	for i, n := range nodes {
		if got := len(n.Members()); got != 2 {
			t.Errorf("member %d places %d members, want 2", i, got)
		}
		for _, m := range n.MemberTable() {
			if m.ID == rogue.ID() && !m.Lite {
				t.Errorf("member %d holds the rogue as a member: %+v", i, m)
			}
		}
	}
	if rogue.Active() != 0 {
		t.Fatalf("the rogue hosts %d activations", rogue.Active())
	}
}

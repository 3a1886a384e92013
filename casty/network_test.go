package casty_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// namedNetwork is a casty.Network of made-up host names under .invalid
// (a top-level domain that never resolves) over loopback TCP: a node
// reaches another only through it, and it records what each node listens
// on, dials and accepts.
type namedNetwork struct {
	mu      sync.Mutex
	behind  map[string]string   // a name → the loopback address serving it
	listens map[string][]string // by node: the addresses it listened on
	dials   map[string]int      // by node: dials begun
	accepts map[string]int      // by node: connections accepted
}

func newNamedNetwork() *namedNetwork {
	return &namedNetwork{behind: map[string]string{}, listens: map[string][]string{},
		dials: map[string]int{}, accepts: map[string]int{}}
}

// endpoint is node's view of the network.
func (nw *namedNetwork) endpoint(node string) casty.Network { return namedEndpoint{nw, node} }

type namedEndpoint struct {
	nw   *namedNetwork
	node string
}

// Listen serves addr (node's own name for a lite client's "") on an
// ephemeral loopback port that only Dial knows.
func (e namedEndpoint) Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = e.node + ".invalid:7000"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.nw.mu.Lock()
	defer e.nw.mu.Unlock()
	e.nw.behind[addr] = ln.Addr().String()
	e.nw.listens[e.node] = append(e.nw.listens[e.node], addr)
	return &namedListener{Listener: ln, name: namedAddr(addr), ep: e}, nil
}

// Dial counts the dial before it connects, so that no accept is ever
// counted before the dial that caused it.
func (e namedEndpoint) Dial(ctx context.Context, addr string) (net.Conn, error) {
	e.nw.mu.Lock()
	e.nw.dials[e.node]++
	behind, ok := e.nw.behind[addr]
	e.nw.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("nothing listens at %s", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", behind)
}

type namedListener struct {
	net.Listener
	name namedAddr
	ep   namedEndpoint
}

func (l *namedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.ep.nw.mu.Lock()
		l.ep.nw.accepts[l.ep.node]++
		l.ep.nw.mu.Unlock()
	}
	return c, err
}

func (l *namedListener) Addr() net.Addr { return l.name }

type namedAddr string

func (a namedAddr) Network() string { return "named" }
func (a namedAddr) String() string  { return string(a) }

// startOn starts a member listening at addr.
func startOn(t *testing.T, addr string, seeds []string, opts ...casty.Option) *casty.System {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts = append([]casty.Option{casty.WithConfig(fastCluster()), casty.Seeds(seeds...), quiet()}, opts...)
	sys, err := casty.Start(ctx, addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, sys) })
	return sys
}

// With WithNetwork, every connection of two members and a lite client
// goes through the Network: each listens once, at the address it was
// given (a name no resolver knows, so no TCP dial could reach it), calls
// cross members, and every connection accepted was dialled through it.
// The cluster's secrets still apply on top: the client's credential gives
// it the client role only, and a node without one is refused.
func TestWithNetworkCarriesEveryConnection(t *testing.T) {
	parallel(t)
	nw := newNamedNetwork()
	const alphaAddr, betaAddr = "alpha.invalid:7000", "beta.invalid:7000"
	alpha := startOn(t, alphaAddr, nil, append(secured(), casty.WithNetwork(nw.endpoint("alpha")))...)
	beta := startOn(t, betaAddr, []string{alphaAddr}, append(secured(), casty.WithNetwork(nw.endpoint("beta")))...)
	waitConverged(t, []*casty.System{alpha, beta}, 2)
	lite, err := connectLite(t, alphaAddr, casty.WithNetwork(nw.endpoint("lite")), casty.WithClientSecret(testClientSecret))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lite client sees both members", func() bool { return len(lite.Members()) == 2 })

	for sys, want := range map[*casty.System]string{alpha: alphaAddr, beta: betaAddr, lite: "lite.invalid:7000"} {
		if sys.Addr() != want {
			t.Errorf("Addr() = %q, want %q", sys.Addr(), want)
		}
	}
	var addrs []string
	for _, m := range beta.Members() {
		addrs = append(addrs, m.Addr)
	}
	if slices.Sort(addrs); !slices.Equal(addrs, []string{alphaAddr, betaAddr}) {
		t.Errorf("members' addresses %v, want the given ones", addrs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := keyOn(t, beta, alpha, Wheres.Name())
	for i, via := range []*casty.System{alpha, lite} {
		got, err := casty.Call0(ctx, Wheres.Ref(via, key), (*Where).Hit)
		if want := fmt.Sprintf("%s#%d", betaAddr, i+1); err != nil || got != want {
			t.Fatalf("a call from %s: %q %v, want %q", via.Addr(), got, err, want)
		}
	}
	if _, _, err := Wheres.StateOf(ctx, lite, key); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("the client's StateOf: %v, want ErrForbidden (its secret gives it the client role)", err)
	}
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 500 * time.Millisecond
	if stranger, err := connectLite(t, alphaAddr, casty.WithConfig(cfg), casty.WithNetwork(nw.endpoint("stranger"))); err == nil {
		closeSys(t, stranger)
		t.Fatal("a lite client without a secret connected over the network")
	}

	nw.mu.Lock()
	defer nw.mu.Unlock()
	for node, want := range map[string]string{"alpha": alphaAddr, "beta": betaAddr, "lite": "lite.invalid:7000"} {
		if got := nw.listens[node]; !slices.Equal(got, []string{want}) {
			t.Errorf("%s listened on %v, want [%s]", node, got, want)
		}
	}
	for _, node := range []string{"beta", "lite", "stranger"} {
		if nw.dials[node] == 0 {
			t.Errorf("%s dialled nothing through the network", node)
		}
	}
	accepted, dialled := 0, 0
	for _, n := range nw.accepts {
		accepted += n
	}
	for _, n := range nw.dials {
		dialled += n
	}
	if nw.accepts["alpha"] == 0 || accepted > dialled {
		t.Errorf("accepted %v, dialled %v: want alpha to accept, and no connection but those dialled through the network", nw.accepts, nw.dials)
	}
}

// Local opens no connection: it refuses WithNetwork as it refuses Seeds.
func TestLocalRefusesWithNetwork(t *testing.T) {
	mustPanic(t, "WithNetwork, WithTLS and the secrets are cluster options: use Start or Connect", func() {
		casty.Local(casty.WithNetwork(newNamedNetwork().endpoint("local")))
	})
}

// WithClock is the clock that stamps replicated state: a member whose
// clock runs two seconds ahead (within MaxClockDrift) stamps the commits
// it coordinates two seconds ahead of the wall clock.
func TestWithClockStampsCommits(t *testing.T) {
	cfg := replicationConfig()
	cfg.Replication.MaxClockDrift = 10 * time.Second
	const skew = 2 * time.Second
	ahead := startNode(t, nil, casty.WithConfig(cfg), casty.WithClock(func() time.Time { return time.Now().Add(skew) }))
	nodes := []*casty.System{ahead,
		startNode(t, []string{ahead.Addr()}, casty.WithConfig(cfg)),
		startNode(t, []string{ahead.Addr()}, casty.WithConfig(cfg))}
	waitConverged(t, nodes, 3)
	waitFor(t, 15*time.Second, "every member synced", func() bool {
		for _, s := range nodes {
			if !casty.Settled(s, 3) {
				return false
			}
		}
		return true
	})
	key := keyOn(t, ahead, ahead, Ledgers.Name())
	before := time.Now().Add(skew).UnixMilli()
	callUntil(t, 10*time.Second, "an add", func(ctx context.Context) (int, error) {
		return casty.Call(ctx, Ledgers.Ref(ahead, key), (*Ledger).Add, 1)
	})
	after := time.Now().Add(skew).UnixMilli()
	// No member's clock reads later than ahead's, so no stamp it observed
	// pushed its HLC past its own clock.
	if wall, ok := casty.ReplicaWall(ahead, Ledgers.Name(), key); !ok || wall < before || wall > after {
		t.Fatalf("the commit is stamped at %d (held: %v), want within the skewed clock's [%d, %d] (the wall clock's lags by %d)",
			wall, ok, before, after, skew.Milliseconds())
	}
}

// tlsSniffer is a casty.Network over loopback TCP that records the first
// byte each connection it dials writes.
type tlsSniffer struct {
	mu    sync.Mutex
	first []byte
}

func (n *tlsSniffer) Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return net.Listen("tcp", addr)
}

func (n *tlsSniffer) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &sniffedConn{Conn: c, nw: n}, nil
}

type sniffedConn struct {
	net.Conn
	nw   *tlsSniffer
	once sync.Once
}

func (c *sniffedConn) Write(p []byte) (int, error) {
	if len(p) > 0 {
		c.once.Do(func() {
			c.nw.mu.Lock()
			c.nw.first = append(c.nw.first, p[0])
			c.nw.mu.Unlock()
		})
	}
	return c.Conn.Write(p)
}

// WithTLS runs over a Network's connections as over TCP: every
// connection the members dial through it opens with a TLS handshake
// record, a call crosses members, and a plaintext node dialling through
// the same network is refused.
func TestWithNetworkUnderTLS(t *testing.T) {
	parallel(t)
	ca := newCA(t, t.TempDir(), "cluster")
	nw := &tlsSniffer{}
	nodes := startCluster(t, 2, casty.WithTLS(ca.issue(t, "node")), casty.WithNetwork(nw))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := keyOn(t, nodes[1], nodes[0], Wheres.Name())
	if got, err := casty.Call0(ctx, Wheres.Ref(nodes[0], key), (*Where).Hit); err != nil || !strings.HasPrefix(got, nodes[1].Addr()+"#") {
		t.Fatalf("a call over TLS on the network: %q %v", got, err)
	}
	cfg := fastCluster()
	cfg.Membership.JoinTimeout = 500 * time.Millisecond
	plainNw := &tlsSniffer{}
	if sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(cfg), casty.Seeds(nodes[0].Addr()),
		casty.WithNetwork(plainNw), quiet()); err == nil {
		closeSys(t, sys)
		t.Fatal("a plaintext node joined a TLS cluster over the network")
	}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	const handshake = 0x16 // a TLS record of type handshake: the ClientHello
	if len(nw.first) == 0 || slices.ContainsFunc(nw.first, func(b byte) bool { return b != handshake }) {
		t.Fatalf("first bytes of the members' dialled connections %x: want TLS handshakes (16) only", nw.first)
	}
	plainNw.mu.Lock()
	defer plainNw.mu.Unlock()
	if len(plainNw.first) == 0 {
		t.Fatal("the plaintext node dialled nothing through its network")
	}
}

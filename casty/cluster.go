package casty

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/muxtransport"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
)

// TLS names the PEM files of a node's certificate and key, and of the CA
// that signs its peers. With CA set, connections are mutually
// authenticated: a node without a certificate signed by CA can neither join
// nor call. Without CA, peers are verified against the system roots.
type TLS struct {
	Cert, Key, CA string
	// Identity binds each peer to its certificate (mux.Config.CertIdentity;
	// needs CA): a member's certificate must carry the URI
	// casty://member/<name> in its subject alternative names, a lite
	// client's casty://role/client, an operator's (castyctl)
	// casty://role/operator. A certificate claiming a node id bound to
	// another member's certificate is refused (so give each member its
	// own name), and only member and operator certificates may read state
	// or spy. SECURITY.md.
	Identity bool
}

// Seeds lists addresses of existing members to join through, tried in
// turn. A seed equal to the node's own address is ignored. Without seeds,
// Start founds a new cluster. Each is host:port (a host name, an IP
// address, or empty for this machine; a port number from 1 to 65535 or a
// service name): Start and Connect refuse one that is not at once, with
// ErrInvalidSeed, rather than dial it until their deadline.
func Seeds(addrs ...string) Option {
	return func(o *systemOptions) { o.seeds = append(o.seeds, addrs...) }
}

// checkSeeds returns an error wrapping ErrInvalidSeed for the first seed
// that is not a dialable host:port.
func checkSeeds(seeds []string) error {
	for _, s := range seeds {
		_, port, err := net.SplitHostPort(s)
		if err == nil {
			var n int
			n, err = net.LookupPort("tcp", port)
			if err == nil && n == 0 {
				err = errors.New("port 0 cannot be dialled")
			}
		}
		if err != nil {
			return fmt.Errorf("%w %q: %v", ErrInvalidSeed, s, err)
		}
	}
	return nil
}

// Advertise sets the address other nodes dial to reach this one (default:
// the listening address, with an unspecified host replaced by the address
// of the interface that reaches the first seed; with WithNetwork, the
// address its listener reports).
func Advertise(addr string) Option { return func(o *systemOptions) { o.advertise = addr } }

// ClusterName sets the cluster's name (default "casty"): nodes with
// different names refuse each other's connections.
func ClusterName(name string) Option {
	return func(o *systemOptions) { o.cluster = name; o.clusterSet = true }
}

// WithTLS secures every connection with tls (mutual TLS when tls.CA is set).
func WithTLS(t TLS) Option { return func(o *systemOptions) { o.tls = &t } }

// cluster is what a system has when it is a member or a lite member.
type cluster struct {
	sys   *System
	self  ring.NodeID
	lite  bool
	node  *mux.Node
	tr    *muxtransport.Transport
	agent *gossip.Agent
	// agentUp is set once agent is: the replication lane serves requests
	// (a pull of the placement's history among them) before gossip starts,
	// and what they merge waits for the first refresh after it.
	agentUp atomic.Bool
	addr    string
	view    atomic.Pointer[view]
	rr      atomic.Uint64 // lite members' service round robin
	closed  atomic.Bool   // stop accepting calls
	unsub   func()
	done    chan struct{}
	serve   chan struct{}
	logger  *slog.Logger
	netLim  *limiter // rate-limits network warnings (netlog.go)
	lost    sync.Map // reflect.Type → struct{}: error types logged as lost on the wire (remote_error.go)
	// uncounted makes this node open streams without the credit flag, as a
	// node that predates it does (tests only; stream_credit.go).
	uncounted bool

	closeOnce sync.Once

	rp        *replicator   // nil for a lite member
	early     earlyWaits    // calls from here waiting for an early answer (early.go)
	physical  func() int64  // the replication HLC's physical clock (WithClock)
	ticks     chan struct{} // closed to stop the placement ticker
	lastReact time.Time     // tick's last reactivation of durable actors
	started   time.Time     // when newCluster ran (the age of its own record)
	// selfInc is this member's own incarnation as its table last held it,
	// plus one (0: not seen yet). It rises only when the member refutes a
	// suspicion of itself (refresh, forgetStale).
	selfInc atomic.Uint64

	mu       sync.Mutex
	joinedCh chan struct{} // closed once another member is seen
	joined   bool
	agree    agreement // the placement's history and this member's vote (agree.go)
}

// gossipConfig is the membership protocol's configuration for cfg (seeds
// and logger aside).
func gossipConfig(cfg MembershipConfig) *gossip.Config {
	g := gossip.DefaultConfig()
	g.ActiveViewSize, g.PassiveViewSize = cfg.ActiveViewSize, cfg.PassiveViewSize
	g.ActiveRandomWalkLength, g.PassiveRandomWalkLength = cfg.ActiveRandomWalkLength, cfg.PassiveRandomWalkLength
	g.ShuffleInterval, g.ShuffleActive, g.ShufflePassive = cfg.ShuffleInterval, cfg.ShuffleActive, cfg.ShufflePassive
	g.SuspicionTimeout, g.AntiEntropyInterval = cfg.SuspicionTimeout, cfg.AntiEntropyInterval
	g.TombstoneTTL, g.GraftTimeout, g.JoinTimeout = cfg.TombstoneTTL, cfg.GraftTimeout, cfg.JoinTimeout
	g.ReconnectInterval, g.ReconnectTimeout = cfg.ReconnectInterval, cfg.ReconnectTimeout
	if cfg.MaxTableSize > 0 {
		g.MaxTableSize = cfg.MaxTableSize
	}
	g.MaxClientRecords = cfg.MaxClientRecords
	return g
}

// view is one consistent picture of the membership: the ring of full
// members and every live member's address.
type view struct {
	ring    *ring.Ring // live full members: where Replicas(1) kinds live
	addrs   map[ring.NodeID]string
	members []Member
	changed chan struct{} // closed when a newer view replaces this one
	pl      *layout       // where replicated kinds live (placement.go)
	up      map[ring.NodeID]bool
	// left holds the addresses of members that left gracefully (while
	// gossip keeps their LEFT record and no live member took the address
	// over): a leaver hands its ranges off by answering the syncs of the
	// members that take them over, after it has left the placement
	// (handoff.go).
	left map[ring.NodeID]string
}

// dropReplacedLeavers forgets the address of each leaver that a live
// member advertises now: a process restarted on its address (a rolling
// restart) holds the leaver's port, so the leaver's process is gone and
// answers nothing. Kept, it would have every sync that asks the leaver
// dial a node that is not it, round after round.
func (v *view) dropReplacedLeavers() {
	if len(v.left) == 0 {
		return
	}
	held := make(map[string]bool, len(v.addrs))
	for _, addr := range v.addrs {
		held[addr] = true
	}
	for id, addr := range v.left {
		if held[addr] && v.addrs[id] == "" {
			delete(v.left, id)
		}
	}
}

// ownerOf returns the member that serves k's actor at point: for a
// replicated kind the first live member of its replica set on the
// placement, otherwise the owner on the ring of live members.
// ownerAvoiding is ownerOf without the members in avoid: the first live
// member after them clockwise.
func (v *view) ownerAvoiding(k *actor.Kind, point uint64, avoid map[ring.NodeID]bool) (ring.NodeID, bool) {
	if len(avoid) == 0 {
		return v.ownerOf(k, point)
	}
	r, n := v.ring, 1+len(avoid)
	if rn := replicasOf(k); rn > 1 && v.pl != nil {
		r, n = v.pl.ring, rn+len(avoid)
	}
	var buf [8]ring.NodeID
	for _, id := range r.AppendReplicas(buf[:0], point, n) {
		if v.up[id] && !avoid[id] {
			return id, true
		}
	}
	return ring.NodeID{}, false
}

func (v *view) ownerOf(k *actor.Kind, point uint64) (ring.NodeID, bool) {
	if n := replicasOf(k); n > 1 && v.pl != nil {
		var buf [8]ring.NodeID
		for _, id := range v.pl.ring.AppendReplicas(buf[:0], point, n) {
			if v.up[id] {
				return id, true
			}
		}
		return ring.NodeID{}, false
	}
	return v.ring.Owner(point)
}

// Start starts a full member listening on addr and joins the cluster
// through its seeds, waiting at most Config.Membership.JoinTimeout and never past
// ctx's deadline; if no seed admits it in time, the error names each seed
// and its trouble, and wraps ctx.Err() when ctx ended the wait. With port
// 0, Addr reports the bound port. WaitMembers waits for the rest of the
// cluster. Start (as Connect) fails at once with ErrNotRegistered, before
// opening anything, when a type the declared kinds and messages use was
// never registered.
func Start(ctx context.Context, addr string, opts ...Option) (*System, error) {
	return startCluster(ctx, addr, false, opts)
}

// Connect starts a lite member: it joins the membership and keeps the ring
// current, so it routes calls in one hop, but it never owns keys and is
// never placed on the ring. It listens, because members dial it to gossip
// the membership to it, on an ephemeral port of the interface that
// reaches the first seed only (the loopback for a loopback seed), and
// advertises that address (with WithNetwork, the address its Network's
// listener reports). Like Start, it waits to be admitted at
// most Config.Membership.JoinTimeout and never past ctx's deadline.
func Connect(ctx context.Context, seeds []string, opts ...Option) (*System, error) {
	if len(seeds) == 0 {
		return nil, errors.New("casty: Connect needs at least one seed")
	}
	return startCluster(ctx, "", true, append(opts, Seeds(seeds...)))
}

func startCluster(ctx context.Context, addr string, lite bool, opts []Option) (*System, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var rp *replicator
	if !lite {
		rp = newReplicator()
		opts = append([]Option{withDurability(rp)}, opts...)
	}
	id, err := mux.NewNodeID(crand.Reader)
	if err != nil {
		return nil, err
	}
	sys, o, err := newSystemWith(append(opts[:len(opts):len(opts)], withNodeID(id)))
	if err != nil {
		return nil, err
	}
	if o.durability == actor.Durability(rp) {
		o.replicator = rp
	}
	cl, err := newCluster(ctx, sys, o, addr, lite)
	if err != nil {
		sys.discard()
		return nil, err
	}
	sys.cl = cl
	if err := sys.tel.observe(sys); err != nil {
		cl.crash()
		sys.discard()
		return nil, err
	}
	return sys, nil
}

func newCluster(ctx context.Context, sys *System, o *systemOptions, addr string, lite bool) (*cluster, error) {
	if err := checkSeeds(o.seeds); err != nil {
		return nil, err
	}
	cfg := sys.cfg
	rawID := o.nodeID // startCluster drew it: the host's log lines carry it (nodeLogger)
	var err error
	netw := o.network
	if lite && netw == nil {
		addr, err = liteListenAddr(o.seeds)
		if err != nil {
			return nil, err
		}
	}
	var ln net.Listener
	if netw != nil {
		ln, err = netw.Listen(addr) // WithNetwork: the address as given
	} else {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("casty: listen %s: %w", addr, err)
	}
	adv := o.advertise
	if adv == "" && netw != nil {
		adv = ln.Addr().String()
	} else if adv == "" {
		adv = advertiseFor(ln.Addr().(*net.TCPAddr), o.seeds)
	}
	cl := &cluster{
		sys: sys, self: ring.NodeID(rawID), lite: lite, addr: adv, logger: sys.logger,
		done: make(chan struct{}), serve: make(chan struct{}),
		joinedCh: make(chan struct{}),
	}
	cl.started = time.Now()
	cl.physical = physicalClock(o) // WithClock
	cl.view.Store(&view{ring: emptyRing(), addrs: map[ring.NodeID]string{}, changed: make(chan struct{})})
	cl.ticks = make(chan struct{})
	cl.agree.init(cl.self, !lite && !hasSeeds(o.seeds, adv, ln.Addr().String()))

	mcfg := cfg.Transport.muxConfig()
	mcfg.NodeID = rawID
	if o.clusterSet {
		mcfg.ClusterName = o.cluster
	}
	mcfg.AdvertiseAddr = adv
	mcfg.Role = mux.RoleMember
	if lite {
		mcfg.Role = mux.RoleClient
	}
	mcfg.Logger = sys.logger
	mcfg.Rand = seamRand(o) // castytest's seed; nil: the runtime's entropy
	if netw != nil {
		mcfg.Dial = netw.Dial
	}
	cl.netHooks(&mcfg)
	if o.tls != nil {
		if mcfg.ServerTLS, mcfg.ClientTLS, err = loadTLS(*o.tls); err != nil {
			ln.Close()
			return nil, err
		}
		mcfg.CertIdentity = o.tls.Identity
	}
	o.secrets.apply(&mcfg)
	if o.editMux != nil {
		o.editMux(&mcfg)
	}
	warnIfOpen(sys.logger, &mcfg, ln.Addr())
	node, err := mux.New(mcfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	cl.node = node
	tr := muxtransport.New(node, adv)
	cl.tr = tr
	node.HandleRequests(mux.LaneMessage, cl.handle)
	if o.replicator != nil {
		cl.rp = o.replicator
		if o.seam != nil {
			cl.rp.mutant = o.seam.Mutant
		}
		cl.rp.attach(cl, len(o.seeds) > 0)
	}
	node.HandleRequests(mux.LaneReplication, cl.handleRepl)
	node.HandleStreams(cl.handleStream)
	go func() {
		defer close(cl.serve)
		node.Serve(ln)
	}()

	gcfg := gossipConfig(cfg.Membership)
	gcfg.Logger = layerLogger(cl.logger)
	gcfg.Rand = seamRand(o) // castytest's seed; nil: seeded from the node id
	for _, s := range o.seeds {
		if s != adv && s != ln.Addr().String() {
			gcfg.Seeds = append(gcfg.Seeds, s)
		}
	}
	role := gossip.RoleMember
	if lite {
		role = gossip.RoleClient
	}
	agent, err := gossip.Start(gossip.Peer{ID: gossip.NodeID(rawID), Addr: adv, Role: role}, gcfg, tr)
	if err != nil {
		cl.shutdownTransport()
		return nil, err
	}
	cl.agent = agent
	cl.agentUp.Store(true)
	events, unsub := agent.Subscribe()
	cl.unsub = unsub
	cl.refresh()
	go cl.watch(events)
	go cl.tick()
	if !lite {
		cl.agree.spawn(cl.agreeLoop)
	}

	if len(gcfg.Seeds) > 0 {
		if err := cl.awaitJoin(ctx, gcfg.Seeds, cfg.Membership.JoinTimeout); err != nil {
			// Nobody admitted this node: there is no one to say goodbye
			// to, so it stops at once rather than linger (gossip's Leave),
			// and its connections close first, so that the gossip
			// transport does not wait to flush a join still queued to a
			// seed that never answers.
			cl.node.Close()
			cl.crash()
			return nil, err
		}
	}
	return cl, nil
}

func emptyRing() *ring.Ring {
	r, _ := ring.New(nil)
	return r
}

// liteListenAddr is where a lite member listens: members dial it back to
// gossip the membership to it, so it must listen, but only on the
// interface it advertises — the one that reaches its first seed (the
// loopback for a loopback seed) — never on every interface of the host.
func liteListenAddr(seeds []string) (string, error) {
	host, _, err := net.SplitHostPort(seeds[0])
	if err != nil {
		return "", fmt.Errorf("casty: seed %q: %w", seeds[0], err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return net.JoinHostPort(host, "0"), nil
	}
	return net.JoinHostPort(outboundIP(seeds[0]).String(), "0"), nil
}

// outboundIP is the address of the interface that reaches addr; the IPv4
// loopback when none does (addr does not resolve, no route).
func outboundIP(addr string) net.IP {
	// A UDP "dial" sends nothing; it only picks the outbound interface.
	c, err := net.Dial("udp", addr)
	if err != nil {
		return net.IPv4(127, 0, 0, 1)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP
}

// advertiseFor turns a bound address into one others can dial.
func advertiseFor(bound *net.TCPAddr, seeds []string) string {
	if !bound.IP.IsUnspecified() {
		return bound.String()
	}
	ip := net.IPv4(127, 0, 0, 1)
	if len(seeds) > 0 {
		ip = outboundIP(seeds[0])
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(bound.Port))
}

func loadTLS(t TLS) (server, client *tls.Config, err error) {
	if t.Identity && t.CA == "" {
		return nil, nil, errors.New("casty: TLS.Identity needs a CA (mutual TLS)")
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("casty: TLS certificate: %w", err)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("casty: TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("casty: TLS CA %s: no certificate found", t.CA)
		}
		server.ClientCAs, server.ClientAuth = pool, tls.RequireAndVerifyClientCert
		client.RootCAs = pool
	}
	return server, client, nil
}

// awaitJoin waits until another member is known, for at most timeout and
// never past ctx, or fails naming each seed's trouble. While it waits it
// dials each seed itself, so that the error can say why at once when the
// wait ends — a diagnosis run after the deadline would overrun it.
func (cl *cluster) awaitJoin(ctx context.Context, seeds []string, timeout time.Duration) error {
	jctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		mu  sync.Mutex
		why = make([]string, len(seeds)) // each seed's latest trouble
		wg  sync.WaitGroup
	)
	for i, s := range seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.probeSeed(jctx, s, func(msg string) {
				mu.Lock()
				why[i] = msg
				mu.Unlock()
			})
		}()
	}
	select {
	case <-cl.joinedCh:
		cancel()
		wg.Wait()
		return nil
	case <-jctx.Done():
	}
	wg.Wait()
	select {
	case <-cl.joinedCh: // joined just as the wait ended
		return nil
	default:
	}
	for i, s := range seeds {
		why[i] = s + ": " + why[i]
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("casty: join through seeds %s: %w (%s)", strings.Join(seeds, ", "), err, strings.Join(why, "; "))
	}
	return fmt.Errorf("casty: could not join within %v through any seed: %s", timeout, strings.Join(why, "; "))
}

// probeSeed dials seed until ctx ends, redialling after a failure (100 ms
// doubling to 1 s), and reports what it found to note.
func (cl *cluster) probeSeed(ctx context.Context, seed string, note func(string)) {
	noted := false
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := cl.node.Dial(ctx, seed)
		switch {
		case err == nil:
			note("reachable, but it did not admit this node in time")
			return
		case ctx.Err() != nil:
			if !noted {
				note("no answer before the deadline")
			}
			return
		}
		note(err.Error())
		noted = true
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// watch rebuilds the view on every membership event.
func (cl *cluster) watch(events <-chan gossip.Event) {
	defer close(cl.done)
	for ev := range events {
		cl.sys.tel.member(ev)
		// Coalesce bursts: one rebuild for whatever is queued.
		for more := true; more; {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				cl.sys.tel.member(ev)
			default:
				more = false
			}
		}
		cl.refresh()
	}
}

// refresh rebuilds the view from the agent's table — the ring of live
// members, and the placement of replicated kinds (placement.go) — and
// evicts the activations this node no longer serves.
func (cl *cluster) refresh() {
	if !cl.agentUp.Load() {
		return // newCluster refreshes once gossip runs
	}
	table := cl.agent.Members()
	v := &view{addrs: map[ring.NodeID]string{}, changed: make(chan struct{}), up: map[ring.NodeID]bool{}}
	var ids []ring.NodeID
	others := 0
	for _, m := range table {
		id := ring.NodeID(m.ID)
		if id == cl.self && !cl.lite {
			cl.forgetStale(m.Incarnation)
		}
		if m.Role == gossip.RoleMember && m.Status == gossip.Left {
			if v.left == nil {
				v.left = map[ring.NodeID]string{}
			}
			v.left[id] = m.Addr
		}
		if m.Status != gossip.Alive {
			continue
		}
		v.addrs[id] = m.Addr
		v.up[id] = true
		if id != cl.self {
			others++
		}
		if m.Role == gossip.RoleMember {
			ids = append(ids, id)
			v.members = append(v.members, Member{ID: id.String(), Addr: m.Addr})
		}
	}
	slices.SortFunc(v.members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	v.dropReplacedLeavers()
	// Many events leave the live full members as they were (a lite member,
	// an incarnation, a LEFT record expiring): the ring is kept then, not
	// rebuilt (a rebuild hashes 128 tokens per member).
	if old := cl.view.Load(); old != nil && old.ring != nil && sameMembers(old.ring, ids) {
		v.ring = old.ring
	} else {
		r, err := ring.New(ids)
		if err != nil {
			cl.logger.Error("casty: ring rebuild failed", "err", err)
			return
		}
		v.ring = r
	}
	if cl.observe(v, table) {
		cl.agree.wake()
	}

	// The replicator adopts every version in order, each once.
	cl.agree.adoptMu.Lock()
	defer cl.agree.adoptMu.Unlock()
	var adopt []*layout
	cl.agree.mu.Lock()
	for ver := cl.agree.adopted + 1; ver <= uint64(len(cl.agree.layouts)); ver++ {
		adopt = append(adopt, cl.agree.layouts[ver-1])
	}
	cl.agree.adopted = uint64(len(cl.agree.layouts))
	if n := len(cl.agree.layouts); n > 0 {
		v.pl = cl.agree.layouts[n-1]
	}
	cl.agree.mu.Unlock()
	pl := v.pl
	if stale(pl, v) {
		// Gossip has news the placement may have agreed on already.
		defer cl.pullRandom()
	}
	cl.mu.Lock()
	old := cl.view.Swap(v)
	if others > 0 && !cl.joined {
		cl.joined = true
		close(cl.joinedCh)
	}
	cl.mu.Unlock()
	if old != nil {
		close(old.changed)
	}
	if cl.rp != nil && cl.rp.mutant == "adopt-newest-only" && len(adopt) > 1 {
		adopt = adopt[len(adopt)-1:] // skips the versions between
	}
	if cl.rp != nil {
		for i, next := range adopt {
			var prev *layout
			if old != nil {
				prev = old.pl
			}
			if i > 0 {
				prev = adopt[i-1]
			}
			if prev != nil {
				for _, id := range prev.ring.Members() {
					if !next.placed(id) && next.p.WasRemoved(id) { // not a leave, whether or not its LEFT record has arrived
						cl.logger.Warn("casty: a majority of the placement saw a member dead for Config.Replication.RemoveDeadAfter: it leaves the placement", logPeer, id.String())
					}
				}
			}
			cl.rp.adopt(next)
		}
	}
	for _, next := range adopt {
		if next.version > 1 {
			cl.logger.Debug("casty: placement version adopted", "version", next.version, "members", next.ring.Size())
		}
	}
	if cl.rp != nil {
		defer cl.rp.reactivate()
		if pl != nil && pl.p.WasRemoved(cl.self) && !pl.placed(cl.self) && cl.agree.rejoining.CompareAndSwap(false, true) {
			if !cl.agree.spawn(cl.rejoin) {
				cl.agree.rejoining.Store(false)
			}
		}
	}
	if old != nil && !cl.lite && cl.sys.host != nil {
		cl.sys.host.Evict(func(k *actor.Kind, key string) bool {
			if k.Service {
				return false
			}
			point := ring.Point(k.Name, key)
			owner, ok := v.ownerOf(k, point)
			if ok && owner != cl.self {
				return true
			}
			// A replicated actor whose replica set changed restarts from
			// its replicas on the new placement.
			if n := replicasOf(k); n > 1 && old.pl != nil && pl != nil && pl != old.pl {
				return !slices.Equal(old.pl.ring.Replicas(point, n), pl.ring.Replicas(point, n))
			}
			return false
		}, actor.ReasonMoved)
	}
}

// forgetStale drops this member's replicated activations when it has
// just refuted a suspicion of itself (its incarnation rose to inc): while
// the others suspected it — it was paused, or cut off one way — they
// routed its keys to the next replica, which may have acknowledged writes
// this member's activations never saw. Their state is stale, and a
// Read(One) served from it would stay stale until the next write fenced
// it; dropped, the next call activates from a read quorum
// (replica/SPEC.md, "Read(One) and a deposed owner"; the replica's own
// rule, replicator.raised, deposes an activation once the other owner's
// ballot reaches this member's copy).
func (cl *cluster) forgetStale(inc uint64) {
	prev := cl.selfInc.Swap(inc + 1)
	if prev == 0 || inc+1 <= prev || cl.sys.host == nil {
		return
	}
	n := cl.sys.host.Evict(func(k *actor.Kind, _ string) bool { return !k.Service && replicasOf(k) > 1 }, actor.ReasonMoved)
	cl.logger.Info("casty: refuted a suspicion of this member: its replicated actors restart from their replicas", "incarnation", inc, "activations", n)
}

// tick re-evaluates the placement every second while a placed member is
// down, so a death is turned into a removal when RemoveDeadAfter has
// passed even if gossip has nothing new to say.
func (cl *cluster) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-cl.ticks:
			return
		case <-t.C:
		}
		// Versions this member missed come with the next pull at the
		// latest.
		cl.pullRandom()
		v := cl.view.Load()
		if v.pl == nil {
			continue
		}
		if cl.rp != nil && time.Since(cl.lastReact) >= reactivateEvery {
			// A durable actor whose new owner finished syncing after the
			// last view change comes back here at the latest.
			cl.lastReact = time.Now()
			cl.rp.reactivate()
		}
		for _, id := range v.pl.ring.Members() {
			if !v.up[id] {
				cl.refresh()
				break
			}
		}
	}
}

// awaitPlacement waits, at most max, until this node's placement reaches
// version.
func (cl *cluster) awaitPlacement(ctx context.Context, version uint64, max time.Duration) {
	t := time.NewTimer(max)
	defer t.Stop()
	for {
		v := cl.view.Load()
		if v.pl != nil && v.pl.version >= version {
			return
		}
		select {
		case <-v.changed:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// changes returns a channel closed at the next view change.
func (cl *cluster) changes() <-chan struct{} { return cl.view.Load().changed }

// members lists live full members, self included.
func (cl *cluster) members() []Member {
	return slices.Clone(cl.view.Load().members)
}

// shutdown leaves the cluster: stop accepting, drain (when drain is set),
// announce LEFT, hand the member's ranges off (handoff.go), close
// sessions.
func (cl *cluster) shutdown(ctx context.Context, drain bool) error {
	cl.closed.Store(true)
	var err error
	if drain {
		err = cl.sys.host.Close(ctx)
	}
	cl.closeTicks()
	var peers map[ring.NodeID]string
	if cl.rp != nil && drain {
		peers = cl.rp.handoffPeers()
	}
	// Leave announces LEFT, then lingers so the record spreads; the
	// handoff runs meanwhile. Once every member of the placement has taken
	// the member's ranges over, each of them holds the LEFT record and
	// spreads it: the linger ends there.
	// Bounded by Close's ctx too: a leave not agreed by then leaves this
	// member to be removed as dead, which is safe, only slower.
	lctx, cancel := context.WithTimeout(ctx, cl.sys.cfg.Actors.DrainTimeout)
	defer cancel()
	left := make(chan error, 1)
	go func() { left <- cl.agent.Leave(lctx) }()
	if v := cl.view.Load(); cl.rp != nil && v != nil && v.pl != nil && v.pl.placed(cl.self) {
		// The leaver's own leave is agreed before it hands off: the
		// members entering its ranges then sync them on the placement
		// without it, from the sets that held them with it (handoff.go).
		// A leaver that cannot reach a majority is not taken out: it is
		// left as a dead member, which only a majority can remove.
		if !cl.leave(lctx) {
			cl.logger.Warn("casty: the leave was not agreed before Config.Actors.DrainTimeout or the Close ctx ran out (no majority of the placement answered): the others will remove this member as dead")
			peers = nil
		}
	}
	if len(peers) > 0 {
		hctx, hcancel := context.WithTimeout(ctx, cl.sys.cfg.Replication.HandoffTimeout)
		if n := cl.rp.handoff(hctx, peers); n > 0 {
			cl.logger.Warn("casty: handoff incomplete: members still syncing this member's ranges when Config.Replication.HandoffTimeout or the Close ctx ran out",
				"members", n)
		} else {
			cancel()
		}
		hcancel()
	}
	if lerr := <-left; lerr != nil && err == nil && !errors.Is(lerr, gossip.ErrClosed) {
		err = lerr
	}
	cl.agree.close()
	if cl.rp != nil {
		cl.rp.close()
	}
	cl.agent.Close()
	cl.unsub()
	<-cl.done
	cl.shutdownTransport()
	return err
}

func (cl *cluster) closeTicks() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	select {
	case <-cl.ticks:
	default:
		close(cl.ticks)
	}
}

func (cl *cluster) shutdownTransport() {
	cl.tr.Close()
	cl.node.Close()
	<-cl.serve
}

// OwnerOf returns the member that owns key of the kind named kind on this
// node's current ring; ok is false in local mode or with no full member.
func (s *System) OwnerOf(kind, key string) (m Member, ok bool) {
	if s.cl == nil {
		return m, false
	}
	v := s.cl.view.Load()
	var id ring.NodeID
	if k := kinds.get(kind); k != nil {
		id, ok = v.ownerOf(k, ring.Point(kind, key))
	} else {
		id, ok = v.ring.OwnerOf(kind, key)
	}
	if !ok {
		return m, false
	}
	return Member{ID: id.String(), Addr: v.addrs[id]}, true
}

// crash stops the member the way a killed process stops: no drain, no
// LEFT, no Deactivate hooks; its connections drop at once. Tests and
// castytest use it; Close afterwards does nothing more.
func (cl *cluster) crash() {
	cl.closeOnce.Do(func() {
		cl.closed.Store(true)
		cl.closeTicks()
		cl.agree.close()
		cl.shutdownTransport()
		if cl.rp != nil {
			cl.rp.close()
		}
		cl.agent.Close()
		cl.unsub()
		<-cl.done
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = cl.sys.host.Close(ctx)
	})
}

// hasSeeds reports whether seeds name a member other than this one (at adv
// or bound): a member without one founds the cluster.
func hasSeeds(seeds []string, adv, bound string) bool {
	for _, s := range seeds {
		if s != adv && s != bound {
			return true
		}
	}
	return false
}

// sameMembers reports whether r's members are exactly ids (distinct, in
// any order).
func sameMembers(r *ring.Ring, ids []ring.NodeID) bool {
	if r.Size() != len(ids) {
		return false
	}
	for _, id := range ids {
		if !r.Has(id) {
			return false
		}
	}
	return true
}

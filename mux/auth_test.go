package mux

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	memberSecret   = []byte("member secret, 32 bytes long....")
	operatorSecret = []byte("operator secret, 32 bytes long..")
	clientSecret   = []byte("client secret, 32 bytes long....")
)

func withSecret(c Config, s []byte) Config { c.ClusterSecret = s; return c }

// pipePair runs DialConn from a against Accept on b over net.Pipe; each
// side's error is returned (the sessions are dropped).
func pipePair(t *testing.T, a, b *Node) (dialErr, acceptErr error, sa, sb *Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c1, c2 := net.Pipe()
	type res struct {
		s   *Session
		err error
	}
	done := make(chan res, 1)
	go func() { s, err := b.Accept(ctx, c2); done <- res{s, err} }()
	sa, dialErr = a.DialConn(ctx, c1)
	r := <-done
	return dialErr, r.err, sa, r.s
}

func handshakeCode(err error) (HandshakeCode, bool) {
	var he *HandshakeError
	if errors.As(err, &he) {
		return he.Code, true
	}
	return 0, false
}

func TestSecretHandshakeProvesBothSides(t *testing.T) {
	for _, ct := range connTypes {
		t.Run(string(ct), func(t *testing.T) {
			_, _, sa, sb := connect(t, ct, withSecret(testConfig(1), memberSecret), withSecret(testConfig(2), memberSecret), nil)
			if sa.Credential() != CredentialMember || sb.Credential() != CredentialMember {
				t.Fatalf("credentials %v / %v, want member both ways", sa.Credential(), sb.Credential())
			}
			if sa.Version() != ProtocolVersion || !sa.Operator() || !sb.Operator() {
				t.Fatalf("version %d, operator %v/%v", sa.Version(), sa.Operator(), sb.Operator())
			}
			if _, err := sa.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWrongSecretRefusedBothDirections(t *testing.T) {
	other := []byte("another secret of 32 bytes......")
	t.Run("listener with the wrong secret is refused by the dialler", func(t *testing.T) {
		a, b := newNode(t, withSecret(testConfig(1), memberSecret)), newNode(t, withSecret(testConfig(2), other))
		dErr, aErr, _, _ := pipePair(t, a, b)
		if c, ok := handshakeCode(dErr); !ok || c != CodeUnauthenticated {
			t.Fatalf("dialler: %v", dErr)
		}
		if c, ok := handshakeCode(aErr); !ok || c != CodeUnauthenticated {
			t.Fatalf("listener: %v", aErr)
		}
	})
	t.Run("dialler with the wrong proof is refused by the listener", func(t *testing.T) {
		b := newNode(t, withSecret(testConfig(2), memberSecret))
		typ, body, aErr := rawDial(t, b, func(h *hello) { h.creds = 1 << CredentialMember }, func(_, _ []byte) []byte {
			return (&proofMsg{}).encode() // cannot compute the proof without the secret
		})
		if r, err := decodeReject(body); typ != hsReject || err != nil || r.code != CodeUnauthenticated {
			t.Fatalf("answer %d %+v %v", typ, r, err)
		}
		if c, ok := handshakeCode(aErr); !ok || c != CodeUnauthenticated {
			t.Fatalf("listener: %v", aErr)
		}
	})
	t.Run("no secret at a listener that requires one", func(t *testing.T) {
		a, b := newNode(t, testConfig(1)), newNode(t, withSecret(testConfig(2), memberSecret))
		dErr, _, _, _ := pipePair(t, a, b)
		if c, ok := handshakeCode(dErr); !ok || c != CodeUnauthenticated {
			t.Fatalf("dialler: %v", dErr)
		}
	})
	t.Run("a secret-holding dialler refuses an open listener", func(t *testing.T) {
		a, b := newNode(t, withSecret(testConfig(1), memberSecret)), newNode(t, testConfig(2))
		dErr, _, _, _ := pipePair(t, a, b)
		if c, ok := handshakeCode(dErr); !ok || c != CodeUnauthenticated {
			t.Fatalf("dialler: %v", dErr)
		}
	})
	t.Run("a client credential cannot announce member", func(t *testing.T) {
		lc := withSecret(testConfig(2), memberSecret)
		lc.ClientSecret = clientSecret
		typ, body, aErr := rawDial(t, newNode(t, lc), func(h *hello) { h.creds = 1 << CredentialClient }, proveWith(clientSecret))
		if r, err := decodeReject(body); typ != hsReject || err != nil || r.code != CodeIdentity {
			t.Fatalf("answer %d %+v %v", typ, r, err)
		}
		if c, ok := handshakeCode(aErr); !ok || c != CodeIdentity {
			t.Fatalf("listener: %v", aErr)
		}
	})
	t.Run("a member needs the cluster secret", func(t *testing.T) {
		c := testConfig(1)
		c.ClientSecret = clientSecret
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("Validate: %v", err)
		}
	})
}

// rawDial plays a dialler by hand against b's Accept over a pipe: edit
// changes the hello (node id 1, cluster "test"), answer (if the listener
// challenges) returns the bytes to send back, given the hello's body and
// the challenge's. It returns the listener's last answer and Accept's
// error.
func rawDial(t *testing.T, b *Node, edit func(*hello), answer func(hello, challenge []byte) []byte) (typ byte, body []byte, acceptErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c1, c2 := net.Pipe()
	defer c1.Close()
	done := make(chan error, 1)
	go func() { _, err := b.Accept(ctx, c2); done <- err }()
	h := hello{versions: supportedVersions, nodeID: testID(1), role: RoleMember, cluster: "test"}
	edit(&h)
	c1.SetDeadline(time.Now().Add(5 * time.Second))
	hb := h.encode()
	go c1.Write(hb)
	typ, body, err := readHandshake(c1)
	if err == nil && typ == hsChallenge && answer != nil {
		if _, err := decodeChallenge(body); err != nil {
			t.Fatal(err)
		}
		go c1.Write(answer(hb[hsHeaderSize:], body))
		typ, body, err = readHandshake(c1)
	}
	if err != nil {
		t.Fatalf("reading the listener's answer: %v", err)
	}
	c1.Close()
	return typ, body, <-done
}

// proveWith answers a challenge with the dialler's proof of secret.
func proveWith(secret []byte) func(hello, challenge []byte) []byte {
	return func(hello, challenge []byte) []byte {
		var tr transcript
		tr.add(hello)
		tr.add(challenge)
		return (&proofMsg{proof: tr.proof(secret, labelDialler)}).encode()
	}
}

// recordConn keeps a copy of every byte read from and written to a conn.
type recordConn struct {
	net.Conn
	mu  sync.Mutex
	all bytes.Buffer
}

func (c *recordConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.all.Write(b[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recordConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.all.Write(b)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *recordConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.all.Bytes())
}

func TestSecretNeverCrossesTheWire(t *testing.T) {
	a, b := newNode(t, withSecret(testConfig(1), memberSecret)), newNode(t, withSecret(testConfig(2), memberSecret))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var proofs [][]byte
	for range 2 {
		c1, c2 := net.Pipe()
		rec := &recordConn{Conn: c1}
		errc := make(chan error, 1)
		go func() { _, err := b.Accept(ctx, c2); errc <- err }()
		s, err := a.DialConn(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		wire := rec.bytes()
		for _, leak := range [][]byte{memberSecret, memberSecret[:16], []byte(hex.EncodeToString(memberSecret))} {
			if bytes.Contains(wire, leak) {
				t.Fatalf("the handshake bytes contain the secret (%q)", leak)
			}
		}
		i := bytes.Index(wire, []byte(handshakeMagic+"\x05"))
		if i < 0 {
			t.Fatal("no proof message in the handshake")
		}
		proofs = append(proofs, wire[i+hsHeaderSize:i+hsHeaderSize+32])
		s.Close()
	}
	if bytes.Equal(proofs[0], proofs[1]) {
		t.Fatal("two handshakes carried the same proof: it could be replayed")
	}
}

func TestWrongClusterNameIsNotEchoed(t *testing.T) {
	dc, lc := testConfig(1), testConfig(2)
	dc.ClusterName, lc.ClusterName = "guessed-name", "the-real-name"
	a, b := newNode(t, dc), newNode(t, lc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c1, c2 := net.Pipe()
	rec := &recordConn{Conn: c1}
	errc := make(chan error, 1)
	go func() { _, err := b.Accept(ctx, c2); errc <- err }()
	_, dErr := a.DialConn(ctx, rec)
	aErr := <-errc
	if c, ok := handshakeCode(dErr); !ok || c != CodeWrongCluster {
		t.Fatalf("dialler: %v", dErr)
	}
	// What the listener wrote is everything after the dialler's hello.
	hello := (&hello{versions: supportedVersions, nodeID: dc.NodeID, role: RoleMember, cluster: dc.ClusterName,
		addr: dc.AdvertiseAddr, codecs: dc.Codecs}).encode()
	answer := rec.bytes()[len(hello):]
	for _, name := range []string{"the-real-name", "guessed-name"} {
		if bytes.Contains(answer, []byte(name)) || strings.Contains(dErr.Error(), name) || strings.Contains(aErr.Error(), name) {
			t.Fatalf("the rejection names %q: %q / %v / %v", name, answer, dErr, aErr)
		}
	}
}

// healthyConfig makes sessions count as healthy (entrenched) quickly.
func healthyConfig(id byte) Config {
	c := testConfig(id)
	c.ConnectTimeout, c.HandshakeTimeout = 100*time.Millisecond, 200*time.Millisecond
	c.KeepAliveInterval, c.KeepAliveTimeout = 20*time.Millisecond, 2*time.Second
	return c
}

// whoAmI answers a request with the node's own id byte.
func whoAmI(id byte) RequestHandler {
	return func(context.Context, *Session, []byte) ([]byte, error) { return []byte{id}, nil }
}

// waitHealthy waits until b's live session to peer is past the
// simultaneous-dial window and has had a keepalive answered.
func waitHealthy(t *testing.T, b *Node, peer NodeID) *Session {
	t.Helper()
	var s *Session
	waitFor(t, 5*time.Second, "the live session is healthy", func() bool {
		var ok bool
		s, ok = b.Session(peer)
		b.mu.Lock()
		defer b.mu.Unlock()
		return ok && b.entrenched(s, &Session{}, time.Now())
	})
	return s
}

// impostorDial dials b as node id claimed with dial nonce 0 (the nonce
// that wins the same-initiator tie-break), over TCP with cfg.
func impostorDial(t *testing.T, cfg Config, addr string) (*Session, error) {
	t.Helper()
	cfg.Rand = nil
	imp := newNode(t, cfg)
	imp.HandleRequests(LaneMessage, whoAmI(66))
	imp.rand = zeroRand()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return imp.Dial(ctx, addr)
}

func TestImpostorDoesNotDisplaceALiveSession(t *testing.T) {
	for _, mode := range []string{"open", "secret"} {
		t.Run(mode, func(t *testing.T) {
			ca, cb := healthyConfig(1), healthyConfig(2)
			if mode == "secret" {
				ca, cb = withSecret(ca, memberSecret), withSecret(cb, memberSecret)
			}
			a, b := newNode(t, ca), newNode(t, cb)
			a.HandleRequests(LaneMessage, whoAmI(1))
			addr := listen(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := a.Dial(ctx, addr); err != nil {
				t.Fatal(err)
			}
			live := waitHealthy(t, b, a.ID())
			// The impostor claims a's node id; in secret mode it does not
			// hold the secret.
			imp := healthyConfig(1)
			_, err := impostorDial(t, imp, addr)
			if mode == "secret" {
				if c, ok := handshakeCode(err); !ok || c != CodeUnauthenticated {
					t.Fatalf("impostor without the secret: %v", err)
				}
			}
			// Every call b makes to a's node id reaches a.
			for i := range 12 {
				s, ok := b.Session(a.ID())
				if !ok || s != live {
					t.Fatalf("call %d: the live session to a was replaced", i)
				}
				resp, err := s.Request(ctx, LaneMessage, nil)
				if err != nil || !bytes.Equal(resp, []byte{1}) {
					t.Fatalf("call %d reached %v (err %v), want a", i, resp, err)
				}
			}
		})
	}
}

// A peer whose old connection is gone does take over with a redial: the
// rule only protects sessions that are alive.
func TestRedialAfterTheOldSessionDiedIsAccepted(t *testing.T) {
	a, b := newNode(t, healthyConfig(1)), newNode(t, healthyConfig(2))
	addr := listen(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := a.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, b, a.ID())
	s.Close()
	waitFor(t, 5*time.Second, "b sees the session end", func() bool { _, ok := b.Session(a.ID()); return !ok })
	if _, err := a.Dial(ctx, addr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "b has the new session", func() bool { _, ok := b.Session(a.ID()); return ok })
}

func TestOperatorGrant(t *testing.T) {
	lc := withSecret(testConfig(2), memberSecret)
	lc.OperatorSecret, lc.ClientSecret = operatorSecret, clientSecret
	cases := []struct {
		name     string
		edit     func(*Config)
		cred     Credential
		operator bool
	}{
		{"member", func(c *Config) { c.ClusterSecret = memberSecret }, CredentialMember, true},
		{"operator", func(c *Config) { c.OperatorSecret, c.Role = operatorSecret, RoleClient }, CredentialOperator, true},
		{"client", func(c *Config) { c.ClientSecret, c.Role = clientSecret, RoleClient }, CredentialClient, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dc := testConfig(byte(10 + i))
			c.edit(&dc)
			dErr, aErr, sa, sb := pipePair(t, newNode(t, dc), newNode(t, lc))
			if dErr != nil || aErr != nil {
				t.Fatal(dErr, aErr)
			}
			if sb.Credential() != c.cred || sb.Operator() != c.operator {
				t.Fatalf("listener sees %v operator=%v", sb.Credential(), sb.Operator())
			}
			if sb.Member() != (c.cred == CredentialMember) {
				t.Fatalf("listener sees member=%v", sb.Member())
			}
			// The dialler proved its secret and the listener the same one:
			// all a lite client can check, so it takes the member at its word.
			if !sa.Member() {
				t.Fatalf("dialler sees member=%v (%v)", sa.Member(), sa.Credential())
			}
			sa.Close()
		})
	}
	// An open node trusts everyone as an operator.
	_, _, _, sb := connect(t, viaPipe, testConfig(1), testConfig(2), nil)
	if sb.Credential() != CredentialNone || !sb.Operator() {
		t.Fatal("an open node must keep today's behaviour")
	}
}

// idPKI is a CA that issues certificates with casty identity URIs.
type idPKI struct {
	pool  *x509.CertPool
	ca    *x509.Certificate
	key   *ecdsa.PrivateKey
	mu    sync.Mutex
	certs map[string]tls.Certificate
}

var (
	idOnce sync.Once
	idCA   *idPKI
)

func getIDPKI(t testing.TB) *idPKI {
	idOnce.Do(func() {
		ca, key := selfSignedCA("casty identity test CA")
		idCA = &idPKI{pool: x509.NewCertPool(), ca: ca, key: key, certs: map[string]tls.Certificate{}}
		idCA.pool.AddCert(ca)
	})
	return idCA
}

// cert issues (once per URI list) a certificate for 127.0.0.1 with uris.
func (p *idPKI) cert(uris ...string) tls.Certificate {
	k := strings.Join(uris, " ")
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.certs[k]; ok {
		return c
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(len(p.certs) + 2)), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		panic(err)
	}
	c := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	p.certs[k] = c
	return c
}

// withIdentity gives c mutual TLS with a certificate carrying uris, and
// CertIdentity.
func withIdentity(t testing.TB, c Config, uris ...string) Config {
	p := getIDPKI(t)
	cert := p.cert(uris...)
	c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: p.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	c.ClientTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: p.pool, MinVersion: tls.VersionTLS13}
	c.CertIdentity = true
	return c
}

func TestCertIdentityBindsTheNodeID(t *testing.T) {
	ca := withIdentity(t, healthyConfig(1), "casty://member/a")
	cb := withIdentity(t, healthyConfig(2), "casty://member/b")
	a, b := newNode(t, ca), newNode(t, cb)
	a.HandleRequests(LaneMessage, whoAmI(1))
	addr := listen(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sa, err := a.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if sa.PeerName() != "b" || sa.Credential() != CredentialMember {
		t.Fatalf("a sees %q %v", sa.PeerName(), sa.Credential())
	}
	live, _ := b.Session(a.ID())
	if live.PeerName() != "a" {
		t.Fatalf("b sees %q", live.PeerName())
	}
	attacks := []struct {
		name string
		cfg  Config
		code HandshakeCode
	}{
		{"another member's certificate claims a's node id", withIdentity(t, healthyConfig(1), "casty://member/mallory"), CodeIdentity},
		{"a client certificate claims a's node id", withIdentity(t, healthyConfig(1), CertClientURI), CodeIdentity},
		{"an operator certificate announces member", withIdentity(t, healthyConfig(9), CertOperatorURI), CodeIdentity},
		{"a certificate names another node id", withIdentity(t, healthyConfig(9), "casty://member/c", CertNodePrefix+testID(8).String()), CodeIdentity},
		{"a certificate without casty identity", withIdentity(t, healthyConfig(9)), CodeUnauthenticated},
	}
	for _, at := range attacks {
		_, err := impostorDial(t, at.cfg, addr)
		if c, ok := handshakeCode(err); !ok || c != at.code {
			t.Errorf("%s: %v, want code %v", at.name, err, at.code)
		}
	}
	for i := range 12 {
		s, ok := b.Session(a.ID())
		if !ok || s != live {
			t.Fatalf("call %d: the live session to a was replaced", i)
		}
		if resp, err := s.Request(ctx, LaneMessage, nil); err != nil || !bytes.Equal(resp, []byte{1}) {
			t.Fatalf("call %d reached %v (err %v), want a", i, resp, err)
		}
	}
	// a itself may come back with the same certificate: same name.
	a.Close()
	waitFor(t, 5*time.Second, "b sees a leave", func() bool { _, ok := b.Session(a.ID()); return !ok })
	a2 := newNode(t, ca)
	if _, err := a2.Dial(ctx, addr); err != nil {
		t.Fatalf("a's own certificate refused: %v", err)
	}
}

// zeroSource makes every dial nonce 0.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

func zeroRand() *mrand.Rand { return mrand.New(zeroSource{}) }

// A stranger without a credential cannot even learn whether its guess of
// the cluster name was right.
func TestNoCredentialLearnsNothingOfTheClusterName(t *testing.T) {
	b := newNode(t, withSecret(testConfig(2), memberSecret))
	for _, name := range []string{"test", "wrong"} {
		typ, body, _ := rawDial(t, b, func(h *hello) { h.cluster = name }, nil)
		r, err := decodeReject(body)
		if typ != hsReject || err != nil || r.code != CodeUnauthenticated {
			t.Fatalf("cluster %q: answer %d %+v %v", name, typ, r, err)
		}
	}
}

func TestIdentityOfReadsCastyURIs(t *testing.T) {
	id := testID(7)
	cases := []struct {
		uris  []string
		want  certIdentity
		check HandshakeCode // 255: accepted as member id 7 role member
	}{
		{[]string{"casty://member/a"}, certIdentity{name: "a", cred: CredentialMember}, 255},
		{[]string{"casty://role/operator", "casty://member/b"}, certIdentity{name: "b", cred: CredentialMember}, 255},
		{[]string{"casty://role/client"}, certIdentity{cred: CredentialClient}, CodeIdentity},
		{[]string{"casty://role/operator"}, certIdentity{cred: CredentialOperator}, CodeIdentity},
		{[]string{"casty://member/a", "casty://node/" + id.String()}, certIdentity{name: "a", cred: CredentialMember, node: id, hasID: true}, 255},
		{[]string{"casty://member/a", "casty://node/" + testID(8).String()}, certIdentity{name: "a", cred: CredentialMember, node: testID(8), hasID: true}, CodeIdentity},
		{[]string{"casty://member/a", "casty://node/zz"}, certIdentity{name: "a", cred: CredentialMember}, 255},
		{[]string{"https://member/a", "casty://member/", "casty://role/root", "spiffe://x/y"}, certIdentity{}, CodeUnauthenticated},
		{nil, certIdentity{}, CodeUnauthenticated},
	}
	for _, c := range cases {
		var cert x509.Certificate
		for _, u := range c.uris {
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			cert.URIs = append(cert.URIs, pu)
		}
		got := identityOf(tls.ConnectionState{PeerCertificates: []*x509.Certificate{&cert}})
		if got != c.want {
			t.Errorf("%v: %+v, want %+v", c.uris, got, c.want)
		}
		rej := checkCert(got, id, RoleMember)
		switch {
		case c.check == 255 && rej != nil:
			t.Errorf("%v: refused %+v", c.uris, rej)
		case c.check != 255 && (rej == nil || rej.code != c.check):
			t.Errorf("%v: %+v, want code %v", c.uris, rej, c.check)
		}
	}
	if got := identityOf(tls.ConnectionState{}); got != (certIdentity{}) {
		t.Errorf("no certificate: %+v", got)
	}
}

func TestValidateCredentials(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.ClusterSecret = []byte("short") },
		func(c *Config) { c.ClusterSecret, c.OperatorSecret = memberSecret, []byte("short") },
		func(c *Config) { c.CertIdentity = true },
		func(c *Config) { *c = withTLS(t, *c); c.ServerTLS.ClientAuth = tls.NoClientCert; c.CertIdentity = true },
		func(c *Config) { c.OperatorSecret = operatorSecret }, // a member without ClusterSecret
	}
	for i, edit := range bad {
		c := testConfig(1)
		edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	c := testConfig(1)
	c.Role, c.OperatorSecret = RoleClient, operatorSecret
	if err := c.Validate(); err != nil {
		t.Errorf("an operator client: %v", err)
	}
}

package mux

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"
)

// Config holds every knob of a Node. Build one with DefaultConfig and
// override fields; New calls Validate. Durations are wall-clock durations;
// sizes are bytes.
type Config struct {
	// ClusterName must be equal on both ends of a connection; a mismatch
	// rejects the handshake with CodeWrongCluster. At most 255 bytes.
	// Default "casty". Zero (empty) is allowed and is a name like any other.
	ClusterName string

	// NodeID identifies this node. Required: the zero NodeID is rejected by
	// Validate. Use NewNodeID to draw a random one.
	NodeID NodeID

	// AdvertiseAddr is the address other nodes should dial to reach this
	// node; it is sent in the handshake and reported by Session.PeerAddr.
	// At most 255 bytes. Default "" (the peer only learns the id).
	AdvertiseAddr string

	// Role is sent in the handshake: RoleMember (default) or RoleClient.
	Role Role

	// ServerTLS, when non-nil, wraps every accepted connection in TLS.
	// Set ClientAuth to tls.RequireAndVerifyClientCert with ClientCAs for
	// mTLS. Nil (default) serves plaintext.
	ServerTLS *tls.Config

	// ClientTLS, when non-nil, wraps every dialled connection in TLS. Set
	// RootCAs (and Certificates for mTLS). If ServerName is empty the host
	// part of the dialled address is used. Nil (default) dials plaintext.
	ClientTLS *tls.Config

	// ClusterSecret, when set, is the member credential: every peer must
	// prove a secret this node holds (this one, OperatorSecret or
	// ClientSecret) by challenge and response in the handshake, and this
	// node proves ClusterSecret when it dials. Whoever holds it may join as
	// a member. The secret never crosses the wire. Every record after the
	// handshake is sealed (encrypted and authenticated) with keys derived
	// from the proven secret and both sides' challenges, unless AuthOnly is
	// set (SPEC.md §2, "Sealed records"). At least 16 bytes (32 random
	// bytes recommended). Nil (default): no secret is required (see
	// Enforcing).
	ClusterSecret []byte

	// OperatorSecret, when set, is the operator credential: a peer that
	// proves it may connect as a client (RoleClient only) and use operator
	// functions (Session.Operator reports true). A node that holds it but
	// not ClusterSecret proves it when it dials (an operator tool). At
	// least 16 bytes. Nil (default): no operator credential.
	OperatorSecret []byte

	// ClientSecret, when set, is the lite-client credential: a peer that
	// proves it may connect as a client (RoleClient only), without operator
	// functions. A node that holds only it proves it when it dials. At
	// least 16 bytes. Nil (default): no client credential.
	ClientSecret []byte

	// AuthOnly, with a secret, authenticates the peers but not the records
	// that follow the handshake: they travel in the clear and are not
	// individually authenticated, so whoever can relay or sit on the
	// connection (any host a member dials, such as a stale seed address or
	// an address a lite client advertises) can pass the handshake through,
	// then read, inject and alter frames as either peer. It saves the
	// cost of sealing each record; use it only where no stranger can reach
	// the path between members (and prefer TLS there anyway). A session is
	// auth-only only when both nodes set AuthOnly (protocol version 4);
	// a node without it seals every session (version 5), and refuses a
	// dialler that cannot. Default false. Without a secret it does
	// nothing; TLS, when set, protects the records either way.
	AuthOnly bool

	// CertIdentity binds peers to their TLS certificates: each peer's
	// verified certificate must carry a casty URI subject alternative name
	// saying what it may be — casty://member/<name> (a member), or
	// casty://role/operator or casty://role/client (a client) — and may
	// carry casty://node/<32 hex digits> (then its node id must be that
	// one). A member name is bound to the first node id it claims for as
	// long as this Node runs: another certificate claiming that node id is
	// refused with CodeIdentity. Requires ServerTLS with
	// tls.RequireAndVerifyClientCert, or ClientTLS (a node that only
	// dials). Default false.
	CertIdentity bool

	// HandshakeTimeout bounds the TLS handshake plus the mux handshake of
	// one connection, and the preamble of each accepted stream.
	// Default 5 s. Must be > 0.
	HandshakeTimeout time.Duration

	// ConnectTimeout bounds the TCP connect of Dial (in addition to the
	// caller's context). Default 5 s. Must be > 0.
	ConnectTimeout time.Duration

	// KeepAliveInterval is the time between keepalive pings on an idle or
	// busy connection. Default 1 s: a peer whose process is stopped or
	// whose host vanished keeps its sockets open and says nothing, and the
	// keepalive is what notices, once nothing was read from it for
	// KeepAliveInterval + KeepAliveTimeout (checked every interval). A
	// ping is a 12-byte frame each way. Zero disables keepalive.
	KeepAliveInterval time.Duration

	// KeepAliveTimeout is how long past KeepAliveInterval a connection
	// may go without a record read from its peer before it is declared
	// dead (OnKeepaliveFailure is called and the connection closed). Any
	// record proves the peer, so a pong that comes late on a connection
	// still carrying calls (a peer starved of CPU) closes nothing. It is
	// also the connection's write timeout: a write that the socket does
	// not take within it kills the connection (a sender whose write is
	// stuck behind a peer that stopped reading waits at most this long,
	// whatever its ctx). A live peer can go silent that long too: its
	// reader waits while a lane's inbox is full (a slow MessageHandler),
	// so a short timeout trades false failures under load for faster
	// detection of a stopped peer. Default 5 s. Must be > 0.
	KeepAliveTimeout time.Duration

	// MaxFrame caps the bytes of one yamux data frame written by this
	// node, so a bulk stream delays other streams by at most one frame.
	// Default 256 KiB. Must be in [1 KiB, StreamWindow].
	MaxFrame int

	// MaxMessage caps one message (request, response or one-way payload),
	// before and after compression. Larger payloads are refused locally
	// with ErrMessageTooLarge; a peer sending one violates the protocol.
	// All nodes of a cluster must agree. Default 4 MiB. Must be >= 1 KiB.
	MaxMessage int

	// StreamWindow is the per-stream credit window (yamux
	// MaxStreamWindowSize). Default 256 KiB, which is also yamux's minimum.
	StreamWindow int

	// MaxStreams caps the ephemeral streams open at once on one
	// connection, per direction. OpenStream beyond it fails with
	// ErrTooManyStreams; an inbound stream beyond it is closed at once.
	// Default 1024. Must be > 0.
	MaxStreams int

	// PartialMessageTimeout bounds how long a message (request, response
	// or one-way payload) may stay partly received: once its first bytes
	// arrived, the rest must follow within it, or the connection is
	// closed as a protocol violation. So a peer cannot make this node hold
	// up to MaxMessage per lane for longer. Default 30 s. Must be > 0.
	PartialMessageTimeout time.Duration

	// MaxRequests caps the peer's requests handled at once on one
	// connection (handlers running, or queued to run). A request beyond
	// it is answered at once with a RemoteError of code CodeOverloaded
	// and its handler does not run (a definite failure, safe to retry).
	// The connection is not paused instead because a handler may wait for
	// an answer that only this connection can bring. Default 1024. Must
	// be > 0.
	MaxRequests int

	// MaxQueuedBytes caps, per connection, the bytes of the peer's
	// requests this node holds: requests waiting to run or running,
	// counted at their decoded (decompressed) size, plus the answers of
	// finished handlers still waiting for room to be sent. A request
	// that would take the connection past it is answered at once with a
	// RemoteError of code CodeOverloaded and its handler does not run,
	// as for MaxRequests; a compressed one is refused before it is
	// decompressed, from the size its frame declares. A request is
	// always admitted when the connection holds nothing else, so one of
	// MaxMessage bytes runs whatever the budget. Node.Overload counts
	// the refusals. An answer that would wait for room (the peer does not
	// read) while the connection holds more than it, as the answers of
	// handlers that were running when the peer stopped reading can, closes
	// the connection with ErrAnswerBudget instead (counted in
	// Overload.AnswerClosed). Default 64 MiB. Must be > 0.
	MaxQueuedBytes int

	// MaxPartialBytes caps, per connection, the memory held for partly
	// received messages (the envelopes of the three lanes whose first
	// bytes arrived and whose rest has not), counted by each lane's
	// buffer: once an envelope's header and a second record of it are
	// in, its buffer is sized for the whole envelope, and counts so
	// however little of it arrived. A connection that goes past it is
	// closed with ErrPartialBudget, before the next record is read, and
	// Node.Overload counts it. A peer that sends messages of MaxMessage
	// bytes on all three lanes at once can hold 3 × (MaxMessage + 30)
	// bytes: a smaller budget cuts it off, and the effective budget is
	// never below MaxMessage + 30 (one whole message's buffer). Default
	// 16 MiB. Must be > 0.
	MaxPartialBytes int

	// MaxQueuedBytesTotal caps what MaxQueuedBytes counts over all of the
	// node's connections together, so that many connections each within
	// their budget cannot add up: past it, a request is refused with
	// CodeOverloaded unless its connection holds nothing else (each
	// connection may still have one request run, so connections that
	// hold little keep being served while others flood). Default 1 GiB.
	// Must be >= MaxQueuedBytes.
	MaxQueuedBytesTotal int

	// MaxPartialBytesTotal caps the memory held for partly received
	// messages (counted as MaxPartialBytes counts it) by all of the
	// node's connections together, so that many
	// connections each within MaxPartialBytes cannot add up. The
	// connection whose record takes the node past it is closed with
	// ErrPartialBudget (counted in Overload.PartialClosed); under such a
	// flood a legitimate peer's large message may be the one that
	// does, and its requester sees ErrConnectionLost. Default 256 MiB.
	// Must be >= MaxPartialBytes.
	MaxPartialBytesTotal int

	// MaxInboundConns caps the inbound connections (accepted by Serve)
	// open at once, in handshake or established. Serve closes a connection
	// beyond it as soon as it is accepted, and logs it. Default 4096.
	// Must be > 0.
	MaxInboundConns int

	// MaxInboundConnsPerHost caps the inbound connections open at once
	// from one remote IP address, in handshake or established; beyond it
	// Serve closes the connection at once and logs it. Default 256. Must
	// be in [1, MaxInboundConns].
	MaxInboundConnsPerHost int

	// MaxClientConns caps the established inbound sessions (accepted by
	// Serve) whose peer is a client: one that announces RoleClient, or
	// that did not prove the member credential where this node requires
	// credentials (Session.Member false; the client and operator
	// credentials). They count toward MaxInboundConns too; a client
	// session beyond this bound is refused right after its handshake,
	// with CodeTooManyClients (ErrTooManyClients to the dialler), counted
	// in Node.Admission as ClientRefused and logged with the other
	// refusals. So at least MaxInboundConns - MaxClientConns connections
	// always remain for members' sessions and handshakes in progress,
	// whatever the holders of a client credential do. In an open cluster
	// the role a peer announces decides, as it decides everything there:
	// a peer that claims RoleMember is counted as a member. Zero (the
	// default) means a quarter of MaxInboundConns, at least 1 (1024 of
	// the default 4096). Must be in [0, MaxInboundConns].
	MaxClientConns int

	// MaxClientConnsPerHost caps the client sessions (as MaxClientConns
	// counts them) from one remote IP address; beyond it the new one is
	// refused in the same way. So clients behind one address (a NAT)
	// share it. Zero (the default) means 64, or MaxClientConns when that
	// is smaller. Must be in [0, MaxClientConns] (with MaxClientConns
	// zero: at most its default).
	MaxClientConnsPerHost int

	// MaxHandshakes caps the inbound handshakes in progress at once (TLS
	// plus mux handshake, each bounded by HandshakeTimeout). When it is
	// reached a new connection takes the place of one in progress rather
	// than being refused: one that has not sent a byte yet, of the host
	// whose connections were shed the most in the last 10 to 20 s, then
	// of the host holding the most such handshakes, the oldest; when every
	// one has sent something, the first in the same order counting all of
	// a host's handshakes, if its host holds more than the newcomer's.
	// Only when there is none is the new connection closed at once. So
	// idle connections, from one host or many, cannot keep a peer that
	// speaks at once out. Evictions and refusals are counted
	// (Node.Admission) and logged, one WARN line per 10 s at most.
	// Default 128. Must be > 0.
	MaxHandshakes int

	// MaxHandshakesPerHost caps the inbound handshakes in progress at once
	// from one remote IP address. A connection beyond it takes the place
	// of its host's oldest handshake that has not sent a byte yet, and is
	// closed at once when there is none (counted and logged as for
	// MaxHandshakes). It keeps one host from filling MaxHandshakes: idle
	// connections from one address take 8 of the 128 slots at most.
	// Default 8. Must be in [1, MaxHandshakes].
	MaxHandshakesPerHost int

	// FirstByteTimeout bounds how long an inbound connection may stay
	// silent: its first byte (the TLS ClientHello, or the mux hello) must
	// arrive within it, or the connection is closed (counted in
	// Node.Admission as Silent). A dialler sends its first bytes as soon
	// as its TCP connect completes, so this can be much shorter than
	// HandshakeTimeout, which still bounds the whole handshake, counted
	// from the accept; the shorter of the two applies. Default 2 s. Must
	// be > 0.
	FirstByteTimeout time.Duration

	// CompressThreshold is the smallest payload that is compressed;
	// compression is kept only when it makes the payload smaller.
	// Default 4096. Zero compresses every payload; a negative value
	// disables compression.
	CompressThreshold int

	// Codecs lists the compression codecs this node accepts, in preference
	// order; the dialler's first codec also known by the listener wins.
	// Known: "zstd", "zlib". Default ["zstd", "zlib"]. Empty means no
	// compression on connections this node dials or accepts.
	Codecs []string

	// ReconnectMin is the first delay of Backoff. Default 100 ms. Must be > 0.
	ReconnectMin time.Duration

	// ReconnectMax caps Backoff's doubling. Default 15 s. Must be >= ReconnectMin.
	ReconnectMax time.Duration

	// ReconnectJitter spreads each backoff delay uniformly over
	// ±ReconnectJitter×delay. Default 0.25. Must be in [0, 1).
	ReconnectJitter float64

	// Rand is the randomness for jitter. Nil means a generator seeded from
	// the runtime's entropy. Tests pass rand.New(rand.NewPCG(seed, seed)).
	// It is only used under the Node's lock, so it need not be safe for
	// concurrent use.
	Rand *rand.Rand

	// SupersedeGrace bounds how long a connection that lost the
	// simultaneous-dial tie-break keeps serving requests already in flight
	// on it before it is closed. It closes earlier, once nothing has been
	// in flight either way for min(SupersedeGrace/10, 500 ms).
	// Default 5 s. Must be > 0.
	SupersedeGrace time.Duration

	// Logger receives connection-level events (handshake failures,
	// protocol violations, keepalive failures). Nil means slog.Default().
	Logger *slog.Logger

	// Dial, if set, opens the connections Node.Dial makes instead of a
	// TCP dial: an in-process test network (casty/castytest), a proxy.
	// It must honour ctx, which carries ConnectTimeout. Nil means
	// net.Dialer over "tcp".
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	// OnSession, if set, is called (in its own goroutine) whenever a
	// session becomes the live session for its peer.
	OnSession func(s *Session)

	// OnPeerLost, if set, is called (in its own goroutine) when the live
	// session to a peer closes and no other session replaces it. err says why.
	OnPeerLost func(peer NodeID, err error)

	// OnKeepaliveFailure, if set, is called (in its own goroutine) when a
	// keepalive ping fails; the connection is closed right after.
	// Membership treats it as a suspicion signal.
	OnKeepaliveFailure func(peer NodeID, err error)
}

// defaultClientConnsPerHost is MaxClientConnsPerHost's default.
const defaultClientConnsPerHost = 64

// clientConns is MaxClientConns, its default filled in.
func (c *Config) clientConns() int {
	if c.MaxClientConns > 0 {
		return c.MaxClientConns
	}
	return max(1, c.MaxInboundConns/4)
}

// clientConnsPerHost is MaxClientConnsPerHost, its default filled in.
func (c *Config) clientConnsPerHost() int {
	if c.MaxClientConnsPerHost > 0 {
		return c.MaxClientConnsPerHost
	}
	return min(defaultClientConnsPerHost, c.clientConns())
}

// minSecret is the shortest secret Validate accepts, in bytes.
const minSecret = 16

// DefaultConfig returns a Config with every default filled in except
// NodeID, which the caller must set.
func DefaultConfig() Config {
	return Config{
		ClusterName:            "casty",
		Role:                   RoleMember,
		HandshakeTimeout:       5 * time.Second,
		ConnectTimeout:         5 * time.Second,
		KeepAliveInterval:      time.Second,
		KeepAliveTimeout:       5 * time.Second,
		MaxFrame:               256 << 10,
		MaxMessage:             4 << 20,
		StreamWindow:           256 << 10,
		MaxStreams:             1024,
		PartialMessageTimeout:  30 * time.Second,
		MaxRequests:            1024,
		MaxQueuedBytes:         64 << 20,
		MaxQueuedBytesTotal:    1 << 30,
		MaxPartialBytes:        16 << 20,
		MaxPartialBytesTotal:   256 << 20,
		MaxInboundConns:        4096,
		MaxInboundConnsPerHost: 256,
		MaxHandshakes:          128,
		MaxHandshakesPerHost:   8,
		FirstByteTimeout:       2 * time.Second,
		CompressThreshold:      4096,
		Codecs:                 []string{CodecZstd, CodecZlib},
		ReconnectMin:           100 * time.Millisecond,
		ReconnectMax:           15 * time.Second,
		ReconnectJitter:        0.25,
		SupersedeGrace:         5 * time.Second,
	}
}

// Validate reports the first invalid field, wrapped in ErrInvalidConfig.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case c.NodeID == NodeID{}:
		return bad("NodeID is zero")
	case len(c.ClusterName) > 255:
		return bad("ClusterName longer than 255 bytes")
	case len(c.AdvertiseAddr) > 255:
		return bad("AdvertiseAddr longer than 255 bytes")
	case c.Role != RoleMember && c.Role != RoleClient:
		return bad("Role %d unknown", c.Role)
	case c.HandshakeTimeout <= 0:
		return bad("HandshakeTimeout must be > 0")
	case c.ConnectTimeout <= 0:
		return bad("ConnectTimeout must be > 0")
	case c.KeepAliveInterval < 0:
		return bad("KeepAliveInterval must be >= 0")
	case c.KeepAliveTimeout <= 0:
		return bad("KeepAliveTimeout must be > 0")
	case c.StreamWindow < 256<<10:
		return bad("StreamWindow must be >= 256 KiB (yamux minimum)")
	case c.MaxFrame < 1<<10 || c.MaxFrame > c.StreamWindow:
		return bad("MaxFrame must be in [1 KiB, StreamWindow]")
	case c.MaxMessage < 1<<10 || c.MaxMessage > maxWireLength:
		return bad("MaxMessage must be in [1 KiB, 1 GiB]")
	case c.MaxStreams <= 0:
		return bad("MaxStreams must be > 0")
	case c.PartialMessageTimeout <= 0:
		return bad("PartialMessageTimeout must be > 0")
	case c.MaxRequests <= 0:
		return bad("MaxRequests must be > 0")
	case c.MaxQueuedBytes <= 0:
		return bad("MaxQueuedBytes must be > 0")
	case c.MaxQueuedBytesTotal < c.MaxQueuedBytes:
		return bad("MaxQueuedBytesTotal must be >= MaxQueuedBytes")
	case c.MaxPartialBytes <= 0:
		return bad("MaxPartialBytes must be > 0")
	case c.MaxPartialBytesTotal < c.MaxPartialBytes:
		return bad("MaxPartialBytesTotal must be >= MaxPartialBytes")
	case c.MaxInboundConns <= 0:
		return bad("MaxInboundConns must be > 0")
	case c.MaxInboundConnsPerHost <= 0 || c.MaxInboundConnsPerHost > c.MaxInboundConns:
		return bad("MaxInboundConnsPerHost must be in [1, MaxInboundConns]")
	case c.MaxClientConns < 0 || c.MaxClientConns > c.MaxInboundConns:
		return bad("MaxClientConns must be in [1, MaxInboundConns], or 0 for its default")
	case c.MaxClientConnsPerHost < 0 || c.MaxClientConnsPerHost > c.clientConns():
		return bad("MaxClientConnsPerHost must be in [1, MaxClientConns], or 0 for its default")
	case c.MaxHandshakes <= 0:
		return bad("MaxHandshakes must be > 0")
	case c.MaxHandshakesPerHost <= 0 || c.MaxHandshakesPerHost > c.MaxHandshakes:
		return bad("MaxHandshakesPerHost must be in [1, MaxHandshakes]")
	case c.FirstByteTimeout <= 0:
		return bad("FirstByteTimeout must be > 0")
	case c.ReconnectMin <= 0:
		return bad("ReconnectMin must be > 0")
	case c.ReconnectMax < c.ReconnectMin:
		return bad("ReconnectMax must be >= ReconnectMin")
	case c.ReconnectJitter < 0 || c.ReconnectJitter >= 1:
		return bad("ReconnectJitter must be in [0, 1)")
	case c.SupersedeGrace <= 0:
		return bad("SupersedeGrace must be > 0")
	case len(c.ClusterSecret) > 0 && len(c.ClusterSecret) < minSecret,
		len(c.OperatorSecret) > 0 && len(c.OperatorSecret) < minSecret,
		len(c.ClientSecret) > 0 && len(c.ClientSecret) < minSecret:
		return bad("secrets must be at least %d bytes", minSecret)
	case c.Role == RoleMember && c.requiresSecret() && len(c.ClusterSecret) == 0:
		return bad("a member with OperatorSecret or ClientSecret needs ClusterSecret")
	case c.CertIdentity && c.ServerTLS == nil && c.ClientTLS == nil:
		return bad("CertIdentity needs ServerTLS or ClientTLS")
	case c.CertIdentity && c.ServerTLS != nil && c.ServerTLS.ClientAuth != tls.RequireAndVerifyClientCert:
		return bad("CertIdentity needs ServerTLS.ClientAuth = tls.RequireAndVerifyClientCert")
	case len(c.Codecs) > maxCodecs:
		return bad("more than %d codecs", maxCodecs)
	}
	for _, name := range c.Codecs {
		if codecByName(name, nil) == nil {
			return bad("unknown codec %q", name)
		}
	}
	return nil
}

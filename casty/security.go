package casty

import (
	"log/slog"
	"net"

	"github.com/casty-go/casty/mux"
)

// Who may do what (SECURITY.md at the repository root has the threat
// model). A cluster with neither a secret nor TLS identity is open:
// whoever reaches a member's port is trusted as a member. With
// credentials, every connection proves one in its handshake (mux), and
// what it proved decides what it may do here:
//
//   - member (WithClusterSecret, or a casty://member/<name> certificate):
//     everything, replication included (a replication request from any
//     other credential is refused);
//   - operator (WithOperatorSecret, or casty://role/operator): a lite
//     client that may also read actors' state (StateOf) and spy;
//   - client (WithClientSecret, or casty://role/client): a lite client
//     that may call actors, nothing more.
//
// A refused operation fails with ErrForbidden, on the caller's node as on
// the serving one. The other way round, a member sends calls, replicas and
// state reads only over connections that proved the member credential: a
// lite client that gossips itself in as a member gets none of them (calls
// for its keys fail with ErrActorUnavailable).

// secrets are the shared secrets given as options.
type secrets struct {
	cluster, operator, client []byte
	authOnly                  bool // WithAuthOnly
}

func (s secrets) any() bool { return len(s.cluster)+len(s.operator)+len(s.client) > 0 }

func (s secrets) apply(c *mux.Config) {
	c.ClusterSecret, c.OperatorSecret, c.ClientSecret = s.cluster, s.operator, s.client
	c.AuthOnly = s.authOnly
}

// WithClusterSecret sets the cluster's member credential: every
// connection must then prove a secret (this one, or the operator or
// client secret) by challenge and response in its handshake, and only a
// node proving this one may be a member. The secret never crosses the
// wire. Every message after the handshake is sealed (encrypted and
// authenticated, ChaCha20-Poly1305) with keys derived from the proven
// secret and the handshake, so a host on the path, or one a member dials
// that relays the handshake to another member, can neither read, inject
// nor alter anything (WithAuthOnly turns that off). The secret is shared:
// its holders are not told apart, and certificates (WithTLS with a CA
// and Identity) give each member its own. At least 16 bytes; use 32
// random ones. Give it to members only: whoever holds it can join as a
// member and do anything (SECURITY.md).
func WithClusterSecret(secret []byte) Option {
	return func(o *systemOptions) { o.secrets.cluster = secret }
}

// WithAuthOnly makes the secrets (WithClusterSecret, WithOperatorSecret,
// WithClientSecret) authenticate the peers in the handshake but not the
// messages after it: they cross the wire in the clear and are not
// individually authenticated, so anyone on the path, or any host a
// member dials (a stale seed address, an address a lite client
// advertises), can relay the handshake to another member and then read,
// inject and alter messages as either peer. It saves the cost of sealing
// each message (SECURITY.md, "Cost of authentication"); use it only on a
// network no stranger can reach or read. Messages stay sealed on a
// connection unless both of its nodes set it. Without a secret it does
// nothing.
func WithAuthOnly() Option {
	return func(o *systemOptions) { o.secrets.authOnly = true }
}

// WithOperatorSecret sets the operator credential. On a member, it admits
// lite clients that prove it, with the right to read actors' state and to
// spy. On a lite client without the cluster secret (an operator tool such
// as castyctl), it is the credential the client proves. At least 16 bytes.
func WithOperatorSecret(secret []byte) Option {
	return func(o *systemOptions) { o.secrets.operator = secret }
}

// WithClientSecret sets the lite-client credential. On a member, it
// admits lite clients that prove it, allowed to call actors only (StateOf
// and Spy fail with ErrForbidden). On a lite client without the cluster
// secret, it is the credential the client proves. At least 16 bytes.
func WithClientSecret(secret []byte) Option {
	return func(o *systemOptions) { o.secrets.client = secret }
}

// warnIfOpen logs a warning when a node of an open cluster (no secret, no
// certificate identity, no mutual TLS) listens on an address others can
// reach.
func warnIfOpen(log *slog.Logger, c *mux.Config, addr net.Addr) {
	if c.Enforcing() || (c.ServerTLS != nil && c.ServerTLS.ClientCAs != nil) {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return
	}
	log.Warn("casty: this cluster is open: no cluster secret and no mutual TLS, so anyone who can reach this address can join as a member, call any actor, read its state and spy on every call (see SECURITY.md)",
		"addr", addr.String())
}

// operatorAllowed reports whether the peer on from may use operator
// functions; from is nil for work that did not come from a peer.
func operatorAllowed(from *mux.Session) bool { return from == nil || from.Operator() }

// forbidden is the refusal of an operator function to a peer without the
// role.
func forbidden(what string) callResp {
	return errResp(codeForbidden, "casty: "+what+" needs the operator role (a member or operator credential)")
}

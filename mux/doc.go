// Package mux is Casty's node-to-node transport: one multiplexed, optionally
// TLS-protected connection per pair of nodes. Lanes travel in mux's own
// records; ephemeral streams are github.com/hashicorp/yamux streams carried
// in records of their own. The wire format is specified in SPEC.md.
//
// # Model
//
// A Node listens (Serve, or Accept for one connection) and dials (Dial,
// Connect, DialConn, Redial). Every connection starts with a handshake: cluster name, protocol versions, 16-byte node id,
// advertised address, role and offered compression codecs. A rejected
// handshake surfaces as *HandshakeError with a code: CodeWrongCluster (1),
// CodeNoCommonVersion (2), CodeSelf (3), CodeUnauthenticated (4),
// CodeIdentity (5). A successful one yields a *Session, keyed by the
// peer's node id. Rejections say why, never echoing a secret or a name.
//
// The Node keeps one live session per peer. An inbound session is used for
// outbound traffic too (Node.Session, Node.Connect). When both nodes dial
// each other at once, both keep the session whose initiator has the
// smaller node id (between two dials by the same node, the smaller random
// dial nonce); the other drains what is in flight on it and closes, and
// new work given to it is forwarded to the winner. A newcomer displaces a
// live session only if the live session's peer, asked over it, confirms
// that it made the newcomer too (a simultaneous dial), or does not answer
// within min(KeepAliveTimeout, HandshakeTimeout/2) (it is gone); never one
// whose peer proved a stronger credential, unless it proved the same
// certificate identity (SPEC.md §6, "The claim check"). So claiming a live
// peer's node id takes none of its traffic, at any age of its session, in
// an open cluster too.
//
// # Who the peer is
//
// Without credentials a cluster is open: the node id and role in a hello
// are claims, and Session.Operator is true for every peer. Two ways to
// make them proven (SPEC.md §3, "Authentication"):
//
//   - Config.ClusterSecret (and optionally OperatorSecret, ClientSecret):
//     both sides prove the shared secret by HMAC challenge and response,
//     the dialler first, so a listener shows a peer that has not proven it
//     nothing derived from the secret, nor whether its cluster name was
//     right; the secret never crosses the wire. The dialler's proof can be
//     checked offline by whoever it dials: use a random secret. Every
//     record after the handshake is then sealed with ChaCha20-Poly1305
//     under keys derived (HKDF-SHA256) from the proven secret and the
//     handshake's two challenges, one per direction, counter nonces
//     (SPEC.md §2, "Sealed records"; Session.Sealed): a host that relays
//     the handshake between two members, or sits on the path, can
//     forward or drop records, not read, inject, alter, replay or reorder
//     them; a record that does not open closes the connection with
//     ErrRecordForged (counted in Traffic.RecordsForged).
//     Config.AuthOnly, set on both nodes, leaves the records unsealed
//     (protocol version 4): the peers are authenticated, the connection
//     is not, so such a relay can take it over.
//   - Config.CertIdentity with mutual TLS: each certificate carries
//     casty://member/<name>, casty://role/operator or casty://role/client
//     (and optionally casty://node/<id>); the member name is bound to the
//     node id it first claims.
//
// Session.Credential says what the peer proved; Session.Member and
// Session.Operator whether it may act as a member or use operator
// functions — the layer above enforces that.
//
// # Channels
//
// Each session carries three lanes — LaneControl (membership gossip),
// LaneMessage (actor calls) and LaneReplication (replicated state) — each
// an ordered stream of envelopes cut into records; a write takes at most
// 64 KiB from each busy channel, so replication never holds calls back by
// more than that. On a lane:
//
//   - Session.Request sends a request with a correlation id and waits for
//     the answer; answers arrive out of order; the deadline is the ctx's.
//     The peer's RequestHandler (Node.HandleRequests) runs on a worker
//     goroutine, or on the connection's reader itself when the request
//     was the last thing received; a handler about to wait must call
//     HandOff first (RequestHandler states the contract). A handler that
//     waits for answers to its own requests, all sent back on the
//     connection it is serving, may instead read them itself for a
//     moment (WaitReading): no goroutine is woken to read, none by the
//     answer. Its error comes back as *RemoteError{Code, Message}.
//   - Session.Send sends a one-way message, delivered in order to the
//     peer's MessageHandler (Node.HandleMessages) on a worker of that lane,
//     so a slow handler holds up only its own lane, within a bounded
//     backlog. (Casty sends one-way messages only for gossip, on
//     LaneControl; its calls and replication rounds are requests.)
//
// Small envelopes queued together leave in one write (write combining).
// Session.OpenStream opens an ephemeral stream (a net.Conn) for bulk data
// and actor streaming, delivered to the peer's StreamHandler
// (Node.HandleStreams); each stream has its own credit window, so a
// stalled reader stalls only its own stream, and writes are split into
// frames of at most Config.MaxFrame so a bulk stream delays other traffic
// by at most one frame.
//
// # Why lanes are not yamux streams
//
// Protocol version 1 carried every channel of a pair as a yamux stream
// with its own credit window. Since protocol version 2 only the ephemeral
// streams are: the three lanes travel in mux's own records on the
// connection, so a lane envelope costs one write by the sender and one
// read by the connection's reader, with no hop through yamux's send and
// receive loops (BENCHMARKS.md has the figures). What the lanes' credit
// windows gave is kept by other means: a sender queues at most MaxMessage
// bytes per lane before it waits, a write takes at most 64 KiB from each
// busy channel so replication cannot hold calls back, and TCP's window
// bounds what is in flight. The price: a MessageHandler that falls behind
// holds up only its own lane until 4 × MaxMessage bytes wait for it
// (MessageHandler states it); beyond that the reader waits too, and the
// whole connection to that peer with it.
//
// # Guarantees and limits
//
//   - Payloads over Config.MaxMessage (4 MiB) are refused with
//     ErrMessageTooLarge before anything is sent.
//   - Payloads of at least Config.CompressThreshold (4096 B) are compressed
//     with the negotiated codec (zstd preferred, zlib built in) when that
//     makes them smaller. Decompression is bounded by MaxMessage; a bomb is
//     a protocol violation.
//   - Any protocol violation closes that connection, never the process, and
//     never panics. Requests pending on a lost connection fail with
//     ErrConnectionLost.
//   - Keepalive pings every Config.KeepAliveInterval; any record read from
//     the peer, a late pong included, proves it there. Nothing read for
//     KeepAliveInterval + KeepAliveTimeout calls Config.OnKeepaliveFailure
//     (a suspicion signal for membership) and closes the connection.
//   - The transport never retries a request. ErrConnectionLost and context
//     errors are indeterminate (the handler may have run); ErrMessageTooLarge,
//     ErrClosed before sending, ErrSessionClosed (a request made on a
//     session whose connection had already died) and *RemoteError are
//     definite.
//   - Backoff (and Node.Redial) give reconnect delays of 0.1 s doubling to
//     15 s with ±25 % jitter from an injected *rand.Rand.
//   - What a peer can make a node hold is bounded by Config: inbound
//     connections in total and per remote host (beyond: closed at
//     accept); handshakes in progress in total and per remote host
//     (beyond: the new connection takes the place of the oldest one that
//     has not sent a byte yet, so idle connections cannot keep a peer out;
//     refused only when there is none to take), each silent for at most
//     FirstByteTimeout; established sessions of clients (peers that
//     announce RoleClient, or did not prove the member credential where
//     one is required), in total and per remote host, within the inbound
//     connections (MaxClientConns, a quarter of MaxInboundConns, and
//     MaxClientConnsPerHost, 64; beyond: refused right after the
//     handshake with CodeTooManyClients, ErrTooManyClients to the
//     dialler), so the rest of MaxInboundConns stays for members (in an
//     open cluster, whoever announces RoleMember); requests handled at
//     once per connection (beyond: refused with CodeOverloaded, handler
//     not run); the bytes per
//     connection of the peer's requests held, at their decoded size, and
//     of their answers waiting to be sent, and the same over all
//     connections (MaxQueuedBytes, MaxQueuedBytesTotal; beyond:
//     refused the same way, a compressed request judged by the size its
//     frame declares before it is decompressed); the bytes of partly
//     received messages, per connection (MaxPartialBytes) and per node
//     (MaxPartialBytesTotal; beyond either: the connection is closed with
//     ErrPartialBudget); how long a message may stay partly received
//     (beyond: a violation). A handler's answer waits while its lane
//     already has MaxMessage bytes queued for the socket, as every send
//     with a context does, and while it does the connection's other
//     handlers start one at a time: a peer that does not read its answers
//     holds its handlers, not a growing queue. Waiting rather than
//     dropping keeps the work acknowledged: an answer is sent once the
//     peer reads, or its requester sees ErrConnectionLost
//     (indeterminate) when the connection dies. Node.Overload counts the
//     requests refused and the connections closed. Node.Admission
//     counts what was refused, evicted and silent, and the client
//     sessions refused, and one WARN line per 10 s at most logs it.
//     Serve outlives temporary Accept errors such as running out of file
//     descriptors.
//   - Node.Traffic counts the bytes every session read and wrote (records
//     with their headers, above TLS), for metrics: two atomic adds per
//     socket read or write; and the sealed records that failed to open.
//
// # Goroutines
//
// A connection has one reader goroutine. Requests it reads run on that
// reader when they are the last thing received (no hand-off, answers
// written together), else on workers from a per-node pool; one worker at a
// time drains each lane's messages, in order; ephemeral streams get a
// goroutine each. Idle workers are retired, half of them every two
// seconds.
//
// actor starts a fresh goroutine per busy mailbox and keeps no pool; mux
// keeps one. Both follow one rule: start a fresh goroutine unless the work
// regularly outgrows a new goroutine's stack. actor's drain path is kept
// within that stack, idle activations must hold no goroutine (there may be
// millions), and waking a goroutine parked on another core costs more than
// starting one. A request handler runs code mux does not know (casty's
// decodes arguments with msgpack's reflection and may run the actor's
// method on the same goroutine), which outgrows the initial stack: a fresh
// goroutine per request would grow and copy its stack every time, a pooled
// worker keeps the grown one. Workers are bounded by the requests in
// flight, not by the number of keys.
//
// # What the caller must do
//
// Set Config.NodeID (NewNodeID) and a ClusterName shared by the cluster;
// outside a trusted network, set credentials (ClusterSecret, or TLS with
// CertIdentity) and check Session.Member or Session.Operator before
// serving what only members or operators may have;
// install handlers before traffic arrives; Close every Stream it opens or
// accepts; make handlers return when their context is cancelled; and call
// Node.Close, which waits for every goroutine the package started.
//
// # On its own
//
// The module depends on no other Casty module but internal (the
// coarse-timeout sweeper it shares with actor), and otherwise only on yamux,
// a compression library and golang.org/x/crypto (ChaCha20-Poly1305): any
// Go program that wants one handshaken,
// optionally TLS, multiplexed connection per pair of nodes, with
// request/response lanes and byte streams, can take it alone with go get
// github.com/casty-go/casty/mux.
// The package Example connects two nodes and makes a request. The protocol
// version (ProtocolVersion) is negotiated per connection and is independent
// of the module's version; see RELEASING.md at the repository root.
package mux

package mux

import (
	"errors"
	"fmt"
)

// Sentinel errors. Compare with errors.Is.
//
// Definite errors (the message was not sent): ErrMessageTooLarge,
// ErrClosed, ErrSessionClosed, ErrTooManyStreams, ErrInvalidConfig,
// *HandshakeError (ErrTooManyClients among them).
// Indeterminate errors (the peer may have received and handled the
// request): ErrConnectionLost and the caller's context errors
// (context.DeadlineExceeded, context.Canceled). The transport never
// retries; deciding whether a retry is safe belongs to the caller.
var (
	// ErrClosed is returned when the Node or Session is closed locally
	// before or while an operation runs.
	ErrClosed = errors.New("mux: closed")

	// ErrConnectionLost is returned (wrapped with the cause) for requests
	// pending on a connection that died: sent, or queued to be, before
	// it did. Indeterminate: the peer may have acted.
	ErrConnectionLost = errors.New("mux: connection lost")

	// ErrSessionClosed is returned (wrapped with the cause) for a request
	// or message made on a session whose connection had already died, or
	// that was closed, before it could be queued. Definite: nothing was
	// sent, so the caller may send it again on another session (dial the
	// peer again) without doubling anything.
	ErrSessionClosed = errors.New("mux: session closed before sending")

	// ErrMessageTooLarge is returned when a payload exceeds
	// Config.MaxMessage; nothing was sent. Use a stream for bulk data.
	ErrMessageTooLarge = errors.New("mux: message too large")

	// ErrTooManyStreams is returned by OpenStream when Config.MaxStreams
	// ephemeral streams are already open on the session.
	ErrTooManyStreams = errors.New("mux: too many streams")

	// ErrProtocol wraps every protocol violation; the connection that
	// carried it is closed. It reaches callers inside ErrConnectionLost.
	ErrProtocol = errors.New("mux: protocol violation")

	// ErrRecordForged is why a sealed session (Session.Sealed) closed
	// when a record failed to open: it was altered, injected, replayed or
	// reordered on the way, or sealed without the session's keys. It
	// wraps ErrProtocol and reaches callers inside ErrConnectionLost;
	// Traffic.RecordsForged counts it.
	ErrRecordForged = fmt.Errorf("%w: a sealed record failed authentication", ErrProtocol)

	// ErrPartialBudget is why a connection closed when the messages it
	// held partly received went past Config.MaxPartialBytes. It wraps
	// ErrProtocol and reaches callers inside ErrConnectionLost;
	// Overload.PartialClosed counts it.
	ErrPartialBudget = fmt.Errorf("%w: partly received messages exceed MaxPartialBytes", ErrProtocol)

	// ErrAnswerBudget is why a connection closed when the answers waiting
	// for its peer to read them (its lane's send queue full) held more
	// than Config.MaxQueuedBytes: the peer does not read, and the
	// handlers that were running when it stopped produced more than the
	// budget. Counted in Node.Overload().AnswerClosed. The requesters see
	// ErrConnectionLost: their handlers ran, their answers were not
	// delivered.
	ErrAnswerBudget = errors.New("mux: answers waiting for a peer that does not read exceed MaxQueuedBytes")

	// ErrInvalidConfig wraps the reason a Config failed Validate.
	ErrInvalidConfig = errors.New("mux: invalid config")

	// ErrKeepalive wraps the failure of a keepalive ping; the connection
	// was closed because of it (OnKeepaliveFailure and OnPeerLost get it).
	ErrKeepalive = errors.New("mux: keepalive failed")

	// ErrUnexpectedPeer is returned by Connect when the node at the
	// address has another node id than the one asked for; the session to
	// the node that answered stays open (Node.Connect).
	ErrUnexpectedPeer = errors.New("mux: unexpected peer at address")

	// ErrTooManyClients matches (errors.Is) the *HandshakeError a dialler
	// gets when the listener refused its session with CodeTooManyClients:
	// the listener's room for client sessions (Config.MaxClientConns, or
	// MaxClientConnsPerHost for the dialler's address) is full. Definite:
	// no session was made; dialling again later may succeed.
	ErrTooManyClients = errors.New("mux: the listener's room for clients is full")

	// errSuperseded closes a session that lost the simultaneous-dial
	// tie-break after draining. It never reaches callers: new work moves
	// to the winning session.
	errSuperseded = errors.New("mux: session superseded")
)

// HandshakeCode says why a handshake was rejected.
type HandshakeCode uint8

// Handshake rejection codes, fixed on the wire (see SPEC.md).
const (
	// CodeMalformed: the handshake could not be parsed or did not arrive
	// in time; also used locally for a TLS or transport failure during
	// the handshake.
	CodeMalformed HandshakeCode = 0
	// CodeWrongCluster: the cluster names differ.
	CodeWrongCluster HandshakeCode = 1
	// CodeNoCommonVersion: no protocol version is supported by both.
	CodeNoCommonVersion HandshakeCode = 2
	// CodeSelf: the node dialled itself (same node id on both ends).
	CodeSelf HandshakeCode = 3
	// CodeUnauthenticated: the peer proved no credential this node
	// accepts: none offered where one is required, a credential this node
	// has no secret for, a proof that did not verify, or a certificate
	// that names no casty identity.
	CodeUnauthenticated HandshakeCode = 4
	// CodeIdentity: the credential was proven but does not allow what the
	// peer claims: a client credential announcing RoleMember, a node id
	// other than its certificate's, or a node id already bound to another
	// member's certificate.
	CodeIdentity HandshakeCode = 5
	// CodeTooManyClients: the peer is a client (not a member) and the
	// listener already holds Config.MaxClientConns client sessions, or
	// MaxClientConnsPerHost from the peer's address. Sent after the
	// handshake's checks (and the dialler's proof) passed, instead of the
	// welcome. errors.Is(err, ErrTooManyClients) reports it.
	CodeTooManyClients HandshakeCode = 6
)

// String describes the code in words.
func (c HandshakeCode) String() string {
	switch c {
	case CodeMalformed:
		return "malformed"
	case CodeWrongCluster:
		return "wrong cluster"
	case CodeNoCommonVersion:
		return "no common version"
	case CodeSelf:
		return "connected to itself"
	case CodeUnauthenticated:
		return "unauthenticated"
	case CodeIdentity:
		return "identity refused"
	case CodeTooManyClients:
		return "too many clients"
	}
	return fmt.Sprintf("code %d", uint8(c))
}

// HandshakeError is returned by Dial (and logged by Serve) when a
// connection's handshake fails. Code is the wire rejection code; Remote
// is true when the peer rejected us, false when we rejected the peer or
// the handshake failed locally. Err, when set, is the underlying cause
// (a TLS error, a timeout, an I/O error).
type HandshakeError struct {
	Code    HandshakeCode
	Message string
	Remote  bool
	Err     error
}

// Error describes the rejection, who rejected, and the cause.
func (e *HandshakeError) Error() string {
	var s string
	switch {
	case e.Remote:
		s = fmt.Sprintf("mux: handshake rejected by the peer (%s)", e.Code)
	case e.Code == CodeMalformed:
		s = "mux: handshake failed"
	default:
		s = fmt.Sprintf("mux: handshake rejected (%s)", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause, if any.
func (e *HandshakeError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's code:
// ErrTooManyClients for CodeTooManyClients.
func (e *HandshakeError) Is(target error) bool {
	return target == ErrTooManyClients && e.Code == CodeTooManyClients
}

// Remote error codes carried by an error response. Handlers may use any
// code >= CodeUser for their own meaning.
const (
	// CodeApplication is used for a handler error that is not a *RemoteError.
	CodeApplication uint16 = 0
	// CodeNoHandler: no request handler is registered for the lane.
	CodeNoHandler uint16 = 1
	// CodeHandlerPanic: the handler panicked; the panic was recovered.
	CodeHandlerPanic uint16 = 2
	// CodeResponseTooLarge: the handler's response exceeded MaxMessage.
	CodeResponseTooLarge uint16 = 3
	// CodeOverloaded: the peer was already handling Config.MaxRequests
	// requests of this connection, or this one did not fit in
	// Config.MaxQueuedBytes, and it refused this one without running its
	// handler.
	CodeOverloaded uint16 = 4
	// CodeUser is the first code free for applications.
	CodeUser uint16 = 16
)

// RemoteError is the error a Request returns when the peer's handler
// failed. It is definite: the handler ran and reported failure. A handler
// that returns a *RemoteError (possibly wrapped) sends its Code; any other
// error is sent as CodeApplication with err.Error() as Message.
type RemoteError struct {
	Code    uint16
	Message string
}

// Error renders the code and message.
func (e *RemoteError) Error() string {
	return fmt.Sprintf("mux: remote error %d: %s", e.Code, e.Message)
}

func protocolError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, a...))
}

// notSent is the error of a request or message that could not be queued
// because its session had already failed with cause (raw, or as
// connectionLost made it): ErrSessionClosed wrapping the cause, never
// ErrConnectionLost, since nothing left.
func notSent(cause error) error {
	if j, ok := cause.(interface{ Unwrap() []error }); ok {
		if errs := j.Unwrap(); len(errs) == 2 && errs[0] == ErrConnectionLost {
			cause = errs[1]
		}
	}
	if cause == nil || errors.Is(cause, ErrConnectionLost) {
		return ErrSessionClosed
	}
	return fmt.Errorf("%w: %w", ErrSessionClosed, cause)
}

func connectionLost(cause error) error {
	if cause == nil || errors.Is(cause, ErrConnectionLost) {
		return ErrConnectionLost
	}
	return fmt.Errorf("%w: %w", ErrConnectionLost, cause)
}

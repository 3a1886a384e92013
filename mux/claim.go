package mux

import (
	"context"
	"encoding/binary"
	"errors"
	"time"
)

// The claim check (SPEC.md §6, protocol versions 4 and later). A new connection whose
// peer node id already has a live session, and which the tie-break would
// make the live one, displaces it only if the peer at the other end of
// the live session confirms that it made the new connection too: this
// node asks it, over the live session, whether it knows a connection with
// that initiator and dial nonce (one it is dialling, or one it holds). A
// simultaneous dial, or a peer dialling twice, is confirmed and the
// tie-break applies as before; a stranger claiming the peer's node id, in
// an open cluster at any age of the live session, is not, and its
// connection is refused. A live session that does not answer within
// claimTimeout is taken for dead and the newcomer takes its place, as a
// peer that redials after losing its connection must.

// Claim envelope types (lane 0 only, sessions of version 4 and later).
const (
	// frameClaim asks: "do you know a connection to me with this
	// initiator and dial nonce?" Payload: initiator (16 bytes), nonce
	// (u64); id chosen by the asker, non-zero.
	frameClaim uint8 = 6
	// frameClaimAnswer answers a frameClaim with its id. Payload: 1 byte,
	// 1 yes, 0 no.
	frameClaimAnswer uint8 = 7

	claimPayloadSize = 16 + 8
)

// claimVersion is the first protocol version that carries claim checks.
const claimVersion uint16 = 4

// errClaimRefused is register's answer to a newcomer the live session's
// peer did not confirm.
var errClaimRefused = errors.New("mux: the node id belongs to a live session that did not make this connection")

// claimTimeout bounds a claim check: within KeepAliveTimeout, as a live
// peer answers a ping, and half the handshake's time, so a newcomer that
// is waiting for its welcome still gets it.
func (n *Node) claimTimeout() time.Duration {
	return min(n.cfg.KeepAliveTimeout, n.cfg.HandshakeTimeout/2)
}

// verdict is register's decision about a newcomer.
type verdict uint8

const (
	newcomerWins verdict = iota
	newcomerLoses
	askTheLiveOne
)

// decide says what becomes of s, a new session to the peer of the live
// session cur (n.mu held).
func (n *Node) decide(cur, s *Session) verdict {
	switch {
	case cur == nil:
		return newcomerWins
	case !tieBreak(s, cur):
		return newcomerLoses // it drains, as the loser of a simultaneous dial
	case cur.peerName != "" && cur.peerName == s.peerName:
		return newcomerWins // the same certificate identity: the peer itself
	case stronger(cur.cred, s.cred) != s.cred && cur.cred != s.cred:
		return newcomerLoses // a weaker credential never displaces a stronger one
	case cur.version >= claimVersion:
		return askTheLiveOne
	case n.entrenched(cur, s, time.Now()):
		return newcomerLoses // a peer without claim checks: the old rule
	}
	return newcomerWins
}

// claimKnown reports whether this node knows a connection to asker with
// the given initiator and dial nonce: a dial in progress (its own), or a
// session it holds (n.mu held).
func (n *Node) claimKnown(asker, initiator NodeID, nonce uint64) bool {
	if initiator == n.cfg.NodeID && n.dialing[nonce] > 0 {
		return true
	}
	for s := range n.all {
		if s.peer == asker && s.initiator == initiator && s.nonce == nonce {
			return true
		}
	}
	return false
}

// encodeClaim is a frameClaim's payload.
func encodeClaim(initiator NodeID, nonce uint64) []byte {
	b := make([]byte, 0, claimPayloadSize)
	b = append(b, initiator[:]...)
	return binary.BigEndian.AppendUint64(b, nonce)
}

// answerClaim answers a claim check received on s (the reader calls it).
func (s *Session) answerClaim(id uint64, payload []byte) {
	var initiator NodeID
	copy(initiator[:], payload[:16])
	nonce := binary.BigEndian.Uint64(payload[16:])
	n := s.node
	n.mu.Lock()
	yes := n.claimKnown(s.peer, initiator, nonce)
	n.mu.Unlock()
	answer := []byte{0}
	if yes {
		answer[0] = 1
	}
	_ = s.lanes[LaneControl].sendPlain(nil, frameClaimAnswer, id, answer, true)
	s.flushAside()
}

// claimAnswered delivers the answer to a claim check s asked.
func (s *Session) claimAnswered(id uint64, yes bool) {
	s.mu.Lock()
	ch, ok := s.claims[id]
	delete(s.claims, id)
	s.mu.Unlock()
	if ok {
		ch <- yes
	}
}

// askClaim asks s's peer whether it made the connection with initiator
// and nonce. answered is false when s closed or did not answer within
// claimTimeout.
func (s *Session) askClaim(initiator NodeID, nonce uint64) (yes, answered bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.node.claimTimeout())
	defer cancel()
	id := s.nextID.Add(1)
	ch := make(chan bool, 1)
	s.mu.Lock()
	if s.closeErr != nil {
		s.mu.Unlock()
		return false, false
	}
	if s.claims == nil {
		s.claims = make(map[uint64]chan bool)
	}
	s.claims[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.claims, id)
		s.mu.Unlock()
	}()
	if err := s.lanes[LaneControl].sendPlain(ctx, frameClaim, id, encodeClaim(initiator, nonce), false); err != nil {
		return false, false
	}
	select {
	case yes = <-ch:
		return yes, true
	case <-s.done:
	case <-ctx.Done():
	}
	return false, false
}

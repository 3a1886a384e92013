package mux

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
)

// Proving who a peer is (SPEC.md §3, "Authentication"). Two mechanisms,
// either or both:
//
//   - Shared secrets: the dialler names the credentials it holds (member,
//     operator, client), the listener answers with the one to prove and a
//     random challenge and nothing else, the dialler proves it first with
//     an HMAC-SHA256 over the exchange so far keyed by that credential's
//     secret, and only then does the listener check anything else (the
//     cluster name among it) and prove the same secret over the whole
//     exchange, welcome included. So a peer that does not hold the secret
//     gets nothing derived from it, and the same answer whatever cluster
//     name it tried. The secret never crosses the wire; a proof is good for
//     one exchange only.
//   - Certificate identity (Config.CertIdentity): the peer's verified
//     certificate carries casty URIs in its subject alternative names
//     saying what it may be; the member name it carries is bound to the
//     node id it claims, for as long as this Node runs.

// Credential names what a peer proved in the handshake, and so what it is
// allowed to do.
type Credential uint8

const (
	// CredentialNone: nothing was proven (an open cluster, or plain TLS
	// without CertIdentity).
	CredentialNone Credential = 0
	// CredentialMember: the peer proved Config.ClusterSecret or holds a
	// certificate naming a member (casty://member/<name>). It may be a
	// member and use every function.
	CredentialMember Credential = 1
	// CredentialOperator: the peer proved Config.OperatorSecret or holds a
	// certificate with casty://role/operator. It may only be a client (a
	// lite member), and may use operator functions (read state, spy).
	CredentialOperator Credential = 2
	// CredentialClient: the peer proved Config.ClientSecret or holds a
	// certificate with casty://role/client. It may only be a client, and
	// call actors.
	CredentialClient Credential = 3
)

// String returns "none", "member", "operator", "client" or credential(n).
func (c Credential) String() string {
	switch c {
	case CredentialNone:
		return "none"
	case CredentialMember:
		return "member"
	case CredentialOperator:
		return "operator"
	case CredentialClient:
		return "client"
	}
	return fmt.Sprintf("credential(%d)", uint8(c))
}

// credSet is a set of credentials, bit 1<<c for credential c.
type credSet uint8

// credAll is every credential.
const credAll = credSet(1<<CredentialMember | 1<<CredentialOperator | 1<<CredentialClient)

func (s credSet) has(c Credential) bool { return c != CredentialNone && s&(1<<c) != 0 }

// allows reports whether a peer holding c may announce role r.
func (c Credential) allows(r Role) bool {
	return r == RoleClient || c == CredentialMember
}

// The URIs of a certificate's subject alternative names that Casty reads
// when Config.CertIdentity is set.
const (
	// CertURIScheme is the scheme of every identity URI.
	CertURIScheme = "casty"
	// CertMemberPrefix starts a member's URI: casty://member/<name>.
	CertMemberPrefix = "casty://member/"
	// CertNodePrefix starts an optional node id URI: casty://node/<32 hex>.
	// When present, the peer's node id must be that one.
	CertNodePrefix = "casty://node/"
	// CertOperatorURI grants the operator credential.
	CertOperatorURI = "casty://role/operator"
	// CertClientURI grants the client credential.
	CertClientURI = "casty://role/client"
)

// certIdentity is what a verified peer certificate says about its holder.
type certIdentity struct {
	name  string     // member name, "" if none
	cred  Credential // the strongest credential named
	node  NodeID     // the node id it names, if hasNode
	hasID bool
}

// identityOf reads the casty URIs of the peer's leaf certificate. Unknown
// casty URIs and other schemes are ignored. It never fails: a certificate
// without casty URIs yields CredentialNone.
func identityOf(cs tls.ConnectionState) certIdentity {
	var id certIdentity
	if len(cs.PeerCertificates) == 0 {
		return id
	}
	better := func(c Credential) {
		if id.cred == CredentialNone || c < id.cred {
			id.cred = c
		}
	}
	for _, u := range cs.PeerCertificates[0].URIs {
		if u == nil || u.Scheme != CertURIScheme {
			continue
		}
		s := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
		switch {
		case strings.HasPrefix(s, CertMemberPrefix) && len(s) > len(CertMemberPrefix):
			if id.name == "" {
				id.name = s[len(CertMemberPrefix):]
			}
			better(CredentialMember)
		case strings.HasPrefix(s, CertNodePrefix):
			b, err := hex.DecodeString(s[len(CertNodePrefix):])
			if err == nil && len(b) == len(id.node) {
				copy(id.node[:], b)
				id.hasID = true
			}
		case s == CertOperatorURI:
			better(CredentialOperator)
		case s == CertClientURI:
			better(CredentialClient)
		}
	}
	return id
}

// checkCert decides whether a peer with certificate identity id may claim
// node id peer and role r. It returns a rejection, or nil.
func checkCert(id certIdentity, peer NodeID, r Role) *reject {
	switch {
	case id.cred == CredentialNone:
		return &reject{code: CodeUnauthenticated, msg: "the certificate names no casty identity"}
	case id.hasID && id.node != peer:
		return &reject{code: CodeIdentity, msg: "the node id is not the certificate's"}
	case !id.cred.allows(r):
		return &reject{code: CodeIdentity, msg: "the certificate does not allow role " + r.String()}
	}
	return nil
}

// authNonceSize is the size of each side's challenge.
const authNonceSize = 32

// Labels make a listener's proof useless as a dialler's and vice versa.
const (
	labelListener = "casty-mux/4 listener proof"
	labelDialler  = "casty-mux/4 dialler proof"
)

// transcript accumulates the handshake messages both proofs cover: the
// bodies of the hello, the challenge, and (for the listener's proof) the
// dialler's proof and the welcome, each prefixed with its length, hashed
// with SHA-256.
type transcript struct {
	b []byte
}

// add appends one message body.
func (t *transcript) add(body []byte) {
	t.b = binary.BigEndian.AppendUint16(t.b, uint16(len(body)))
	t.b = append(t.b, body...)
}

// proof computes HMAC-SHA256(secret, str8(label) ‖ SHA-256(transcript so
// far)).
func (t *transcript) proof(secret []byte, label string) [sha256.Size]byte {
	sum := sha256.Sum256(t.b)
	m := hmac.New(sha256.New, secret)
	m.Write(appendString8(nil, label))
	m.Write(sum[:])
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// verify compares a received proof with the expected one in constant
// time. With no secret nothing verifies.
func (t *transcript) verify(secret []byte, label string, got [sha256.Size]byte) bool {
	if len(secret) == 0 {
		return false
	}
	want := t.proof(secret, label)
	return hmac.Equal(want[:], got[:])
}

// challenge is the listener's answer to a hello that named credentials
// (type 4): the credential the dialler is to prove, and the listener's own
// random challenge. Nothing in it depends on a secret, the listener's
// identity or the cluster name: the dialler proves first.
type challenge struct {
	cred  Credential
	nonce [authNonceSize]byte
}

// proofMsg is a proof (type 5): the dialler's, then the listener's.
type proofMsg struct {
	proof [sha256.Size]byte
}

func (c *challenge) body() []byte {
	b := make([]byte, 0, 1+authNonceSize)
	b = append(b, byte(c.cred))
	return append(b, c.nonce[:]...)
}

func (c *challenge) encode() []byte { return frameHandshake(hsChallenge, c.body()) }

func (p *proofMsg) encode() []byte { return frameHandshake(hsProof, p.proof[:]) }

// decodeChallenge parses a challenge body. It is pure and never panics.
func decodeChallenge(body []byte) (challenge, error) {
	d := hsDecoder{b: body}
	var c challenge
	c.cred = Credential(d.u8())
	copy(c.nonce[:], d.take(authNonceSize))
	if d.bad || len(d.b) != 0 {
		return challenge{}, malformed("truncated or oversized challenge")
	}
	if !credAll.has(c.cred) {
		return challenge{}, malformed("unknown credential")
	}
	return c, nil
}

// decodeProof parses a proof body. It is pure and never panics.
func decodeProof(body []byte) (proofMsg, error) {
	var p proofMsg
	if len(body) != sha256.Size {
		return proofMsg{}, malformed("bad proof length")
	}
	copy(p.proof[:], body)
	return p, nil
}

// secretFor returns this node's secret for credential c, nil if it has none.
func (c *Config) secretFor(cred Credential) []byte {
	switch cred {
	case CredentialMember:
		return c.ClusterSecret
	case CredentialOperator:
		return c.OperatorSecret
	case CredentialClient:
		return c.ClientSecret
	}
	return nil
}

// credentials is the set of credentials this node holds a secret for.
func (c *Config) credentials() credSet {
	var s credSet
	for _, cr := range []Credential{CredentialMember, CredentialOperator, CredentialClient} {
		if len(c.secretFor(cr)) > 0 {
			s |= 1 << cr
		}
	}
	return s
}

// choose is the listener's pick among the dialler's credentials: the
// strongest one it holds a secret for; if it holds none of them, the
// strongest offered, whose proof then cannot verify. So a challenge is
// sent whatever was offered, and the refusal comes after the proof.
func (c *Config) choose(offered credSet) Credential {
	for _, cr := range []Credential{CredentialMember, CredentialOperator, CredentialClient} {
		if offered.has(cr) && len(c.secretFor(cr)) > 0 {
			return cr
		}
	}
	for _, cr := range []Credential{CredentialMember, CredentialOperator, CredentialClient} {
		if offered.has(cr) {
			return cr
		}
	}
	return CredentialNone
}

// requiresSecret reports whether every inbound peer must prove a secret.
func (c *Config) requiresSecret() bool {
	return len(c.ClusterSecret) > 0 || len(c.OperatorSecret) > 0 || len(c.ClientSecret) > 0
}

// Enforcing reports whether this configuration requires peers to prove
// a credential (a secret, or a certificate identity). When it does not,
// the cluster is open: any peer that completes the handshake is trusted
// as a member.
func (c *Config) Enforcing() bool { return c.requiresSecret() || c.CertIdentity }

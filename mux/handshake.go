package mux

import (
	"encoding/binary"
	"io"
	"slices"
)

// ProtocolVersion is the mux protocol version this package speaks.
// Version 3 was version 2 plus an authenticated handshake in which the
// listener proved its secret first; version 4 has the dialler prove first
// (the listener shows nothing derived from a secret, nor whether the
// cluster name was right, to a peer that has not proven one), and adds
// the claim check of SPEC.md §6; version 5 seals every record of a
// session whose handshake proved a secret (seal.go). Without credentials
// versions 5, 4, 3 and 2 are the same handshake and the same records on
// the wire, and a node offers all four. A node that names a credential
// offers only 5 (and 4 as well with Config.AuthOnly), so version 3's
// authenticated exchange is no longer spoken, and a version 4 node with a
// secret and one of version 5 refuse each other (no common version)
// unless the newer one sets AuthOnly.
const ProtocolVersion uint16 = 5

// authOnlyVersion is the version of an authenticated session whose
// records are not sealed (Config.AuthOnly on both sides).
const authOnlyVersion uint16 = 4

// supportedVersions lists the versions this package accepts, highest first.
var supportedVersions = []uint16{ProtocolVersion, authOnlyVersion, 3, 2}

const (
	handshakeMagic   = "CMUX"
	hsHello          = 1
	hsWelcome        = 2
	hsReject         = 3
	hsChallenge      = 4
	hsProof          = 5
	hsHeaderSize     = 7 // magic(4) + type(1) + body length(2)
	maxHandshakeBody = 4096
	maxVersions      = 16
	maxCodecs        = 8
	maxCodecName     = 32
)

// hello is the dialler's opening message on the control stream.
type hello struct {
	versions []uint16
	nodeID   NodeID
	nonce    uint64 // random per dial; breaks ties between two dials by one node
	role     Role
	cluster  string
	addr     string
	codecs   []string
	// The credentials the dialler can prove (a credSet), and its
	// challenge to the listener; both absent (0) in an open cluster.
	creds     credSet
	challenge [authNonceSize]byte
}

// welcome is the listener's acceptance.
type welcome struct {
	version uint16
	nodeID  NodeID
	role    Role
	addr    string
	codec   string // "" = no compression
}

// reject is the listener's refusal.
type reject struct {
	code HandshakeCode
	msg  string
}

func appendString8(b []byte, s string) []byte {
	if len(s) > 255 {
		s = s[:255]
	}
	b = append(b, byte(len(s)))
	return append(b, s...)
}

func frameHandshake(typ byte, body []byte) []byte {
	b := make([]byte, 0, hsHeaderSize+len(body))
	b = append(b, handshakeMagic...)
	b = append(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func (h *hello) encode() []byte {
	var b []byte
	b = append(b, byte(len(h.versions)))
	for _, v := range h.versions {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	b = append(b, h.nodeID[:]...)
	b = binary.BigEndian.AppendUint64(b, h.nonce)
	b = append(b, byte(h.role))
	b = appendString8(b, h.cluster)
	b = appendString8(b, h.addr)
	b = append(b, byte(len(h.codecs)))
	for _, c := range h.codecs {
		b = appendString8(b, c)
	}
	if h.creds != 0 {
		b = append(b, byte(h.creds))
		b = append(b, h.challenge[:]...)
	}
	return frameHandshake(hsHello, b)
}

func (w *welcome) encode() []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, w.version)
	b = append(b, w.nodeID[:]...)
	b = append(b, byte(w.role))
	b = appendString8(b, w.addr)
	b = appendString8(b, w.codec)
	return frameHandshake(hsWelcome, b)
}

func (r *reject) encode() []byte {
	b := []byte{byte(r.code)}
	b = appendString8(b, r.msg)
	return frameHandshake(hsReject, b)
}

// hsDecoder reads fields from a handshake body and remembers the first error.
type hsDecoder struct {
	b   []byte
	bad bool
}

func (d *hsDecoder) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *hsDecoder) u8() uint8 {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *hsDecoder) u16() uint16 {
	if v := d.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *hsDecoder) str8() string { return string(d.take(int(d.u8()))) }

func malformed(msg string) *HandshakeError {
	return &HandshakeError{Code: CodeMalformed, Message: msg}
}

// readHandshake reads one handshake message header and body from r.
func readHandshake(r io.Reader) (typ byte, body []byte, err error) {
	var h [hsHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	if string(h[:4]) != handshakeMagic {
		return 0, nil, malformed("bad magic (not a casty mux peer?)")
	}
	n := int(binary.BigEndian.Uint16(h[5:7]))
	if n > maxHandshakeBody {
		return 0, nil, malformed("handshake body too large")
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return h[4], body, nil
}

// decodeHello parses a hello body. It is pure and never panics.
func decodeHello(body []byte) (hello, error) {
	d := hsDecoder{b: body}
	var h hello
	nv := int(d.u8())
	if nv == 0 || nv > maxVersions {
		return hello{}, malformed("bad version count")
	}
	for range nv {
		h.versions = append(h.versions, d.u16())
	}
	copy(h.nodeID[:], d.take(16))
	if v := d.take(8); v != nil {
		h.nonce = binary.BigEndian.Uint64(v)
	}
	h.role = Role(d.u8())
	h.cluster = d.str8()
	h.addr = d.str8()
	nc := int(d.u8())
	if nc > maxCodecs {
		return hello{}, malformed("too many codecs")
	}
	for range nc {
		c := d.str8()
		if c == "" || len(c) > maxCodecName {
			return hello{}, malformed("bad codec name")
		}
		h.codecs = append(h.codecs, c)
	}
	if len(d.b) > 0 && !d.bad {
		h.creds = credSet(d.u8())
		if h.creds == 0 || h.creds&^credAll != 0 {
			return hello{}, malformed("unknown credential")
		}
		copy(h.challenge[:], d.take(authNonceSize))
	}
	if d.bad || len(d.b) != 0 {
		return hello{}, malformed("truncated or oversized hello")
	}
	if h.role != RoleMember && h.role != RoleClient {
		return hello{}, malformed("unknown role")
	}
	if h.nodeID == (NodeID{}) {
		return hello{}, malformed("zero node id")
	}
	return h, nil
}

// decodeWelcome parses a welcome body. It is pure and never panics.
func decodeWelcome(body []byte) (welcome, error) {
	d := hsDecoder{b: body}
	var w welcome
	w.version = d.u16()
	copy(w.nodeID[:], d.take(16))
	w.role = Role(d.u8())
	w.addr = d.str8()
	w.codec = d.str8()
	if d.bad || len(d.b) != 0 {
		return welcome{}, malformed("truncated or oversized welcome")
	}
	if w.role != RoleMember && w.role != RoleClient {
		return welcome{}, malformed("unknown role")
	}
	if w.nodeID == (NodeID{}) {
		return welcome{}, malformed("zero node id")
	}
	return w, nil
}

// decodeReject parses a reject body. It is pure and never panics.
func decodeReject(body []byte) (reject, error) {
	d := hsDecoder{b: body}
	r := reject{code: HandshakeCode(d.u8())}
	r.msg = d.str8()
	if d.bad || len(d.b) != 0 {
		return reject{}, malformed("truncated or oversized reject")
	}
	return r, nil
}

// localInfo is what a node knows about itself for the handshake.
type localInfo struct {
	nodeID   NodeID
	role     Role
	cluster  string
	addr     string
	codecs   []string
	secret   bool // the node requires a credential proven by a secret
	authOnly bool // Config.AuthOnly
}

func (l *localInfo) hello() hello {
	return hello{versions: supportedVersions, nodeID: l.nodeID, role: l.role,
		cluster: l.cluster, addr: l.addr, codecs: l.codecs}
}

// authVersions returns the versions a node offers when it names
// credentials: only 5 (sealed records), or 5 and 4 with AuthOnly.
func (l *localInfo) authVersions() []uint16 {
	if l.authOnly {
		return []uint16{ProtocolVersion, authOnlyVersion}
	}
	return []uint16{ProtocolVersion}
}

// authVersion returns the version a listener that requires a secret
// chooses among versions offered with credentials, 0 if none will do:
// with AuthOnly 4 before 5, else only 5.
func (l *localInfo) authVersion(offered []uint16) uint16 {
	if l.authOnly && slices.Contains(offered, authOnlyVersion) {
		return authOnlyVersion
	}
	if slices.Contains(offered, ProtocolVersion) {
		return ProtocolVersion
	}
	return 0
}

// accept decides the listener's answer to a hello. Pure: the same inputs
// always give the same answer. The codec is the dialler's first preference
// that the listener also accepts; none in common means no compression.
func (l *localInfo) accept(h hello) (welcome, *reject) {
	if h.cluster != l.cluster {
		// Neither name is echoed: a stranger learns nothing of the
		// cluster's name, and logs of the rejection carry no names.
		return welcome{}, &reject{code: CodeWrongCluster, msg: "the cluster names differ"}
	}
	var version uint16
	if l.secret && h.creds != 0 {
		version = l.authVersion(h.versions)
	} else {
		for _, v := range supportedVersions {
			if slices.Contains(h.versions, v) {
				version = v
				break
			}
		}
	}
	if version == 0 {
		return welcome{}, &reject{code: CodeNoCommonVersion, msg: "no common protocol version"}
	}
	if h.nodeID == l.nodeID {
		return welcome{}, &reject{code: CodeSelf, msg: "connected to itself"}
	}
	w := welcome{version: version, nodeID: l.nodeID, role: l.role, addr: l.addr}
	for _, c := range h.codecs {
		if slices.Contains(l.codecs, c) {
			w.codec = c
			break
		}
	}
	return w, nil
}

// check validates a welcome against what the dialler offered.
func (l *localInfo) check(w welcome) *HandshakeError {
	if !slices.Contains(supportedVersions, w.version) {
		return malformed("listener chose a version we did not offer")
	}
	if w.codec != "" && !slices.Contains(l.codecs, w.codec) {
		return malformed("listener chose a codec we did not offer")
	}
	if w.nodeID == l.nodeID {
		return &HandshakeError{Code: CodeSelf, Message: "connected to itself"}
	}
	return nil
}

package core

import (
	"encoding/binary"
	"fmt"
)

// Wire bounds. A frame that breaks one is rejected by DecodeMessage with
// ErrMalformed before anything is allocated for it.
const (
	// WireVersion is the first byte of every frame.
	WireVersion = 1
	// MaxFrameSize is the largest frame DecodeMessage accepts (4 MiB, the
	// transport's message cap).
	MaxFrameSize = 4 << 20
	// MaxAddrLen bounds an address string.
	MaxAddrLen = 255
	// MaxSample bounds the peers of a shuffle sample (and the active view).
	MaxSample = 64
	// MaxMembers bounds the records of one Sync (the cluster size a full
	// table exchange supports).
	MaxMembers = 1 << 16
	// MaxIDs bounds the ids of one IHAVE or GRAFT.
	MaxIDs = 4096
)

const (
	hasSubject = 1 << iota
	hasTTL
	hasFlag
	hasRound
	hasDigest
	hasPeers
	hasMembers
	hasIDs
)

// AppendMessage appends the binary encoding of m to b (see SPEC.md).
func AppendMessage(b []byte, m *Message) []byte {
	b = append(b, WireVersion, byte(m.Kind))
	b = appendPeer(b, m.From)
	var bits byte
	if m.Subject != (Peer{}) {
		bits |= hasSubject
	}
	if m.TTL != 0 {
		bits |= hasTTL
	}
	if m.Flag {
		bits |= hasFlag
	}
	if m.Round != 0 {
		bits |= hasRound
	}
	if m.Digest != 0 {
		bits |= hasDigest
	}
	if len(m.Peers) > 0 {
		bits |= hasPeers
	}
	if len(m.Members) > 0 {
		bits |= hasMembers
	}
	if len(m.IDs) > 0 {
		bits |= hasIDs
	}
	b = append(b, bits)
	if bits&hasSubject != 0 {
		b = appendPeer(b, m.Subject)
	}
	if bits&hasTTL != 0 {
		b = append(b, m.TTL)
	}
	if bits&hasRound != 0 {
		b = binary.AppendUvarint(b, uint64(m.Round))
	}
	if bits&hasDigest != 0 {
		b = binary.BigEndian.AppendUint64(b, m.Digest)
	}
	if bits&hasPeers != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Peers)))
		for _, p := range m.Peers {
			b = appendPeer(b, p)
		}
	}
	if bits&hasMembers != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Members)))
		for i, r := range m.Members {
			b = appendPeer(b, r.Peer())
			b = binary.AppendUvarint(b, r.Incarnation)
			b = append(b, byte(r.Status))
			var age uint32
			if i < len(m.Ages) {
				age = m.Ages[i]
			}
			b = binary.AppendUvarint(b, uint64(age))
		}
	}
	if bits&hasIDs != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.IDs)))
		for _, id := range m.IDs {
			b = append(b, id.Node[:]...)
			b = binary.AppendUvarint(b, id.Incarnation)
			b = append(b, byte(id.Status))
		}
	}
	return b
}

func appendPeer(b []byte, p Peer) []byte {
	b = append(b, p.ID[:]...)
	addr := p.Addr
	if len(addr) > MaxAddrLen {
		addr = addr[:MaxAddrLen] // unreachable for validated peers; keeps the frame decodable
	}
	b = append(b, byte(len(addr)))
	b = append(b, addr...)
	return append(b, byte(p.Role))
}

// EncodeMessage returns the binary encoding of m.
func EncodeMessage(m *Message) []byte { return AppendMessage(make([]byte, 0, 64), m) }

type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail("truncated")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads an element count bounded by max and by the bytes left (each
// element takes at least minSize bytes), so a forged count cannot make the
// decoder allocate more than the frame justifies.
func (r *reader) count(what string, max, minSize int) int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n == 0 || n > uint64(max) || n*uint64(minSize) > uint64(len(r.b)) {
		r.fail("%s count %d out of range", what, n)
		return 0
	}
	return int(n)
}

func (r *reader) peer() Peer {
	var p Peer
	copy(p.ID[:], r.bytes(16))
	n := int(r.byte())
	p.Addr = string(r.bytes(n))
	p.Role = Role(r.byte())
	if r.err == nil && p.Role > RoleClient {
		r.fail("unknown role %d", p.Role)
	}
	return p
}

func (r *reader) status() Status {
	s := Status(r.byte())
	if r.err == nil && s > Dead {
		r.fail("unknown status %d", s)
	}
	return s
}

const minPeerSize = 16 + 1 + 1

// DecodeMessage parses one frame. It never panics and allocates in
// proportion to len(b); any violation returns an error wrapping ErrMalformed.
func DecodeMessage(b []byte) (*Message, error) {
	if len(b) > MaxFrameSize {
		return nil, fmt.Errorf("%w: frame of %d bytes", ErrMalformed, len(b))
	}
	r := &reader{b: b}
	if v := r.byte(); r.err == nil && v != WireVersion {
		return nil, fmt.Errorf("%w: version %d", ErrMalformed, v)
	}
	m := &Message{Kind: Kind(r.byte())}
	if r.err == nil && (m.Kind == 0 || m.Kind > kindMax) {
		return nil, fmt.Errorf("%w: unknown kind %d", ErrMalformed, m.Kind)
	}
	m.From = r.peer()
	bits := r.byte()
	if bits&hasSubject != 0 {
		m.Subject = r.peer()
	}
	if bits&hasTTL != 0 {
		m.TTL = r.byte()
	}
	m.Flag = bits&hasFlag != 0
	if bits&hasRound != 0 {
		v := r.uvarint()
		if v > 1<<32-1 {
			r.fail("round %d", v)
		}
		m.Round = uint32(v)
	}
	if bits&hasDigest != 0 {
		if d := r.bytes(8); d != nil {
			m.Digest = binary.BigEndian.Uint64(d)
		}
	}
	if bits&hasPeers != 0 {
		n := r.count("peer", MaxSample, minPeerSize)
		m.Peers = make([]Peer, 0, n)
		for range n {
			m.Peers = append(m.Peers, r.peer())
		}
	}
	if bits&hasMembers != 0 {
		n := r.count("member", MaxMembers, minPeerSize+3)
		m.Members = make([]Member, 0, n)
		ages := make([]uint32, 0, n)
		anyAge := false
		for range n {
			p := r.peer()
			inc := r.uvarint()
			st := r.status()
			age := r.uvarint()
			if age > 1<<32-1 {
				r.fail("age %d", age)
			}
			anyAge = anyAge || age != 0
			m.Members = append(m.Members, Member{ID: p.ID, Addr: p.Addr, Role: p.Role, Incarnation: inc, Status: st})
			ages = append(ages, uint32(age))
		}
		if anyAge {
			m.Ages = ages
		}
	}
	if bits&hasIDs != 0 {
		n := r.count("id", MaxIDs, 16+2)
		m.IDs = make([]MsgID, 0, n)
		for range n {
			var id MsgID
			copy(id.Node[:], r.bytes(16))
			id.Incarnation = r.uvarint()
			id.Status = r.status()
			m.IDs = append(m.IDs, id)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

// check enforces the per-kind shape: what each kind must carry.
func (m *Message) check() error {
	bad := func(why string) error { return fmt.Errorf("%w: %s: %s", ErrMalformed, m.Kind, why) }
	if m.From.ID.IsZero() {
		return bad("zero sender id")
	}
	if m.From.Addr == "" {
		return bad("empty sender address")
	}
	switch m.Kind {
	case KindForwardJoin, KindShuffle:
		if m.Subject.ID.IsZero() || m.Subject.Addr == "" {
			return bad("missing subject")
		}
	case KindGossip:
		if len(m.Members) != 1 {
			return bad("gossip carries exactly one record")
		}
	case KindIHave:
		if len(m.IDs) == 0 {
			return bad("no ids")
		}
	}
	for _, p := range m.Peers {
		if p.ID.IsZero() || p.Addr == "" {
			return bad("sample with empty peer")
		}
	}
	for _, r := range m.Members {
		if r.ID.IsZero() || r.Addr == "" {
			return bad("record with empty id or address")
		}
	}
	return nil
}

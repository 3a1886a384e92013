package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/pager"
)

// The wire form of a Msg (SPEC.md, "Encoding"): a format byte, the op, a
// uvarint bit set naming the fields present, then each present field in
// bit order. A field at its zero value is absent, so a request costs only
// what it uses. Integers are uvarints, stamps and ballots 28 fixed bytes
// (big-endian wall, counter, node), strings and byte strings a uvarint
// length and their bytes, lists a uvarint count and their elements.
const wireFormat byte = 1

// The field bits, in the order the fields are written.
const (
	fVersion uint64 = 1 << iota
	fDigest
	fKind
	fKey
	fBallot
	fStatus
	fPromised
	fAccepted
	fStamp
	fPart
	fHave
	fDelta
	fReason
	fVoter
	fRanges
	fRecords
	fMore
	fFacts
	fBrief
	fAnswer
	fCopies

	fAll = fCopies<<1 - 1
)

// stampLen is the length of a stamp or ballot on the wire.
const stampLen = 8 + 4 + 16

// Encode returns m's wire form.
func (m *Msg) Encode() ([]byte, error) { return m.Append(nil) }

// Append appends m's wire form to b.
func (m *Msg) Append(b []byte) ([]byte, error) {
	if m.Part < 0 {
		return b, fmt.Errorf("replica: encode %v: negative part %d", m.Op, m.Part)
	}
	var mask uint64
	set := func(bit uint64, present bool) {
		if present {
			mask |= bit
		}
	}
	set(fVersion, m.Version != 0)
	set(fDigest, m.Digest != 0)
	set(fKind, m.Kind != "")
	set(fKey, m.Key != "")
	set(fBallot, !m.Ballot.IsZero())
	set(fStatus, m.Status != 0)
	set(fPromised, !m.Promised.IsZero())
	set(fAccepted, !m.Accepted.IsZero())
	set(fStamp, !m.Stamp.IsZero())
	set(fPart, m.Part != 0)
	set(fHave, m.Have != nil)
	set(fDelta, m.Delta != nil)
	set(fReason, m.Reason != "")
	set(fVoter, m.Voter)
	set(fRanges, len(m.Ranges) > 0)
	set(fRecords, len(m.Records) > 0)
	set(fMore, m.More)
	set(fFacts, len(m.Facts) > 0)
	set(fBrief, m.Brief)
	set(fAnswer, len(m.Answer) > 0)
	set(fCopies, m.Copies)

	b = slices.Grow(b, m.sizeHint())
	b = append(b, wireFormat, byte(m.Op))
	b = binary.AppendUvarint(b, mask)
	if mask&fVersion != 0 {
		b = binary.AppendUvarint(b, m.Version)
	}
	if mask&fDigest != 0 {
		b = binary.BigEndian.AppendUint64(b, m.Digest)
	}
	if mask&fKind != 0 {
		b = appendString(b, m.Kind)
	}
	if mask&fKey != 0 {
		b = appendString(b, m.Key)
	}
	if mask&fBallot != 0 {
		b = appendStamp(b, pager.Stamp(m.Ballot))
	}
	if mask&fStatus != 0 {
		b = append(b, byte(m.Status))
	}
	if mask&fPromised != 0 {
		b = appendStamp(b, pager.Stamp(m.Promised))
	}
	if mask&fAccepted != 0 {
		b = appendStamp(b, pager.Stamp(m.Accepted))
	}
	if mask&fStamp != 0 {
		b = appendStamp(b, m.Stamp)
	}
	if mask&fPart != 0 {
		b = binary.AppendUvarint(b, uint64(m.Part))
	}
	if mask&fHave != 0 {
		b = appendOptStamp(b, m.Have.Stamp)
		b = binary.AppendUvarint(b, uint64(len(m.Have.Pages)))
		for _, p := range m.Have.Pages {
			b = appendString(b, p.Key)
			b = appendOptStamp(b, p.Stamp)
			b = binary.AppendUvarint(b, uint64(max(p.Size, 0)))
		}
	}
	if mask&fDelta != 0 {
		var err error
		if b, err = appendDelta(b, m.Delta); err != nil {
			return b, fmt.Errorf("replica: encode %v: %w", m.Op, err)
		}
	}
	if mask&fReason != 0 {
		b = appendString(b, m.Reason)
	}
	if mask&fRanges != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Ranges)))
		for _, r := range m.Ranges {
			b = binary.BigEndian.AppendUint64(b, r.Start)
			b = binary.BigEndian.AppendUint64(b, r.End)
		}
	}
	if mask&fRecords != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Records)))
		for _, r := range m.Records {
			b = appendString(b, r.Key)
			b = appendOptStamp(b, pager.Stamp(r.Accepted))
			b = appendOptStamp(b, r.Stamp)
			b = appendPages(b, r.Pages)
		}
	}
	if mask&fFacts != 0 {
		b = appendBytes(b, m.Facts)
	}
	if mask&fAnswer != 0 {
		b = appendBytes(b, m.Answer)
	}
	return b, nil
}

// sizeHint is about the length of m's wire form, never much less, so that
// Append grows its buffer once.
func (m *Msg) sizeHint() int {
	n := 16 + 10 + 8 + len(m.Kind) + len(m.Key) + 4*stampLen + 10 + len(m.Reason) + len(m.Facts) + 5 + len(m.Answer)
	if m.Have != nil {
		n += 1 + stampLen + 5
		for _, p := range m.Have.Pages {
			n += 5 + len(p.Key) + 1 + stampLen + 5
		}
	}
	if m.Delta != nil {
		n += 1 + 2*(1+stampLen) + 15 + pagesSize(m.Delta.Pages)
		for _, k := range m.Delta.Dropped {
			n += 5 + len(k)
		}
	}
	n += 5 + 16*len(m.Ranges) + 5
	for _, r := range m.Records {
		n += 5 + len(r.Key) + 2*(1+stampLen) + pagesSize(r.Pages)
	}
	return n
}

func pagesSize(pages []pager.Page) int {
	n := 5
	for _, p := range pages {
		n += 5 + len(p.Key) + 5 + len(p.Data) + 1 + stampLen
	}
	return n
}

func appendDelta(b []byte, d *pager.Delta) ([]byte, error) {
	if d.Part < 0 || d.Parts < 0 {
		return b, fmt.Errorf("delta part %d of %d", d.Part, d.Parts)
	}
	var flags byte
	if d.Full {
		flags |= 1
	}
	b = append(b, flags)
	b = appendOptStamp(b, d.Stamp)
	b = appendOptStamp(b, d.Basis)
	b = binary.AppendUvarint(b, uint64(d.Part))
	b = binary.AppendUvarint(b, uint64(d.Parts))
	b = appendPages(b, d.Pages)
	b = binary.AppendUvarint(b, uint64(len(d.Dropped)))
	for _, k := range d.Dropped {
		b = appendString(b, k)
	}
	return b, nil
}

func appendPages(b []byte, pages []pager.Page) []byte {
	b = binary.AppendUvarint(b, uint64(len(pages)))
	for _, p := range pages {
		b = appendString(b, p.Key)
		b = appendBytes(b, p.Data)
		b = appendOptStamp(b, p.Stamp)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// stampSize is a stamp's encoding: wall, counter, node.
const stampSize = 8 + 4 + 16

func appendStamp(b []byte, s pager.Stamp) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.Wall))
	b = binary.BigEndian.AppendUint32(b, s.Counter)
	return append(b, s.Node[:]...)
}

// appendOptStamp writes a stamp that may be zero: a byte saying whether it
// is present, then the stamp.
func appendOptStamp(b []byte, s pager.Stamp) []byte {
	if s.IsZero() {
		return append(b, 0)
	}
	return appendStamp(append(b, 1), s)
}

// Decode parses a message received from the network. Malformed input of
// any kind yields an error wrapping ErrCorrupt, never a panic; a message
// whose delta is inconsistent (part numbers, a stamp not newer than its
// basis) is malformed too. The message does not alias b: page bytes are
// copied (in one allocation), so b may be reused.
func Decode(b []byte) (*Msg, error) {
	d := decoder{b: b}
	m, err := d.msg(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// A Scratch is room for decoding one message at a time, reused: a runtime
// that handles a request and then drops it (a replica's commits) decodes
// each into the same Scratch instead of allocating the message, its delta
// and its first page anew. The zero Scratch is ready to use.
type Scratch struct{ box decoded }

// Decode is Decode into s: the message, its delta and the delta's first
// page live in s and are overwritten by the next Decode, so none of them
// — the *Delta, nor the Pages slice when it holds one page — may be kept
// past it. What they point at (page bytes, keys, strings, an answer, a
// listing) is freshly allocated as Decode's is and may be kept. A
// pager.Store keeps the Delta of a part of a commit in several parts
// until the rest arrives: such a message must not be decoded over.
func (s *Scratch) Decode(b []byte) (*Msg, error) {
	d := decoder{b: b}
	m, err := d.msg(nil, &s.box)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeInto is Decode into m, which it overwrites whole: a runtime that
// decodes many messages it drops after one use (an owner's
// acknowledgements) can reuse one Msg for them. What the message holds
// besides its fixed fields (a delta, a listing, a reason, ranges,
// records, facts, an answer) is freshly allocated, never m's earlier
// contents, so it may be kept after m is reused. On an error m holds
// nothing of use.
func DecodeInto(m *Msg, b []byte) error {
	d := decoder{b: b}
	if _, err := d.msg(m, nil); err != nil {
		*m = Msg{}
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return m.validate()
}

// AckStatus reads the status of an encoded acknowledgement (OpAck) and
// nothing past it, allocating nothing: a runtime can pass over the
// replies it has no use for (casty drops late acknowledgements that are
// not need-full) without decoding them. ok is false for any other message
// and for input whose first fields do not parse; true promises nothing
// about the rest, which Decode checks.
func AckStatus(b []byte) (st Status, ok bool) {
	d := decoder{b: b}
	if d.byte() != wireFormat || Op(d.byte()) != OpAck {
		return 0, false
	}
	mask := d.uvarint()
	if mask&fVersion != 0 {
		d.uvarint()
	}
	if mask&fDigest != 0 {
		d.u64()
	}
	for _, f := range [...]uint64{fKind, fKey} {
		if mask&f != 0 {
			d.take(d.int("string length", d.left()))
		}
	}
	if mask&fBallot != 0 {
		d.stamp()
	}
	if mask&fStatus != 0 {
		st = Status(d.byte())
	}
	return st, d.err == nil
}

var (
	errShort    = errors.New("message cut short")
	errTrailing = errors.New("trailing bytes")
)

// decoder reads the wire form. Every length and count is checked against
// the bytes left before anything is allocated for it, so hostile input
// allocates no more than its own size.
type decoder struct {
	b    []byte
	data []byte // a copy of the input, which page bytes alias
	off  int
	err  error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) byte() byte {
	if d.err != nil || d.left() < 1 {
		d.fail(errShort)
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errors.New("bad varint"))
		return 0
	}
	d.off += n
	return v
}

// int reads a uvarint that must fit an int no larger than limit.
func (d *decoder) int(what string, limit int) int {
	v := d.uvarint()
	if v > uint64(limit) {
		d.fail(fmt.Errorf("%s %d over %d", what, v, limit))
		return 0
	}
	return int(v)
}

// count reads a list's length: each element takes at least min bytes.
func (d *decoder) count(what string, min int) int {
	return d.int(what, d.left()/min)
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > d.left() {
		d.fail(errShort)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) string() string {
	return string(d.take(d.int("string length", d.left())))
}

// kind reads a kind's name, interned: a cluster has a few kinds and every
// message names one.
func (d *decoder) kind() string {
	b := d.take(d.int("string length", d.left()))
	if k, ok := (*kindNames.Load())[string(b)]; ok {
		return k
	}
	return internKind(string(b))
}

// kindNames maps each kind name seen to one copy of it, replaced whole on
// a miss (copy on write: lookups take no lock). It stops growing at
// maxKindNames, past which names are allocated per message.
var (
	kindNames   atomic.Pointer[map[string]string]
	kindNamesMu sync.Mutex
)

const maxKindNames = 256

func init() { kindNames.Store(&map[string]string{}) }

func internKind(k string) string {
	kindNamesMu.Lock()
	defer kindNamesMu.Unlock()
	old := *kindNames.Load()
	if c, ok := old[k]; ok {
		return c
	}
	if len(old) >= maxKindNames {
		return k
	}
	m := make(map[string]string, len(old)+1)
	maps.Copy(m, old)
	m[k] = k
	kindNames.Store(&m)
	return k
}

// bytes returns a byte string of the input, aliasing d's private copy.
func (d *decoder) bytes() []byte {
	n := d.int("bytes length", d.left())
	start := d.off
	if d.take(n) == nil || n == 0 {
		return nil
	}
	if d.data == nil {
		d.data = append([]byte(nil), d.b...)
	}
	return d.data[start : start+n : start+n]
}

func (d *decoder) u64() uint64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

func (d *decoder) stamp() pager.Stamp {
	p := d.take(stampLen)
	if p == nil {
		return pager.Stamp{}
	}
	s := pager.Stamp{Wall: int64(binary.BigEndian.Uint64(p)), Counter: binary.BigEndian.Uint32(p[8:])}
	copy(s.Node[:], p[12:])
	if s.IsZero() {
		d.fail(errors.New("zero stamp written as present"))
	}
	return s
}

func (d *decoder) optStamp() pager.Stamp {
	switch d.byte() {
	case 0:
		return pager.Stamp{}
	case 1:
		return d.stamp()
	}
	d.fail(errors.New("bad stamp marker"))
	return pager.Stamp{}
}

func (d *decoder) ballot() Ballot { return hlc.Timestamp(d.stamp()) }

// decoded is a decoded message with room for what a commit carries, its
// delta and one page, so the usual commit is one allocation, not three
// (a message without a delta is a Msg alone).
type decoded struct {
	Msg
	delta pager.Delta
	page  [1]pager.Page
}

// msg decodes a message into into (its delta in a new box), into scratch
// (the message, delta and first page there), or, both nil, into a new box.
func (d *decoder) msg(into *Msg, scratch *decoded) (*Msg, error) {
	if f := d.byte(); d.err == nil && f != wireFormat {
		return nil, fmt.Errorf("wire format %d, want %d", f, wireFormat)
	}
	op := Op(d.byte())
	mask := d.uvarint()
	var box *decoded
	m := into
	switch {
	case scratch != nil:
		*scratch = decoded{}
		box, m = scratch, &scratch.Msg
	case m != nil:
		*m = Msg{}
		if mask&fDelta != 0 {
			box = new(decoded) // for the delta and its page only
		}
	case mask&fDelta != 0:
		box = new(decoded)
		m = &box.Msg
	default:
		m = new(Msg)
	}
	m.Op = op
	if mask&^fAll != 0 {
		d.fail(fmt.Errorf("unknown fields %#x", mask&^fAll))
	}
	if mask&fVersion != 0 {
		m.Version = d.uvarint()
	}
	if mask&fDigest != 0 {
		m.Digest = d.u64()
	}
	if mask&fKind != 0 {
		m.Kind = d.kind()
	}
	if mask&fKey != 0 {
		m.Key = d.string()
	}
	if mask&fBallot != 0 {
		m.Ballot = d.ballot()
	}
	if mask&fStatus != 0 {
		m.Status = Status(d.byte())
	}
	if mask&fPromised != 0 {
		m.Promised = d.ballot()
	}
	if mask&fAccepted != 0 {
		m.Accepted = d.ballot()
	}
	if mask&fStamp != 0 {
		m.Stamp = d.stamp()
	}
	if mask&fPart != 0 {
		m.Part = d.int("part", math.MaxInt32)
	}
	if mask&fHave != 0 {
		l := &pager.Listing{Stamp: d.optStamp()}
		if n := d.count("listed pages", 3); n > 0 {
			l.Pages = make([]pager.PageInfo, n)
			for i := range l.Pages {
				p := &l.Pages[i]
				p.Key, p.Stamp, p.Size = d.string(), d.optStamp(), d.int("page size", math.MaxInt32)
			}
		}
		m.Have = l
	}
	if mask&fDelta != 0 {
		m.Delta = d.delta(&box.delta, box.page[:0])
	}
	if mask&fReason != 0 {
		m.Reason = d.string()
	}
	m.Voter = mask&fVoter != 0
	if mask&fRanges != 0 {
		m.Ranges = make([]Range, d.count("ranges", 16))
		for i := range m.Ranges {
			m.Ranges[i] = Range{Start: d.u64(), End: d.u64()}
		}
	}
	if mask&fRecords != 0 {
		m.Records = make([]Record, d.count("records", 4))
		for i := range m.Records {
			r := &m.Records[i]
			r.Key = d.string()
			r.Accepted = hlc.Timestamp(d.optStamp())
			r.Stamp = d.optStamp()
			r.Pages = d.pages(nil)
		}
	}
	if len(m.Ranges) == 0 {
		m.Ranges = nil
	}
	if len(m.Records) == 0 {
		m.Records = nil
	}
	m.More = mask&fMore != 0
	m.Brief = mask&fBrief != 0
	m.Copies = mask&fCopies != 0
	if mask&fFacts != 0 {
		m.Facts = d.bytes()
	}
	if mask&fAnswer != 0 {
		m.Answer = d.bytes()
	}
	if d.err == nil && d.left() != 0 {
		d.fail(errTrailing)
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// delta decodes a delta into dl, its pages into pages' room when they fit.
func (d *decoder) delta(dl *pager.Delta, pages []pager.Page) *pager.Delta {
	flags := d.byte()
	if flags&^1 != 0 {
		d.fail(fmt.Errorf("bad delta flags %#x", flags))
	}
	*dl = pager.Delta{Full: flags&1 != 0, Stamp: d.optStamp(), Basis: d.optStamp()}
	dl.Part = d.int("delta part", pager.MaxParts)
	dl.Parts = d.int("delta parts", pager.MaxParts)
	dl.Pages = d.pages(pages)
	if n := d.count("dropped keys", 1); n > 0 {
		dl.Dropped = make([]string, n)
		for i := range dl.Dropped {
			dl.Dropped[i] = d.string()
		}
	}
	return dl
}

// pages decodes a list of pages into room's capacity when it fits.
func (d *decoder) pages(room []pager.Page) []pager.Page {
	n := d.count("pages", 3)
	if n == 0 {
		return nil
	}
	var ps []pager.Page
	if n <= cap(room) {
		ps = room[:n:n]
	} else {
		ps = make([]pager.Page, n)
	}
	for i := range ps {
		ps[i] = pager.Page{Key: d.string(), Data: d.bytes(), Stamp: d.optStamp()}
	}
	return ps
}

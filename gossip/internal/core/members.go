package core

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// NodeID identifies a node for its whole life, across restarts that keep it.
// It is 16 bytes (a UUID in the casty layer); the zero NodeID is invalid.
type NodeID [16]byte

// String returns the id as 32 lowercase hex digits.
func (id NodeID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero (invalid) id.
func (id NodeID) IsZero() bool { return id == NodeID{} }

// Compare orders ids bytewise; it returns -1, 0 or +1.
func (id NodeID) Compare(o NodeID) int { return bytes.Compare(id[:], o[:]) }

// Role says whether a member hosts actors (RoleMember) or only routes calls
// (RoleClient, the lite member casty.Connect makes).
type Role uint8

// The roles a member can have.
const (
	// RoleMember is a full member: placed on the ring, hosts activations.
	RoleMember Role = iota
	// RoleClient is a lite member: knows the membership, hosts nothing.
	RoleClient
)

// String returns "member" or "client".
func (r Role) String() string {
	switch r {
	case RoleMember:
		return "member"
	case RoleClient:
		return "client"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Status is a member's liveness as far as the table knows. The numeric order is
// the severity order used to break incarnation ties: ALIVE < SUSPECT < LEFT < DEAD.
type Status uint8

// The member statuses, in increasing severity.
const (
	// Alive: the member is believed to be up.
	Alive Status = iota
	// Suspect: an overlay neighbour lost its link to the member; unless the
	// member refutes within Config.SuspicionTimeout it becomes Dead.
	Suspect
	// Left: the member departed gracefully. A tombstone.
	Left
	// Dead: a suspicion went unrefuted. A tombstone.
	Dead
)

// String returns "alive", "suspect", "left" or "dead".
func (s Status) String() string {
	switch s {
	case Alive:
		return "alive"
	case Suspect:
		return "suspect"
	case Left:
		return "left"
	case Dead:
		return "dead"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Gone reports whether s is a tombstone status (Left or Dead).
func (s Status) Gone() bool { return s == Left || s == Dead }

// Member is one record of the member table.
type Member struct {
	ID          NodeID // who
	Addr        string // where others dial it ("host:port")
	Role        Role   // member or client
	Incarnation uint64 // bumped only by the member itself, to refute
	Status      Status // what the table believes
}

// Peer returns the addressing part of the record.
func (m Member) Peer() Peer { return Peer{ID: m.ID, Addr: m.Addr, Role: m.Role} }

// String formats the record for logs.
func (m Member) String() string {
	return fmt.Sprintf("%s@%s/%s#%d:%s", m.ID.String()[:8], m.Addr, m.Role, m.Incarnation, m.Status)
}

// Supersedes reports whether record a wins over record b for the same node:
// higher incarnation wins; on a tie the more severe status wins; on a full tie
// the address and role break it, so that the merge is a total order
// (commutative and associative) even for forged, conflicting records.
func Supersedes(a, b Member) bool {
	if a.Incarnation != b.Incarnation {
		return a.Incarnation > b.Incarnation
	}
	if a.Status != b.Status {
		return a.Status > b.Status
	}
	if a.Addr != b.Addr {
		return a.Addr > b.Addr
	}
	return a.Role > b.Role
}

// Merge returns the winner of two records about the same node (see
// Supersedes). Merge is commutative, associative and idempotent.
func Merge(a, b Member) Member {
	if Supersedes(b, a) {
		return b
	}
	return a
}

// Peer is the addressing part of a member record: enough to dial and name a node.
type Peer struct {
	ID   NodeID
	Addr string
	Role Role
}

// String formats the peer for logs.
func (p Peer) String() string { return p.ID.String()[:8] + "@" + p.Addr }

// entry is a table record plus local bookkeeping.
type entry struct {
	Member
	since time.Time // local time the current status was adopted (tombstone age)
	hash  uint64    // contribution to the table digest
}

// Table is the member table: one record per known node, merged by the
// lattice of Supersedes, with tombstones (Left/Dead) kept for a TTL. It is not
// safe for concurrent use; a Node owns it.
type Table struct {
	self    NodeID
	entries map[NodeID]*entry
	tombs   map[NodeID]struct{} // ids of Left/Dead entries (for cheap expiry)
	clients int                 // entries of role RoleClient, tombstones included
	digest  uint64
}

// NewTable returns a table holding only self's record.
func NewTable(self Member) *Table {
	t := &Table{self: self.ID, entries: make(map[NodeID]*entry), tombs: make(map[NodeID]struct{})}
	t.put(self, time.Time{})
	return t
}

// recordHash mixes a record into 64 bits, identically on every node.
func recordHash(m Member) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for _, b := range m.ID {
		mix(b)
	}
	for i := 0; i < len(m.Addr); i++ {
		mix(m.Addr[i])
	}
	mix(byte(m.Role))
	for i := range 8 {
		mix(byte(m.Incarnation >> (8 * i)))
	}
	mix(byte(m.Status))
	// finaliser (splitmix64) so XOR of many hashes stays well spread
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

func (t *Table) put(m Member, now time.Time) {
	if m.Status.Gone() && m.ID != t.self {
		t.tombs[m.ID] = struct{}{}
	} else {
		delete(t.tombs, m.ID)
	}
	if m.Role == RoleClient {
		t.clients++
	}
	if e, ok := t.entries[m.ID]; ok {
		if e.Role == RoleClient {
			t.clients--
		}
		t.digest ^= e.hash
		if e.Status != m.Status {
			e.since = now
		}
		e.Member = m
		e.hash = recordHash(m)
		t.digest ^= e.hash
		return
	}
	e := &entry{Member: m, since: now, hash: recordHash(m)}
	t.entries[m.ID] = e
	t.digest ^= e.hash
}

// Apply merges record m into the table at local time now and reports the
// record that was there before (ok false if none) and whether the table
// changed. A record about the table's own node is never adopted here: the
// Node handles those (refutation).
func (t *Table) Apply(m Member, now time.Time) (prev Member, existed, changed bool) {
	e, ok := t.entries[m.ID]
	if ok {
		prev = e.Member
		if !Supersedes(m, e.Member) {
			return prev, true, false
		}
	}
	t.put(m, now)
	return prev, ok, true
}

// ApplyAged is Apply for a record whose status is already age old at the
// sender (anti-entropy carries tombstone ages so they expire everywhere at
// about the same time instead of being refreshed by every exchange).
func (t *Table) ApplyAged(m Member, now time.Time, age time.Duration) (prev Member, existed, changed bool) {
	prev, existed, changed = t.Apply(m, now)
	if changed && age > 0 {
		t.entries[m.ID].since = now.Add(-age)
	}
	return
}

// Get returns the record for id.
func (t *Table) Get(id NodeID) (Member, bool) {
	e, ok := t.entries[id]
	if !ok {
		return Member{}, false
	}
	return e.Member, true
}

// Since returns the local time at which id's current status was adopted.
func (t *Table) Since(id NodeID) time.Time {
	if e, ok := t.entries[id]; ok {
		return e.since
	}
	return time.Time{}
}

// Len returns the number of records, tombstones included.
func (t *Table) Len() int { return len(t.entries) }

// Clients returns the number of records of role RoleClient (lite clients),
// tombstones included.
func (t *Table) Clients() int { return t.clients }

// Digest returns an order-independent 64-bit hash of the records: equal
// tables have equal digests on every node.
func (t *Table) Digest() uint64 { return t.digest }

// Members returns all records sorted by id (a copy).
func (t *Table) Members() []Member {
	out := make([]Member, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e.Member)
	}
	slices.SortFunc(out, func(a, b Member) int { return a.ID.Compare(b.ID) })
	return out
}

// Expire removes tombstones older than ttl at now and returns them sorted by id.
func (t *Table) Expire(now time.Time, ttl time.Duration) []Member {
	var out []Member
	for id := range t.tombs {
		if e := t.entries[id]; now.Sub(e.since) >= ttl {
			out = append(out, e.Member)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return a.ID.Compare(b.ID) })
	for _, m := range out {
		if m.Role == RoleClient {
			t.clients--
		}
		t.digest ^= t.entries[m.ID].hash
		delete(t.entries, m.ID)
		delete(t.tombs, m.ID)
	}
	return out
}

// At returns the records at address addr sorted by id. It scans the table
// without copying it: admissions call it, and there are as many of those as
// members.
func (t *Table) At(addr string) []Member {
	var out []Member
	for _, e := range t.entries {
		if e.Addr == addr {
			out = append(out, e.Member)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return a.ID.Compare(b.ID) })
	return out
}

// Tombstones returns the Left and Dead records sorted by id.
func (t *Table) Tombstones() []Member {
	out := make([]Member, 0, len(t.tombs))
	for id := range t.tombs {
		out = append(out, t.entries[id].Member)
	}
	slices.SortFunc(out, func(a, b Member) int { return a.ID.Compare(b.ID) })
	return out
}

// NextExpiry returns the earliest time a tombstone expires (zero if none).
func (t *Table) NextExpiry(ttl time.Duration) time.Time {
	var next time.Time
	for id := range t.tombs {
		e := t.entries[id]
		if at := e.since.Add(ttl); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// MergeTables merges b into a copy of a, record by record; the pure
// table-level merge used by property tests and by anti-entropy reasoning.
func MergeTables(a, b []Member) []Member {
	m := make(map[NodeID]Member, len(a)+len(b))
	for _, r := range a {
		if cur, ok := m[r.ID]; ok {
			r = Merge(cur, r)
		}
		m[r.ID] = r
	}
	for _, r := range b {
		if cur, ok := m[r.ID]; ok {
			r = Merge(cur, r)
		}
		m[r.ID] = r
	}
	out := make([]Member, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y Member) int { return x.ID.Compare(y.ID) })
	return out
}

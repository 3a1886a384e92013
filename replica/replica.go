package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/casty-go/casty/pager"
)

// Replica is the replica side of one node: for every actor it holds a copy
// of, the highest ballot it promised, the ballot that wrote its state, and
// the state's pages (a pager.Store). It answers requests (Handle) and is a
// pure data structure: no I/O, no clock, no goroutine. It is not safe for
// concurrent use; the runtime serializes calls.
//
// The rules it enforces are the whole of fencing (SPEC.md, "Replica"):
//
//   - a request whose ballot is lower than the promise is refused
//     (StatusStale, with the promise), whatever it is;
//   - a prepare or a commit with a higher ballot raises the promise;
//   - a commit applies only over the state it was computed on (its basis),
//     or as a full page set; otherwise StatusNeedFull;
//   - the state's accepted ballot is the ballot of the commit that
//     published it.
type Replica struct {
	recs    map[key]*record
	bytes   int // page bytes held, all records
	point   func(kind, key string) uint64
	version uint64 // the placement version the runtime adopted (Observe)
	digest  uint64 // its digest (0: unknown)
	fence   uint64 // the highest placement version seen in a request
	fenceD  uint64 // its digest
	facts   func() []byte
	raised  func(kind, key string, promised Ballot) // SetRaised

	// Ranges this member entered and has not synced yet, per kind: there
	// it does not vote "I hold nothing". A member that joined a running
	// cluster is strict: a kind it has no entry for is unsynced
	// everywhere.
	unsynced map[string][]Range
	strict   bool
	joining  bool // a newcomer that has not finished its first syncs (JoinSettled)

	limit int // SetLimit: the most bytes held before new actors are refused (0: none)
}

// recordCost is what a record costs besides its pages, counted against
// the limit (the map entry, the record, its store, its key).
const recordCost = 256

// SetLimit bounds what the replica holds: once its records and their
// pages cost limit bytes (Usage), it refuses a prepare or a commit for an
// actor it holds nothing of (StatusFull). Actors it already holds keep
// committing, and syncs (Adopt) are never refused: the limit stops new
// state, not the upkeep of what the cluster already acknowledged. Zero or
// less: no limit.
func (r *Replica) SetLimit(limit int) { r.limit = max(limit, 0) }

// Usage returns what the limit counts: the page bytes held plus a fixed
// cost per actor record, its kind and key.
func (r *Replica) Usage() int { return r.bytes + len(r.recs)*recordCost }

// full reports whether a new actor would go over the limit.
func (r *Replica) full() bool { return r.limit > 0 && r.Usage() >= r.limit }

type key struct{ kind, key string }

// record is one actor's copy.
type record struct {
	promised Ballot
	accepted Ballot
	store    *pager.Store
	bytes    int
	point    uint64 // the key's ring point, once pointed (pointOf)
	pointed  bool
}

// pointOf returns the ring point of k, held as rec, hashing the key the
// first time only: a sync's answer and a scan of ranges visit every
// record of the kind, and a member syncing ranges asks again each round.
func (r *Replica) pointOf(k key, rec *record) uint64 {
	if !rec.pointed {
		rec.point, rec.pointed = r.point(k.kind, k.key), true
	}
	return rec.point
}

// NewReplica returns an empty replica side. point maps an actor to its
// ring point (ring.Point in casty); nil puts every actor at point 0.
func NewReplica(point func(kind, key string) uint64) *Replica {
	if point == nil {
		point = func(string, string) uint64 { return 0 }
	}
	return &Replica{recs: map[key]*record{}, point: point, unsynced: map[string][]Range{}}
}

// Version returns the placement version the runtime adopted last.
func (r *Replica) Version() uint64 { return r.version }

// Observe tells the replica that its node adopted placement version v —
// after it marked the ranges it entered there (Unsync): from then on it
// refuses requests of an older placement (StatusBehind), and it votes only
// on requests of the placement it adopted (a request of a newer one than
// the node knows gets a non-voting promise: the node has not yet marked
// what it enters there).
func (r *Replica) Observe(v uint64) { r.ObserveDigest(v, 0) }

// ObserveDigest is Observe with the placement's digest: a request of the
// same version with another non-zero digest is refused too (two different
// placements reached the same version by concurrent changes).
func (r *Replica) ObserveDigest(v, digest uint64) {
	if v > r.version || v == r.version && r.digest == 0 {
		r.version, r.digest = v, digest
	}
	r.raise(v, digest)
}

// raise lifts the fence to version v.
func (r *Replica) raise(v, digest uint64) {
	if v > r.fence || v == r.fence && r.fenceD == 0 {
		r.fence, r.fenceD = v, digest
	}
}

// SetFacts gives the replica the function that encodes its node's
// placement for StatusBehind refusals, so a requester can merge it.
func (r *Replica) SetFacts(f func() []byte) { r.facts = f }

// SetRaised gives the replica a function it calls each time a copy's
// promise rises: a prepare or a commit whose ballot is above what the
// copy promised, or an Adopt that raises it to the adopted copy's
// ballot. It runs inside Handle or Adopt, under the caller's
// serialization, and must not call back into the replica. A runtime uses
// it to depose its own live activation of that actor once another owner's
// higher ballot reaches its copy (SPEC.md, "Read(One) and a deposed
// owner"); it costs nothing on a commit of the ballot already promised.
func (r *Replica) SetRaised(f func(kind, key string, promised Ballot)) { r.raised = f }

// raisePromise sets rec's promise to b, above what it held, and says so.
func (r *Replica) raisePromise(rec *record, kind, key string, b Ballot) {
	rec.promised = b
	if r.raised != nil {
		r.raised(kind, key, b)
	}
}

// Joined marks this replica as a newcomer to a running cluster: every
// kind not given ranges by Unsync is unsynced everywhere, so it votes only
// where it holds a state.
func (r *Replica) Joined() { r.strict, r.joining = true, true }

// JoinSettled tells a newcomer's replica that its first syncs are done:
// from then on a range it has not synced is answered StatusUnsynced, not
// StatusJoining (SPEC.md, "Membership changes").
func (r *Replica) JoinSettled() { r.joining = false }

// ForgetUnsynced drops every unsynced range of every kind, before a
// member that restarts its syncs from scratch (a joiner that learned a
// newer placement before it finished) marks the ranges of the new one.
func (r *Replica) ForgetUnsynced() { r.unsynced = map[string][]Range{} }

// Unsync marks ranges this member just entered as not synced for kind:
// until Synced, it answers prepares there as a non-voter unless it holds a
// state, and refuses syncs of them.
func (r *Replica) Unsync(kind string, rs ...Range) {
	r.unsynced[kind] = append(r.unsynced[kind], rs...)
}

// Synced clears the unsynced ranges of kind that lie within rng: the
// member has pulled what the range's previous replica set held.
func (r *Replica) Synced(kind string, rng Range) {
	// In place: a member entering many ranges clears them one by one, and
	// a fresh slice per call made that quadratic in allocations. (The map
	// entry is set even when absent: the kind then has ranges, none left.)
	r.unsynced[kind] = slices.DeleteFunc(r.unsynced[kind], func(u Range) bool { return u.Within(rng) })
}

// synced reports whether this member votes on actor key of kind. The key
// is hashed to its ring point only when some range of kind is unsynced:
// on a settled member, the common case, a vote costs no hash.
func (r *Replica) synced(kind, key string) bool {
	rs, ok := r.unsynced[kind]
	if !ok && r.strict {
		return false
	}
	if len(rs) == 0 {
		return true
	}
	p := r.point(kind, key)
	for _, u := range rs {
		if u.Contains(p) {
			return false
		}
	}
	return true
}

// votes reports whether this member's answer to m counts toward a quorum:
// it is on m's placement and has synced m's actor's range there.
func (r *Replica) votes(m *Msg) bool {
	return m.Version == r.version && (m.Digest == 0 || r.digest == 0 || m.Digest == r.digest) &&
		r.synced(m.Kind, m.Key)
}

// syncedRange reports whether no unsynced range of kind overlaps rng.
func (r *Replica) syncedRange(kind string, rng Range) bool {
	rs, ok := r.unsynced[kind]
	if !ok && r.strict {
		return false
	}
	for _, u := range rs {
		if u.Overlaps(rng) {
			return false
		}
	}
	return true
}

// Keys returns how many actors the replica holds a record of.
func (r *Replica) Keys() int { return len(r.recs) }

// Bytes returns the page bytes held across all actors.
func (r *Replica) Bytes() int { return r.bytes }

// State describes what the replica holds for one actor.
type State struct {
	Promised Ballot      // highest ballot promised
	Accepted Ballot      // ballot of the commit that wrote the state
	Stamp    pager.Stamp // the state's stamp (zero: nothing committed)
}

// Less orders states by (Accepted, Stamp): the state an activation adopts
// is the greatest among those its quorum holds.
func (s State) Less(o State) bool {
	if c := s.Accepted.Compare(o.Accepted); c != 0 {
		return c < 0
	}
	return s.Stamp.Compare(o.Stamp) < 0
}

// Same reports whether s and o name the same state.
func (s State) Same(o State) bool { return s.Accepted == o.Accepted && s.Stamp == o.Stamp }

// Get returns what the replica holds for kind/k.
func (r *Replica) Get(kind, k string) (State, bool) {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return State{}, false
	}
	return State{Promised: rec.promised, Accepted: rec.accepted, Stamp: rec.store.Stamp()}, true
}

// Pages returns the published pages of kind/k, sorted by key.
func (r *Replica) Pages(kind, k string) []pager.Page {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return nil
	}
	return rec.store.Pages()
}

// Listing returns the listing of kind/k (zero when nothing is held).
func (r *Replica) Listing(kind, k string) pager.Listing {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return pager.Listing{}
	}
	return rec.store.List()
}

// Full returns kind/k's published page set as a full delta at its stamp
// with the given basis, split into parts of at most batch bytes.
func (r *Replica) Full(kind, k string, basis pager.Stamp, batch int) []pager.Delta {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return nil
	}
	d := pager.Delta{Stamp: rec.store.Stamp(), Basis: basis, Full: true, Pages: rec.store.Pages()}
	return d.Split(batch)
}

// Catchup returns, split into parts of at most batch page bytes, the delta
// that brings a copy listed as have to this replica's copy of kind/k: the
// pages where the two differ and the keys have holds that this copy does
// not, on basis have.Stamp (pager.Store.Catchup). It is nil when this
// replica holds no copy, or when there is nothing to bring (have is this
// copy's stamp) or no catch-up can (have is newer).
func (r *Replica) Catchup(kind, k string, have pager.Listing, batch int) []pager.Delta {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return nil
	}
	d, err := rec.store.Catchup(have)
	if err != nil || d.Stamp == d.Basis {
		return nil
	}
	return d.Split(batch)
}

// Since returns, split into parts of at most batch bytes, the delta that
// brings a copy at basis to this replica's copy of kind/k when keys names
// every page the commits between them wrote or dropped (pager.Store.Since).
// It is nil when this replica holds no copy or its copy is at basis.
func (r *Replica) Since(kind, k string, basis pager.Stamp, keys []string, batch int) []pager.Delta {
	rec, ok := r.recs[key{kind, k}]
	if !ok {
		return nil
	}
	d := rec.store.Since(basis, keys)
	if d.Stamp == d.Basis {
		return nil
	}
	return d.Split(batch)
}

// empty reports whether kind/k's copy is the empty state (a deleted
// actor's, or one whose every field is zero).
func (r *Replica) empty(kind, k string) bool {
	rec, ok := r.recs[key{kind, k}]
	return ok && rec.store.Len() == 0
}

// dropIf forgets kind/k if its copy is still st and no ballot above the
// copy's was promised on it (Prune).
func (r *Replica) dropIf(kind, k string, st State) bool {
	rec, ok := r.recs[key{kind, k}]
	if !ok || !(State{Accepted: rec.accepted, Stamp: rec.store.Stamp()}).Same(st) || rec.promised != rec.accepted {
		return false
	}
	r.Drop(kind, k)
	return true
}

// DropRanges forgets every copy of kind whose ring point falls in rngs and
// whose stamp's wall time is before before: a member re-entering ranges
// drops what it holds there that a deleted actor's tombstone, expired
// since, could have superseded (before = now − the tombstone TTL), and
// keeps younger copies, which its sync then brings up to date — such a
// copy can be the only live one of an acknowledged write (SPEC.md,
// "Pruning").
func (r *Replica) DropRanges(kind string, before int64, rngs ...Range) {
	for k, rec := range r.recs {
		if k.kind == kind && rec.store.Stamp().Wall < before && inRanges(rngs, r.pointOf(k, rec)) {
			r.Drop(k.kind, k.key)
		}
	}
}

// Candidates returns the copies of kind held in rngs that a Prune may
// consider: all of them when moved is set (ranges this member left),
// otherwise only empty ones stamped before wall (old tombstones).
func (r *Replica) Candidates(kind string, rngs []Range, moved bool, wall int64) map[string]State {
	out := map[string]State{}
	for k, rec := range r.recs {
		if k.kind != kind || !inRanges(rngs, r.pointOf(k, rec)) || rec.store.Stamp().IsZero() {
			continue
		}
		if moved || rec.store.Len() == 0 && rec.store.Stamp().Wall < wall {
			out[k.key] = State{Promised: rec.promised, Accepted: rec.accepted, Stamp: rec.store.Stamp()}
		}
	}
	return out
}

// Drop forgets kind/k (its state was deleted or moved away for good).
func (r *Replica) Drop(kind, k string) {
	if rec, ok := r.recs[key{kind, k}]; ok {
		r.bytes -= rec.bytes
		delete(r.recs, key{kind, k})
	}
}

func (r *Replica) rec(kind, k string) *record {
	kk := key{kind, k}
	rec, ok := r.recs[kk]
	if !ok {
		rec = &record{store: pager.NewStore()}
		r.recs[kk] = rec
	}
	return rec
}

// Handle answers one request. A reply is always returned (its Op is the
// request's reply type); a malformed request gets StatusCorrupt and changes
// nothing. batch bounds the parts of a fetch reply and the listing a
// need-full refusal carries.
func (r *Replica) Handle(m *Msg, batch int) *Msg { return r.handle(m, new(Msg), batch) }

// HandleInto is Handle writing the reply into out, whatever out held: for
// a runtime that encodes each reply at once and reuses its Msg. Nothing
// keeps out afterwards (the reply's slices may alias m's and the copy's
// pages: encode it before either changes).
func (r *Replica) HandleInto(out, m *Msg, batch int) { r.handle(m, out, batch) }

func (r *Replica) handle(m *Msg, out *Msg, batch int) *Msg {
	*out = Msg{Op: m.Op.reply(), Kind: m.Kind, Key: m.Key, Ballot: m.Ballot, Part: m.Part}
	if m.Op == OpSync {
		out.Ranges, out.Brief = m.Ranges, m.Brief // a refusal names what it refuses too
	}
	if out.Op == 0 {
		out.Op, out.Status, out.Reason = OpAck, StatusCorrupt, fmt.Sprintf("replica: %v is not a request", m.Op)
		return out
	}
	if (m.Ballot.IsZero() && m.Op != OpSync) || (m.Op == OpCommit && m.Delta == nil) {
		out.Status, out.Reason = StatusCorrupt, "replica: request without a ballot or a commit without a delta"
		return out
	}
	out.Version = r.fence
	if m.Version < r.fence || m.Version == r.fence && m.Digest != 0 && r.fenceD != 0 && m.Digest != r.fenceD {
		out.Status, out.Reason = StatusBehind, fmt.Sprintf("replica: placement version %d is behind %d (or another placement of the same version)", m.Version, r.version)
		if m.Op == OpCommit {
			out.Stamp = m.Delta.Stamp
		}
		if r.facts != nil {
			out.Facts = r.facts()
		}
		return out
	}
	r.raise(m.Version, m.Digest)
	out.Version = m.Version
	if m.Op == OpSync {
		r.sync(m, out, batch)
		return out
	}
	rec, known := r.recs[key{m.Kind, m.Key}]
	if !known {
		if (m.Op == OpPrepare || m.Op == OpCommit) && r.full() {
			out.Status = StatusFull
			out.Reason = fmt.Sprintf("replica: holding %d bytes of replicated state, the limit is %d: no new actors", r.Usage(), r.limit)
			if m.Op == OpCommit {
				out.Stamp = m.Delta.Stamp
			}
			return out
		}
		if m.Op == OpFetch || m.Op == OpConfirm {
			// Nothing held: answer without creating a record.
			rec = &record{store: pager.NewStore()}
		} else {
			rec = r.rec(m.Kind, m.Key)
		}
	}
	if m.Op == OpCommit {
		// An ack names the commit it answers, whatever the verdict.
		out.Stamp = m.Delta.Stamp
	}
	if m.Ballot.Compare(rec.promised) < 0 {
		out.Status, out.Promised, out.Accepted = StatusStale, rec.promised, rec.accepted
		if out.Op != OpAck {
			out.Stamp = rec.store.Stamp()
		}
		return out
	}
	switch m.Op {
	case OpPrepare:
		if m.Ballot != rec.promised {
			r.raisePromise(rec, m.Kind, m.Key, m.Ballot)
		}
		// A member votes only where it has synced: a copy it holds from
		// before it last left the range, or from a commit while it was
		// syncing, may be older than an acknowledged write elsewhere.
		out.Voter = r.votes(m)
	case OpCommit:
		if m.Ballot != rec.promised {
			r.raisePromise(rec, m.Kind, m.Key, m.Ballot)
		}
		r.commit(rec, m, out, batch)
		// Only a member that has synced the range on the placement the
		// owner is on counts toward the write quorum: every acknowledged
		// write then sits on W synced members, which is what a newcomer's
		// sync relies on.
		out.Voter = r.votes(m)
	case OpFetch:
		r.fetch(rec, m, out, batch)
	case OpConfirm:
		// Read-only: a confirm never raises the promise.
	}
	out.Promised, out.Accepted = rec.promised, rec.accepted
	if out.Op != OpAck {
		out.Stamp = rec.store.Stamp()
	}
	return out
}

func (r *Replica) commit(rec *record, m *Msg, out *Msg, batch int) {
	if m.Ballot.Compare(rec.accepted) == 0 && m.Delta.Stamp.Compare(rec.store.Stamp()) < 0 {
		// A late or duplicated part of an earlier commit of the owner
		// whose later commit this copy holds: that commit was built on
		// it, so the copy already includes it. Applying it — a full page
		// set replaces whatever is held — would take the copy back to an
		// older state under the same ballot and lose acknowledged writes.
		out.Status = StatusOK
		return
	}
	published, err := rec.store.Apply(*m.Delta)
	switch {
	case errors.Is(err, pager.ErrNeedFull), errors.Is(err, pager.ErrStaleOwner):
		// The delta was not built on this copy's state (it missed a
		// commit, or holds an orphan of a failed one). The refusal lists
		// what the copy holds, when that fits a commit part, so that the
		// owner can send only the pages that differ (a catch-up, SPEC.md
		// "Owner rounds"); without it the full page set heals the copy.
		out.Status = StatusNeedFull
		out.Have = refusalListing(rec.store, batch)
		return
	case err != nil:
		out.Status, out.Reason = StatusCorrupt, err.Error()
		return
	case !published:
		out.Status = StatusPending
		return
	}
	r.publish(rec, rec.store, m.Ballot)
	out.Status = StatusOK
}

// refusalListing returns store's listing for a need-full refusal, or nil
// when its encoding could exceed batch bytes (pager.DefaultBatchSize when
// batch is not positive) or half the bytes the copy holds: a listing must
// fit the reply, and one that costs about what the full page set does
// saves nothing (a state of many small pages, one small actor's).
func refusalListing(store *pager.Store, batch int) *pager.Listing {
	if batch <= 0 {
		batch = pager.DefaultBatchSize
	}
	limit := min(batch, store.Bytes()/2)
	size := listingOverhead * (store.Len() + 1)
	if size > limit {
		return nil // before listing a copy of many pages
	}
	l := store.List()
	for _, p := range l.Pages {
		if size += len(p.Key); size > limit {
			return nil
		}
	}
	return &l
}

// listingOverhead bounds the bytes of a listing's encoding besides its keys'
// own, per page (key length, stamp and size) and for its head (stamp and
// count).
const listingOverhead = 2*binary.MaxVarintLen64 + 1 + stampSize

// publish makes store the record's state, written under ballot.
func (r *Replica) publish(rec *record, store *pager.Store, ballot Ballot) {
	rec.store = store
	rec.accepted = ballot
	r.bytes += store.Bytes() - rec.bytes
	rec.bytes = store.Bytes()
}

func (r *Replica) fetch(rec *record, m *Msg, out *Msg, batch int) {
	if rec.store.Stamp() != m.Stamp {
		out.Status = StatusMissing
		return
	}
	var have pager.Listing
	if m.Have != nil {
		have = *m.Have
	}
	d, err := rec.store.Catchup(have)
	if err != nil {
		// The owner holds something newer under another ballot: send all.
		d, _ = rec.store.Catchup(pager.Listing{})
	}
	parts := d.Split(batch)
	if m.Part >= len(parts) {
		out.Status, out.Reason = StatusCorrupt, fmt.Sprintf("replica: part %d of %d", m.Part, len(parts))
		return
	}
	p := parts[m.Part]
	out.Delta = &p
}

// Install publishes a state the owner adopted (fetched from another
// replica) into this node's own copy, under the ballot that wrote it
// there. pages is the complete page set at stamp.
func (r *Replica) Install(kind, k string, s State, pages []pager.Page) error {
	fresh := pager.NewStore()
	if !s.Stamp.IsZero() {
		if _, err := fresh.Apply(pager.Delta{Stamp: s.Stamp, Full: true, Pages: pages}); err != nil {
			return err
		}
	}
	rec := r.rec(kind, k)
	r.publish(rec, fresh, s.Accepted)
	return nil
}

// sync answers OpSync: the records of kind in the range, in key order
// from after m.Key, cut at batch bytes.
func (r *Replica) sync(m *Msg, out *Msg, batch int) {
	out.Ranges, out.Brief = m.Ranges, m.Brief
	synced := true
	for _, rng := range m.Ranges {
		synced = synced && r.syncedRange(m.Kind, rng)
	}
	switch {
	case m.Version > r.version:
		// Not yet on the placement the requester is on: it may enter
		// ranges there it has not marked, or hold acknowledged writes of
		// ranges it stays in. Neither "unsynced" (the requester would
		// skip it, and the writes it holds) nor its copies (they may be
		// incomplete) is a sound answer until it has adopted that
		// placement: the requester asks again.
		out.Status = StatusLagging
		return
	case !synced && !r.joining:
		out.Status = StatusUnsynced
		if !m.Copies {
			return
		}
		// A copy sync: what this member holds of the ranges, though it
		// has not synced them (SPEC.md, "Copy syncs").
	case !synced:
		// A newcomer is left out of the requester's count, but hands over
		// the copies it has pulled so far: they may be the only live
		// ones of a write whose holders went while it pulled (SPEC.md,
		// "Membership changes").
		out.Status = StatusJoining
	}
	if batch <= 0 {
		batch = pager.DefaultBatchSize
	}
	var keys []string
	for k, rec := range r.recs {
		if k.kind == m.Kind && k.key > m.Key && (!rec.store.Stamp().IsZero()) && inRanges(m.Ranges, r.pointOf(k, rec)) {
			keys = append(keys, k.key)
		}
	}
	slices.Sort(keys)
	size := 0
	for _, k := range keys {
		rec := r.recs[key{m.Kind, k}]
		cost := len(k) + 64
		if !m.Brief {
			cost += rec.bytes
		}
		if size > 0 && size+cost > batch {
			out.More = true
			break
		}
		cp := Record{Key: k, Accepted: rec.accepted, Stamp: rec.store.Stamp()}
		if !m.Brief {
			cp.Pages = rec.store.Pages()
		}
		out.Records = append(out.Records, cp)
		size += cost
	}
}

// Adopt installs rec as kind's copy unless the copy held is as new or
// newer (by accepted ballot, then stamp). It reports whether it did.
func (r *Replica) Adopt(kind string, rec Record) (bool, error) {
	if have, ok := r.Get(kind, rec.Key); ok && !have.Less(State{Accepted: rec.Accepted, Stamp: rec.Stamp}) {
		return false, nil
	}
	promised := Ballot{}
	if old, ok := r.recs[key{kind, rec.Key}]; ok {
		promised = old.promised
	}
	if err := r.Install(kind, rec.Key, State{Accepted: rec.Accepted, Stamp: rec.Stamp}, rec.Pages); err != nil {
		return false, err
	}
	nr := r.recs[key{kind, rec.Key}]
	if nr.promised.Compare(promised) < 0 {
		nr.promised = promised
	}
	if nr.promised.Compare(rec.Accepted) < 0 {
		r.raisePromise(nr, kind, rec.Key, rec.Accepted)
	}
	return true, nil
}

func inRanges(rs []Range, p uint64) bool {
	for _, r := range rs {
		if r.Contains(p) {
			return true
		}
	}
	return false
}

// Held lists the keys of kind this replica holds a committed copy of, with
// whether the copy has a page under marker (a runtime's bookkeeping page,
// e.g. "ended for good").
func (r *Replica) Held(kind, marker string) (keys []string, marked []bool) {
	for k, rec := range r.recs {
		if k.kind != kind || rec.store.Stamp().IsZero() {
			continue
		}
		_, has := rec.store.Get(marker)
		keys = append(keys, k.key)
		marked = append(marked, has)
	}
	return keys, marked
}

package replica

import (
	"errors"
	"fmt"

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
	recs  map[key]*record
	bytes int // page bytes held, all records
}

type key struct{ kind, key string }

// record is one actor's copy.
type record struct {
	promised Ballot
	accepted Ballot
	store    *pager.Store
	bytes    int
}

// NewReplica returns an empty replica side.
func NewReplica() *Replica { return &Replica{recs: map[key]*record{}} }

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
// nothing. batch bounds the parts of a fetch reply.
func (r *Replica) Handle(m *Msg, batch int) *Msg {
	out := &Msg{Op: m.Op.reply(), Kind: m.Kind, Key: m.Key, Ballot: m.Ballot, Part: m.Part}
	if out.Op == 0 {
		out.Op, out.Status, out.Reason = OpAck, StatusCorrupt, fmt.Sprintf("replica: %v is not a request", m.Op)
		return out
	}
	if m.Ballot.IsZero() || (m.Op == OpCommit && m.Delta == nil) {
		out.Status, out.Reason = StatusCorrupt, "replica: request without a ballot or a commit without a delta"
		return out
	}
	rec, known := r.recs[key{m.Kind, m.Key}]
	if !known {
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
		rec.promised = m.Ballot
	case OpCommit:
		rec.promised = m.Ballot
		r.commit(rec, m, out)
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

func (r *Replica) commit(rec *record, m *Msg, out *Msg) {
	published, err := rec.store.Apply(*m.Delta)
	switch {
	case errors.Is(err, pager.ErrNeedFull), errors.Is(err, pager.ErrStaleOwner):
		// The delta was not built on this copy's state (it missed a
		// commit, or holds an orphan of a failed one): a full page set
		// heals it.
		out.Status = StatusNeedFull
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

package pager

import (
	"fmt"
	"slices"
	"strings"
)

// Store is the replica side of paged state for one actor: the page set of
// the last published commit and its stamp. It applies deltas under the basis
// rule and assembles multi-part commits, publishing a commit only when its
// last part arrived. A Store is a pure data structure (no I/O, no clock) and
// is not safe for concurrent use.
type Store struct {
	stamp   Stamp
	pages   map[string]Page
	bytes   int // sum of len(Key)+len(Data) over pages
	partial *partial
}

// partial collects the parts of a commit not yet complete.
type partial struct {
	stamp, basis Stamp
	full         bool
	parts        []Delta
	got          []bool
	n            int
}

// NewStore returns an empty store (zero stamp: nothing committed).
func NewStore() *Store { return &Store{pages: map[string]Page{}} }

// Stamp returns the stamp of the published commit (zero when empty).
func (s *Store) Stamp() Stamp { return s.stamp }

// Len returns the number of published pages.
func (s *Store) Len() int { return len(s.pages) }

// Bytes returns the size of the published pages: the sum of their keys'
// and data's lengths.
func (s *Store) Bytes() int { return s.bytes }

// Get returns the published page under key.
func (s *Store) Get(key string) (Page, bool) {
	p, ok := s.pages[key]
	return p, ok
}

// Apply applies one delta part, checked against the store's stamp (the basis
// rule, run on every part so a stale owner fails fast):
//
//   - d.Stamp equal to the store's stamp: a duplicate of the published
//     commit, acknowledged without effect (published is true);
//   - d Full: accepted whatever the store holds; once complete it replaces
//     every page (the replication layer decides who may send one);
//   - store newer than d.Basis: ErrStaleOwner (the store holds a commit the
//     sender did not build on: another owner's, or an orphan of a failed
//     commit);
//   - store older than d.Basis: ErrNeedFull (the store missed a commit; the
//     owner must resend the full page set);
//   - otherwise the part is accepted.
//
// Parts of one commit may arrive in any order; published reports whether
// this part completed the commit and made it visible. A part of another
// commit discards an incomplete one. Refusals leave the store unchanged.
func (s *Store) Apply(d Delta) (published bool, err error) {
	if d.Stamp.Compare(d.Basis) <= 0 {
		return false, fmt.Errorf("%w: stamp %v not newer than basis %v", ErrCorrupt, d.Stamp, d.Basis)
	}
	if d.Stamp == s.stamp {
		return true, nil
	}
	if n := d.parts(); d.Part < 0 || d.Part >= n || n > MaxParts {
		return false, fmt.Errorf("%w: part %d of %d", ErrCorrupt, d.Part, n)
	}
	switch c := s.stamp.Compare(d.Basis); {
	case d.Full:
		// A full page set replaces whatever the store holds, an orphan
		// of a failed commit included: deciding whether its sender may
		// write is the replication layer's fencing (ballots), not the
		// basis rule's.
	case c > 0:
		return false, fmt.Errorf("%w: store at %v, delta basis %v", ErrStaleOwner, s.stamp, d.Basis)
	case c < 0:
		return false, fmt.Errorf("%w: store at %v, delta basis %v", ErrNeedFull, s.stamp, d.Basis)
	}
	n := d.parts()
	if n == 1 {
		s.partial = nil
		s.publish([]Delta{d})
		return true, nil
	}
	pp := s.partial
	if pp == nil || pp.stamp != d.Stamp || pp.basis != d.Basis || pp.full != d.Full || len(pp.parts) != n {
		pp = &partial{stamp: d.Stamp, basis: d.Basis, full: d.Full, parts: make([]Delta, n), got: make([]bool, n)}
		s.partial = pp
	}
	if !pp.got[d.Part] {
		pp.got[d.Part] = true
		pp.n++
	}
	pp.parts[d.Part] = d
	if pp.n < n {
		return false, nil
	}
	s.partial = nil
	s.publish(pp.parts)
	return true, nil
}

// publish applies the complete parts of one commit.
func (s *Store) publish(parts []Delta) {
	d0 := parts[0]
	if d0.Full {
		s.pages = map[string]Page{}
		s.bytes = 0
	}
	// Drops first: a key both dropped and written by one commit is written.
	for _, d := range parts {
		for _, k := range d.Dropped {
			s.remove(k)
		}
	}
	for _, d := range parts {
		for _, p := range d.Pages {
			if p.Stamp.IsZero() {
				p.Stamp = d.Stamp
			}
			if old, ok := s.pages[p.Key]; ok {
				s.bytes -= len(old.Key) + len(old.Data) // replaced in place
			}
			s.pages[p.Key] = p
			s.bytes += len(p.Key) + len(p.Data)
		}
	}
	s.stamp = d0.Stamp
}

func (s *Store) remove(k string) {
	if old, ok := s.pages[k]; ok {
		s.bytes -= len(old.Key) + len(old.Data)
		delete(s.pages, k)
	}
}

// Pending reports whether an incomplete multi-part commit is buffered.
func (s *Store) Pending() bool { return s.partial != nil }

// Listing is what a store holds: its stamp and its pages without their bytes,
// sorted by key. Activation and read repair compare listings.
type Listing struct {
	Stamp Stamp      // the store's published stamp
	Pages []PageInfo // its pages, sorted by key
}

// List returns the store's listing.
func (s *Store) List() Listing {
	l := Listing{Stamp: s.stamp, Pages: make([]PageInfo, 0, len(s.pages))}
	for _, p := range s.pages {
		l.Pages = append(l.Pages, PageInfo{Key: p.Key, Stamp: p.Stamp, Size: len(p.Data)})
	}
	slices.SortFunc(l.Pages, func(a, b PageInfo) int { return strings.Compare(a.Key, b.Key) })
	return l
}

// Pages returns every published page, sorted by key.
func (s *Store) Pages() []Page {
	out := make([]Page, 0, len(s.pages))
	for _, p := range s.pages {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Page) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Fetch returns the published pages under keys, in that order; absent keys
// are skipped. A new owner fetches what Diverge says it lacks.
func (s *Store) Fetch(keys []string) []Page {
	out := make([]Page, 0, len(keys))
	for _, k := range keys {
		if p, ok := s.pages[k]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Diverge compares a listing have with the authoritative listing want and
// returns the keys have must fetch (absent from have, or held at another
// stamp) and the keys it must drop (absent from want). Two pages with one key
// and one stamp hold the same bytes, since a stamp names one commit.
//
// A new owner calls it with what it already holds (a replica's listing, or
// an empty one) against the adopted replica's listing and fetches only the
// missing pages; reactivating where a current replica lives fetches nothing.
func Diverge(have, want Listing) (fetch, drop []string) {
	held := make(map[string]Stamp, len(have.Pages))
	for _, p := range have.Pages {
		held[p.Key] = p.Stamp
	}
	for _, p := range want.Pages {
		if st, ok := held[p.Key]; !ok || st != p.Stamp {
			fetch = append(fetch, p.Key)
		}
		delete(held, p.Key)
	}
	for k := range held {
		drop = append(drop, k)
	}
	slices.Sort(drop)
	return fetch, drop
}

// Since builds the delta that brings a store at basis to s's published
// commit when keys names every page written or dropped by the commits
// between the two (the union of their Pages' and Dropped's keys, in any
// order, repeats allowed): the pages of keys s holds, each with its own
// stamp, and the rest as drops. It is the sum of those commits' deltas
// without keeping them: a page written twice travels once, at its last
// value, and a page written and then dropped travels as a drop. The store
// at basis accepts it under the basis rule, and no other does. It returns
// the empty delta (Stamp == Basis) when basis is s's stamp.
func (s *Store) Since(basis Stamp, keys []string) Delta {
	d := Delta{Stamp: s.stamp, Basis: basis}
	if basis == s.stamp {
		return d
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if p, ok := s.pages[k]; ok {
			d.Pages = append(d.Pages, p)
		} else {
			d.Dropped = append(d.Dropped, k)
		}
	}
	return d
}

// Catchup builds the delta that brings a lagging store, whose listing is lag,
// to s's published commit: basis lag.Stamp, stamp s.Stamp(), and exactly the
// pages where the two diverge (each with its own stamp) plus the drops. The
// lagging store accepts it under the basis rule. The delta may hold no
// page at all (the lagging store only missed commits that cancelled out)
// and must still be sent, since it moves the stamp; only when lag is current
// (Stamp == Basis) is there nothing to send. It returns ErrStaleOwner when
// lag is newer than s.
func (s *Store) Catchup(lag Listing) (Delta, error) {
	switch c := lag.Stamp.Compare(s.stamp); {
	case c == 0:
		return Delta{Stamp: s.stamp, Basis: s.stamp}, nil
	case c > 0:
		return Delta{}, fmt.Errorf("%w: lagging listing at %v is newer than %v", ErrStaleOwner, lag.Stamp, s.stamp)
	}
	fetch, drop := Diverge(lag, s.List())
	return Delta{Stamp: s.stamp, Basis: lag.Stamp, Pages: s.Fetch(fetch), Dropped: drop}, nil
}

package pager

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"
)

// Tracker is the owner side of paged state for one actor activation: it
// remembers the committed page set (per page: its stamp; per field what is
// needed to detect a change) and turns the state left by a handler into a
// Delta against it.
//
// The cycle after each handler is Prepare, then Commit once replicas
// accepted the delta, or Rollback when the commit failed. A Tracker is not
// safe for concurrent use; an activation drives it from its one goroutine.
type Tracker struct {
	schema  *Schema
	cfg     Config
	stamp   Stamp
	fields  []fieldState
	pending *Pending
}

// fieldValue is what change detection keeps of one field's value: the
// committed one in fieldState, the prepared one in fieldUpdate.
type fieldValue struct {
	data   []byte // Integral: the encoding, nil when the page is absent
	val    any    // Integral with fastEq: the value
	hasVal bool
	flat   []byte // Integral with flat: copy of the slice's memory
	isNil  bool   // Integral with flat: the slice was nil
	isFlat bool   // flat and isNil are set
	id     any    // Tracked: identity of the map
	mark   Mark   // Paged: the pager's mark of the state
}

// fieldState is the committed state of one field.
type fieldState struct {
	fieldValue
	stamp Stamp            // Integral: stamp of the committed page
	keys  map[string]Stamp // Tracked, Paged: committed sub-keys and their stamps
}

// NewTracker builds a tracker with default limits for the struct type t (or
// pointer to struct). See NewSchema for the errors.
func NewTracker(t reflect.Type) (*Tracker, error) {
	s, err := NewSchema(t)
	if err != nil {
		return nil, err
	}
	return s.NewTracker(nil)
}

// NewTracker builds a tracker for the schema's type; a nil cfg means
// DefaultConfig(). The tracker starts with nothing committed (zero Stamp).
func (s *Schema) NewTracker(cfg *Config) (*Tracker, error) {
	c := DefaultConfig()
	if cfg != nil {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		c = cfg.withDefaults()
	}
	t := &Tracker{schema: s, cfg: c}
	t.reset()
	return t, nil
}

func (t *Tracker) reset() {
	t.fields = make([]fieldState, len(t.schema.fields))
	for i, f := range t.schema.fields {
		if f.regime != Integral {
			t.fields[i].keys = map[string]Stamp{}
		}
	}
	t.pending = nil
	t.stamp = Stamp{}
}

// Schema returns the tracker's schema.
func (t *Tracker) Schema() *Schema { return t.schema }

// Stamp returns the stamp of the last committed delta (zero before the first).
func (t *Tracker) Stamp() Stamp { return t.stamp }

// Pending is a prepared commit: its Delta, and what Commit or Rollback need.
type Pending struct {
	// Delta holds the changed pages and dropped keys under the prepared stamp,
	// with Basis the tracker's committed stamp. An empty Delta (Empty()) is
	// not to be sent: nothing changed.
	Delta   Delta
	t       *Tracker
	state   reflect.Value // the struct (addressable)
	updates []fieldUpdate
}

// fieldUpdate is what a pending commit changes in one field's state.
type fieldUpdate struct {
	fieldValue
	changed bool
	set     []string // sub-keys written
	del     []string // sub-keys dropped
	replace bool     // sub-keys not in set are gone (tracked full re-page)
	marks   any      // tracked marks taken, given back on rollback
	tm      trackedMap
}

func (t *Tracker) structValue(state any) (reflect.Value, error) {
	v := reflect.ValueOf(state)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Type() != t.schema.typ {
		return reflect.Value{}, fmt.Errorf("%w: got %T, want *%s", ErrWrongType, state, t.schema.typ)
	}
	return v.Elem(), nil
}

// wholeField is the sub-keys an integral field's update names: its one
// page. Shared and never written (capacity 1: an append copies).
var wholeField = []string{""}[:1:1]

func pageKey(field, sub string) string { return field + "/" + sub }

// Prepare computes the delta from the committed page set to state (a pointer
// to the schema's struct) under stamp, which must be newer than Stamp().
//
// It detects every change: integral fields are compared by value or
// re-encoded and byte-compared, tracked maps report their marked keys (the
// marks move into the pending commit), pagers diff against their committed
// mark. A page over Config.MaxPageSize fails with *PageTooLargeError and
// leaves the tracker and the marks exactly as they were. At most one commit
// may be pending (ErrPending).
func (t *Tracker) Prepare(state any, stamp Stamp) (*Pending, error) {
	if t.pending != nil {
		return nil, ErrPending
	}
	sv, err := t.structValue(state)
	if err != nil {
		return nil, err
	}
	if stamp.Compare(t.stamp) <= 0 {
		return nil, fmt.Errorf("pager: stamp %v is not newer than the committed %v", stamp, t.stamp)
	}
	p := &Pending{t: t, state: sv, updates: make([]fieldUpdate, len(t.schema.fields))}
	p.Delta = Delta{Stamp: stamp, Basis: t.stamp}
	for i := range t.schema.fields {
		if err := t.prepareField(p, i, sv.Field(t.schema.fields[i].index)); err != nil {
			p.giveBack()
			return nil, err
		}
	}
	t.pending = p
	return p, nil
}

func (t *Tracker) checkSize(key string, data []byte) error {
	if len(data) > t.cfg.MaxPageSize {
		return &PageTooLargeError{Key: key, Size: len(data), Limit: t.cfg.MaxPageSize}
	}
	return nil
}

func (t *Tracker) prepareField(p *Pending, i int, fv reflect.Value) error {
	f := &t.schema.fields[i]
	st := &t.fields[i]
	u := &p.updates[i]
	switch f.regime {
	case Integral:
		var cur any
		if f.fastEq {
			cur = fv.Interface()
			if st.hasVal && cur == st.val {
				return nil
			}
		}
		if f.flat {
			view, isNil := flatView(fv)
			if st.isFlat && isNil == st.isNil && bytes.Equal(view, st.flat) {
				return nil
			}
			u.flat, u.isNil, u.isFlat = bytes.Clone(view), isNil, true
		}
		// The zero value is told by its encoding, not reflect's IsZero,
		// which calls -0.0 zero: its page would be dropped and the sign lost.
		if !f.fastEq {
			cur = fv.Interface()
		}
		data, same, err := compareEncoded(cur, st.data)
		if err != nil {
			return fmt.Errorf("pager: field %s: %w", f.goName, err)
		}
		if !same && bytes.Equal(data, f.zero) {
			data, same = nil, st.data == nil
		}
		if err := t.checkSize(f.key, data); err != nil {
			return err
		}
		if f.fastEq {
			u.val, u.hasVal = cur, true
		} else {
			u.val, u.hasVal = nil, false
		}
		if same || sameDecoded(f, st.data, data, fv) {
			// Unchanged bytes: only refresh the compared value.
			u.data, u.changed = st.data, true
			return nil
		}
		u.changed, u.data = true, data
		if data == nil {
			u.del = wholeField
			p.Delta.Dropped = append(p.Delta.Dropped, f.key)
		} else {
			u.set = wholeField
			p.Delta.Pages = append(p.Delta.Pages, Page{Key: f.key, Data: data})
		}
	case Tracked:
		tm := fv.Addr().Interface().(trackedMap)
		id := tm.tmIdentity()
		d, err := tm.tmDiff(id != st.id)
		if err != nil {
			return fmt.Errorf("pager: field %s: %w", f.goName, err)
		}
		u.tm, u.marks, u.changed, u.id = tm, d.marks, true, id
		if err := t.addSubPages(p, f, st, u, d.pages, d.absent, d.full); err != nil {
			return err
		}
	case Paged:
		pg, isNil := pagerOf(f, fv)
		var pd PagerDiff
		if !isNil {
			var err error
			if pd, err = pg.PageDiff(st.mark); err != nil {
				return fmt.Errorf("pager: field %s: %w", f.goName, err)
			}
		}
		u.changed, u.mark = true, pd.Mark
		if err := t.addSubPages(p, f, st, u, pd.Pages, pd.Dropped, isNil || st.mark == nil); err != nil {
			return err
		}
	}
	return nil
}

// pagerOf returns the field's Pager, and whether the field is a nil pointer
// (the zero value: no pages).
func pagerOf(f *field, fv reflect.Value) (Pager, bool) {
	if f.ptrPgr {
		return fv.Addr().Interface().(Pager), false
	}
	if fv.Kind() == reflect.Pointer && fv.IsNil() {
		return nil, true
	}
	return fv.Interface().(Pager), false
}

// addSubPages records sub-pages and drops of a Tracked or Paged field. With
// full, pages is the field's complete set: every committed sub-key not in it
// is dropped.
func (t *Tracker) addSubPages(p *Pending, f *field, st *fieldState, u *fieldUpdate, pages []SubPage, drops []string, full bool) error {
	for _, sp := range pages {
		key := pageKey(f.key, sp.Key)
		if err := t.checkSize(key, sp.Data); err != nil {
			return err
		}
		p.Delta.Pages = append(p.Delta.Pages, Page{Key: key, Data: sp.Data})
		u.set = append(u.set, sp.Key)
	}
	if full {
		u.replace = true
		present := make(map[string]struct{}, len(pages))
		for _, sp := range pages {
			present[sp.Key] = struct{}{}
		}
		for sub := range st.keys {
			if _, ok := present[sub]; !ok {
				drops = append(drops, sub)
			}
		}
		drops = dedupe(drops)
	}
	written := make(map[string]struct{}, len(pages))
	for _, sp := range pages {
		written[sp.Key] = struct{}{}
	}
	for _, sub := range drops {
		if _, ok := st.keys[sub]; !ok {
			continue // never committed: nothing to drop
		}
		if _, ok := written[sub]; ok {
			continue // rewritten by this commit
		}
		u.del = append(u.del, sub)
		p.Delta.Dropped = append(p.Delta.Dropped, pageKey(f.key, sub))
	}
	return nil
}

func dedupe(s []string) []string {
	seen := make(map[string]struct{}, len(s))
	out := s[:0]
	for _, x := range s {
		if _, ok := seen[x]; !ok {
			seen[x] = struct{}{}
			out = append(out, x)
		}
	}
	return out
}

// giveBack returns the tracked marks taken by p to their maps.
func (p *Pending) giveBack() {
	for i := range p.updates {
		if u := &p.updates[i]; u.tm != nil && u.marks != nil {
			u.tm.tmGiveBack(u.marks)
		}
	}
}

// Commit makes p the committed page set: the next delta is computed against
// it, with basis p.Delta.Stamp. Committing an empty delta keeps the
// committed stamp (nothing was sent) and only discards the taken marks.
func (t *Tracker) Commit(p *Pending) error {
	if p == nil || t.pending != p {
		return ErrNotPending
	}
	t.pending = nil
	stamp := p.Delta.Stamp
	for i := range p.updates {
		u := &p.updates[i]
		if !u.changed {
			continue
		}
		st := &t.fields[i]
		switch t.schema.fields[i].regime {
		case Integral:
			st.val, st.hasVal = u.val, u.hasVal
			if u.isFlat {
				st.flat, st.isNil, st.isFlat = u.flat, u.isNil, true
			}
			if len(u.set) > 0 || len(u.del) > 0 {
				st.data, st.stamp = u.data, stamp
			}
		case Tracked, Paged:
			st.id, st.mark = u.id, u.mark
			for _, sub := range u.del {
				delete(st.keys, sub)
			}
			for _, sub := range u.set {
				st.keys[sub] = stamp
			}
		}
	}
	if !p.Delta.Empty() {
		t.stamp = stamp
	}
	return nil
}

// Rollback abandons p: the committed page set is unchanged and every tracked
// mark p took is restored, so the next Prepare ships the same pages again
// (plus whatever changed since).
func (t *Tracker) Rollback(p *Pending) error {
	if p == nil || t.pending != p {
		return ErrNotPending
	}
	t.pending = nil
	p.giveBack()
	return nil
}

// Parts returns p.Delta split at the tracker's Config.BatchSize, ready to
// send in order (a single part when it fits).
func (p *Pending) Parts() []Delta { return p.Delta.Split(p.t.cfg.BatchSize) }

// Full returns the complete page set as of p's stamp, for a replica that
// answered ErrNeedFull: Full is set, Basis is p's basis, and each page keeps
// the stamp of the commit that wrote it (zero for pages written by p). It
// reads tracked maps and pagers live, so call it before the state is mutated
// again.
func (p *Pending) Full() (Delta, error) {
	return p.t.full(p.state, p, p.Delta.Stamp, p.Delta.Basis)
}

// Full returns the committed page set as a full delta (Stamp and Basis both
// the committed stamp), to seed a replica. It reads tracked maps and pagers
// of state live, so call it only while state equals the committed state
// (between a Commit and the next handler).
func (t *Tracker) Full(state any) (Delta, error) {
	sv, err := t.structValue(state)
	if err != nil {
		return Delta{}, err
	}
	return t.full(sv, nil, t.stamp, t.stamp)
}

func (t *Tracker) full(sv reflect.Value, p *Pending, stamp, basis Stamp) (Delta, error) {
	d := Delta{Stamp: stamp, Basis: basis, Full: true}
	for i := range t.schema.fields {
		f := &t.schema.fields[i]
		st := &t.fields[i]
		var u *fieldUpdate
		if p != nil {
			u = &p.updates[i]
		}
		fresh := map[string]bool{}
		if u != nil {
			for _, s := range u.set {
				fresh[s] = true
			}
		}
		switch f.regime {
		case Integral:
			data, ps := st.data, st.stamp
			if u != nil && (len(u.set) > 0 || len(u.del) > 0) {
				data, ps = u.data, Stamp{}
			}
			if data != nil {
				d.Pages = append(d.Pages, Page{Key: f.key, Data: data, Stamp: ps})
			}
			continue
		case Tracked:
			pages, err := sv.Field(f.index).Addr().Interface().(trackedMap).tmPages()
			if err != nil {
				return Delta{}, fmt.Errorf("pager: field %s: %w", f.goName, err)
			}
			t.appendFull(&d, f, st, fresh, pages)
		case Paged:
			pg, isNil := pagerOf(f, sv.Field(f.index))
			if isNil {
				continue
			}
			pd, err := pg.PageDiff(nil)
			if err != nil {
				return Delta{}, fmt.Errorf("pager: field %s: %w", f.goName, err)
			}
			t.appendFull(&d, f, st, fresh, pd.Pages)
		}
	}
	return d, nil
}

func (t *Tracker) appendFull(d *Delta, f *field, st *fieldState, fresh map[string]bool, pages []SubPage) {
	for _, sp := range pages {
		ps := st.keys[sp.Key]
		if fresh[sp.Key] {
			ps = Stamp{}
		}
		d.Pages = append(d.Pages, Page{Key: pageKey(f.key, sp.Key), Data: sp.Data, Stamp: ps})
	}
}

// Restore rebuilds state (a pointer to the schema's struct) from a page set
// committed at stamp — what an activating owner fetched from its replicas —
// and makes it the tracker's committed page set. Every state field is reset
// first: a field without pages is left at its zero value. Pages of unknown
// fields are ignored (a field removed from the type); malformed pages fail
// with ErrCorrupt. Any pending commit is discarded.
func (t *Tracker) Restore(state any, stamp Stamp, pages []Page) error {
	sv, err := t.structValue(state)
	if err != nil {
		return err
	}
	t.reset()
	type group struct {
		whole *Page
		subs  []SubPage
		stamp map[string]Stamp
	}
	groups := make([]group, len(t.schema.fields))
	for i := range pages {
		pg := &pages[i]
		name, sub, hasSub := strings.Cut(pg.Key, "/")
		fi, ok := t.schema.byKey[name]
		if !ok {
			continue
		}
		f := &t.schema.fields[fi]
		ps := pg.Stamp
		if ps.IsZero() {
			ps = stamp
		}
		if (f.regime == Integral) == hasSub {
			return fmt.Errorf("%w: page %q does not fit field %s (%s)", ErrCorrupt, pg.Key, f.goName, f.regime)
		}
		g := &groups[fi]
		if !hasSub {
			cp := *pg
			cp.Stamp = ps
			g.whole = &cp
			continue
		}
		g.subs = append(g.subs, SubPage{Key: sub, Data: pg.Data})
		if g.stamp == nil {
			g.stamp = map[string]Stamp{}
		}
		g.stamp[sub] = ps
	}
	for i := range t.schema.fields {
		f := &t.schema.fields[i]
		st := &t.fields[i]
		fv := sv.Field(f.index)
		fv.SetZero()
		g := &groups[i]
		switch f.regime {
		case Integral:
			if g.whole != nil {
				if err := decodeValue(g.whole.Data, fv.Addr().Interface()); err != nil {
					t.reset()
					return fmt.Errorf("%w: field %s: %v", ErrCorrupt, f.goName, err)
				}
				st.data, st.stamp = g.whole.Data, g.whole.Stamp
			}
			if f.fastEq {
				st.val, st.hasVal = fv.Interface(), true
			}
			if f.flat {
				view, isNil := flatView(fv)
				st.flat, st.isNil, st.isFlat = bytes.Clone(view), isNil, true
			}
		case Tracked:
			tm := fv.Addr().Interface().(trackedMap)
			if err := tm.tmLoad(g.subs); err != nil {
				t.reset()
				return fmt.Errorf("pager: field %s: %w", f.goName, err)
			}
			st.id = tm.tmIdentity()
		case Paged:
			if len(g.subs) == 0 {
				continue // zero value: no mark, next diff pages it in full
			}
			if fv.Kind() == reflect.Pointer {
				fv.Set(reflect.New(fv.Type().Elem()))
			}
			var pg Pager
			if f.ptrPgr {
				pg = fv.Addr().Interface().(Pager)
			} else {
				pg = fv.Interface().(Pager)
			}
			mark, err := pg.PageLoad(g.subs)
			if err != nil {
				t.reset()
				return fmt.Errorf("pager: field %s: %w", f.goName, err)
			}
			st.mark = mark
		}
		for sub, ps := range g.stamp {
			st.keys[sub] = ps
		}
	}
	t.stamp = stamp
	return nil
}

// sameDecoded reports whether the committed bytes of a map-holding integral
// field decode to a value deeply equal to the current one: a map's encoding
// order varies between encodes, so differing bytes do not prove a change.
// Any doubt (decode error, NaN, nil against empty) answers false, which only
// costs a page.
func sameDecoded(f *field, committed, data []byte, fv reflect.Value) bool {
	if !f.hasMap || committed == nil || data == nil || len(committed) != len(data) {
		return false
	}
	old := reflect.New(f.typ)
	if err := decodeValue(committed, old.Interface()); err != nil {
		return false
	}
	return sameBits(old.Elem(), fv)
}

// sameBits is reflect.DeepEqual with floats compared by their bits:
// DeepEqual holds 0.0 and -0.0 equal, which here would miss a change (a
// false negative), while NaN against the same NaN only costs a page there.
// Anything it cannot compare (funcs, channels) answers false.
func sameBits(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Complex64, reflect.Complex128:
		x, y := a.Complex(), b.Complex()
		return math.Float64bits(real(x)) == math.Float64bits(real(y)) && math.Float64bits(imag(x)) == math.Float64bits(imag(y))
	case reflect.String:
		return a.String() == b.String()
	case reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return false
		}
		fallthrough
	case reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameBits(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			if !sameBits(it.Value(), b.MapIndex(it.Key())) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameBits(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameBits(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return false
}

// flatView returns the memory of a slice of plain scalars (no copy) and
// whether the slice is nil.
func flatView(v reflect.Value) ([]byte, bool) {
	if v.IsNil() {
		return nil, true
	}
	n := v.Len() * int(v.Type().Elem().Size())
	if n == 0 {
		return []byte{}, false
	}
	return unsafe.Slice((*byte)(v.UnsafePointer()), n), false
}

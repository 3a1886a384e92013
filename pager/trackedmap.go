package pager

import (
	"fmt"
	"iter"
	"maps"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// TrackedMap is a map whose every mutator marks the keys it touches, so a
// commit ships one page per touched entry instead of the whole map. Use it as
// a state field by value:
//
//	type Inventory struct {
//		Stock pager.TrackedMap[string, int]
//	}
//
// The zero value is an empty map ready to use. The value type V must be
// immutable (numbers, strings, bools, time.Time, and arrays and structs of
// those): a V holding a slice, map, pointer or interface could be mutated
// without a mutator seeing it, so the schema refuses it (*SchemaError naming
// the field); such a map belongs in an integral field.
//
// Each entry's page is keyed by its key's encoding, so the key type K must
// encode one to one: strings, integers, bools, and arrays and structs of
// those with exported fields only. Interfaces, pointers, floats (every NaN
// is a key of its own), structs with unexported fields and types with their
// own msgpack encoding are refused, since two keys could share a page.
//
// Replacing the whole field (st.Stock = pager.TrackedMap[string, int]{} or
// another map) is detected by identity and re-arms tracking: the next commit
// pages the new map in full and drops the old entries. A TrackedMap value
// copied by assignment shares its entries and marks with the original (like
// a Go map); use Clone for an independent copy.
//
// It encodes with msgpack as a plain map, so a TrackedMap field is
// wire-compatible with a map field. A TrackedMap is not safe for concurrent
// use (an actor runs one handler at a time).
type TrackedMap[K comparable, V any] struct {
	s *tmState[K, V]
}

type tmState[K comparable, V any] struct {
	m     map[K]V
	dirty map[K]struct{}
	all   bool // cleared or rebuilt: the next diff pages the map in full
}

// TrackedMapOf returns a TrackedMap holding a copy of m.
func TrackedMapOf[K comparable, V any](m map[K]V) TrackedMap[K, V] {
	return TrackedMap[K, V]{s: &tmState[K, V]{m: maps.Clone(m), dirty: map[K]struct{}{}, all: true}}
}

func (t *TrackedMap[K, V]) state() *tmState[K, V] {
	if t.s == nil {
		t.s = &tmState[K, V]{m: map[K]V{}, dirty: map[K]struct{}{}, all: true}
	}
	if t.s.m == nil {
		t.s.m = map[K]V{}
	}
	return t.s
}

// Get returns the value stored under k and whether it is present.
func (t *TrackedMap[K, V]) Get(k K) (V, bool) {
	if t.s == nil {
		var zero V
		return zero, false
	}
	v, ok := t.s.m[k]
	return v, ok
}

// Has reports whether k is present.
func (t *TrackedMap[K, V]) Has(k K) bool { _, ok := t.Get(k); return ok }

// Len returns the number of entries.
func (t *TrackedMap[K, V]) Len() int {
	if t.s == nil {
		return 0
	}
	return len(t.s.m)
}

// All iterates over the entries in unspecified order. Mutating the map while
// iterating is allowed with the same rules as a Go map.
func (t *TrackedMap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if t.s == nil {
			return
		}
		for k, v := range t.s.m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Keys iterates over the keys in unspecified order.
func (t *TrackedMap[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range t.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// Map returns a copy of the entries as a plain Go map.
func (t *TrackedMap[K, V]) Map() map[K]V {
	if t.s == nil {
		return map[K]V{}
	}
	return maps.Clone(t.s.m)
}

// Set stores v under k and marks k.
func (t *TrackedMap[K, V]) Set(k K, v V) {
	s := t.state()
	s.m[k] = v
	s.dirty[k] = struct{}{}
}

// SetAll stores every pair of seq, marking each key.
func (t *TrackedMap[K, V]) SetAll(seq iter.Seq2[K, V]) {
	s := t.state()
	for k, v := range seq {
		s.m[k] = v
		s.dirty[k] = struct{}{}
	}
}

// Delete removes k (if present) and marks it.
func (t *TrackedMap[K, V]) Delete(k K) {
	s := t.state()
	delete(s.m, k)
	s.dirty[k] = struct{}{}
}

// Update calls f with k's current value and presence and stores its result:
// keep == false deletes k. k is marked either way.
func (t *TrackedMap[K, V]) Update(k K, f func(old V, ok bool) (v V, keep bool)) {
	s := t.state()
	old, ok := s.m[k]
	v, keep := f(old, ok)
	if keep {
		s.m[k] = v
	} else {
		delete(s.m, k)
	}
	s.dirty[k] = struct{}{}
}

// Clear removes every entry; the next commit drops all of them.
func (t *TrackedMap[K, V]) Clear() {
	s := t.state()
	clear(s.m)
	clear(s.dirty)
	s.all = true
}

// Clone returns an independent copy holding the same entries. Assigning it
// to a state field re-pages the field in full at the next commit.
func (t *TrackedMap[K, V]) Clone() TrackedMap[K, V] {
	if t.s == nil {
		return TrackedMap[K, V]{}
	}
	return TrackedMapOf(t.s.m)
}

// EncodeMsgpack encodes the entries as a plain msgpack map.
func (t TrackedMap[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error {
	if t.s == nil {
		return enc.EncodeMapLen(0)
	}
	return enc.Encode(t.s.m)
}

// DecodeMsgpack decodes a plain msgpack map, replacing the receiver's
// state (a new identity: the next commit re-pages the field in full).
func (t *TrackedMap[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error {
	m := map[K]V{}
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if m == nil {
		m = map[K]V{}
	}
	t.s = &tmState[K, V]{m: m, dirty: map[K]struct{}{}, all: true}
	return nil
}

// trackedMap is the tracker's view of any TrackedMap instantiation.
type trackedMap interface {
	tmIdentity() any
	tmTypes() (k, v reflect.Type)
	tmDiff(full bool) (tmDiff, error)
	tmGiveBack(marks any)
	tmPages() ([]SubPage, error)
	tmLoad(pages []SubPage) error
}

// tmDiff is what a TrackedMap reports to the tracker.
type tmDiff struct {
	full   bool      // pages is the complete entry set
	pages  []SubPage // touched (or all) present entries
	absent []string  // touched keys no longer present (sub-keys)
	marks  any       // the marks taken, for tmGiveBack
}

type tmMarks[K comparable] struct {
	dirty map[K]struct{}
	all   bool
}

func (t *TrackedMap[K, V]) tmIdentity() any {
	if t.s == nil {
		return nil
	}
	return t.s
}

func (t *TrackedMap[K, V]) tmTypes() (reflect.Type, reflect.Type) {
	return reflect.TypeFor[K](), reflect.TypeFor[V]()
}

func (t *TrackedMap[K, V]) tmDiff(full bool) (tmDiff, error) {
	if t.s == nil {
		return tmDiff{full: true}, nil
	}
	s := t.s
	mk := tmMarks[K]{dirty: s.dirty, all: s.all}
	s.dirty, s.all = map[K]struct{}{}, false
	d := tmDiff{full: full || mk.all, marks: mk}
	if d.full {
		pages, err := t.tmPages()
		if err != nil {
			t.tmGiveBack(mk)
			return tmDiff{}, err
		}
		d.pages = pages
		return d, nil
	}
	for k := range mk.dirty {
		sub, err := subKeyOf(k)
		if err != nil {
			t.tmGiveBack(mk)
			return tmDiff{}, err
		}
		v, ok := s.m[k]
		if !ok {
			d.absent = append(d.absent, sub)
			continue
		}
		data, err := encodeValue(v)
		if err != nil {
			t.tmGiveBack(mk)
			return tmDiff{}, err
		}
		d.pages = append(d.pages, SubPage{Key: sub, Data: data})
	}
	return d, nil
}

func (t *TrackedMap[K, V]) tmGiveBack(marks any) {
	mk, ok := marks.(tmMarks[K])
	if !ok || t.s == nil {
		return
	}
	for k := range mk.dirty {
		t.s.dirty[k] = struct{}{}
	}
	t.s.all = t.s.all || mk.all
}

func (t *TrackedMap[K, V]) tmPages() ([]SubPage, error) {
	if t.s == nil {
		return nil, nil
	}
	pages := make([]SubPage, 0, len(t.s.m))
	for k, v := range t.s.m {
		sub, err := subKeyOf(k)
		if err != nil {
			return nil, err
		}
		data, err := encodeValue(v)
		if err != nil {
			return nil, err
		}
		pages = append(pages, SubPage{Key: sub, Data: data})
	}
	return pages, nil
}

func (t *TrackedMap[K, V]) tmLoad(pages []SubPage) error {
	m := make(map[K]V, len(pages))
	for _, p := range pages {
		k, err := keyOfSub[K](p.Key)
		if err != nil {
			return err
		}
		var v V
		if err := decodeValue(p.Data, &v); err != nil {
			return fmt.Errorf("%w: entry %q: %v", ErrCorrupt, p.Key, err)
		}
		m[k] = v
	}
	t.s = &tmState[K, V]{m: m, dirty: map[K]struct{}{}}
	return nil
}

// subKeyOf renders a map key as a page sub-key: a key of a string kind is
// used as is, any other key by its msgpack encoding.
func subKeyOf[K comparable](k K) (string, error) {
	if rv := reflect.ValueOf(k); rv.Kind() == reflect.String {
		return rv.String(), nil
	}
	b, err := encodeValue(k)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func keyOfSub[K comparable](sub string) (K, error) {
	var k K
	if rv := reflect.ValueOf(&k).Elem(); rv.Kind() == reflect.String {
		rv.SetString(sub)
		return k, nil
	}
	if err := decodeValue([]byte(sub), &k); err != nil {
		return k, fmt.Errorf("%w: entry key %q: %v", ErrCorrupt, sub, err)
	}
	return k, nil
}

package collections

import (
	"context"
	"slices"

	"github.com/casty-go/casty/wire"
)

// Handlers of a map's, set's or multimap's shard. A set is a map whose
// values are empty; a multimap's entry holds its key's values as a sorted
// list of encodings.

// Put stores Value under Key; Found reports that Key was there.
func (s *shard) Put(_ context.Context, q req) (resp, error) {
	_, had := s.Entries.Get(q.Key)
	s.Entries.Set(q.Key, q.Value)
	if !had {
		s.sorted = nil
	}
	return resp{Found: had}, nil
}

// Get returns Key's value.
func (s *shard) Get(_ context.Context, q req) (resp, error) {
	v, ok := s.Entries.Get(q.Key)
	return resp{Value: v, Found: ok}, nil
}

// Remove deletes Key; Found reports that it was there.
func (s *shard) Remove(_ context.Context, q req) (resp, error) {
	if !s.Entries.Has(q.Key) {
		return resp{}, nil
	}
	s.Entries.Delete(q.Key)
	s.sorted = nil
	return resp{Found: true}, nil
}

// Contains reports whether Key is there.
func (s *shard) Contains(_ context.Context, q req) (resp, error) {
	return resp{Found: s.Entries.Has(q.Key)}, nil
}

// Size counts the entries.
func (s *shard) Size(context.Context, req) (resp, error) {
	return resp{N: int64(s.Entries.Len())}, nil
}

// Clear removes every entry and answers how many there were.
func (s *shard) Clear(context.Context, req) (resp, error) {
	n := s.Entries.Len()
	if n > 0 {
		s.Entries.Clear()
		s.sorted = nil
	}
	return resp{N: int64(n)}, nil
}

// Page lists up to N entries whose keys sort after Cursor ("": from the
// first; an encoding is never empty), in key order, keys and values
// alternating.
func (s *shard) Page(_ context.Context, q req) (resp, error) {
	n := int(q.N)
	if n <= 0 {
		n = pageSize
	}
	if s.sorted == nil || len(s.sorted) != s.Entries.Len() {
		// Sorted once per listing while the keys stay the same: a listing
		// of a shard costs one sort, not one per page.
		s.sorted = slices.Sorted(s.Entries.Keys())
	}
	i, found := slices.BinarySearch(s.sorted, q.Cursor)
	if found {
		i++
	}
	end := min(i+n, len(s.sorted))
	r := resp{More: end < len(s.sorted), List: make([]string, 0, 2*(end-i))}
	for _, k := range s.sorted[i:end] {
		v, _ := s.Entries.Get(k)
		r.List = append(r.List, k, v)
	}
	return r, nil
}

// pageSize is how many entries a listing fetches per call.
const pageSize = 256

// values decodes a multimap entry.
func values(enc string, ok bool) []string {
	if !ok || enc == "" {
		return nil
	}
	var vs []string
	if err := wire.Unmarshal([]byte(enc), &vs); err != nil {
		return nil
	}
	return vs
}

func (s *shard) setValues(key string, vs []string) {
	s.sorted = nil
	if len(vs) == 0 {
		s.Entries.Delete(key)
		return
	}
	b, _ := wire.Marshal(vs)
	s.Entries.Set(key, string(b))
}

// MultiPut adds Value to Key's values; Found reports it was there.
func (s *shard) MultiPut(_ context.Context, q req) (resp, error) {
	vs := values(s.Entries.Get(q.Key))
	i, found := slices.BinarySearch(vs, q.Value)
	if found {
		return resp{Found: true}, nil
	}
	s.setValues(q.Key, slices.Insert(vs, i, q.Value))
	return resp{}, nil
}

// MultiRemove removes Value from Key's values; Found reports it was there.
func (s *shard) MultiRemove(_ context.Context, q req) (resp, error) {
	vs := values(s.Entries.Get(q.Key))
	i, found := slices.BinarySearch(vs, q.Value)
	if !found {
		return resp{}, nil
	}
	s.setValues(q.Key, slices.Delete(vs, i, i+1))
	return resp{Found: true}, nil
}

// MultiRemoveKey removes Key with all its values and answers how many.
func (s *shard) MultiRemoveKey(_ context.Context, q req) (resp, error) {
	vs := values(s.Entries.Get(q.Key))
	if len(vs) > 0 {
		s.Entries.Delete(q.Key)
		s.sorted = nil
	}
	return resp{N: int64(len(vs))}, nil
}

// MultiContains reports whether Value is among Key's values, or with an
// empty Value (Has false) whether Key has any.
func (s *shard) MultiContains(_ context.Context, q req) (resp, error) {
	vs := values(s.Entries.Get(q.Key))
	if !q.Has {
		return resp{Found: len(vs) > 0}, nil
	}
	_, found := slices.BinarySearch(vs, q.Value)
	return resp{Found: found}, nil
}

// MultiGet lists up to N of Key's values sorting after Cursor ("": from
// the first).
func (s *shard) MultiGet(_ context.Context, q req) (resp, error) {
	vs := values(s.Entries.Get(q.Key))
	n := int(q.N)
	if n <= 0 {
		n = pageSize
	}
	i, found := slices.BinarySearch(vs, q.Cursor)
	if found {
		i++
	}
	end := min(i+n, len(vs))
	return resp{List: slices.Clone(vs[i:end]), More: end < len(vs)}, nil
}

// MultiSize counts the values of every key.
func (s *shard) MultiSize(context.Context, req) (resp, error) {
	var n int64
	for _, enc := range s.Entries.All() {
		n += int64(len(values(enc, true)))
	}
	return resp{N: n}, nil
}

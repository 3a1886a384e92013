package pager

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"pgregory.net/rapid"
)

// point is an immutable struct value for a TrackedMap.
type point struct {
	X, Y int
	L    string
}

// blob is a test Pager: a byte string paged per 4-byte chunk ("c<i>") plus
// its length ("len"); its mark is an exact copy of the committed bytes.
type blob struct {
	Data []byte
}

const chunk = 4

func (b *blob) pages(from []byte) map[string][]byte {
	out := map[string][]byte{}
	if len(from) == 0 {
		return out
	}
	out["len"] = []byte(strconv.Itoa(len(from)))
	for i := 0; i*chunk < len(from); i++ {
		end := min((i+1)*chunk, len(from))
		out["c"+strconv.Itoa(i)] = bytes.Clone(from[i*chunk : end])
	}
	return out
}

func (b *blob) PageDiff(prev Mark) (PagerDiff, error) {
	cur := b.pages(b.Data)
	var old map[string][]byte
	if prev != nil {
		old = b.pages(prev.([]byte))
	}
	var d PagerDiff
	for k, v := range cur {
		if ov, ok := old[k]; !ok || !bytes.Equal(ov, v) || prev == nil {
			d.Pages = append(d.Pages, SubPage{Key: k, Data: v})
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			d.Dropped = append(d.Dropped, k)
		}
	}
	d.Mark = bytes.Clone(b.Data)
	return d, nil
}

func (b *blob) PageLoad(pages []SubPage) (Mark, error) {
	b.Data = nil
	n := -1
	chunks := map[int][]byte{}
	for _, p := range pages {
		if p.Key == "len" {
			v, err := strconv.Atoi(string(p.Data))
			if err != nil {
				return nil, err
			}
			n = v
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(p.Key, "c"))
		if err != nil {
			return nil, err
		}
		chunks[i] = p.Data
	}
	if n < 0 {
		if len(pages) > 0 {
			return nil, fmt.Errorf("blob: no length page")
		}
		return nil, nil
	}
	for i := 0; i*chunk < n; i++ {
		b.Data = append(b.Data, chunks[i]...)
	}
	if len(b.Data) != n {
		return nil, fmt.Errorf("blob: %d bytes, want %d", len(b.Data), n)
	}
	return bytes.Clone(b.Data), nil
}

// testState mixes every regime.
type testState struct {
	Count  int
	Name   string
	Tags   []string
	Meta   map[string]string
	Scores TrackedMap[string, int]
	Pts    TrackedMap[int, point]
	Blob   blob
	Ratio  float64
	Series []float64
	hidden int //nolint:unused // transient: not state
}

// canon is a canonical rendering of a value for equality checks: fmt
// prints map keys sorted, tells nil from empty, and prints NaN stably.
// A *testState is normalised first (tracked maps as plain maps).
func canon(t rapid.TB, v any) string {
	t.Helper()
	if st, ok := v.(*testState); ok {
		blob := st.Blob.Data
		if len(blob) == 0 {
			blob = nil // the pager's zero value: no pages
		}
		v = struct {
			Count  int
			Name   string
			Tags   []string
			Meta   map[string]string
			Scores map[string]int
			Pts    map[int]point
			Blob   []byte
			Ratio  float64
			Series []float64
		}{st.Count, st.Name, st.Tags, st.Meta, st.Scores.Map(), st.Pts.Map(), blob, st.Ratio, st.Series}
	}
	return fmt.Sprintf("%#v", v)
}

func stamp(n int64) Stamp { return Stamp{Wall: n, Node: [16]byte{1}} }

// deliver sends a delta to a store the way replication would: split into
// parts of batch bytes, and on ErrNeedFull the full page set.
func deliver(t rapid.TB, s *Store, p *Pending, batch int) {
	t.Helper()
	err := applyAll(s, p.Delta.Split(batch))
	if err == nil {
		return
	}
	if !isNeedFull(err) {
		t.Fatalf("apply: %v", err)
	}
	full, ferr := p.Full()
	if ferr != nil {
		t.Fatalf("full: %v", ferr)
	}
	if err := applyAll(s, full.Split(batch)); err != nil {
		t.Fatalf("apply full: %v", err)
	}
}

func isNeedFull(err error) bool { return errors.Is(err, ErrNeedFull) }

func applyAll(s *Store, parts []Delta) error {
	for i, d := range parts {
		pub, err := s.Apply(d)
		if err != nil {
			return err
		}
		if pub != (i == len(parts)-1) {
			return fmt.Errorf("part %d of %d: published=%v", i, len(parts), pub)
		}
	}
	return nil
}

// restoreFrom rebuilds a fresh state from a store.
func restoreFrom(t rapid.TB, s *Store) *testState {
	t.Helper()
	tr, err := NewTracker(reflect.TypeFor[testState]())
	if err != nil {
		t.Fatal(err)
	}
	var st testState
	if err := tr.Restore(&st, s.Stamp(), s.Pages()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return &st
}

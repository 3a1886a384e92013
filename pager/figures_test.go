package pager

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The published figures: an in-process owner (a Tracker) and two replica
// Stores. "Bytes to 2 replicas" is twice the msgpack-encoded size of every
// part of the delta; the integral figure is twice the encoded state.

type mapState struct {
	Entries TrackedMap[string, int]
}

type threeFields struct {
	Counter int
	Notes   string
	Samples []float64
}

// owner drives one tracker and two replica stores.
type owner struct {
	tr       *Tracker
	replicas [2]*Store
	clock    int64
}

func newOwner(t rapid.TB, typ reflect.Type) *owner {
	tr, err := NewTracker(typ)
	if err != nil {
		t.Fatal(err)
	}
	return &owner{tr: tr, replicas: [2]*Store{NewStore(), NewStore()}}
}

// commit prepares, encodes, ships to both replicas and commits; it returns
// the bytes sent to the two replicas.
func (o *owner) commit(t rapid.TB, state any) int {
	o.clock++
	p, err := o.tr.Prepare(state, Stamp{Wall: o.clock, Node: [16]byte{7}})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	wire := 0
	if !p.Delta.Empty() {
		for _, part := range p.Delta.Split(DefaultBatchSize) {
			b, err := part.Encode()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range o.replicas {
				wire += len(b)
				d, err := DecodeDelta(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Apply(d); err != nil {
					t.Fatalf("apply: %v", err)
				}
			}
		}
	}
	if err := o.tr.Commit(p); err != nil {
		t.Fatal(err)
	}
	return wire
}

func integralBytes(t rapid.TB, state any) int {
	b, err := encodeValue(state)
	if err != nil {
		t.Fatal(err)
	}
	return 2 * len(b)
}

func newMapState(n int) *mapState {
	st := &mapState{}
	for i := range n {
		st.Entries.Set("key-"+strconv.Itoa(i), i)
	}
	return st
}

func newThreeFields() *threeFields {
	st := &threeFields{Counter: 1, Notes: strings.Repeat("casty ", 5462)} // 32 KiB
	st.Samples = make([]float64, 3640)                                    // ~32 KiB encoded
	for i := range st.Samples {
		st.Samples[i] = float64(i) + 0.1
	}
	return st
}

// TestFigureBytes checks the byte figures against their goals (the bars
// in BENCHMARKS.md, "Paged state").
func TestFigureBytes(t *testing.T) {
	type row struct {
		name           string
		wire, integral int
		bar            int
	}
	var rows []row

	ms := newMapState(100_000)
	o := newOwner(t, reflect.TypeFor[mapState]())
	o.commit(t, ms)
	ms.Entries.Set("key-4242", -1)
	rows = append(rows, row{"TrackedMap[string,int] 100k entries, 1 mutated", o.commit(t, ms), integralBytes(t, ms), 514})
	rows = append(rows, row{"TrackedMap 100k, no-op handler", o.commit(t, ms), integralBytes(t, ms), 0})

	tf := newThreeFields()
	o = newOwner(t, reflect.TypeFor[threeFields]())
	o.commit(t, tf)
	tf.Counter++
	rows = append(rows, row{"65 KB state of 3 fields, 1 int mutated", o.commit(t, tf), integralBytes(t, tf), 504})
	rows = append(rows, row{"65 KB state, no-op handler", o.commit(t, tf), integralBytes(t, tf), 0})

	for _, r := range rows {
		t.Logf("%-50s wire %6d B (bar %d B), integral %8d B", r.name, r.wire, r.bar, r.integral)
		if r.wire > r.bar {
			t.Errorf("%s: %d B to 2 replicas, over the %d B bar", r.name, r.wire, r.bar)
		}
	}
	if got := integralBytes(t, tf) / 2; got < 60_000 || got > 70_000 {
		t.Errorf("the 3-field state encodes to %d B, want ~65 KB", got)
	}
	if err := sameReplicas(o); err != nil {
		t.Error(err)
	}
}

func sameReplicas(o *owner) error {
	a, b := o.replicas[0].List(), o.replicas[1].List()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Errorf("replicas differ")
	}
	return nil
}

// BenchmarkFigureTrackedMap100k times one commit after one entry of a
// 100,000-entry TrackedMap changed; the floor is encoding the map integrally.
func BenchmarkFigureTrackedMap100k(b *testing.B) {
	ms := newMapState(100_000)
	o := newOwner(b, reflect.TypeFor[mapState]())
	o.commit(b, ms)
	wire, i := 0, 0
	b.Run("paged", func(b *testing.B) {
		for b.Loop() {
			i++
			ms.Entries.Set("key-4242", i)
			wire = o.commit(b, ms)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
	b.Run("delta", func(b *testing.B) {
		for b.Loop() {
			i++
			ms.Entries.Set("key-4242", i)
			prepareOnly(b, o, ms)
		}
	})
	b.Run("integral-floor", func(b *testing.B) {
		for b.Loop() {
			wire = integralBytes(b, ms)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
}

// BenchmarkFigureThreeFields times one commit after one int field of a
// 65 KB, 3-field state changed; the floor is encoding the state integrally.
func BenchmarkFigureThreeFields(b *testing.B) {
	tf := newThreeFields()
	o := newOwner(b, reflect.TypeFor[threeFields]())
	o.commit(b, tf)
	wire := 0
	b.Run("paged", func(b *testing.B) {
		for b.Loop() {
			tf.Counter++
			wire = o.commit(b, tf)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
	b.Run("delta", func(b *testing.B) {
		for b.Loop() {
			tf.Counter++
			prepareOnly(b, o, tf)
		}
	})
	b.Run("noop", func(b *testing.B) {
		for b.Loop() {
			wire = o.commit(b, tf)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
	b.Run("integral-floor", func(b *testing.B) {
		for b.Loop() {
			wire = integralBytes(b, tf)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
}

// prepareOnly times the delta computation alone: Prepare, then Rollback
// (which leaves the marks as they were, so the next round sees the same
// work plus its own mutation).
func prepareOnly(b *testing.B, o *owner, state any) {
	p, err := o.tr.Prepare(state, Stamp{Wall: o.clock + 1, Node: [16]byte{7}})
	if err != nil || p.Delta.Empty() {
		b.Fatalf("prepare: %v (empty=%v)", err, p == nil || p.Delta.Empty())
	}
	if err := o.tr.Rollback(p); err != nil {
		b.Fatal(err)
	}
}

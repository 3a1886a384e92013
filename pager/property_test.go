package pager

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// mutate applies 0..4 random mutations through every path a handler has:
// assignment, in-place writes into slices and maps, tracked-map mutators,
// whole-map replacement, pager content changes.
func mutate(t *rapid.T, st *testState) {
	n := rapid.IntRange(0, 4).Draw(t, "ops")
	for range n {
		switch rapid.IntRange(0, 20).Draw(t, "op") {
		case 0:
			st.Count = rapid.IntRange(-3, 3).Draw(t, "count")
		case 1:
			st.Name = rapid.SampledFrom([]string{"", "a", "bob", "x/y"}).Draw(t, "name")
		case 2:
			st.Tags = append(st.Tags, rapid.SampledFrom([]string{"t1", "t2", ""}).Draw(t, "tag"))
		case 3:
			if len(st.Tags) > 0 { // in place: no assignment to the field
				st.Tags[rapid.IntRange(0, len(st.Tags)-1).Draw(t, "ti")] = rapid.SampledFrom([]string{"z", "t1"}).Draw(t, "tv")
			}
		case 4:
			st.Tags = rapid.SampledFrom([][]string{nil, {}}).Draw(t, "tagsReset")
		case 5:
			if st.Meta == nil {
				st.Meta = map[string]string{}
			}
			st.Meta[rapid.SampledFrom([]string{"k1", "k2"}).Draw(t, "mk")] = rapid.SampledFrom([]string{"v", "w"}).Draw(t, "mv")
		case 6:
			delete(st.Meta, "k1")
		case 7:
			st.Scores.Set(rapid.SampledFrom([]string{"a", "b", "c", "d/e", ""}).Draw(t, "sk"), rapid.IntRange(0, 2).Draw(t, "sv"))
		case 8:
			st.Scores.Delete(rapid.SampledFrom([]string{"a", "b", "zz"}).Draw(t, "sd"))
		case 9:
			st.Scores.Update("c", func(old int, ok bool) (int, bool) { return old + 1, old < 2 })
		case 10:
			switch rapid.IntRange(0, 3).Draw(t, "replace") {
			case 0:
				st.Scores.Clear()
			case 1:
				st.Scores = TrackedMap[string, int]{}
			case 2:
				st.Scores = TrackedMapOf(map[string]int{"a": 9, "q": 1})
			case 3:
				c := st.Scores.Clone()
				c.Set("cl", 1)
				st.Scores = c
			}
		case 11:
			st.Pts.Set(rapid.IntRange(0, 3).Draw(t, "pk"), point{X: rapid.IntRange(0, 1).Draw(t, "px"), L: "p"})
		case 12:
			st.Pts.Delete(rapid.IntRange(0, 3).Draw(t, "pd"))
		case 13:
			if len(st.Blob.Data) > 0 { // in place
				st.Blob.Data[rapid.IntRange(0, len(st.Blob.Data)-1).Draw(t, "bi")] = byte(rapid.IntRange(0, 255).Draw(t, "bv"))
			}
		case 14:
			st.Blob.Data = append(st.Blob.Data, rapid.SliceOfN(rapid.Byte(), 1, 9).Draw(t, "bapp")...)
		case 15:
			if len(st.Blob.Data) > 0 {
				st.Blob.Data = st.Blob.Data[:rapid.IntRange(0, len(st.Blob.Data)-1).Draw(t, "btrunc")]
			}
		case 16:
			st.Ratio = rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(1)}).Draw(t, "ratio")
		case 17:
			st.Scores.SetAll(func(yield func(string, int) bool) { _ = yield("a", 1) && yield("s", 2) })
		case 18:
			st.Series = append(st.Series, rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, math.NaN()}).Draw(t, "sapp"))
		case 19:
			if len(st.Series) > 0 { // in place
				st.Series[rapid.IntRange(0, len(st.Series)-1).Draw(t, "si")] = rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 2}).Draw(t, "sv")
			}
		case 20:
			st.Series = rapid.SampledFrom([][]float64{nil, {}}).Draw(t, "sreset")
		}
	}
}

// TestPropertyApplyDeltaEqualsNew checks, for random mutation sequences,
// that apply(base, delta(base, new)) == new on a replica that receives every
// commit and on one that misses commits at random and catches up through the
// need-full path; that a handler's change is never missed (no false
// negative); that a rolled-back commit is re-shipped; and that a delta over
// any stale basis is refused.
func TestPropertyApplyDeltaEqualsNew(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr, err := NewTracker(reflect.TypeFor[testState]())
		if err != nil {
			rt.Fatal(err)
		}
		var st testState
		fresh, lag := NewStore(), NewStore()
		committed := canon(rt, &st)
		var history []Stamp
		var clock int64
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for range steps {
			mutate(rt, &st)
			clock++
			p, err := tr.Prepare(&st, stamp(clock))
			if err != nil {
				rt.Fatalf("prepare: %v", err)
			}
			now := canon(rt, &st)
			if p.Delta.Empty() {
				if now != committed {
					rt.Fatalf("false negative: state changed but the delta is empty")
				}
				if err := tr.Commit(p); err != nil {
					rt.Fatal(err)
				}
				continue
			}
			if rapid.Bool().Draw(rt, "fail") { // commit fails before any replica stored it
				if err := tr.Rollback(p); err != nil {
					rt.Fatal(err)
				}
				continue
			}
			batch := rapid.SampledFrom([]int{1, 120, DefaultBatchSize}).Draw(rt, "batch")
			deliver(rt, fresh, p, batch)
			if !rapid.Bool().Draw(rt, "lagMisses") {
				deliver(rt, lag, p, batch)
			}
			if err := tr.Commit(p); err != nil {
				rt.Fatal(err)
			}
			history = append(history, p.Delta.Stamp)
			committed = now
			if got := canon(rt, restoreFrom(rt, fresh)); got != committed {
				rt.Fatalf("fresh replica diverged after %v:\n got %q\nwant %q", p.Delta.Stamp, got, committed)
			}
			if lag.Stamp() == fresh.Stamp() {
				if got := canon(rt, restoreFrom(rt, lag)); got != committed {
					rt.Fatalf("lagging replica diverged after need-full")
				}
			}
		}
		// A delta over a stale basis is always refused and changes nothing
		// (a full page set is not: fencing it is the replication layer's).
		if len(history) > 1 {
			old := rapid.SampledFrom(history[:len(history)-1]).Draw(rt, "oldBasis")
			before := canon(rt, fresh.Pages())
			_, err := fresh.Apply(Delta{Basis: old, Stamp: stamp(clock + 1), Pages: []Page{{Key: "Count", Data: []byte{1}}}})
			if !errors.Is(err, ErrStaleOwner) {
				rt.Fatalf("stale basis %v against %v: got %v", old, fresh.Stamp(), err)
			}
			if canon(rt, fresh.Pages()) != before {
				rt.Fatalf("a refused delta changed the store")
			}
		}
		// Read repair: the lagging replica gets exactly the diverging pages.
		d, err := fresh.Catchup(lag.List())
		if err != nil {
			rt.Fatal(err)
		}
		fetch, drop := Diverge(lag.List(), fresh.List())
		if len(d.Pages) != len(fetch) || len(d.Dropped) != len(drop) {
			rt.Fatalf("catch-up ships %d pages/%d drops, divergence is %d/%d", len(d.Pages), len(d.Dropped), len(fetch), len(drop))
		}
		if d.Stamp != lag.Stamp() { // even with no page, the stamp must move
			if err := applyAll(lag, d.Split(DefaultBatchSize)); err != nil {
				rt.Fatalf("catch-up: %v", err)
			}
		}
		if canon(rt, lag.Pages()) != canon(rt, fresh.Pages()) || lag.Stamp() != fresh.Stamp() {
			rt.Fatalf("lagging replica differs from the fresh one after catch-up")
		}
	})
}

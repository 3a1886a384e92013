package placement

import (
	"errors"
	"testing"

	"github.com/casty-go/casty/ring"
)

func testID(b byte) ring.NodeID { return ring.NodeID{0: b, 15: 1} }

// testHistory is a history founded by 1 through n steps: joins of 2..5,
// then alternating removals and joins of 6.. and the newest joiner.
func testHistory(n int) *History {
	h := Found(testID(1))
	for i := range n {
		if i < 4 {
			h.Append([]Change{{Op: Join, ID: testID(byte(i + 2))}})
			continue
		}
		h.Append([]Change{{Op: Remove, ID: testID(byte(i + 1))}, {Op: Join, ID: testID(byte(i + 2))}})
	}
	return h
}

// Merge takes a log's missing versions and refuses one that disagrees on
// any version both hold — shorter, as long or longer than the history —
// or that another member founded.
func TestMergeChecksEveryCommonVersion(t *testing.T) {
	full := testHistory(8)
	for _, short := range []int{0, 3, 8} {
		h := testHistory(short)
		added, err := h.Merge(full.Log())
		if err != nil || added != 8-short || h.Version() != 9 {
			t.Fatalf("merging 8 steps into %d: added %d, %v; version %d", short, added, err, h.Version())
		}
		for v := uint64(1); v <= 9; v++ {
			if h.At(v).Digest != full.At(v).Digest || !h.At(v).Ring.Has(full.At(v).Members[0]) || h.At(v).Ring.Size() != len(full.At(v).Members) {
				t.Fatalf("version %d differs after the merge", v)
			}
		}
		if added, err := full.Merge(h.LogAt(uint64(short + 1))); err != nil || added != 0 {
			t.Fatalf("merging a prefix of %d steps: added %d, %v", short, added, err)
		}
	}
	for _, at := range []int{0, 3, 7} {
		for _, length := range []int{at + 1, 8, 10} {
			l := testHistory(length).Log()
			l.Steps[at] = append(l.Steps[at], Change{Op: Join, ID: testID(99)})
			if added, err := full.Merge(l); !errors.Is(err, ErrDiverged) || added != 0 {
				t.Fatalf("a log of %d steps diverging at step %d: added %d, %v", length, at, added, err)
			}
		}
	}
	if _, err := full.Merge(Found(testID(2)).Log()); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("another founder's log: %v", err)
	}
	if full.Version() != 9 {
		t.Fatalf("a refused log changed the history: version %d", full.Version())
	}
}

// Merging a log the member already holds, as every refusal's facts do:
// the digests only, no placement built.
func BenchmarkMergeKnownLog(b *testing.B) {
	h := testHistory(40)
	l := h.Log()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Merge(l); err != nil {
			b.Fatal(err)
		}
	}
}

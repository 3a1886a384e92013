package placement

import (
	"errors"
	"testing"

	"github.com/casty-go/casty/ring"
)

func testID(i byte) ring.NodeID {
	var id ring.NodeID
	id[0], id[15] = i, 1
	return id
}

// testHistory is a history of a founder and 49 joins, one per version.
func testHistory() *History {
	h := Found(testID(1))
	for i := byte(2); i <= 50; i++ {
		h.Append([]Change{{Op: Join, ID: testID(i)}})
	}
	return h
}

// Merging a history a member already holds, or a prefix of it, costs no
// replay of its versions: members merge every history they receive (a
// pull's answer, a push, a refusal's facts), and replaying a version
// builds its ring: at 50 members in one process, a few histories a second
// take most of a loaded machine's CPU.
func TestMergeOfAKnownHistoryDoesNotReplayIt(t *testing.T) {
	h := testHistory()
	full, prefix := h.Log(), h.LogAt(20)
	allocs := testing.AllocsPerRun(20, func() {
		if n, err := h.Merge(full); n != 0 || err != nil {
			t.Fatalf("Merge of the same history: %d, %v", n, err)
		}
		if n, err := h.Merge(prefix); n != 0 || err != nil {
			t.Fatalf("Merge of a prefix: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Merge of a known history allocated %v times: it replays the versions", allocs)
	}
}

// Merge still tells a history that disagrees on a version both hold, and
// takes the versions a longer one adds.
func TestMergeComparesAndExtends(t *testing.T) {
	h := testHistory()
	other := h.LogAt(30)
	other.Steps[10] = []Change{{Op: Join, ID: testID(99)}}
	if _, err := h.Merge(other); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Merge of a diverged history: %v, want ErrDiverged", err)
	}
	short := Found(testID(1))
	if n, err := short.Merge(h.LogAt(10)); n != 9 || err != nil {
		t.Fatalf("Merge into the founder's history: %d, %v", n, err)
	}
	if n, err := short.Merge(h.Log()); n != 40 || err != nil || short.Latest().Digest != h.Latest().Digest {
		t.Fatalf("Merge of a longer history: %d, %v", n, err)
	}
	if _, err := short.Merge(other); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Merge of a diverged history: %v, want ErrDiverged", err)
	}
}

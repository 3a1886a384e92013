package casty

import (
	"testing"

	"github.com/casty-go/casty/ring"
)

// A view keeps the previous view's ring only for the same set of live full
// members, in whatever order the table lists them.
func TestSameRing(t *testing.T) {
	a, b, c := ring.NodeID{0: 1, 15: 1}, ring.NodeID{0: 2, 15: 1}, ring.NodeID{0: 3, 15: 1}
	r, err := ring.New([]ring.NodeID{a, b})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := ring.New(nil)
	for _, tc := range []struct {
		r    *ring.Ring
		ids  []ring.NodeID
		want bool
	}{
		{r, []ring.NodeID{a, b}, true},
		{r, []ring.NodeID{b, a}, true},
		{r, []ring.NodeID{a}, false},
		{r, []ring.NodeID{a, c}, false},
		{r, []ring.NodeID{a, b, c}, false},
		{nil, nil, false},
		{empty, nil, true},
		{empty, []ring.NodeID{a}, false},
	} {
		if got := sameRing(tc.r, tc.ids); got != tc.want {
			t.Errorf("sameRing(%v, %v) = %v, want %v", tc.r.Members(), tc.ids, got, tc.want)
		}
	}
}

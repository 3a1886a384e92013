package ring

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseNodeID: node ids arrive as text (configuration, castyctl, peer
// records). Parsing never panics; it fails with ErrBadNodeID or returns the
// id whose String is the lower-cased input.
func FuzzParseNodeID(f *testing.F) {
	for _, s := range []string{
		"00000000-0000-0000-0000-000000000001", "6BA7B810-9DAD-11D1-80B4-00C04FD430C8",
		"", "-", "00000000-0000-0000-0000-00000000000g", "00000000000000000000000000000000",
		"0000000-00000-0000-0000-000000000001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseNodeID(s)
		if err != nil {
			if !errors.Is(err, ErrBadNodeID) {
				t.Fatalf("error %v does not wrap ErrBadNodeID", err)
			}
			return
		}
		if got := id.String(); got != strings.ToLower(s) {
			t.Fatalf("ParseNodeID(%q).String() = %q", s, got)
		}
	})
}

// FuzzRing builds rings from arbitrary bytes (16 per member) and checks
// Owner and Replicas against the naive reference at points from the input.
func FuzzRing(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), uint64(0), uint8(3))
	f.Add([]byte("0123456789abcdefFEDCBA98765432100123456789abcdef"), uint64(1<<63), uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, point uint64, n uint8) {
		var members []NodeID
		for len(raw) >= 16 && len(members) < 6 {
			var id NodeID
			copy(id[:], raw[:16])
			raw = raw[16:]
			if !id.IsZero() {
				members = append(members, id)
			}
		}
		r, err := New(members)
		if err != nil {
			t.Fatal(err)
		}
		ref := newNaive(members)
		for _, p := range []uint64{point, point + 1, point - 1, ^point} {
			got, ok := r.Owner(p)
			want, wantOK := ref.owner(p)
			if got != want || ok != wantOK {
				t.Fatalf("Owner(%d) = %v, want %v", p, got, want)
			}
			reps, wantReps := r.Replicas(p, int(n%8)), ref.replicas(p, int(n%8))
			if len(reps) != len(wantReps) {
				t.Fatalf("Replicas(%d, %d) = %v, want %v", p, n%8, reps, wantReps)
			}
			for i := range reps {
				if reps[i] != wantReps[i] {
					t.Fatalf("Replicas(%d, %d) = %v, want %v", p, n%8, reps, wantReps)
				}
			}
		}
	})
}

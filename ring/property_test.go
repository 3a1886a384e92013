package ring

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// Property tests: the ring against the naive reference of helpers_test.go,
// over random member sets drawn by rapid (which shrinks and prints a failing
// case; rerun it with -rapid.seed).

var genID = rapid.Custom(func(t *rapid.T) NodeID {
	var id NodeID
	copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id bytes"))
	if id.IsZero() {
		id[15] = 1
	}
	return id
})

func genMembers(min, max int) *rapid.Generator[[]NodeID] {
	return rapid.SliceOfNDistinct(genID, min, max, func(id NodeID) NodeID { return id })
}

// drawProbes draws points to query: random ones, tokens of the given rings
// and their neighbours.
func drawProbes(t *rapid.T, rings ...*Ring) []uint64 {
	return probes(seeded(rapid.Uint64().Draw(t, "probe seed")), rings, 64)
}

func TestPropMatchesNaiveReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(1, 12).Draw(t, "members")
		r, err := New(members)
		if err != nil {
			t.Fatal(err)
		}
		ref := newNaive(members)
		if r.Len() != len(ref.entries) {
			t.Fatalf("Len = %d, want %d", r.Len(), len(ref.entries))
		}
		for i, e := range ref.entries {
			if tok, node := r.Entry(i); tok != e.token || node != e.node {
				t.Fatalf("entry %d = (%d, %v), want (%d, %v)", i, tok, node, e.token, e.node)
			}
		}
		n := rapid.IntRange(-1, 14).Draw(t, "n")
		for _, p := range drawProbes(t, r) {
			got, ok := r.Owner(p)
			want, _ := ref.owner(p)
			if !ok || got != want {
				t.Fatalf("Owner(%d) = %v, want %v", p, got, want)
			}
			reps := r.Replicas(p, n)
			if wantReps := ref.replicas(p, n); !slices.Equal(reps, wantReps) {
				t.Fatalf("Replicas(%d, %d) = %v, want %v", p, n, reps, wantReps)
			}
			if want := min(max(n, 0), len(members)); len(reps) != want {
				t.Fatalf("Replicas(%d, %d) has %d nodes, want %d", p, n, len(reps), want)
			}
			if len(reps) > 0 && reps[0] != got {
				t.Fatalf("Replicas(%d) does not start with the owner", p)
			}
			if len(slices.Compact(slices.SortedFunc(slices.Values(reps), NodeID.Compare))) != len(reps) {
				t.Fatalf("Replicas(%d, %d) = %v: not distinct", p, n, reps)
			}
		}
	})
}

func TestPropMemberOrderAndDuplicatesIrrelevant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(0, 10).Draw(t, "members")
		a, err := New(members)
		if err != nil {
			t.Fatal(err)
		}
		// Shuffle and add duplicates.
		shuffled := slices.Clone(members)
		if len(members) > 0 {
			for _, i := range rapid.SliceOf(rapid.IntRange(0, len(members)-1)).Draw(t, "dups") {
				shuffled = append(shuffled, members[i])
			}
		}
		rng := seeded(rapid.Uint64().Draw(t, "shuffle seed"))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b, err := New(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("ring of %v differs from ring of %v", members, shuffled)
		}
		if len(Diff(a, b)) != 0 {
			t.Fatalf("Diff of the same set is not empty")
		}
	})
}

// checkPartition checks that rs are sorted by End, pairwise disjoint, and
// that membership of each probe in their union agrees with in(p).
func checkRanges(t *rapid.T, what string, rs []Range, probes []uint64, in func(p uint64) bool) {
	for i := 1; i < len(rs); i++ {
		if rs[i-1].End >= rs[i].End {
			t.Fatalf("%s: not sorted by End: %v", what, rs)
		}
	}
	for _, p := range probes {
		hits := 0
		for _, r := range rs {
			if r.Contains(p) {
				hits++
			}
		}
		if hits > 1 {
			t.Fatalf("%s: point %d in %d ranges", what, p, hits)
		}
		if want := in(p); (hits == 1) != want {
			t.Fatalf("%s: point %d contained = %v, want %v (ranges %v)", what, p, hits == 1, want, rs)
		}
	}
}

func TestPropRanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(1, 8).Draw(t, "members")
		r, _ := New(members)
		ps := drawProbes(t, r)
		n := rapid.IntRange(1, 9).Draw(t, "n")
		var total uint64
		var arcsTotal uint64
		arcs := r.Arcs()
		for _, a := range arcs {
			arcsTotal += a.Size()
		}
		for _, id := range members {
			owned := r.OwnedRanges(id)
			checkRanges(t, "OwnedRanges("+id.String()+")", owned, ps, func(p uint64) bool {
				o, _ := r.Owner(p)
				return o == id
			})
			for _, x := range owned {
				total += x.Size()
			}
			checkRanges(t, "ReplicaRanges", r.ReplicaRanges(id, n), ps, func(p uint64) bool {
				return slices.Contains(r.Replicas(p, n), id)
			})
		}
		// Owned ranges tile the circle: their sizes sum to 2^64 ≡ 0.
		if total != 0 || arcsTotal != 0 {
			t.Fatalf("owned ranges sum to %d mod 2^64, arcs to %d, want 0", total, arcsTotal)
		}
		for _, p := range ps {
			o, _ := r.Owner(p)
			hits := 0
			for _, a := range arcs {
				if a.Contains(p) {
					hits++
					if a.Owner != o {
						t.Fatalf("arc %v owner %v, Owner(%d) = %v", a.Range, a.Owner, p, o)
					}
				}
			}
			if hits != 1 {
				t.Fatalf("point %d in %d arcs", p, hits)
			}
		}
		if r.OwnedRanges(NodeID{0xff, 0xee}) != nil && !r.Has(NodeID{0xff, 0xee}) {
			t.Fatalf("OwnedRanges of a non-member is not nil")
		}
	})
}

// checkDiff checks Diff(old, new) against Owner on both rings at the probes.
func checkDiff(t *rapid.T, old, new *Ring, ps []uint64) []Move {
	moves := Diff(old, new)
	for i := 1; i < len(moves); i++ {
		if moves[i-1].End >= moves[i].End {
			t.Fatalf("moves not sorted by End")
		}
	}
	for _, p := range ps {
		from, _ := old.Owner(p)
		to, _ := new.Owner(p)
		var hit *Move
		for i := range moves {
			if moves[i].Contains(p) {
				if hit != nil {
					t.Fatalf("point %d in two moves", p)
				}
				hit = &moves[i]
			}
		}
		switch {
		case from == to && hit != nil:
			t.Fatalf("point %d keeps owner %v but is in move %+v", p, from, *hit)
		case from != to && hit == nil:
			t.Fatalf("point %d moves %v -> %v but no move covers it", p, from, to)
		case hit != nil && (hit.From != from || hit.To != to):
			t.Fatalf("point %d moves %v -> %v, move says %+v", p, from, to, *hit)
		}
	}
	return moves
}

func TestPropDiff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pool := genMembers(1, 10).Draw(t, "pool")
		pick := func(label string) []NodeID {
			var out []NodeID
			for i, keep := range rapid.SliceOfN(rapid.Bool(), len(pool), len(pool)).Draw(t, label) {
				if keep {
					out = append(out, pool[i])
				}
			}
			return out
		}
		old, _ := New(pick("old"))
		new, _ := New(pick("new"))
		checkDiff(t, old, new, drawProbes(t, old, new))
	})
}

func TestPropJoinAndLeaveMoveMinimally(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(2, 10).Draw(t, "members")
		changed := members[len(members)-1]
		small, _ := New(members[:len(members)-1])
		big, _ := New(members)
		ps := drawProbes(t, small, big)
		// Join: everything that moves, moves to the joiner.
		for _, m := range checkDiff(t, small, big, ps) {
			if m.To != changed {
				t.Fatalf("join of %v moved %v to %v", changed, m.Range, m.To)
			}
		}
		// Leave: everything that moves was the leaver's.
		for _, m := range checkDiff(t, big, small, ps) {
			if m.From != changed {
				t.Fatalf("leave of %v moved %v from %v", changed, m.Range, m.From)
			}
		}
		// And the joiner's new ranges are exactly what moved.
		var moved, owned uint64
		for _, m := range Diff(small, big) {
			moved += m.Size()
		}
		for _, x := range big.OwnedRanges(changed) {
			owned += x.Size()
		}
		if moved != owned {
			t.Fatalf("moved %d points, joiner owns %d", moved, owned)
		}
	})
}

// balanceKeys is the number of keys the balance and join tests hash: 1 M,
// as the issue asks (about 2 s under -race on 2 cores).
const balanceKeys = 1_000_000

// keyPoints returns the points of n synthetic keys "key-0" … "key-(n-1)"
// of kind "test", i.e. Point("test", "key-<i>").
func keyPoints(n int) []uint64 {
	ps := make([]uint64, n)
	buf := []byte("test/key-")
	for i := range ps {
		ps[i] = Hash(appendInt(buf, i))
	}
	return ps
}

func appendInt(b []byte, i int) []byte {
	var tmp [20]byte
	j := len(tmp)
	for {
		j--
		tmp[j] = byte('0' + i%10)
		if i /= 10; i == 0 {
			break
		}
	}
	return append(b, tmp[j:]...)
}

// TestBalance: 10 members, balanceKeys keys; the busiest member holds at
// most 1.3× the mean. The member set is fixed (seed 10) so the test is
// deterministic; TestBalanceAcrossSeeds covers other sets by exact arc share.
func TestBalance(t *testing.T) {
	r := mustNew(t, randomIDs(seeded(10), 10))
	counts := map[NodeID]int{}
	for _, p := range keyPoints(balanceKeys) {
		o, _ := r.Owner(p)
		counts[o]++
	}
	mx := 0
	for _, c := range counts {
		mx = max(mx, c)
	}
	ratio := float64(mx) / (float64(balanceKeys) / 10)
	t.Logf("10 members, %d keys: max/mean = %.3f", balanceKeys, ratio)
	if len(counts) != 10 || ratio > 1.3 {
		t.Fatalf("max/mean = %.3f over %d owners, want <= 1.3 over 10", ratio, len(counts))
	}
}

// TestBalanceAcrossSeeds measures each member's exact share of the circle
// (the expected share of keys) for 50 random 10-member sets.
func TestBalanceAcrossSeeds(t *testing.T) {
	worst := 0.0
	for seed := range uint64(50) {
		r := mustNew(t, randomIDs(seeded(1000+seed), 10))
		for _, id := range r.Members() {
			share := 0.0
			for _, x := range r.OwnedRanges(id) {
				share += x.Share()
			}
			worst = max(worst, share*10)
		}
	}
	t.Logf("worst max/mean share over 50 sets of 10 members: %.3f", worst)
	if worst > 1.3 {
		t.Fatalf("worst max/mean share %.3f > 1.3", worst)
	}
}

func share(rs []Range) float64 {
	s := 0.0
	for _, x := range rs {
		s += x.Share()
	}
	return s
}

// TestJoinShare: on a join N -> N+1 the joiner takes 1/(N+1) ± 20 % of the
// circle, measured exactly from the diff, for fixed seeded member sets.
func TestJoinShare(t *testing.T) {
	rng := seeded(20)
	for _, n := range []int{1, 2, 3, 4, 5, 7, 10, 16, 25, 50, 100} {
		ids := randomIDs(rng, n+1)
		before, after := mustNew(t, ids[:n]), mustNew(t, ids)
		var moved []Range
		for _, m := range Diff(before, after) {
			if m.To != ids[n] {
				t.Fatalf("N=%d: a range moved to %v, not the joiner", n, m.To)
			}
			moved = append(moved, m.Range)
		}
		got, want := share(moved), 1/float64(n+1)
		t.Logf("N=%d -> %d: joiner share %.4f, expected %.4f (ratio %.3f)", n, n+1, got, want, got/want)
		if got < 0.8*want || got > 1.2*want {
			t.Errorf("N=%d: joiner share %.4f outside 1/(N+1) ± 20%% = [%.4f, %.4f]", n, got, 0.8*want, 1.2*want)
		}
	}
}

// TestJoinAndLeaveKeys checks the same properties on actual keys: going from
// 10 to 11 members only keys that land on the joiner move, their share is
// 1/11 ± 20 %; going back only the leaver's keys move.
func TestJoinAndLeaveKeys(t *testing.T) {
	ids := randomIDs(seeded(30), 11)
	ten, eleven := mustNew(t, ids[:10]), mustNew(t, ids)
	joiner := ids[10]
	keys := keyPoints(balanceKeys)
	moved := 0
	for _, p := range keys {
		a, _ := ten.Owner(p)
		b, _ := eleven.Owner(p)
		if a != b {
			if b != joiner {
				t.Fatalf("key at %d moved %v -> %v on join of %v", p, a, b, joiner)
			}
			moved++
		}
		// Leave is the reverse: a key moves only if the leaver held it.
		if a != b && b != joiner || a == b && b == joiner {
			t.Fatalf("key at %d: leave moved a key the leaver did not hold", p)
		}
	}
	got, want := float64(moved)/float64(len(keys)), 1.0/11
	t.Logf("join 10 -> 11 over %d keys: %.4f moved, expected %.4f", len(keys), got, want)
	if got < 0.8*want || got > 1.2*want {
		t.Fatalf("moved share %.4f outside 1/11 ± 20%%", got)
	}
}

// TestJoinShareDistribution: the ±20 % bound is statistical. With 128 vnodes
// a joiner's share has a relative standard deviation near 1/√128 ≈ 9 %, so
// about 1–2 % of random member sets fall outside ±20 % (measured: 6 of 300
// at N = 10). Over 200 fixed seeded sets per N, the mean share must be within
// 3 % of 1/(N+1) and at least 95 % of sets within ±20 %.
func TestJoinShareDistribution(t *testing.T) {
	const sets = 200
	for _, n := range []int{3, 10, 50} {
		inside, sum := 0, 0.0
		for seed := range uint64(sets) {
			ids := randomIDs(seeded(5000+seed), n+1)
			before, after := mustNew(t, ids[:n]), mustNew(t, ids)
			s := 0.0
			for _, m := range Diff(before, after) {
				s += m.Share()
			}
			ratio := s * float64(n+1)
			sum += ratio
			if ratio >= 0.8 && ratio <= 1.2 {
				inside++
			}
		}
		mean := sum / sets
		t.Logf("N=%d: mean share ratio %.4f, %d/%d sets within ±20%%", n, mean, inside, sets)
		if mean < 0.97 || mean > 1.03 || inside < sets*95/100 {
			t.Errorf("N=%d: mean ratio %.4f, %d/%d within ±20%%", n, mean, inside, sets)
		}
	}
}

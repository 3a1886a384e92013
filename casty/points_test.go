package casty

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// pointOf is ring.Point whether the cache hits, misses, holds another
// kind's entry for the key, or is bypassed for long keys.
func TestPointOfMatchesRingPoint(t *testing.T) {
	a, b := &actor.Kind{KindOptions: actor.KindOptions{Name: "test.points.a"}}, &actor.Kind{KindOptions: actor.KindOptions{Name: "test.points.b"}}
	keys := []string{"", "x", "room-42", strings.Repeat("k", 64), strings.Repeat("k", 100000)}
	for i := range 3 * pointSlots { // more keys than slots: collisions evict
		keys = append(keys, fmt.Sprint("key-", i))
	}
	for round := range 2 {
		for _, key := range keys {
			for _, k := range []*actor.Kind{a, b} {
				if got, want := pointOf(k, key), ring.Point(k.Name, key); got != want {
					t.Fatalf("round %d: pointOf(%s, %q) = %x, want %x", round, k.Name, key, got, want)
				}
			}
		}
	}
}

// A slot torn by a concurrent writer (its point from one key, its check
// from another) is a miss, not a wrong point.
func TestPointOfRejectsTornSlots(t *testing.T) {
	k := &actor.Kind{KindOptions: actor.KindOptions{Name: "test.points.torn"}}
	h := func(key string) uint64 {
		return maphash.String(pointSeed, key) ^ maphash.String(pointSeed, k.Name)*0x9e3779b97f4a7c15
	}
	// Two keys that share a slot.
	a, b := "a", ""
	for i := 0; b == ""; i++ {
		if c := fmt.Sprint("b", i); h(c)&(pointSlots-1) == h(a)&(pointSlots-1) {
			b = c
		}
	}
	pa, pb := ring.Point(k.Name, a), ring.Point(k.Name, b)
	slot := &points[h(a)&(pointSlots-1)]
	slot.p.Store(pb) // b's point with a's check: torn
	slot.check.Store(h(a) ^ pa)
	if got := pointOf(k, a); got != pa {
		t.Fatalf("torn slot: pointOf(a) = %x, want %x", got, pa)
	}
	if got := pointOf(k, b); got != pb {
		t.Fatalf("pointOf(b) after a = %x, want %x", got, pb)
	}
}

func BenchmarkRefPoint(b *testing.B) {
	k := &actor.Kind{KindOptions: actor.KindOptions{Name: "test.points.bench"}}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			pointOf(k, "room-42")
		}
	})
	b.Run("floor=ring.Point", func(b *testing.B) {
		for b.Loop() {
			ring.Point(k.Name, "room-42")
		}
	})
}

package casty

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// pointOf is ring.Point whether the cache hits, misses, holds another
// kind's entry for the key, or is bypassed for long keys.
func TestPointOfMatchesRingPoint(t *testing.T) {
	a, b := &actor.Kind{Name: "test.points.a"}, &actor.Kind{Name: "test.points.b"}
	keys := []string{"", "x", "room-42", strings.Repeat("k", pointMaxKey), strings.Repeat("k", pointMaxKey+1)}
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
	// A cached key does not pin the string it was sliced from.
	big := strings.Repeat("z", 1<<20)
	pointOf(a, big[:8])
	var e *pointEntry
	for i := range points {
		if x := points[i].Load(); x != nil && x.kind == a && x.key == big[:8] {
			e = x
		}
	}
	if e == nil {
		t.Fatal("the key was not cached")
	}
	if unsafe.StringData(e.key) == unsafe.StringData(big) {
		t.Fatal("the cache holds a slice of the caller's string")
	}
}

func BenchmarkRefPoint(b *testing.B) {
	k := &actor.Kind{Name: "test.points.bench"}
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

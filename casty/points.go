package casty

import (
	"hash/maphash"
	"strings"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// A Ref carries its key's ring point, so every Kind.Ref in cluster mode
// hashes the key with BLAKE2b (ring.Point, ~250 ns). Callers commonly make
// a Ref per call for the same few keys (a session, a room, a device), so
// recent points are kept in a small direct-mapped cache: a hit costs one
// maphash of the key and a comparison. The cache is bounded — pointSlots
// entries of keys up to pointMaxKey bytes, about 300 KiB at most — and a
// miss costs the hash plus one small allocation.
const (
	pointSlots  = 4096 // a power of two
	pointMaxKey = 64
)

type pointEntry struct {
	kind  *actor.Kind
	key   string
	point uint64
}

var (
	points    [pointSlots]atomic.Pointer[pointEntry]
	pointSeed = maphash.MakeSeed()
)

// pointOf returns ring.Point(k.Name, key), from the cache when it can.
func pointOf(k *actor.Kind, key string) uint64 {
	if len(key) > pointMaxKey {
		return ring.Point(k.Name, key)
	}
	slot := &points[maphash.String(pointSeed, key)&(pointSlots-1)]
	if e := slot.Load(); e != nil && e.kind == k && e.key == key {
		return e.point
	}
	p := ring.Point(k.Name, key)
	// Clone: key may be a slice of a larger string the cache must not pin.
	slot.Store(&pointEntry{kind: k, key: strings.Clone(key), point: p})
	return p
}

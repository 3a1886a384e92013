package casty

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// A Ref carries its key's ring point, so every Kind.Ref in cluster mode
// hashes the key with BLAKE2b (ring.Point, ~250 ns). Callers commonly make
// a Ref per call for the same few keys (a session, a room, a device), so
// recent points are kept in a small direct-mapped cache, 16 bytes a slot
// and no pointers: a lookup is one maphash of the key and one cache line,
// a miss costs the BLAKE2b hash and two stores, and nothing is allocated.
//
// A slot holds the point p and check = h ^ p, where h is the 64-bit
// maphash of kind and key (seeded per process). A reader accepts the slot
// only if check ^ p == h, so a slot torn by a concurrent writer, or one
// holding another key, is a miss (the lockless-hashing trick of chess
// transposition tables). Two keys with the same h would share a point
// with probability 2^-64 per pair; even then a wrong point is caught where
// it matters: the owner refuses a call whose point does not match a key it
// would activate (route.go: served.AdmitNew).
const pointSlots = 4096 // a power of two

type pointSlot struct {
	p, check atomic.Uint64
}

var (
	points    [pointSlots]pointSlot
	pointSeed = maphash.MakeSeed()
)

// pointOf returns ring.Point(k.Name, key), from the cache when it can.
func pointOf(k *actor.Kind, key string) uint64 {
	h := maphash.String(pointSeed, key) ^ maphash.String(pointSeed, k.Name)*0x9e3779b97f4a7c15
	slot := &points[h&(pointSlots-1)]
	if p := slot.p.Load(); slot.check.Load()^p == h {
		return p
	}
	p := ring.Point(k.Name, key)
	slot.p.Store(p)
	slot.check.Store(h ^ p)
	return p
}

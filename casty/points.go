package casty

import (
	"context"
	"errors"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// Ring points: a key's place on the ring is ring.Point(kind, key), a
// BLAKE2b hash. Everything about computing it once and trusting it lives
// in this file.
//
//  1. The caller computes it once per Ref (Kind.Ref), through pointOf's
//     cache, and carries it as a placement: in the Ref, in the call
//     envelope (callReq.at, SPEC.md), and on the serving side in the
//     call's context (servedCtx).
//  2. The owner routes and admits a call by the point it was sent
//     (cluster.owns), without hashing the key again.
//  3. A wrong point — a cache collision, a buggy or hostile caller — must
//     never place an actor on a node that does not own its key. It cannot
//     do harm while the activation exists (it is where it belongs; the
//     view change that moves it evicts it). So the point is checked
//     against the key exactly when a call from another node would create
//     the activation: the host's Config.Admit hook (admitPlaced), once per
//     activation rather than once per call. A mismatch answers "wrong
//     owner", and the caller retries with a fresh view: nothing ran.
//
// The cache: callers commonly make a Ref per call for the same few keys
// (a session, a room, a device), so recent points are kept in a small
// direct-mapped table, 16 bytes a slot and no pointers: a lookup is one
// maphash of kind and key and one cache line, a miss costs the BLAKE2b
// hash and two stores, and nothing is allocated. A slot holds the point p
// and check = h ^ p, where h is the 64-bit maphash of kind and key
// (seeded per process). A reader accepts the slot only if check ^ p == h,
// so a slot torn by a concurrent writer, or one holding another key, is a
// miss (the lockless-hashing trick of chess transposition tables). Two
// keys with the same h share a point with probability 2^-64 per pair, and
// rule 3 catches even that.
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

// placement is a key's ring point when the caller knows it. For a
// service called Beside an actor, near is that actor's kind and point its
// key's: the call goes to the member serving that actor.
type placement struct {
	point uint64
	known bool
	near  *actor.Kind
}

// placementOf returns k's key placed: from at when known, else hashed.
func placementOf(k *actor.Kind, key string, at placement) placement {
	if at.known {
		return at
	}
	return placement{point: pointOf(k, key), known: true}
}

// servedCtx is the context a call from another node runs with: the
// caller's deadline, enforced by the caller (its mux cancels the request
// when the deadline passes; no timer here), and the placement the caller
// sent, for admitPlaced. It lives in the struct that holds the call's
// envelope, so it costs no allocation.
type servedCtx struct {
	context.Context
	deadline int64 // unix ns; 0: the parent's
	k        *actor.Kind
	m        *actor.Method // a served call's handler (nil for other reads)
	key      string
	at       placement
	early    earlyAnswer // the caller's member wants the answer on its commit (early.go)
}

type servedKey struct{}

func (c *servedCtx) Deadline() (time.Time, bool) {
	if c.deadline != 0 {
		return time.Unix(0, c.deadline), true
	}
	return c.Context.Deadline()
}

func (c *servedCtx) Value(key any) any {
	if key == (servedKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// errMisplaced refuses a call whose ring point is not its key's.
var errMisplaced = errors.New("casty: the ring point does not match the key")

// admitPlaced is the host's Config.Admit: when a call from another node is
// about to create its activation, the ring point the caller sent (and
// cluster.owns trusted) must be the key's. It asks nothing of other
// calls, nor of calls a handler makes (they name another activation).
func admitPlaced(ctx context.Context, k *actor.Kind, key string) error {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(servedKey{}).(*servedCtx)
	if c == nil || !c.at.known || c.k != k || c.key != key {
		return nil
	}
	if ring.Point(k.Name, key) != c.at.point {
		return errMisplaced
	}
	return nil
}

package ring

import (
	"slices"
	"sync"
)

// maxCachedMembers bounds the token cache: past it, the cache starts
// afresh (1 KiB per member, 4 MiB at the bound).
const maxCachedMembers = 4096

// tokenCache holds the tokens of the members rings were built of. A
// member's tokens depend on its id alone, and a process rebuilds the ring
// of nearly the same set on every membership change (casty on each gossip
// event that changes the live members, its placement on each version):
// hashing them each time costs members × VNodes BLAKE2b digests a ring,
// which with tens of members in one process (castytest clusters) takes
// most of the CPU while the membership changes. New merges the cached,
// sorted runs instead of sorting every entry.
var tokenCache = struct {
	sync.Mutex
	m map[NodeID]*[VNodes]uint64
}{m: map[NodeID]*[VNodes]uint64{}}

// tokensOf returns id's VNodes tokens (token(id, i) for i from 0 to
// VNodes-1) in ascending order, from the cache or hashed (and cached). The
// array is shared: read only.
func tokensOf(id NodeID) *[VNodes]uint64 {
	tokenCache.Lock()
	t, ok := tokenCache.m[id]
	tokenCache.Unlock()
	if ok {
		return t
	}
	t = new([VNodes]uint64)
	x := getHasher()
	for i := range uint32(VNodes) {
		t[i] = x.token(id, i)
	}
	putHasher(x)
	slices.Sort(t[:])
	tokenCache.Lock()
	if len(tokenCache.m) >= maxCachedMembers {
		clear(tokenCache.m)
	}
	tokenCache.m[id] = t
	tokenCache.Unlock()
	return t
}

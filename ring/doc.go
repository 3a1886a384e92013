// Package ring is Casty's placement function: a consistent-hashing token ring
// with VNodes (128) virtual nodes per member, hashed with BLAKE2b-64.
//
// Every node of a cluster computes the ring locally from the member set and
// must get exactly the same answer, across processes, platforms and
// versions, so the function is fixed (see SPEC.md in this directory, and
// the golden vectors in testdata/):
//
//	H(b)            = BLAKE2b with an 8-byte digest (blake2b.New(8, nil)) of b, read big-endian
//	Token(id, i)    = H(id's 16 bytes ‖ uint32 big-endian i), i in [0, 128)
//	Point(kind,key) = H(UTF-8 of kind + "/" + key)
//
// Entries are sorted by (token, node id). The owner of a point is the node of
// the first entry whose token is >= the point, wrapping around past the
// largest token; entry i owns the range (token i-1, token i]. The replicas of
// a point are the first n distinct members met walking clockwise from its
// owner, owner first, capped at the member count.
//
// # What it guarantees
//
//   - A Ring is a pure function of the member set: New ignores input order and
//     duplicates, and two rings of the same set are identical.
//   - Minimal movement: when a member joins, every point that changes owner
//     moves to the joiner; when one leaves, only its points move. With 128
//     vnodes a joiner of an N-member ring takes about 1/(N+1) of the circle,
//     and the load of 10 members stays within 1.3× of the mean.
//   - Owner is a binary search narrowed by a radix index over the tokens' top
//     bits (about one token per bucket), without allocating; the
//     repository's BENCHMARKS.md has the figures. Hashing a key (Point) costs
//     more than the lookup; it does not allocate in the steady state.
//   - A Ring is immutable and safe for concurrent use.
//
// # What the caller must do
//
// Build a new Ring with New whenever the set of full members changes; lite
// members and the nil NodeID are never placed. Handoff and replication deal
// in ranges: OwnedRanges and ReplicaRanges say what a member holds, Diff says
// what moves between two rings, Arcs lists the whole partition. A sharded
// collection can pick an item's shard with Shard (Hash of the encoded item
// mod the shard count); casty has none yet.
//
// # On its own
//
// The module depends on no other Casty module (only golang.org/x/crypto):
// anything that must spread keys over a changing set of members the same way
// on every process — sharding, cache routing, work partitioning — can take it
// alone with go get github.com/casty-go/casty/ring. The package Example
// places a key on a three-member set; SPEC.md and the golden files let an
// implementation in another language agree bit for bit.
package ring

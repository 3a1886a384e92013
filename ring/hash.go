package ring

import (
	"encoding/binary"
	"hash"
	"sync"

	"golang.org/x/crypto/blake2b"
)

// VNodes is the number of tokens (virtual nodes) every member places on the
// ring. It is a cluster-wide protocol constant: nodes computing rings with
// different counts disagree on ownership.
const VNodes = 128

// hasher is a reusable BLAKE2b-64 state plus scratch space, pooled so that
// hashing does not allocate in the steady state.
type hasher struct {
	h   hash.Hash
	buf []byte
	sum [8]byte
}

// maxPooledBuf bounds the scratch buffer a pooled hasher keeps, so one huge
// input does not pin memory forever.
const maxPooledBuf = 64 << 10

var hashers = sync.Pool{New: func() any { return newHasher() }}

func newHasher() *hasher {
	// blake2b.New(8, nil): BLAKE2b with the digest length parameter set to 8
	// bytes (not a truncated 64-byte digest). It only fails for bad sizes or
	// keys longer than 64 bytes, neither of which can happen here.
	h, err := blake2b.New(8, nil)
	if err != nil {
		panic("ring: blake2b.New(8, nil): " + err.Error())
	}
	return &hasher{h: h, buf: make([]byte, 0, 128)}
}

// sum64 hashes x.buf and returns the digest read as a big-endian uint64.
func (x *hasher) sum64() uint64 {
	x.h.Reset()
	x.h.Write(x.buf)
	return binary.BigEndian.Uint64(x.h.Sum(x.sum[:0]))
}

func getHasher() *hasher { return hashers.Get().(*hasher) }

func putHasher(x *hasher) {
	if cap(x.buf) > maxPooledBuf {
		x.buf = make([]byte, 0, 128)
	}
	hashers.Put(x)
}

// Hash is the ring's hash function H: BLAKE2b with an 8-byte digest
// (blake2b.New(8, nil)) over b, read as a big-endian uint64. Collection items
// use it directly to pick a shard (see Shard). It is safe for concurrent use
// and does not allocate in the steady state.
func Hash(b []byte) uint64 {
	x := getHasher()
	x.buf = append(x.buf[:0], b...)
	v := x.sum64()
	putHasher(x)
	return v
}

// HashString is Hash of the UTF-8 bytes of s, without converting s to a
// []byte first.
func HashString(s string) uint64 {
	x := getHasher()
	x.buf = append(x.buf[:0], s...)
	v := x.sum64()
	putHasher(x)
	return v
}

// Point is the position of an actor key on the ring:
// H(utf8(kind + "/" + key)), where kind is the actor kind's wire name.
func Point(kind, key string) uint64 {
	x := getHasher()
	x.buf = append(x.buf[:0], kind...)
	x.buf = append(x.buf, '/')
	x.buf = append(x.buf, key...)
	v := x.sum64()
	putHasher(x)
	return v
}

// Token is the position of vnode i of member id: H(id's 16 bytes ‖ i as a
// big-endian uint32). Members use indexes 0 to VNodes-1.
func Token(id NodeID, i uint32) uint64 {
	x := getHasher()
	v := x.token(id, i)
	putHasher(x)
	return v
}

func (x *hasher) token(id NodeID, i uint32) uint64 {
	x.buf = append(x.buf[:0], id[:]...)
	x.buf = binary.BigEndian.AppendUint32(x.buf, i)
	return x.sum64()
}

// Shard maps encoded collection item bytes to one of shards shards:
// Hash(item) mod shards. It panics if shards <= 0.
func Shard(item []byte, shards int) int {
	if shards <= 0 {
		panic("ring: Shard with shards <= 0")
	}
	return int(Hash(item) % uint64(shards))
}

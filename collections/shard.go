package collections

import (
	"context"
	"sync"

	"github.com/casty-go/casty/casty"
)

// shard is the one actor type behind every collection: a map's, set's or
// multimap's shard, a counter's stripe, a register, a queue, a semaphore
// (and so a lock), a barrier, or a collection's catalog entry. Each key
// uses the fields of its own family; the others stay empty and cost an
// empty page. Keys are "<type>/<name>" and "<type>/<name>/<shard>".
//
// Handlers answer outcomes in the response, never as errors: a
// collections sentinel returned by a handler would reach a caller on
// another member as text only, so the facade turns outcomes into typed
// errors itself.
type shard struct {
	// Entries holds a map's, set's or multimap's items: encoded key →
	// encoded value ("" in a set; a multimap's encoded set of values).
	// One page per entry, so one Put ships one entry.
	Entries casty.TrackedMap[string, string]

	// Count is a counter stripe's value.
	Count int64

	// Value and Present are a register's.
	Value   string
	Present bool

	// Items holds a queue's elements by sequence number, one page per
	// element: the queued ones are Front (elements put back, taken first,
	// in sequence order) then Head up to Tail; an element granted to a
	// taker stays under its number until the taker has it for sure
	// (waits.go).
	Items      casty.TrackedMap[uint64, string]
	Front      []uint64
	Head, Tail uint64

	// Waiters are the callers parked in Take, Acquire and Wait, in arrival
	// order (FIFO), and a queue's or barrier's grants not yet collected;
	// Leases the semaphore's permits held; Token the last fencing token
	// handed out; Round a barrier's generation (rounds tripped).
	Waiters []waiter
	Leases  []lease
	Token   uint64
	Round   uint64

	// Catalog is a catalog entry: what a collection of this name is.
	Catalog meta

	// sorted caches Entries' keys in order for Page, nil once a key is
	// added or removed (transient: rebuilt after an activation).
	sorted []string
}

// waiter is a caller parked in the shard, or a grant it has not
// collected yet: its id, when the owner stops keeping it (renewed while
// its caller keeps asking), the TTL its grant gets, and what it was
// granted once it was. A semaphore's waiter becomes a lease when granted;
// a queue taker's and a barrier party's record stays, Granted, until its
// caller acknowledges it or it expires, so a retried claim gets the same
// answer.
type waiter struct {
	ID        string `msgpack:"i"`
	Expires   int64  `msgpack:"e"`           // unix ns, the owner's clock
	TTL       int64  `msgpack:"l,omitempty"` // ns
	Granted   bool   `msgpack:"g,omitempty"`
	Delivered bool   `msgpack:"d,omitempty"` // a claim answered the grant (it may have been lost on the way)
	Seq       uint64 `msgpack:"s,omitempty"` // a queue taker's element, once granted
}

// lease is a semaphore permit held.
type lease struct {
	ID      string `msgpack:"i"`
	Token   uint64 `msgpack:"t"`
	Expires int64  `msgpack:"e"` // unix ns, the owner's clock
}

// meta is what a catalog entry records of a collection.
type meta struct {
	Type   string `msgpack:"t,omitempty"` // "map", "set", …
	Triple string `msgpack:"r,omitempty"`
	Param  int64  `msgpack:"p,omitempty"` // shards, stripes, permits or parties
}

// req is every operation's argument; unused fields are omitted on the wire.
type req struct {
	Key    string   `msgpack:"k,omitempty"` // encoded key or element
	Value  string   `msgpack:"v,omitempty"` // encoded value
	Old    string   `msgpack:"o,omitempty"` // CompareAndSwap's expected value
	Has    bool     `msgpack:"h,omitempty"` // CompareAndSwap: expected present
	N      int64    `msgpack:"n,omitempty"` // delta, limit, permits, parties
	Cursor string   `msgpack:"c,omitempty"` // a listing's last key seen
	Waiter string   `msgpack:"w,omitempty"` // a parked caller's id, or a lease's
	TTL    int64    `msgpack:"l,omitempty"` // ns
	Wait   bool     `msgpack:"q,omitempty"` // park when it cannot be granted now
	Token  uint64   `msgpack:"t,omitempty"` // a lease's fencing token
	Acks   []string `msgpack:"a,omitempty"` // grants the facade has collected (waits.go)
	Kind   string   `msgpack:"K,omitempty"` // Await: the shard's kind
	Shard  string   `msgpack:"s,omitempty"` // Await: the shard's key
	Bound  int64    `msgpack:"b,omitempty"` // Await: how long to park at most, ns
	Meta   meta     `msgpack:"m,omitempty"`
}

// resp is every operation's result.
type resp struct {
	Value   string   `msgpack:"v,omitempty"`
	Found   bool     `msgpack:"f,omitempty"`
	N       int64    `msgpack:"n,omitempty"`
	List    []string `msgpack:"l,omitempty"` // a listing's page: keys and values alternating, or elements
	More    bool     `msgpack:"m,omitempty"` // a listing has more after this page
	Token   uint64   `msgpack:"t,omitempty"`
	Expires int64    `msgpack:"e,omitempty"` // a lease's time left, ns, as the owner answered
	Wait    status   `msgpack:"w,omitempty"` // a waiting operation's outcome
	Meta    meta     `msgpack:"c,omitempty"` // the catalog's entry, on a mismatch
}

// Request and response types are registered before any shard kind is
// declared, whatever order this package's files initialise in.
var registerOnce sync.Once

func registerMessages() {
	casty.Message[waiter](casty.Name("casty.collections.waiter"))
	casty.Message[lease](casty.Name("casty.collections.lease"))
	casty.Message[meta](casty.Name("casty.collections.meta"))
	casty.Message[req](casty.Name("casty.collections.req"))
	casty.Message[resp](casty.Name("casty.collections.resp"))
}

// Open records what the collection named by the key is, the first time
// it is opened, and otherwise answers what it was opened as.
func (s *shard) Open(_ context.Context, q req) (resp, error) {
	if s.Catalog.Type == "" {
		s.Catalog = q.Meta
		return resp{Found: true}, nil
	}
	return resp{Found: s.Catalog == q.Meta, Meta: s.Catalog}, nil
}

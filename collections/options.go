package collections

import (
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Option configures a collection when it is opened, or a replication
// triple when it is declared.
type Option func(*options)

type options struct {
	replicas    int
	write, read casty.Quorum
	shards      int
	maxItem     int
	ttl         time.Duration
}

// Defaults, as the original design sets them: 32 shards or stripes,
// 3 replicas, a write acknowledged by a majority of them, a read answered
// by the owner.
const (
	DefaultShards   = 32
	DefaultReplicas = 3
	// DefaultMaxItem bounds one encoded key, value or element (1 MiB).
	DefaultMaxItem = 1 << 20
	// DefaultTTL is how long a lease, or a waiter whose caller stopped
	// asking, lasts without a renewal (30 s).
	DefaultTTL = 30 * time.Second
	// MaxName bounds a collection's name, in bytes.
	MaxName = 200
	// MaxShards bounds Shards.
	MaxShards = 4096
)

func defaults() options {
	return options{replicas: DefaultReplicas, write: casty.Majority, read: casty.One, shards: DefaultShards, maxItem: DefaultMaxItem, ttl: DefaultTTL}
}

// Replicas sets how many members hold each shard's state (default 3).
func Replicas(n int) Option { return func(o *options) { o.replicas = n } }

// Write sets the write quorum (default casty.Majority).
func Write(q casty.Quorum) Option { return func(o *options) { o.write = q } }

// Read sets the read quorum (default casty.One: answered by the owner).
// casty.Majority makes reads linearizable across an owner's partition.
func Read(q casty.Quorum) Option { return func(o *options) { o.read = q } }

// Shards sets how many shard actors a map, set or multimap spreads its
// items over, or how many stripes a counter has (default 32). It is part
// of the collection's identity: every opener must use the same.
func Shards(n int) Option { return func(o *options) { o.shards = n } }

// MaxItem bounds one encoded key, value or element (default 1 MiB);
// larger ones are refused with ErrTooLarge before anything is sent.
func MaxItem(n int) Option { return func(o *options) { o.maxItem = n } }

// TTL sets how long a semaphore's or lock's lease lasts without Renew,
// how long a parked waiter (Acquire, Lock, Take, Wait) is kept once its
// caller stops asking — its process died, say — and how long a grant
// stays reserved for a caller that has not collected it (default 30 s).
// Leases are timed on the member serving the collection. Keep it well
// above a round trip to that member: a parked waiter renews its place
// every TTL/3 at the most often.
func TTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// triple is a replication triple, canonical: quorums as counts.
type triple struct{ replicas, write, read int }

func (t triple) String() string {
	q := func(n int) string {
		switch {
		case n == 1:
			return "one"
		case n == t.replicas:
			return "all"
		case n == t.replicas/2+1:
			return "majority"
		}
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("r%d,w%s,r%s", t.replicas, q(t.write), q(t.read))
}

func (o options) triple() (triple, error) {
	if o.replicas < 1 {
		return triple{}, fmt.Errorf("%w: replicas must be at least 1, got %d", ErrInvalidOption, o.replicas)
	}
	t := triple{replicas: o.replicas}
	for _, q := range []struct {
		what string
		q    casty.Quorum
		n    *int
	}{{"write", o.write, &t.write}, {"read", o.read, &t.read}} {
		if q.q == 0 || q.q < casty.All {
			return triple{}, fmt.Errorf("%w: invalid %s quorum %d", ErrInvalidOption, q.what, int(q.q))
		}
		*q.n = q.q.Of(o.replicas)
		if *q.n > o.replicas {
			return triple{}, fmt.Errorf("%w: %s quorum %d exceeds replicas %d", ErrInvalidOption, q.what, *q.n, o.replicas)
		}
	}
	return t, nil
}

// Shard actors: one kind per replication triple, named after it, so any
// member that receives a call materialises the shard with the right
// replication — the collection's constructor need not have run there. Kinds
// are declared when the process starts, on every member alike (a member
// syncs only the kinds it has declared); the common triples are declared
// here, others with Declare. Shards never idle out: on a local system, or
// with Replicas(1), an idle deactivation would drop their items.
var (
	kindsMu sync.Mutex
	kinds   = map[triple]*casty.Kind[shard]{}
)

func kindName(t triple) string { return "casty.collections.Shard[" + t.String() + "]" }

// Declared is a replication triple declared for collections.
type Declared struct{ t triple }

// String returns the triple as shard kinds are named after it, e.g.
// "r3,wmajority,rone".
func (d Declared) String() string { return d.t.String() }

// Declare declares the shard kind of a replication triple other than the
// ones declared already (r1,wone,rone; r3,wmajority,rone — the default;
// r3,wmajority,rmajority). Like casty.Actor, call it at package level, in
// a package every member's program imports, so every member serves and
// syncs that triple's shards:
//
//	var _ = collections.Declare(collections.Replicas(5), collections.Write(casty.Majority))
//
// Declare panics on an invalid triple; declaring one twice is harmless.
func Declare(opts ...Option) Declared {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	t, err := o.triple()
	if err != nil {
		panic("collections: Declare: " + err.Error())
	}
	declare(t)
	return Declared{t}
}

func declare(t triple) *casty.Kind[shard] {
	registerOnce.Do(registerMessages)
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if k := kinds[t]; k != nil {
		return k
	}
	k := casty.Actor[shard](casty.Name(kindName(t)), casty.Replicas(t.replicas), casty.Write(casty.Quorum(t.write)), casty.Read(casty.Quorum(t.read)), casty.IdleTimeout(casty.Forever))
	kinds[t] = k
	return k
}

func kindOf(t triple) *casty.Kind[shard] {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	return kinds[t]
}

// catalogTriple is where every collection's catalog entry lives: reads of
// it are linearizable, so two openers never both see "new".
var catalogTriple = triple{replicas: 3, write: 2, read: 2}

var (
	_ = declare(triple{1, 1, 1})
	_ = declare(triple{3, 2, 1})
	_ = declare(catalogTriple)
)

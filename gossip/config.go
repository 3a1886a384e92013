package gossip

import (
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/casty-go/casty/gossip/internal/core"
)

// Config holds every membership knob; each field's comment gives its
// default. A nil *Config means DefaultConfig().
type Config struct {
	// ActiveViewSize is the HyParView active view: the overlay neighbours a
	// node keeps links to and monitors. Default 5. Zero is invalid.
	ActiveViewSize int
	// PassiveViewSize is the HyParView passive view: addresses held in
	// reserve for promotion. Default 30. Zero is invalid.
	PassiveViewSize int
	// ActiveRandomWalkLength (ARWL) is the forward-join walk length: a join
	// travels this many hops before the last node adopts the joiner. Default 6.
	ActiveRandomWalkLength int
	// PassiveRandomWalkLength (PRWL) is the hop count at which a forward-join
	// also drops the joiner into a passive view; also the TTL of a shuffle
	// walk. Default 3. Must be <= ActiveRandomWalkLength.
	PassiveRandomWalkLength int
	// ShuffleInterval is how often a node exchanges a view sample with a
	// random walk's end. Default 10 s. Zero is invalid.
	ShuffleInterval time.Duration
	// ShuffleActive is how many active-view peers a shuffle samples. Default 3.
	ShuffleActive int
	// ShufflePassive is how many passive-view peers a shuffle samples. Default 4.
	ShufflePassive int
	// SuspicionTimeout is how long a SUSPECT record may go unrefuted before the
	// node declares it DEAD. Default 5 s. Zero is invalid.
	SuspicionTimeout time.Duration
	// AntiEntropyInterval is how often a node compares its table with a
	// random active neighbour (digest first, full table when they differ).
	// A new link always triggers one. Each round also probes one random
	// ALIVE non-neighbour: a failed dial of it raises a suspicion (SPEC.md,
	// Failure detection). Default 30 s. Zero is invalid.
	AntiEntropyInterval time.Duration
	// TombstoneTTL is how long LEFT and DEAD records are kept so late rumours
	// cannot resurrect them. Default 60 s. Zero is invalid.
	TombstoneTTL time.Duration
	// ReconnectInterval is how often a node contacts one member it lost to
	// a failure (a DEAD member whose tombstone expired, still within
	// ReconnectTimeout) with an anti-entropy digest, and, when no member
	// at any of its Seeds is live in its table, one seed: so two sides
	// of a partition that outlasted TombstoneTTL find each other again
	// once it heals (SPEC.md, Reconnect). Default 30 s. Zero is invalid.
	ReconnectInterval time.Duration
	// ReconnectTimeout is how long a member lost to a failure stays on
	// the reconnect list after its tombstone expired: it is dropped
	// sooner when a live member is held at its address. Default 24 h.
	// Zero is invalid.
	ReconnectTimeout time.Duration
	// GraftTimeout is how long a Plumtree node waits for a payload announced
	// by IHAVE before it grafts the announcer. Default 0.5 s. Zero is invalid.
	GraftTimeout time.Duration
	// JoinTimeout is how long a join (or rejoin) waits for a first active
	// neighbour before it tries the next known address. Default 10 s.
	JoinTimeout time.Duration
	// NeighborTimeout is how long a NEIGHBOR request to a passive peer may go
	// unanswered before the next candidate is tried. It is also how long an
	// admission probe (a PING checking a second-hand record, SPEC.md,
	// Admission) waits for its answer; such a record is settled or dropped
	// within 3 × NeighborTimeout. Default 2 s (a knob of this
	// implementation). Zero is invalid.
	NeighborTimeout time.Duration
	// SeenTTL is how long a delivered broadcast id is remembered (to detect
	// duplicates and answer grafts). Zero means TombstoneTTL.
	SeenTTL time.Duration
	// LeaveLinger is how long Agent.Leave keeps the node running after it
	// announced LEFT, answering grafts for the LEFT record, before it closes
	// the transport. Zero means 2 × GraftTimeout. A node with no other
	// live or suspected member does not linger.
	LeaveLinger time.Duration
	// MaxTableSize bounds the member table: its records (tombstones
	// included) plus the second-hand records waiting for an admission
	// probe (SPEC.md, Admission). When it is reached, new unverified
	// records (and tombstones of ids the table does not hold) are dropped
	// and counted (Stats.Refused, a WARN line per 10 s at most); a table
	// record is never evicted for them, but an unverified record of the
	// connection holding the most gives way to one from a connection
	// holding fewer (SPEC.md, Admission: Bound). Default 4096; zero means
	// 4096; at most 65536.
	MaxTableSize int
	// MaxClientRecords bounds, within MaxTableSize, the records of
	// lite clients (RoleClient): table records of that role, tombstones
	// included, plus unverified records of that role about ids the table
	// does not hold. When it is reached a new lite client's record is
	// refused like one past MaxTableSize (counted in Stats.Refused, the
	// same paced WARN line), so at least MaxTableSize − MaxClientRecords
	// of the table stay for members whatever lite clients, or whoever
	// holds only the client or operator secret, introduce (SPEC.md,
	// Admission: Bound). Tombstones count because a record that dies
	// stays one for TombstoneTTL: a forger cycling fakes would otherwise
	// fill the rest of the table with its fakes' tombstones. Default
	// (zero): a quarter of MaxTableSize, at least 1 (1024 with the
	// default 4096): a deployment with up to a thousand lite clients fits
	// it, and a client-credential holder can take at most a quarter of
	// the table. Raise it, up to MaxTableSize (where clients and members
	// share the whole table, as before the bound), for more lite clients.
	// Negative or over MaxTableSize is invalid.
	MaxClientRecords int
	// Seeds are addresses tried, in random order, to join. Empty means the
	// node starts a cluster of its own.
	Seeds []string
	// Rand is the randomness source (walk choices, samples). Nil means a
	// source seeded from the node id, so a node's choices are reproducible,
	// and admission-probe nonces drawn from a separate source seeded by
	// crypto/rand. When Rand is set the nonces are drawn from it too: set it
	// only in tests and simulations, where a guessable nonce does not matter.
	Rand *rand.Rand
	// Clock is the Agent's time source (the Node itself takes time as an
	// argument). Nil means time.Now.
	Clock func() time.Time
	// Logger receives one line per dropped message and notable transitions.
	// Nil means discard.
	Logger *slog.Logger
}

// DefaultConfig returns the membership defaults given on each Config field.
func DefaultConfig() *Config { return (*Config)(core.DefaultConfig()) }

// Validate reports the first invalid field, wrapping ErrInvalidConfig.
func (c *Config) Validate() error { return (*core.Config)(c).Validate() }

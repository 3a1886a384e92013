package casty

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// Config holds every timeout, size and interval Casty uses, one group per
// layer. A zero field means its default; DefaultConfig lists them all, and
// each group has its own constructor (DefaultActorConfig, ...) and its own
// Validate. Local mode uses the actor knobs; the transport and membership
// knobs take effect in cluster mode, the replication ones on members
// serving kinds with Replicas > 1 (docs/guide.md, "Replication"); all are
// validated everywhere so one Config serves both.
type Config struct {
	// Actors holds the actor runtime's knobs, used in local and cluster
	// mode.
	Actors ActorConfig
	// Replication holds the knobs of replicated state (cluster mode).
	Replication ReplicationConfig
	// Transport holds the connection knobs between nodes (cluster mode).
	Transport TransportConfig
	// Membership holds the membership protocol's knobs (cluster mode),
	// under the membership protocol's own names (gossip.Config).
	Membership MembershipConfig

	// Shards is reserved for the shard count of sharded collections, which
	// Casty does not offer yet: it is validated (and reported by
	// DefaultConfig) but nothing uses it. Default 32.
	Shards int
}

// defaultShards is Config.Shards' default.
const defaultShards = 32

// ActorConfig holds the actor runtime's knobs: timeouts of calls,
// activations and Close, and the bounds on activations and spies. A zero
// field means its default (DefaultActorConfig).
type ActorConfig struct {
	// CallTimeout bounds a call whose ctx has no deadline. Default 10 s.
	// A timeout of a second or more is enforced by a sweeper rather than a
	// timer per call, and may fire up to 10 ms late.
	CallTimeout time.Duration
	// IdleTimeout deactivates an activation with no message for this long,
	// unless its kind sets casty.IdleTimeout (at declaration, or on one
	// system with Tune). Default 300 s; Forever never.
	IdleTimeout time.Duration
	// DrainTimeout bounds Close's drain of in-flight and queued messages and
	// Deactivate hooks. Default 10 s.
	DrainTimeout time.Duration
	// MaxActivations bounds the activations one member (or a local
	// system) holds at once. A call that needs a new activation when it
	// is full first deactivates an idle one — the least recently used of
	// a sample, gracefully, as its idle timeout would have: Deactivate
	// hook run, replicated state kept on its replicas — and waits for it
	// to be gone, or for one that is only ending a commit (a replicated
	// call answered early by the caller's member may leave its activation
	// committing for a moment); when every activation is running a
	// handler the call fails with ErrOverloaded (definite). Default 1,000,000: about 250 MB of
	// bookkeeping at the ~250 B an idle activation costs beside its state
	// (BENCHMARKS.md), room for the many small actors a member is made
	// for, while a flood of keys from one caller can no longer grow a
	// member without bound. Size it from the memory a member may spend.
	MaxActivations int
	// MaxSpies caps the spy subscriptions this node serves at once: its
	// own Spy calls plus other nodes' cluster-scope spies subscribed here.
	// Beyond it Spy fails with ErrTooManySpies (on the spying node too,
	// when a member refuses). Default 64.
	MaxSpies int
}

// ReplicationConfig holds the knobs of replicated state: the bounds of a
// replication round, of membership changes and of the state a member
// holds, and the periods of repair and pruning. A zero field means its
// default (DefaultReplicationConfig).
type ReplicationConfig struct {
	// Timeout bounds one replication round: an activation's quorum read,
	// a commit's quorum write, a Read(Majority) confirm (the caller's
	// deadline bounds it too, when sooner). Default 5 s.
	Timeout time.Duration
	// RemoveDeadAfter is how long a member must have been dead (or gone
	// from the membership table) before the placement of replicated kinds
	// drops it, so its replica slots move to live members, who sync them
	// first (replica/SPEC.md). A removal is agreed: a majority of the
	// placement must each have seen the member dead this long, so the
	// minority side of a partition removes no one. Until then an actor with
	// a dead replica still has its other replicas for its quorums. A
	// member that comes back after its removal (it was cut off) hands over
	// what it holds and is joined again by itself.
	// A member syncing a range also waits this long, and two Timeouts
	// more, for a replica of the range that is still syncing it itself:
	// that replica may hold the only copy of a write (replica/SPEC.md,
	// "Membership changes"). Default 30 s.
	RemoveDeadAfter time.Duration
	// RepairInterval is the period of the anti-entropy pass over
	// replicated state: each member compares what it holds of the ranges
	// it replicates with the other replicas of those ranges and adopts
	// every newer copy, so a replica that missed commits catches up
	// without waiting for the actor's next write or activation
	// (replica/SPEC.md, "Repair"). Default 30 s.
	RepairInterval time.Duration
	// StateTombstoneTTL is how long a deleted actor's empty copy
	// (Self(ctx).DeleteState) is kept before an anti-entropy pass may drop
	// it, which it does only once every other replica holds it or nothing,
	// and nobody holds an older copy that could come back. Default 1 h.
	StateTombstoneTTL time.Duration
	// MaxClockDrift bounds how far ahead of this member's physical clock
	// a timestamp it accepts from another member may be (the replication
	// clock's hlc.Config.MaxDrift). A replication request stamped further
	// ahead is refused, so one member's wrong clock cannot drag every
	// member's clock forward; a member whose clock is that far ahead
	// cannot replicate until it is fixed (it logs why). What is dropped by
	// age — old copies of ranges a member re-enters, tombstones past
	// StateTombstoneTTL — is safe at any skew within the bound: tombstones
	// are pruned only once StateTombstoneTTL plus MaxClockDrift old
	// (replica/SPEC.md, "Pruning"). Default 500 ms.
	MaxClockDrift time.Duration
	// HandoffTimeout bounds the handoff of a closing member: after it
	// announced LEFT it keeps answering the syncs of the members that take
	// its ranges over until each has finished, for at most this long (and
	// no longer than Close's ctx). Default 10 s.
	HandoffTimeout time.Duration
	// Batch is the largest commit part in bytes; bigger commits are
	// split. Default 256 KiB.
	Batch int
	// MaxBytes bounds the replicated state a member holds: once its
	// copies cost that much (System.Replication's Usage), it refuses
	// state for actors it holds nothing of, and a call that would activate
	// a new replicated actor whose replicas are full fails with
	// ErrReplicaFull. Actors already held keep committing, and re-
	// replication after membership changes is never refused, so a member
	// may end above it. Default 0: no limit.
	MaxBytes int
}

// TransportConfig holds the connection knobs between nodes: frame,
// message and stream bounds, the timeouts of dials, handshakes and
// keepalives, the redial backoff, compression, and the limits and byte
// budgets that defend a node against its peers. Each is the mux.Config
// field of the same name, and defaults to mux.DefaultConfig's value but
// for KeepAliveTimeout. A zero field means its default
// (DefaultTransportConfig).
type TransportConfig struct {
	// MaxFrame is the largest mux frame in bytes. Default 256 KiB.
	MaxFrame int
	// MaxMessage is the largest message in bytes. Default 4 MiB. A call to
	// another node whose argument or result encodes larger fails with an
	// error saying so (the argument before anything is sent; the result
	// after the handler ran, as an *ActorFailedError): send and return large
	// data through Upload and Stream, whose elements each fit in it. Calls
	// within one node are not encoded and have no limit.
	MaxMessage int
	// StreamWindow is the per-stream credit window in bytes: how many
	// bytes of a stream to or from another member may be in flight, and
	// how many of the elements its consumer has not taken the receiving
	// member holds (plus one element; see StreamBuffer for a Duplex). A
	// stream is bounded in elements besides: its producer is at most
	// StreamBuffer elements ahead of its consumer, however small they are.
	// Default 256 KiB.
	StreamWindow int
	// MaxStreams caps concurrent streams per connection. Default 1024.
	MaxStreams int
	// HandshakeTimeout bounds a connection's handshake. Default 5 s.
	HandshakeTimeout time.Duration
	// ConnectTimeout bounds a dial. Default 5 s.
	ConnectTimeout time.Duration
	// KeepAliveInterval is the ping period on every connection. Default
	// 1 s. A member whose process is stopped or whose host vanished keeps
	// its connections open and answers nothing; the failed keepalive is
	// what makes its neighbours suspect it, and a suspected member's keys
	// move at once (the ring holds only live members). So a stopped owner's
	// keys are served again about KeepAliveInterval + KeepAliveTimeout
	// after it last sent anything (BENCHMARKS.md, failover after SIGSTOP).
	KeepAliveInterval time.Duration
	// KeepAliveTimeout is how long past KeepAliveInterval a connection may
	// go without anything read from its peer (any record proves it, a
	// late pong too), and how long a write may wait for the socket, before
	// the connection is declared dead. Default 3 s, where mux's own
	// default is 5 s: the failed keepalive is what makes the neighbours of
	// a stopped member suspect it, so with KeepAliveInterval's 1 s its keys
	// move about 4 to 5 s after it stopped. A live member is that silent
	// only when its reader waits on a full lane inbox (a slow handler
	// under a flood of messages); the cost of a false failure is a
	// reconnect, the calls in flight on it (indeterminate) and a
	// suspicion the member refutes.
	KeepAliveTimeout time.Duration
	// ReconnectMin is the first redial delay, doubling up to ReconnectMax
	// with ±25 % jitter. Defaults 100 ms and 15 s.
	ReconnectMin, ReconnectMax time.Duration
	// CompressThreshold: payloads of at least this many bytes are compressed
	// when that makes them smaller. Default 4096.
	CompressThreshold int

	// MaxRequests caps the peer's requests handled at once on one
	// connection (running or queued to run); one beyond it is refused
	// without running (ErrOverloaded to a casty caller). Default 1024.
	MaxRequests int
	// MaxQueuedBytes caps, per connection, the bytes of the peer's
	// requests this node holds at their decoded size, with the answers
	// of finished handlers waiting to be sent; a request beyond it is
	// refused without running, unless the connection holds nothing else.
	// An answer that would wait while the connection holds more closes
	// the connection. Default 64 MiB.
	MaxQueuedBytes int
	// MaxQueuedBytesTotal caps what MaxQueuedBytes counts over all of the
	// node's connections together; beyond it a request is refused unless
	// its connection holds nothing else. Default 1 GiB; at least
	// MaxQueuedBytes.
	MaxQueuedBytesTotal int
	// MaxPartialBytes caps, per connection, the memory held for partly
	// received messages; a connection that goes past it is closed. It is
	// never below one whole message's buffer (MaxMessage + 30). Default
	// 16 MiB.
	MaxPartialBytes int
	// MaxPartialBytesTotal caps the memory held for partly received
	// messages by all of the node's connections together; the connection
	// that takes the node past it is closed. Default 256 MiB; at least
	// MaxPartialBytes.
	MaxPartialBytesTotal int
	// PartialMessageTimeout bounds how long a message may stay partly
	// received; then the connection is closed. Default 30 s.
	PartialMessageTimeout time.Duration
	// MaxInboundConns caps the inbound connections open at once, in
	// handshake or established; one beyond it is closed as soon as it is
	// accepted. Default 4096; below 256, set MaxInboundConnsPerHost too
	// (its default would exceed it and Validate refuses that).
	MaxInboundConns int
	// MaxInboundConnsPerHost caps the inbound connections open at once
	// from one remote IP address, closing one beyond it at accept.
	// Default 256; at most MaxInboundConns.
	MaxInboundConnsPerHost int
	// MaxClientConns caps the established inbound sessions of clients
	// (lite clients, and peers that did not prove the member credential
	// where one is required), so the rest of MaxInboundConns stays for
	// members; a client session beyond it is refused right after its
	// handshake (mux.ErrTooManyClients to the dialler). Default 0: a
	// quarter of MaxInboundConns (1024); at most MaxInboundConns.
	MaxClientConns int
	// MaxClientConnsPerHost caps the client sessions (as MaxClientConns
	// counts them) from one remote IP address, refusing one beyond it in
	// the same way. Default 0: 64, or MaxClientConns when smaller; at most
	// MaxClientConns.
	MaxClientConnsPerHost int
	// MaxHandshakes caps the inbound handshakes in progress at once; a
	// new connection beyond it takes the place of one that has not sent a
	// byte, and is closed only when there is none. Default 128; below 8,
	// set MaxHandshakesPerHost too.
	MaxHandshakes int
	// MaxHandshakesPerHost caps the inbound handshakes in progress at
	// once from one remote IP address, in the same way. Default 8; at
	// most MaxHandshakes.
	MaxHandshakesPerHost int
	// FirstByteTimeout bounds how long an inbound connection may stay
	// silent before its first byte; then it is closed. HandshakeTimeout
	// still bounds the whole handshake. Default 2 s.
	FirstByteTimeout time.Duration
}

// MembershipConfig holds the membership protocol's knobs, each named as
// its gossip.Config field and defaulting to gossip.DefaultConfig's value.
// A zero field means its default (DefaultMembershipConfig).
type MembershipConfig struct {
	// ActiveViewSize and PassiveViewSize are HyParView's view sizes.
	// Defaults 5, 30.
	ActiveViewSize, PassiveViewSize int
	// ActiveRandomWalkLength and PassiveRandomWalkLength are the join
	// random-walk lengths. Defaults 6, 3.
	ActiveRandomWalkLength, PassiveRandomWalkLength int
	// ShuffleInterval is the passive-view shuffle period. Default 10 s.
	ShuffleInterval time.Duration
	// ShuffleActive and ShufflePassive are the shuffle sample sizes.
	// Defaults 3, 4.
	ShuffleActive, ShufflePassive int
	// SuspicionTimeout turns an unrefuted suspicion into DEAD. Default 5 s.
	SuspicionTimeout time.Duration
	// AntiEntropyInterval is the period of full member-table exchanges.
	// Default 30 s.
	AntiEntropyInterval time.Duration
	// TombstoneTTL keeps dead and departed members' records. Default 60 s.
	TombstoneTTL time.Duration
	// ReconnectInterval is how often a member contacts one member it lost
	// to a failure (a dead member whose record TombstoneTTL dropped,
	// within ReconnectTimeout) and, when none of its seeds is a live
	// member, one seed: so the two sides of a partition held longer than
	// TombstoneTTL merge again once it heals (gossip/SPEC.md, Reconnect).
	// Default 30 s.
	ReconnectInterval time.Duration
	// ReconnectTimeout is how long a member lost to a failure is still
	// contacted after its record was dropped. Default 24 h.
	ReconnectTimeout time.Duration
	// GraftTimeout is Plumtree's wait for an announced message. Default 0.5 s.
	GraftTimeout time.Duration
	// JoinTimeout bounds joining through the seeds. Default 10 s.
	JoinTimeout time.Duration
	// MaxTableSize bounds each node's table of members and lite clients,
	// the records of departed ones included for TombstoneTTL, and those
	// waiting for their admission probe: beyond it new ones are refused
	// and counted (casty.membership.refused; a WARN line per 10 s at
	// most), never evicting a known one (gossip/SPEC.md, Admission).
	// Default 4096, at most 65536.
	MaxTableSize int
	// MaxClientRecords bounds, within MaxTableSize, the records of lite
	// clients, so that whoever holds only the client or operator
	// credential cannot fill the table and keep members out
	// (SECURITY.md). Beyond it a new lite client is refused like a record
	// past MaxTableSize. Default 0: a quarter of MaxTableSize (1,024);
	// raise it, up to MaxTableSize, for more lite clients.
	MaxClientRecords int
}

// DefaultConfig returns the documented defaults, every group filled by its
// own constructor.
func DefaultConfig() Config {
	return Config{
		Actors:      DefaultActorConfig(),
		Replication: DefaultReplicationConfig(),
		Transport:   DefaultTransportConfig(),
		Membership:  DefaultMembershipConfig(),
		Shards:      defaultShards,
	}
}

// DefaultActorConfig returns the actor runtime's documented defaults.
func DefaultActorConfig() ActorConfig {
	return ActorConfig{
		CallTimeout:    10 * time.Second,
		IdleTimeout:    300 * time.Second,
		DrainTimeout:   10 * time.Second,
		MaxActivations: 1_000_000,
		MaxSpies:       64,
	}
}

// DefaultReplicationConfig returns replication's documented defaults.
func DefaultReplicationConfig() ReplicationConfig {
	return ReplicationConfig{
		Timeout:           5 * time.Second,
		RemoveDeadAfter:   30 * time.Second,
		RepairInterval:    30 * time.Second,
		StateTombstoneTTL: time.Hour,
		MaxClockDrift:     500 * time.Millisecond,
		HandoffTimeout:    10 * time.Second,
		Batch:             256 << 10,
	}
}

// keepAliveTimeout is TransportConfig.KeepAliveTimeout's default, the one
// transport default that is not mux's.
const keepAliveTimeout = 3 * time.Second

// DefaultTransportConfig returns the transport's documented defaults:
// mux.DefaultConfig's values, so they are defined once, but for
// KeepAliveTimeout (3 s, where mux's is 5 s).
func DefaultTransportConfig() TransportConfig {
	m := mux.DefaultConfig()
	return TransportConfig{
		MaxFrame:               m.MaxFrame,
		MaxMessage:             m.MaxMessage,
		StreamWindow:           m.StreamWindow,
		MaxStreams:             m.MaxStreams,
		HandshakeTimeout:       m.HandshakeTimeout,
		ConnectTimeout:         m.ConnectTimeout,
		KeepAliveInterval:      m.KeepAliveInterval,
		KeepAliveTimeout:       keepAliveTimeout,
		ReconnectMin:           m.ReconnectMin,
		ReconnectMax:           m.ReconnectMax,
		CompressThreshold:      m.CompressThreshold,
		MaxRequests:            m.MaxRequests,
		MaxQueuedBytes:         m.MaxQueuedBytes,
		MaxQueuedBytesTotal:    m.MaxQueuedBytesTotal,
		MaxPartialBytes:        m.MaxPartialBytes,
		MaxPartialBytesTotal:   m.MaxPartialBytesTotal,
		PartialMessageTimeout:  m.PartialMessageTimeout,
		MaxInboundConns:        m.MaxInboundConns,
		MaxInboundConnsPerHost: m.MaxInboundConnsPerHost,
		MaxClientConns:         m.MaxClientConns,
		MaxClientConnsPerHost:  m.MaxClientConnsPerHost,
		MaxHandshakes:          m.MaxHandshakes,
		MaxHandshakesPerHost:   m.MaxHandshakesPerHost,
		FirstByteTimeout:       m.FirstByteTimeout,
	}
}

// muxConfig is mux.DefaultConfig with every knob of c, its zero fields at
// their defaults: the transport's configuration before the node's own
// settings (id, role, address, credentials, hooks).
func (c TransportConfig) muxConfig() mux.Config {
	c = c.withDefaults()
	m := mux.DefaultConfig()
	m.MaxFrame, m.MaxMessage, m.StreamWindow, m.MaxStreams = c.MaxFrame, c.MaxMessage, c.StreamWindow, c.MaxStreams
	m.HandshakeTimeout, m.ConnectTimeout = c.HandshakeTimeout, c.ConnectTimeout
	m.KeepAliveInterval, m.KeepAliveTimeout = c.KeepAliveInterval, c.KeepAliveTimeout
	m.ReconnectMin, m.ReconnectMax = c.ReconnectMin, c.ReconnectMax
	m.CompressThreshold = c.CompressThreshold
	m.MaxRequests = c.MaxRequests
	m.MaxQueuedBytes, m.MaxQueuedBytesTotal = c.MaxQueuedBytes, c.MaxQueuedBytesTotal
	m.MaxPartialBytes, m.MaxPartialBytesTotal = c.MaxPartialBytes, c.MaxPartialBytesTotal
	m.PartialMessageTimeout = c.PartialMessageTimeout
	m.MaxInboundConns, m.MaxInboundConnsPerHost = c.MaxInboundConns, c.MaxInboundConnsPerHost
	m.MaxClientConns, m.MaxClientConnsPerHost = c.MaxClientConns, c.MaxClientConnsPerHost
	m.MaxHandshakes, m.MaxHandshakesPerHost = c.MaxHandshakes, c.MaxHandshakesPerHost
	m.FirstByteTimeout = c.FirstByteTimeout
	return m
}

// DefaultMembershipConfig returns the membership protocol's own defaults
// (gossip.DefaultConfig), so they are defined once.
func DefaultMembershipConfig() MembershipConfig {
	g := gossip.DefaultConfig()
	return MembershipConfig{
		ActiveViewSize:          g.ActiveViewSize,
		PassiveViewSize:         g.PassiveViewSize,
		ActiveRandomWalkLength:  g.ActiveRandomWalkLength,
		PassiveRandomWalkLength: g.PassiveRandomWalkLength,
		ShuffleInterval:         g.ShuffleInterval,
		ShuffleActive:           g.ShuffleActive,
		ShufflePassive:          g.ShufflePassive,
		SuspicionTimeout:        g.SuspicionTimeout,
		AntiEntropyInterval:     g.AntiEntropyInterval,
		TombstoneTTL:            g.TombstoneTTL,
		ReconnectInterval:       g.ReconnectInterval,
		ReconnectTimeout:        g.ReconnectTimeout,
		GraftTimeout:            g.GraftTimeout,
		JoinTimeout:             g.JoinTimeout,
		MaxTableSize:            g.MaxTableSize,
		MaxClientRecords:        g.MaxClientRecords,
	}
}

// fill sets *v to def when it is zero.
func fill[T time.Duration | int](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// filled returns group with each zero field set to defaults' — a group is
// a struct of durations and counts whose zero means the default
// (TestConfigGroupsHoldOnlyDurationsAndCounts).
func filled[G any](group, defaults G) G {
	g, d := reflect.ValueOf(&group).Elem(), reflect.ValueOf(defaults)
	for i := range g.NumField() {
		if f := g.Field(i); f.IsZero() {
			f.Set(d.Field(i))
		}
	}
	return group
}

// withDefaults fills every zero field from DefaultConfig, group by group.
func (c Config) withDefaults() Config {
	c.Actors = c.Actors.withDefaults()
	c.Replication = c.Replication.withDefaults()
	c.Transport = c.Transport.withDefaults()
	c.Membership = c.Membership.withDefaults()
	fill(&c.Shards, defaultShards)
	return c
}

// withDefaults fills every zero field from DefaultActorConfig.
func (c ActorConfig) withDefaults() ActorConfig { return filled(c, DefaultActorConfig()) }

// withDefaults fills every zero field from DefaultReplicationConfig.
func (c ReplicationConfig) withDefaults() ReplicationConfig {
	return filled(c, DefaultReplicationConfig())
}

// withDefaults fills every zero field from DefaultTransportConfig.
func (c TransportConfig) withDefaults() TransportConfig { return filled(c, DefaultTransportConfig()) }

// withDefaults fills every zero field from DefaultMembershipConfig.
func (c MembershipConfig) withDefaults() MembershipConfig {
	return filled(c, DefaultMembershipConfig())
}

// Validate reports the first field that is negative or inconsistent,
// named by its path (Replication.Timeout), wrapping ErrInvalidConfig:
// each group's own checks, in the order Actors, Replication, Transport,
// Membership, then Shards.
func (c Config) Validate() error {
	if err := c.Actors.validate("Actors."); err != nil {
		return err
	}
	if err := c.Replication.validate("Replication."); err != nil {
		return err
	}
	if err := c.Transport.validate("Transport."); err != nil {
		return err
	}
	if err := c.Membership.validate("Membership."); err != nil {
		return err
	}
	if c.Shards < 0 {
		return fmt.Errorf("%w: Shards must not be negative, got %d", ErrInvalidConfig, c.Shards)
	}
	return nil
}

// Validate reports the first field that is negative.
func (c ActorConfig) Validate() error { return c.validate("ActorConfig.") }

func (c ActorConfig) validate(path string) error {
	return nonNegative(path, c)
}

// Validate reports the first field that is negative.
func (c ReplicationConfig) Validate() error { return c.validate("ReplicationConfig.") }

func (c ReplicationConfig) validate(path string) error {
	return nonNegative(path, c)
}

// Validate reports the first field that is negative or inconsistent
// (each with its default when zero): ReconnectMin above ReconnectMax,
// MaxFrame above MaxMessage, or what the transport refuses
// (mux.Config.Validate): a per-host bound above its total, a total
// budget below its per-connection one, a size out of its range.
func (c TransportConfig) Validate() error { return c.validate("TransportConfig.") }

func (c TransportConfig) validate(path string) error {
	if err := nonNegative(path, c); err != nil {
		return err
	}
	full := c.withDefaults()
	if full.ReconnectMin > full.ReconnectMax {
		return fmt.Errorf("%w: %sReconnectMin %v exceeds %sReconnectMax %v", ErrInvalidConfig, path, full.ReconnectMin, path, full.ReconnectMax)
	}
	if full.MaxFrame > full.MaxMessage {
		return fmt.Errorf("%w: %sMaxFrame %d exceeds %sMaxMessage %d", ErrInvalidConfig, path, full.MaxFrame, path, full.MaxMessage)
	}
	m := c.muxConfig()
	m.NodeID = mux.NodeID{1} // mux requires one; the node's own is drawn at Start
	if err := m.Validate(); err != nil {
		// mux names the field ("MaxPartialBytesTotal must be >=
		// MaxPartialBytes") by its own name, which is the group's.
		detail := strings.TrimPrefix(err.Error(), mux.ErrInvalidConfig.Error()+": ")
		return fmt.Errorf("%w: %s%s", ErrInvalidConfig, path, detail)
	}
	return nil
}

// Validate reports the first field that is negative, or that the
// membership protocol refuses (gossip.Config.Validate, with each zero
// field at its default): a table bound over 65536, MaxClientRecords over
// MaxTableSize, a view or sample size out of its range.
func (c MembershipConfig) Validate() error { return c.validate("MembershipConfig.") }

func (c MembershipConfig) validate(path string) error {
	if err := nonNegative(path, c); err != nil {
		return err
	}
	if err := gossipConfig(c.withDefaults()).Validate(); err != nil {
		// gossip names the field ("ActiveViewSize = 0") by its own name,
		// which is the group's.
		detail := strings.TrimPrefix(err.Error(), gossip.ErrInvalidConfig.Error()+": ")
		return fmt.Errorf("%w: %s%s", ErrInvalidConfig, path, detail)
	}
	return nil
}

// nonNegative reports the first field of group — a config group, a
// struct of durations and counts — that is negative, named by path and
// the field's name.
func nonNegative(path string, group any) error {
	v := reflect.ValueOf(group)
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInt() && f.Int() < 0 {
			return fmt.Errorf("%w: %s%s must not be negative, got %v", ErrInvalidConfig, path, v.Type().Field(i).Name, f.Interface())
		}
	}
	return nil
}

func (c Config) engine() actor.Config {
	return actor.Config{CallTimeout: c.Actors.CallTimeout, IdleTimeout: c.Actors.IdleTimeout, DrainTimeout: c.Actors.DrainTimeout,
		MaxActivations: c.Actors.MaxActivations, BeforeWait: mux.HandOff, Admit: admitPlaced, ExternalWaits: remoteWaits.Load}
}

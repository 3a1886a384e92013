package casty

import (
	"fmt"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// Config holds every timeout, size and interval Casty uses. A zero field
// means its default; DefaultConfig lists them all. Local mode uses the
// actor knobs; the transport and membership knobs take effect in cluster
// mode, the replication ones on members serving kinds with Replicas > 1
// (package doc, "Replication"); all are validated everywhere so one Config
// serves both.
type Config struct {
	// Actors.

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

	// Replication (cluster mode).

	// ReplicationTimeout bounds one replication round: an activation's
	// quorum read, a commit's quorum write, a Read(Majority) confirm (the
	// caller's deadline bounds it too, when sooner). Default 5 s.
	ReplicationTimeout time.Duration
	// RemoveDeadAfter is how long a member must have been dead (or gone
	// from the membership table) before the placement of replicated kinds
	// drops it, so its replica slots move to live members, who sync them
	// first (replica/SPEC.md). A removal is agreed: a majority of the
	// placement must each have seen the member dead this long, so the
	// minority side of a partition removes no one. Until then an actor with
	// a dead replica still has its other replicas for its quorums. A
	// member that comes back after its removal (it was cut off) hands over
	// what it holds and is joined again by itself.
	// A member syncing a range also waits this long, and two
	// ReplicationTimeouts more, for a replica of the range that is still
	// syncing it itself: that replica may hold the only copy of a write
	// (replica/SPEC.md, "Membership changes"). Default 30 s.
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
	// ReplicationBatch is the largest commit part in bytes; bigger commits
	// are split. Default 256 KiB.
	ReplicationBatch int
	// MaxReplicatedBytes bounds the replicated state a member holds: once
	// its copies cost that much (System.Replication's Usage), it refuses
	// state for actors it holds nothing of, and a call that would activate
	// a new replicated actor whose replicas are full fails with
	// ErrReplicaFull. Actors already held keep committing, and re-
	// replication after membership changes is never refused, so a member
	// may end above it. Default 0: no limit.
	MaxReplicatedBytes int

	// Transport (cluster mode).

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
	// after it stopped (BENCHMARKS.md, failover after SIGSTOP).
	KeepAliveInterval time.Duration
	// KeepAliveTimeout is how long a ping may go unanswered, and how long
	// a write may wait for the socket, before the connection is declared
	// dead. Default 3 s. A live member can be that slow only when its
	// reader waits on a full lane inbox (a slow handler under a flood of
	// messages); the cost of a false failure is a reconnect and a
	// suspicion the member refutes.
	KeepAliveTimeout time.Duration
	// ReconnectMin is the first redial delay, doubling up to ReconnectMax
	// with ±25 % jitter. Defaults 100 ms and 15 s.
	ReconnectMin, ReconnectMax time.Duration
	// CompressThreshold: payloads of at least this many bytes are compressed
	// when that makes them smaller. Default 4096.
	CompressThreshold int

	// Membership (cluster mode).

	// ActiveView and PassiveView are HyParView's view sizes. Defaults 5, 30.
	ActiveView, PassiveView int
	// ActiveWalk and PassiveWalk are the join random-walk lengths. Defaults 6, 3.
	ActiveWalk, PassiveWalk int
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
	// MemberReconnectInterval is how often a member contacts one member
	// it lost to a failure (a dead member whose record TombstoneTTL
	// dropped, within MemberReconnectTimeout) and, when none of its seeds
	// is a live member, one seed: so the two sides of a partition held
	// longer than TombstoneTTL merge again once it heals (gossip/SPEC.md,
	// Reconnect). Default 30 s.
	MemberReconnectInterval time.Duration
	// MemberReconnectTimeout is how long a member lost to a failure is
	// still contacted after its record was dropped. Default 24 h.
	MemberReconnectTimeout time.Duration
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
	// MaxLiteClients bounds, within MaxTableSize, the records of lite
	// clients, so that whoever holds only the client or operator
	// credential cannot fill the table and keep members out
	// (SECURITY.md). Beyond it a new lite client is refused like a record
	// past MaxTableSize. Default a quarter of MaxTableSize (1,024); raise
	// it, up to MaxTableSize, for more lite clients.
	MaxLiteClients int

	// Inspection.

	// MaxSpies caps the spy subscriptions this node serves at once: its
	// own Spy calls plus other nodes' cluster-scope spies subscribed here.
	// Beyond it Spy fails with ErrTooManySpies (on the spying node too,
	// when a member refuses). Default 64.
	MaxSpies int

	// Collections.

	// Shards is reserved for the shard count of sharded collections, which
	// Casty does not offer yet: it is validated (and reported by
	// DefaultConfig) but nothing uses it. Default 32.
	Shards int
}

// DefaultConfig returns the documented defaults, every field set. The
// membership protocol's are gossip's own (gossip.DefaultConfig), under
// casty's names.
func DefaultConfig() Config {
	g := gossip.DefaultConfig()
	return Config{
		CallTimeout:         10 * time.Second,
		IdleTimeout:         300 * time.Second,
		DrainTimeout:        10 * time.Second,
		MaxActivations:      1_000_000,
		ReplicationTimeout:  5 * time.Second,
		HandoffTimeout:      10 * time.Second,
		RepairInterval:      30 * time.Second,
		StateTombstoneTTL:   time.Hour,
		MaxClockDrift:       500 * time.Millisecond,
		RemoveDeadAfter:     30 * time.Second,
		ReplicationBatch:    256 << 10,
		MaxFrame:            256 << 10,
		MaxMessage:          4 << 20,
		StreamWindow:        256 << 10,
		MaxStreams:          1024,
		HandshakeTimeout:    5 * time.Second,
		ConnectTimeout:      5 * time.Second,
		KeepAliveInterval:   time.Second,
		KeepAliveTimeout:    3 * time.Second,
		ReconnectMin:        100 * time.Millisecond,
		ReconnectMax:        15 * time.Second,
		CompressThreshold:   4096,
		ActiveView:          g.ActiveViewSize,
		PassiveView:         g.PassiveViewSize,
		ActiveWalk:          g.ActiveRandomWalkLength,
		PassiveWalk:         g.PassiveRandomWalkLength,
		ShuffleInterval:     g.ShuffleInterval,
		ShuffleActive:       g.ShuffleActive,
		ShufflePassive:      g.ShufflePassive,
		SuspicionTimeout:    g.SuspicionTimeout,
		AntiEntropyInterval: g.AntiEntropyInterval,
		TombstoneTTL:        g.TombstoneTTL,
		GraftTimeout:        g.GraftTimeout,
		JoinTimeout:         g.JoinTimeout,
		MaxSpies:            64,
		Shards:              32,

		MemberReconnectInterval: g.ReconnectInterval,
		MemberReconnectTimeout:  g.ReconnectTimeout,
	}
}

// withDefaults fills every zero field from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	fill := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	filli := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&c.CallTimeout, d.CallTimeout)
	fill(&c.IdleTimeout, d.IdleTimeout)
	fill(&c.DrainTimeout, d.DrainTimeout)
	filli(&c.MaxActivations, d.MaxActivations)
	fill(&c.ReplicationTimeout, d.ReplicationTimeout)
	fill(&c.HandoffTimeout, d.HandoffTimeout)
	fill(&c.RepairInterval, d.RepairInterval)
	fill(&c.StateTombstoneTTL, d.StateTombstoneTTL)
	fill(&c.MaxClockDrift, d.MaxClockDrift)
	fill(&c.RemoveDeadAfter, d.RemoveDeadAfter)
	filli(&c.ReplicationBatch, d.ReplicationBatch)
	filli(&c.MaxFrame, d.MaxFrame)
	filli(&c.MaxMessage, d.MaxMessage)
	filli(&c.StreamWindow, d.StreamWindow)
	filli(&c.MaxStreams, d.MaxStreams)
	fill(&c.HandshakeTimeout, d.HandshakeTimeout)
	fill(&c.ConnectTimeout, d.ConnectTimeout)
	fill(&c.KeepAliveInterval, d.KeepAliveInterval)
	fill(&c.KeepAliveTimeout, d.KeepAliveTimeout)
	fill(&c.ReconnectMin, d.ReconnectMin)
	fill(&c.ReconnectMax, d.ReconnectMax)
	filli(&c.CompressThreshold, d.CompressThreshold)
	filli(&c.ActiveView, d.ActiveView)
	filli(&c.PassiveView, d.PassiveView)
	filli(&c.ActiveWalk, d.ActiveWalk)
	filli(&c.PassiveWalk, d.PassiveWalk)
	fill(&c.ShuffleInterval, d.ShuffleInterval)
	filli(&c.ShuffleActive, d.ShuffleActive)
	filli(&c.ShufflePassive, d.ShufflePassive)
	fill(&c.SuspicionTimeout, d.SuspicionTimeout)
	fill(&c.AntiEntropyInterval, d.AntiEntropyInterval)
	fill(&c.TombstoneTTL, d.TombstoneTTL)
	fill(&c.MemberReconnectInterval, d.MemberReconnectInterval)
	fill(&c.MemberReconnectTimeout, d.MemberReconnectTimeout)
	fill(&c.GraftTimeout, d.GraftTimeout)
	fill(&c.JoinTimeout, d.JoinTimeout)
	filli(&c.MaxSpies, d.MaxSpies)
	filli(&c.Shards, d.Shards)
	return c
}

// Validate reports the first field that is negative or inconsistent.
func (c Config) Validate() error {
	durations := []struct {
		name string
		v    time.Duration
	}{
		{"CallTimeout", c.CallTimeout}, {"IdleTimeout", c.IdleTimeout}, {"DrainTimeout", c.DrainTimeout},
		{"ReplicationTimeout", c.ReplicationTimeout}, {"HandoffTimeout", c.HandoffTimeout}, {"RemoveDeadAfter", c.RemoveDeadAfter},
		{"RepairInterval", c.RepairInterval}, {"StateTombstoneTTL", c.StateTombstoneTTL}, {"MaxClockDrift", c.MaxClockDrift},
		{"HandshakeTimeout", c.HandshakeTimeout}, {"ConnectTimeout", c.ConnectTimeout},
		{"KeepAliveInterval", c.KeepAliveInterval}, {"KeepAliveTimeout", c.KeepAliveTimeout},
		{"ReconnectMin", c.ReconnectMin}, {"ReconnectMax", c.ReconnectMax},
		{"ShuffleInterval", c.ShuffleInterval}, {"SuspicionTimeout", c.SuspicionTimeout},
		{"AntiEntropyInterval", c.AntiEntropyInterval}, {"TombstoneTTL", c.TombstoneTTL},
		{"MemberReconnectInterval", c.MemberReconnectInterval}, {"MemberReconnectTimeout", c.MemberReconnectTimeout},
		{"GraftTimeout", c.GraftTimeout}, {"JoinTimeout", c.JoinTimeout},
	}
	for _, f := range durations {
		if f.v < 0 {
			return fmt.Errorf("casty: config: %s must not be negative, got %v", f.name, f.v)
		}
	}
	ints := []struct {
		name string
		v    int
	}{
		{"MaxActivations", c.MaxActivations}, {"ReplicationBatch", c.ReplicationBatch}, {"MaxReplicatedBytes", c.MaxReplicatedBytes}, {"MaxFrame", c.MaxFrame}, {"MaxMessage", c.MaxMessage},
		{"StreamWindow", c.StreamWindow}, {"MaxStreams", c.MaxStreams}, {"CompressThreshold", c.CompressThreshold},
		{"ActiveView", c.ActiveView}, {"PassiveView", c.PassiveView}, {"ActiveWalk", c.ActiveWalk},
		{"PassiveWalk", c.PassiveWalk}, {"ShuffleActive", c.ShuffleActive}, {"ShufflePassive", c.ShufflePassive},
		{"Shards", c.Shards}, {"MaxSpies", c.MaxSpies}, {"MaxTableSize", c.MaxTableSize}, {"MaxLiteClients", c.MaxLiteClients},
	}
	for _, f := range ints {
		if f.v < 0 {
			return fmt.Errorf("casty: config: %s must not be negative, got %d", f.name, f.v)
		}
	}
	full := c.withDefaults()
	if full.ReconnectMin > full.ReconnectMax {
		return fmt.Errorf("casty: config: ReconnectMin %v exceeds ReconnectMax %v", full.ReconnectMin, full.ReconnectMax)
	}
	if full.MaxFrame > full.MaxMessage {
		return fmt.Errorf("casty: config: MaxFrame %d exceeds MaxMessage %d", full.MaxFrame, full.MaxMessage)
	}
	if err := gossipConfig(full).Validate(); err != nil {
		return fmt.Errorf("casty: config: MaxTableSize %d, MaxLiteClients %d: %w", c.MaxTableSize, c.MaxLiteClients, err)
	}
	return nil
}

func (c Config) engine() actor.Config {
	return actor.Config{CallTimeout: c.CallTimeout, IdleTimeout: c.IdleTimeout, DrainTimeout: c.DrainTimeout,
		MaxActivations: c.MaxActivations, BeforeWait: mux.HandOff, Admit: admitPlaced, ExternalWaits: remoteWaits.Load}
}

package casty

import (
	agreed "github.com/casty-go/casty/casty/internal/placement"
	"github.com/casty-go/casty/ring"
	"github.com/vmihailenco/msgpack/v5"
)

// Placement: which members hold replicated state (replica/SPEC.md,
// "Model" and "Placement by agreement").
//
// Kinds with Replicas(1) keep their single copy where the ring of live
// members puts it, as they always did: losing the copy with its member is
// what Replicas(1) means. Replicated kinds are placed on a second, stable
// ring whose every change is agreed (agree.go, internal/placement): a
// member enters it by a join that a majority of the placement accepted,
// and leaves it by its own graceful leave or by a removal that a majority
// of the placement supported, each of them having seen it dead for
// Config.Replication.RemoveDeadAfter. The minority side of a partition changes
// nothing. Suspicion and death do not move replicas: the owner of a key is
// the first live member of its replica set, and a quorum that cannot be
// met fails with ErrQuorumUnavailable instead of picking other members.
//
// The placement is a history of versions, each the one before with one
// agreed step applied; every member applies them in order, and a version's
// digest chains every step before it.

// layout is one version of the placement of replicated kinds, immutable.
type layout struct {
	p       *agreed.Placement
	version uint64
	digest  uint64
	ring    *ring.Ring // the placed members
	log     []byte     // the history up to this version, encoded
}

func newLayout(p *agreed.Placement, l agreed.Log) *layout {
	b, _ := msgpack.Marshal(&l)
	return &layout{p: p, version: p.Version, digest: p.Digest, ring: p.Ring, log: b}
}

// encode returns the history up to this version in its wire form (sent
// with a refusal and in answer to a pull).
func (p *layout) encode() []byte { return p.log }

// decodeLog parses a history received from another member.
func decodeLog(b []byte) (agreed.Log, bool) {
	var l agreed.Log
	if len(b) == 0 || len(b) > 4<<20 || msgpack.Unmarshal(b, &l) != nil || l.Founder.IsZero() {
		return agreed.Log{}, false
	}
	return l, true
}

// placed reports whether id holds replicated state in p.
func (p *layout) placed(id ring.NodeID) bool { return p.ring.Has(id) }

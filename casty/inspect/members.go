package inspect

import "time"

// Member is a full cluster member (casty.Member is this type).
type Member struct {
	ID   string // node id
	Addr string // the address others dial
}

// MemberStatus is one record of the member table as this node sees it:
// full and lite members, alive, suspected, departed or dead (departed and
// dead ones until their tombstones expire,
// casty.Config.Membership.TombstoneTTL).
type MemberStatus struct {
	ID          string `json:"id"`          // node id
	Addr        string `json:"addr"`        // the address others dial
	Lite        bool   `json:"lite"`        // a lite member: routes, hosts nothing
	State       string `json:"state"`       // "alive", "suspect", "left" or "dead"
	Incarnation uint64 `json:"incarnation"` // bumped by the member to refute a suspicion
	// For is how long the record has been in State, as the node whose
	// table it is saw it (milliseconds; in JSON, nanoseconds): for a
	// member suspected or dead, about how long ago it stopped answering.
	For time.Duration `json:"for"`
}

// Package inspect holds what a running Casty system reports about itself:
// its health for probes (Health, HealthHandler), its member table
// (MemberStatus), where keys live and how the ring divides the key space
// (KeyPlacement, RangeShare), and its replicated state and placement
// (ReplicationStats, MemberPlacement).
//
// What users need to declare and call actors is in package casty; what
// operators and tools read is here, so that `go doc casty` stays short.
// The methods that produce these values are casty.System's: Health,
// MemberTable and MemberTableVia, Placement, Ownership, Replication,
// PlacementStatus. cmd/castyctl prints them, and their JSON field names
// are its output format.
//
// The package has no dependency on casty (casty depends on it), so a tool
// may decode a report it received as JSON without linking a cluster
// member.
package inspect

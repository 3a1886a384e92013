// Package core is the membership protocol of package gossip as a pure state
// machine: the member table and its merge (members.go), HyParView
// (hyparview.go), Plumtree (plumtree.go), SWIM-style suspicion
// (suspicion.go), anti-entropy (antientropy.go), probes of non-neighbours
// (probe.go), admission of second-hand records (verify.go), the messages (messages.go)
// and their codec (wire.go, format in ../../SPEC.md), composed by Node
// (node.go).
//
// A Node never reads the clock, never starts a goroutine and never touches
// a socket: Start, Step (a received Message), LinkDown (a monitored link
// failed), Tick (timers), Leave and Reannounce take the current time and
// return an Output. gossip.Agent runs one Node over a transport; gossip/sim
// drives hundreds deterministically from one seed. Both carry out every
// Output: deliver Sends, keep the links of LinkOps open and report their
// failures with LinkDown (that report is the main source of suspicion; the
// other is a probe answered by another node at a member's address), and
// call Tick no later than Output.Next. A runtime over an authenticated
// transport also sets Message.ClientOnly on what it steps, and every runtime
// sets Message.Via to the connection's peer as the transport knows it.
//
// The package is internal so that package gossip names only what a user of
// the module needs; gossip re-exports the member vocabulary (NodeID, Peer,
// Role, Member, Status, Event, EventKind, LinkFailure) as aliases and
// Config as a twin struct.
package core

package core

// Liveness is proven by members, not heard. A record that raises the
// incarnation of a member this node holds live (ALIVE or SUSPECT at a
// higher incarnation: what refutes a suspicion, or would restart its
// timer) is applied at once only on evidence a member produced:
//
//   - it is the member's own, sent by the member itself (the sender is the
//     record's subject, of role member, over a connection that proved the
//     member credential, or any connection in an open cluster, whose
//     address is the one the table holds for it);
//   - or it is relayed by a member this node holds ALIVE, over that
//     member's own connection (likewise), in a table exchange or in a
//     GOSSIP the member does not mark unproven. A member relays a record
//     unmarked only when its own table holds it (Message.Flag on GOSSIP,
//     holdsRecord), and its table took it only on this same evidence, so
//     what a member vouches for, a member proved.
//
// Any other copy (relayed by a lite client, sent by an unknown, suspected
// or dead node, carried over a client-only connection, or relayed marked
// unproven) is held as a claim (verify.go): this node PINGs the member at
// its recorded address with a fresh nonce and adopts the record, and then
// relays it, only when the member answers. While it waits such a copy is
// neither marked seen nor forwarded by Plumtree, so a member's copy
// arriving later is applied and relayed as usual. So a lite client that
// bridges a partition cannot carry the cut members' refutations to the side
// that suspects them (the probe fails across the cut and the suspicion runs
// out), and a forger who learned a crashed member's incarnation cannot keep
// it alive by sending ALIVE at a higher one (the probe finds nobody).
// ALIVE for a DEAD or LEFT member is held to a probe by admission already
// (verify.go). (gossip/SPEC.md, Failure detection, "Liveness is proven by
// members".)

// raises reports whether rec raises the incarnation of a member the table
// holds live at rec's address and role: an ALIVE or SUSPECT record that
// would refute the member's suspicion or restart its timer.
func (n *Node) raises(rec Member) bool {
	if rec.Status != Alive && rec.Status != Suspect {
		return false
	}
	cur, ok := n.table.Get(rec.ID)
	return ok && !cur.Status.Gone() && cur.Addr == rec.Addr && cur.Role == rec.Role && rec.Incarnation > cur.Incarnation
}

// vouches reports whether the message being stepped, sent by from, may
// raise the incarnation of rec's member without this node's own probe: it
// arrived over a connection that proved the member credential (or, in an
// open cluster, any connection) whose address is the sender's (Node.via),
// it is not a GOSSIP its sender marked unproven (Node.relayed), the sender
// claims role member, and it is either the member itself at its recorded
// address or a member the table holds ALIVE at that address.
func (n *Node) vouches(rec Member, from Peer) bool {
	if n.client || n.relayed || from.Role != RoleMember || from.Addr != n.via {
		return false
	}
	if from.ID == rec.ID {
		return from.Addr == rec.Addr
	}
	m, ok := n.table.Get(from.ID)
	return ok && m.Status == Alive && m.Role == RoleMember && m.Addr == from.Addr
}

// unproven reports whether rec would raise a live member's incarnation on
// the word of a sender that cannot vouch for it: it must wait for this
// node's probe.
func (n *Node) unproven(rec Member, from Peer) bool {
	return n.raises(rec) && !n.vouches(rec, from)
}

// holdsRecord reports whether the table holds exactly rec: a GOSSIP of any
// other record is relayed marked unproven (Message.Flag), and so vouches
// for nothing at its receiver.
func (n *Node) holdsRecord(rec Member) bool {
	cur, ok := n.table.Get(rec.ID)
	if rec.ID == n.self.ID {
		cur, ok = n.self, true
	}
	return ok && cur == rec
}

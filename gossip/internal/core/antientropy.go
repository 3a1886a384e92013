package core

import "time"

// Anti-entropy: a node compares table digests with a neighbour on every new
// link and with a random neighbour every AntiEntropyInterval; when the
// digests differ the two exchange full tables (push-pull) and merge. It
// repairs whatever the broadcast missed and is the joiner's bootstrap.
// Each round also probes one random tombstone (DEAD or LEFT), so two sides
// of a healed partition that declared each other dead find out and merge,
// and a live member named LEFT while it was unreachable (verify.go) hears
// of it and refutes; and one
// random ALIVE member that is not an active neighbour (probe.go), so a
// member whose neighbours all died with it is still dialled by someone.

// startSync opens an anti-entropy round with p. isNew marks a brand-new link
// (the receiver must not treat an unknown sender as an asymmetric link).
func (n *Node) startSync(p Peer, isNew bool) {
	n.send(p, &Message{Kind: KindSyncDigest, Digest: n.table.Digest(), Flag: isNew})
}

func (n *Node) tickSync() {
	if n.now.Before(n.nextSync) {
		return
	}
	n.nextSync = n.now.Add(n.cfg.AntiEntropyInterval)
	if p, ok := n.randomActive(); ok {
		n.startSync(p, false)
	}
	// probe one tombstone: if its member is in fact alive (behind a healed
	// partition, or named LEFT by a record adopted while it could not be
	// reached), the exchange tells it, it refutes and rejoins (aboutSelf)
	if tombs := n.table.Tombstones(); len(tombs) > 0 {
		n.startSync(tombs[n.rng.IntN(len(tombs))].Peer(), true)
	}
	if p, ok := n.probeTarget(); ok {
		n.startSync(p, true)
		n.watchDial(p)
	}
}

func (n *Node) onSyncDigest(m *Message) {
	if !m.Flag && !n.isActive(m.From.ID) {
		// the sender thinks we are neighbours and we do not: repair the asymmetry
		n.send(m.From, &Message{Kind: KindDisconnect})
		return
	}
	if m.Digest != n.table.Digest() {
		n.sendTable(m.From, true)
	}
}

// sendTable sends the full table; tombstones carry their age so they expire
// everywhere at about the same time.
func (n *Node) sendTable(to Peer, wantReply bool) {
	ms := n.table.Members()
	ages := make([]uint32, len(ms))
	for i, r := range ms {
		if r.Status.Gone() {
			age := n.now.Sub(n.table.Since(r.ID)) / time.Millisecond
			ages[i] = uint32(min(max(age, 0), 1<<32-1))
		}
	}
	n.send(to, &Message{Kind: KindSync, Members: ms, Ages: ages, Flag: wantReply})
}

func (n *Node) onSync(m *Message) {
	if len(m.Ages) != 0 && len(m.Ages) != len(m.Members) {
		n.drop(m, "ages do not match records")
		return
	}
	for i, r := range m.Members {
		if n.unvouched(r, m) {
			continue
		}
		var age time.Duration
		if len(m.Ages) > 0 {
			age = time.Duration(m.Ages[i]) * time.Millisecond
		}
		n.apply(r, age, m.From)
	}
	if m.Flag {
		n.sendTable(m.From, false)
	}
}

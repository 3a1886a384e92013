package muxtransport

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// In a cluster whose members hold the cluster and client secrets, a node
// holding only the client secret that announces itself as a member in
// gossip (its mux handshake can only claim the client role) never appears
// in any member's table, while an honest lite client with the same secret
// joins every table with the client role.
func TestSocketClientSecretCannotClaimMemberRole(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: skipped in -short")
	}
	clusterSecret, clientSecret := bytes.Repeat([]byte{'m'}, 32), bytes.Repeat([]byte{'c'}, 32)
	member := func(id gossip.NodeID) mux.Config {
		c := muxConfig(id)
		c.ClusterSecret, c.ClientSecret = clusterSecret, clientSecret
		return c
	}
	client := func(id gossip.NodeID) mux.Config {
		c := muxConfig(id)
		c.ClientSecret, c.Role = clientSecret, mux.RoleClient
		return c
	}
	var nodes []*socketNode
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, s := range nodes {
			wg.Go(s.close)
		}
		wg.Wait()
	})
	for i := range 3 {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].tr.Addr()}
		}
		nodes = append(nodes, startSocketNodeAs(t, fmt.Sprintf("127.0.0.%d:0", 50+i), member(gossip.NodeID{0xdd, byte(i + 1)}), gossip.RoleMember, nil, seeds...))
	}
	members := nodes
	waitFor(t, 15*time.Second, "3 members with secrets converge", func() bool {
		for _, o := range members {
			for _, s := range members {
				if !o.sees(s.agent.Self().ID, isStatus(gossip.Alive)) {
					return false
				}
			}
		}
		return true
	})
	// the attacker joins first, the honest client after it: once the
	// honest one is in every table, the attacker's record had as long
	attacker := startSocketNodeAs(t, "127.0.0.53:0", client(gossip.NodeID{0xdd, 0xa0}), gossip.RoleMember, nil, members[1].tr.Addr())
	nodes = append(nodes, attacker)
	lite := startSocketNodeAs(t, "127.0.0.54:0", client(gossip.NodeID{0xdd, 0xc0}), gossip.RoleClient, nil, members[2].tr.Addr())
	nodes = append(nodes, lite)
	liteID, attackerID := lite.agent.Self().ID, attacker.agent.Self().ID
	waitFor(t, 15*time.Second, "the honest lite client in every member's table", func() bool {
		return allSee(members, []gossip.NodeID{liteID}, func(m gossip.Member) bool {
			return m.Status == gossip.Alive && m.Role == gossip.RoleClient
		})
	})
	waitFor(t, 15*time.Second, "the attacker to hold the members in its own table (it gossips with them)", func() bool {
		for _, s := range members {
			if !attacker.sees(s.agent.Self().ID, isStatus(gossip.Alive)) {
				return false
			}
		}
		return true
	})
	for i, o := range members {
		for _, m := range o.agent.Members() {
			if m.ID == attackerID && m.Role == gossip.RoleMember {
				t.Errorf("member %d holds the client-secret holder as a member: %v", i, m)
			}
		}
		if o.count(gossip.EventJoined, attackerID) != 0 {
			t.Errorf("member %d emitted a joined event for the client-secret holder", i)
		}
	}
}

package casty_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// parseID turns a System.ID (a UUID) into the mux node id it stands for.
func parseID(t *testing.T, id string) mux.NodeID {
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", ""))
	if err != nil || len(b) != 16 {
		t.Fatalf("node id %q: %v", id, err)
	}
	return mux.NodeID(b)
}

// zeroSource makes every dial nonce 0, the nonce that wins the
// same-initiator tie-break.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

// Item 5. In an open cluster, a stranger claims a member's node id as
// soon as it joined, at every other member, with the dial nonce that wins
// the tie-break: no member's call to that member's keys reaches it.
// Before: within the new member's first 10 s the stranger took its
// sessions and its calls.
func TestStrangerCannotClaimANewMembersID(t *testing.T) {
	nodes := startCluster(t, 2)
	newcomer := startNode(t, []string{nodes[0].Addr()})
	waitConverged(t, append(nodes, newcomer), 3)

	var intercepted atomic.Int64
	mc := mux.DefaultConfig()
	mc.NodeID = parseID(t, newcomer.ID())
	mc.AdvertiseAddr = "127.0.0.1:1"
	mc.Rand = rand.New(zeroSource{})
	mc.Logger = slog.New(slog.DiscardHandler)
	stranger, err := mux.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	stranger.HandleRequests(mux.LaneMessage, func(context.Context, *mux.Session, []byte) ([]byte, error) {
		intercepted.Add(1)
		return nil, errors.New("intercepted")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes {
		_, _ = stranger.Dial(ctx, n.Addr()) // refused or not, the calls below say what it got
	}
	for i := range 16 {
		via := nodes[i%2]
		key := ""
		for k := 0; key == ""; k++ {
			if m, ok := via.OwnerOf(Wheres.Name(), fmt.Sprint("claimed-", i, "-", k)); ok && m.Addr == newcomer.Addr() {
				key = fmt.Sprint("claimed-", i, "-", k)
			}
		}
		out, err := casty.Call0(ctx, Wheres.Ref(via, key), (*Where).Hit)
		if err != nil || !strings.HasPrefix(out, newcomer.Addr()+"#") {
			t.Errorf("call %d from %s to the new member's key: %q, %v", i, via.Addr(), out, err)
		}
	}
	if n := intercepted.Load(); n > 0 {
		t.Fatalf("the stranger received %d of 16 calls meant for the new member", n)
	}
}

package mux

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// Item 5. In an open cluster a stranger claims a live peer's node id with
// dial nonce 0 right after that peer connected, whoever dialled: the live
// session is kept and every call reaches the real peer. Before: a session
// younger than ConnectTimeout + HandshakeTimeout was displaced.
func TestImpostorCannotClaimAYoungSession(t *testing.T) {
	for _, dialler := range []string{"the peer dialled", "the victim dialled"} {
		t.Run(dialler, func(t *testing.T) {
			ca, cb := testConfig(1), testConfig(2) // node 1 < node 2: an initiator 1 wins the tie-break
			a, b := newNode(t, ca), newNode(t, cb)
			a.HandleRequests(LaneMessage, whoAmI(1))
			addrA, addrB := listen(t, a), listen(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if dialler == "the peer dialled" {
				_, err = a.Dial(ctx, addrB)
			} else {
				_, err = b.Dial(ctx, addrA)
			}
			if err != nil {
				t.Fatal(err)
			}
			var live *Session
			waitFor(t, 5*time.Second, "b's live session to a", func() bool {
				var ok bool
				live, ok = b.Session(a.ID())
				return ok
			})
			// At once, while the session is young.
			impostorDial(t, testConfig(1), addrB)
			for i := range 16 {
				s, ok := b.Session(a.ID())
				if !ok || s != live {
					t.Fatalf("call %d: the live session to a was replaced", i)
				}
				resp, err := s.Request(ctx, LaneMessage, nil)
				if err != nil || !bytes.Equal(resp, []byte{1}) {
					t.Fatalf("call %d reached %v (err %v), want a", i, resp, err)
				}
			}
		})
	}
}

// A peer whose old connection stopped answering redials: the new
// connection is not confirmed by the old one, which does not answer the
// claim check within claimTimeout, so it takes its place.
func TestRedialReplacesALiveSessionThatDoesNotAnswer(t *testing.T) {
	b := newNode(t, testConfig(2))
	addrB := listen(t, b)
	var frozen *freezeConn
	c1 := testConfig(1)
	c1.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		frozen = &freezeConn{Conn: c, thaw: make(chan struct{})}
		return frozen, nil
	}
	old := newNode(t, c1)
	old.HandleRequests(LaneMessage, whoAmI(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := old.Dial(ctx, addrB); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "b's session to node 1", func() bool { _, ok := b.Session(testID(1)); return ok })
	frozen.frozen.Store(true) // node 1's old process hangs with its socket open
	c2 := testConfig(1)
	c2.Rand = zeroRand() // nonce 0: the tie-break prefers the new connection
	again := newNode(t, c2)
	again.HandleRequests(LaneMessage, whoAmI(7))
	if _, err := again.Dial(ctx, addrB); err != nil {
		t.Fatalf("the redial: %v", err)
	}
	s, ok := b.Session(testID(1))
	if !ok {
		t.Fatal("no session to node 1")
	}
	if resp, err := s.Request(ctx, LaneMessage, nil); err != nil || !bytes.Equal(resp, []byte{7}) {
		t.Fatalf("b's calls to node 1 reach %v (%v), want the redialled node", resp, err)
	}
}

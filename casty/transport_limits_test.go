package casty_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// Config.Transport sets the transport's limits: a member started with
// Transport.MaxClientConnsPerHost 2 admits two client sessions from
// 127.0.0.1 and refuses the third right after its handshake, with
// mux.ErrTooManyClients; at the default (64) the third is admitted.
func TestTransportConfigSetsTheClientRoomPerHost(t *testing.T) {
	for _, tc := range []struct {
		name        string
		perHost     int
		thirdRefuse bool
	}{
		{"MaxClientConnsPerHost=2", 2, true},
		{"default", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastCluster()
			cfg.Transport.MaxClientConnsPerHost = tc.perHost
			member := startNode(t, nil, casty.WithConfig(cfg))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// dial opens a client session to member from 127.0.0.1, kept
			// open until the test ends.
			dial := func() error {
				mc := mux.DefaultConfig()
				mc.NodeID, _ = mux.NewNodeID(nil)
				mc.Role = mux.RoleClient
				mc.Logger = slog.New(slog.DiscardHandler)
				n, err := mux.New(mc)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { n.Close() })
				_, err = n.Dial(ctx, member.Addr())
				return err
			}
			for i := range 2 {
				if err := dial(); err != nil {
					t.Fatalf("client %d: %v", i+1, err)
				}
			}
			err := dial()
			var he *mux.HandshakeError
			switch {
			case tc.thirdRefuse && (!errors.Is(err, mux.ErrTooManyClients) || !errors.As(err, &he) || he.Code != mux.CodeTooManyClients):
				t.Fatalf("a third client from one address: %v, want the member's refusal with CodeTooManyClients", err)
			case !tc.thirdRefuse && err != nil:
				t.Fatalf("a third client at the default room: %v, want admitted", err)
			}
		})
	}
}

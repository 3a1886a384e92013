package mux

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// The clients' room (Config.MaxClientConns, MaxClientConnsPerHost),
// against real sockets on loopback.

// dialFrom builds a node from cfg whose dials leave from local IP from,
// and dials addr with it.
func dialFrom(t *testing.T, cfg Config, addr, from string) (*Node, *Session, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	n := newNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := n.Dial(ctx, addr)
	return n, s, err
}

// roomCounts is what srv's admission holds: connections, client
// sessions, and the hosts its per-host client counts name.
func roomCounts(srv *Node) (conns, clients, clientHosts int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.adm.conns, srv.adm.clients, len(srv.adm.clientsPerHost)
}

// wantTooManyClients fails unless err is the listener's refusal of a
// client session for its room.
func wantTooManyClients(t *testing.T, what string, err error) {
	t.Helper()
	var he *HandshakeError
	if !errors.Is(err, ErrTooManyClients) || !errors.As(err, &he) || he.Code != CodeTooManyClients || !he.Remote {
		t.Fatalf("%s: got %v, want the listener's refusal with CodeTooManyClients", what, err)
	}
}

// Client sessions fill their room and no more: the next client is
// refused right after its handshake (typed, counted), while a member's
// session is admitted into what is left of MaxInboundConns and served.
// Before the room, the fourth client took the last connection and the
// member was closed at accept. In an open cluster the announced role
// decides; with secrets, what the peer proved (a member credential
// announcing RoleClient is a client too).
func TestClientsCannotTakeTheMembersRoom(t *testing.T) {
	modes := []struct {
		name           string
		server, member func(Config) Config
		client         func(Config) Config
	}{
		{"open", func(c Config) Config { return c }, func(c Config) Config { return c },
			func(c Config) Config { c.Role = RoleClient; return c }},
		{"secret",
			func(c Config) Config { c = withSecret(c, memberSecret); c.ClientSecret = clientSecret; return c },
			func(c Config) Config { return withSecret(c, memberSecret) },
			func(c Config) Config { c.Role, c.ClientSecret = RoleClient, clientSecret; return c }},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			sc := m.server(testConfig(2))
			sc.MaxInboundConns, sc.MaxInboundConnsPerHost = 4, 4
			sc.MaxClientConns, sc.MaxClientConnsPerHost = 3, 3
			srv := newNode(t, sc)
			srv.HandleRequests(LaneMessage, echo)
			addr := listen(t, srv)

			var clients []*Node
			for i := range 3 {
				n, _, err := dialFrom(t, m.client(testConfig(byte(10+i))), addr, "127.0.0.2")
				if err != nil {
					t.Fatalf("client %d of 3: %v", i+1, err)
				}
				clients = append(clients, n)
			}
			_, _, err := dialFrom(t, m.client(testConfig(13)), addr, "127.0.0.3")
			wantTooManyClients(t, "a fourth client", err)
			if m.name == "secret" {
				// The fourth client's slot back first: with MaxInboundConns
				// 4, a dial while it is still held would be shed before its
				// handshake, not refused a client's room.
				waitFor(t, 5*time.Second, "the fourth client's slot back", func() bool {
					conns, _, _ := roomCounts(srv)
					return conns == 3
				})
				// The cluster secret announcing RoleClient: a client still.
				c := withSecret(testConfig(14), memberSecret)
				c.Role = RoleClient
				_, _, err := dialFrom(t, c, addr, "127.0.0.3")
				wantTooManyClients(t, "a member credential announcing RoleClient", err)
			}
			refusals := uint64(1)
			if m.name == "secret" {
				refusals = 2
			}
			if got := srv.Admission().ClientRefused; got != refusals {
				t.Fatalf("Admission().ClientRefused = %d, want %d", got, refusals)
			}
			waitFor(t, 5*time.Second, "the refused connections' slots back", func() bool {
				conns, _, _ := roomCounts(srv)
				return conns == 3
			})

			_, s, err := dialFrom(t, m.member(testConfig(1)), addr, "127.0.0.4")
			if err != nil {
				t.Fatalf("a member while clients hold their whole room: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got, err := s.Request(ctx, LaneMessage, []byte("member")); err != nil || string(got) != "member" {
				t.Fatalf("the member's request: %q, %v", got, err)
			}

			// A client that leaves gives its place back.
			clients[0].Close()
			waitFor(t, 5*time.Second, "the leaving client's place back", func() bool {
				_, n, _ := roomCounts(srv)
				return n == 2
			})
			n, _, err := dialFrom(t, m.client(testConfig(15)), addr, "127.0.0.2")
			if err != nil {
				t.Fatalf("a client once one left: %v", err)
			}
			n.Close()
			for _, c := range clients[1:] {
				c.Close()
			}
			waitFor(t, 5*time.Second, "no client counted", func() bool {
				_, n, hosts := roomCounts(srv)
				return n == 0 && hosts == 0
			})
		})
	}
}

// One address holds at most MaxClientConnsPerHost client sessions;
// another address is not held back by it. The refusal is on the paced
// WARN line.
func TestClientRoomPerHost(t *testing.T) {
	rec := &logRecorder{}
	sc := testConfig(2)
	sc.MaxClientConns, sc.MaxClientConnsPerHost = 4, 2
	sc.Logger = slog.New(rec)
	srv := newNode(t, sc)
	addr := listen(t, srv)
	client := func(id byte) Config { c := testConfig(id); c.Role = RoleClient; return c }
	for i := range 2 {
		if _, _, err := dialFrom(t, client(byte(10+i)), addr, "127.0.0.2"); err != nil {
			t.Fatalf("client %d from 127.0.0.2: %v", i+1, err)
		}
	}
	_, _, err := dialFrom(t, client(12), addr, "127.0.0.2")
	wantTooManyClients(t, "a third client from 127.0.0.2", err)
	if _, _, err := dialFrom(t, client(13), addr, "127.0.0.3"); err != nil {
		t.Fatalf("a client from 127.0.0.3: %v", err)
	}
	if ad := srv.Admission(); ad.ClientRefused != 1 || ad.Refused != 0 {
		t.Fatalf("Admission() = %+v, want 1 client refused and nothing else", ad)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lines []string
	for _, r := range rec.recs {
		if strings.Contains(r, "shed") {
			lines = append(lines, r)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "WARN ") || !strings.Contains(lines[0], "client_refused=1") ||
		!strings.Contains(lines[0], "last_limit=MaxClientConnsPerHost") {
		t.Fatalf("shed log lines: %q, want one WARN naming the client refused", lines)
	}
}

// A lite client's listener (no cluster secret) counts the members that
// dial it, proving its client secret and announcing RoleMember, as
// members: they are not held to its clients' room.
func TestMembersDiallingALiteClientAreNotClients(t *testing.T) {
	lc := testConfig(2)
	lc.Role, lc.ClientSecret = RoleClient, clientSecret
	lc.MaxClientConns, lc.MaxClientConnsPerHost = 1, 1
	srv := newNode(t, lc)
	addr := listen(t, srv)
	for i := range 3 {
		mc := withSecret(testConfig(byte(10+i)), memberSecret)
		mc.ClientSecret = clientSecret
		if _, _, err := dialFrom(t, mc, addr, "127.0.0.2"); err != nil {
			t.Fatalf("member %d dialling the lite client: %v", i+1, err)
		}
	}
	if _, n, _ := roomCounts(srv); n != 0 {
		t.Fatalf("%d members counted as clients", n)
	}
}

// MaxClientConns and MaxClientConnsPerHost default from MaxInboundConns.
func TestClientRoomDefaults(t *testing.T) {
	cases := []struct{ inbound, total, perHost, wantTotal, wantPerHost int }{
		{4096, 0, 0, 1024, 64},
		{8, 0, 0, 2, 2},
		{3, 0, 0, 1, 1},
		{4096, 100, 0, 100, 64},
		{4096, 10, 0, 10, 10},
		{4096, 0, 5, 1024, 5},
	}
	for _, tc := range cases {
		c := testConfig(1)
		c.MaxInboundConns, c.MaxInboundConnsPerHost = tc.inbound, tc.inbound
		c.MaxClientConns, c.MaxClientConnsPerHost = tc.total, tc.perHost
		got := newNode(t, c).Config()
		if got.MaxClientConns != tc.wantTotal || got.MaxClientConnsPerHost != tc.wantPerHost {
			t.Errorf("MaxInboundConns %d, MaxClientConns %d, per host %d: got %d, %d, want %d, %d", tc.inbound,
				tc.total, tc.perHost, got.MaxClientConns, got.MaxClientConnsPerHost, tc.wantTotal, tc.wantPerHost)
		}
	}
}

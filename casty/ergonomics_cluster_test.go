package casty_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// silentSeed accepts connections and never answers: a seed whose process
// hangs, or a port something else listens on.
func silentSeed(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// closedPort is a port nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Start and Connect through seeds that are down or silent return at ctx's
// deadline — not a diagnosis or a goodbye later — with ctx's error,
// naming the seeds.
func TestJoinHonoursTheCtxDeadline(t *testing.T) {
	const deadline = 400 * time.Millisecond
	const slack = 250 * time.Millisecond // scheduling on a loaded machine, under -race
	seeds := map[string][]string{
		"closed": {closedPort(t)},
		"silent": {silentSeed(t)},
		"both":   {closedPort(t), silentSeed(t)},
	}
	for name, seeds := range seeds {
		for _, mode := range []string{"Start", "Connect"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				var sys *casty.System
				var err error
				if mode == "Start" {
					sys, err = casty.Start(ctx, "127.0.0.1:0", casty.Seeds(seeds...), quiet())
				} else {
					sys, err = casty.Connect(ctx, seeds, quiet())
				}
				took := time.Since(start)
				if err == nil {
					closeSys(t, sys)
					t.Fatal("joined through seeds that are down")
				}
				if took > deadline+slack {
					t.Errorf("%s took %v with a %v deadline", mode, took, deadline)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error does not wrap ctx.Err(): %v", err)
				}
				for _, s := range seeds {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error does not name seed %s: %v", s, err)
					}
				}
			})
		}
	}
}

// A seed that is not a dialable host:port is refused by Start and Connect
// at once, with ErrInvalidSeed naming it, however long ctx would allow:
// dialling it again cannot succeed.
func TestStartAndConnectRefuseAnInvalidSeedAtOnce(t *testing.T) {
	good := closedPort(t)
	for _, seed := range []string{"127.0.0.1:70001", "127.0.0.1", "127.0.0.1:0", "", "127.0.0.1:no-such-service"} {
		for _, mode := range []string{"Start", "Connect"} {
			t.Run(mode+"/"+seed, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				seeds := []string{good, seed}
				var sys *casty.System
				var err error
				if mode == "Start" {
					sys, err = casty.Start(ctx, "127.0.0.1:0", casty.Seeds(seeds...), quiet())
				} else {
					sys, err = casty.Connect(ctx, seeds, quiet())
				}
				if err == nil {
					closeSys(t, sys)
					t.Fatalf("%s accepted the seed %q", mode, seed)
				}
				if !errors.Is(err, casty.ErrInvalidSeed) || !strings.Contains(err.Error(), fmt.Sprintf("%q", seed)) {
					t.Fatalf("%s with seed %q: %v; want ErrInvalidSeed naming it", mode, seed, err)
				}
				if ctx.Err() != nil {
					t.Fatalf("%s waited out ctx before refusing seed %q", mode, seed)
				}
			})
		}
	}
}

// WaitMembers returns once the node sees the members and, on a full
// member, its placement has settled; with a ctx that ends first it says
// how far it got and wraps ctx.Err().
func TestWaitMembers(t *testing.T) {
	first := startNode(t, nil)
	nodes := []*casty.System{first, startNode(t, []string{first.Addr()}), startNode(t, []string{first.Addr()})}
	lite, err := casty.Connect(context.Background(), []string{first.Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSys(t, lite) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, s := range append(nodes, lite) {
		if err := s.WaitMembers(ctx, 3); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if got := len(s.Members()); got != 3 {
			t.Fatalf("%v sees %d members after WaitMembers(3)", s, got)
		}
	}
	for _, s := range nodes {
		if !casty.Settled(s, 3) {
			t.Errorf("%v: WaitMembers returned before its placement settled on 3 members", s)
		}
	}

	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = first.WaitMembers(short, 4)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), " live") {
		t.Fatalf("waiting for a 4th member that never comes: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("WaitMembers overran its ctx: %v", took)
	}

	if err := newSys(t).WaitMembers(ctx, 1); err == nil {
		t.Fatal("a local system has no members to wait for")
	}
	closeSys(t, lite)
	if err := lite.WaitMembers(ctx, 4); !errors.Is(err, casty.ErrActorUnavailable) {
		t.Fatalf("WaitMembers on a closed system: %v", err)
	}
}

// hostIP is an IPv4 address of this host's that is not the loopback; the
// test is skipped on a host without one.
func hostIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no IPv4 address but the loopback")
	return ""
}

// A lite member listens only on the interface that reaches its seed, the
// address it advertises: whoever reaches the host on another interface
// (here the loopback) finds nothing listening.
func TestConnectListensOnlyWhereItReachesTheSeeds(t *testing.T) {
	ip := hostIP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	member, err := casty.Start(ctx, net.JoinHostPort(ip, "0"), casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeSys(t, member)
	lite, err := casty.Connect(ctx, []string{member.Addr()}, casty.WithConfig(fastCluster()), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer closeSys(t, lite)
	host, port, err := net.SplitHostPort(lite.Addr())
	if err != nil || host != ip {
		t.Fatalf("the lite member advertises %s, want an address on %s", lite.Addr(), ip)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
		c.Close()
		t.Fatalf("the lite member, advertising %s, also listens on the loopback", lite.Addr())
	}
}

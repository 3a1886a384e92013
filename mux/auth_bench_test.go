package mux

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"
)

// The cost of authentication, side by side in one run (SECURITY.md and
// BENCHMARKS.md): plaintext, shared secret, mutual TLS, and mutual TLS
// with certificate identity.
//
//	go test -run '^$' -bench 'BenchmarkAuth' -benchtime 2s ./mux/

type authMode struct {
	name string
	edit func(testing.TB, Config) Config
}

var authModes = []authMode{
	{"plain", func(_ testing.TB, c Config) Config { return c }},
	{"secret", func(_ testing.TB, c Config) Config { return withSecret(c, memberSecret) }},
	{"mtls", func(t testing.TB, c Config) Config { return withTLS(t, c) }},
	{"mtls-identity", func(t testing.TB, c Config) Config {
		return withIdentity(t, c, "casty://member/n"+c.NodeID.String()[:2])
	}},
}

func benchConfig(id byte) Config {
	c := DefaultConfig()
	c.NodeID = testID(id)
	c.Logger = slog.New(slog.DiscardHandler)
	return c
}

// BenchmarkAuthHandshake times a whole connection setup: TCP connect, TLS
// when set, the mux handshake, and closing the session.
func BenchmarkAuthHandshake(b *testing.B) {
	b.Run("tcp-connect-floor", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		for b.Loop() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	for _, m := range authModes {
		b.Run(m.name, func(b *testing.B) {
			srv := newNode(b, m.edit(b, benchConfig(2)))
			addr := listen(b, srv)
			cli := newNode(b, m.edit(b, benchConfig(1)))
			ctx := context.Background()
			for b.Loop() {
				s, err := cli.Dial(ctx, addr)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkAuthRoundTrip times one 64-byte request and its answer on an
// established session: authentication costs nothing here without TLS.
func BenchmarkAuthRoundTrip(b *testing.B) {
	for _, m := range authModes {
		b.Run(m.name, func(b *testing.B) {
			srv := newNode(b, m.edit(b, benchConfig(2)))
			srv.HandleRequests(LaneMessage, echo)
			addr := listen(b, srv)
			cli := newNode(b, m.edit(b, benchConfig(1)))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := cli.Dial(ctx, addr)
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 64)
			for b.Loop() {
				if _, err := s.Request(ctx, LaneMessage, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package mux

import (
	"context"
	"github.com/casty-go/casty/internal/procstat"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
)

// The cost of authentication, side by side in one run (SECURITY.md and
// BENCHMARKS.md): plaintext, shared secret with sealed records (the
// default), shared secret authenticating the handshake only
// (Config.AuthOnly), mutual TLS, and mutual TLS with certificate identity.
//
//	go test -run '^$' -bench 'BenchmarkAuth' -benchtime 2s ./mux/

type authMode struct {
	name string
	edit func(testing.TB, Config) Config
}

var authModes = []authMode{
	{"plain", func(_ testing.TB, c Config) Config { return c }},
	{"secret", func(_ testing.TB, c Config) Config { return withSecret(c, memberSecret) }},
	{"secret-authonly", func(_ testing.TB, c Config) Config {
		c = withSecret(c, memberSecret)
		c.AuthOnly = true
		return c
	}},
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

// cpuMeter reports the process's CPU time per op (both nodes of a
// benchmark run in this process): unlike ns/op, it hardly moves with
// what other processes make the machine do.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuMeter { return cpuMeter{b, procstat.Self()} }

func (m cpuMeter) report() {
	m.b.ReportMetric(float64(procstat.Self()-m.start)/float64(m.b.N), "cpu-ns/op")
}

// benchSession dials an echoing node over loopback TCP in mode m.
func benchSession(b *testing.B, m authMode) *Session {
	srv := newNode(b, m.edit(b, benchConfig(2)))
	srv.HandleRequests(LaneMessage, echo)
	addr := listen(b, srv)
	cli := newNode(b, m.edit(b, benchConfig(1)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkAuthRoundTrip times one 64-byte request and its answer on an
// established session: an authenticated handshake costs nothing here,
// sealed records and TLS cost their record cipher.
func BenchmarkAuthRoundTrip(b *testing.B) {
	for _, m := range authModes {
		b.Run(m.name, func(b *testing.B) {
			s := benchSession(b, m)
			ctx := context.Background()
			payload := make([]byte, 64)
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if _, err := s.Request(ctx, LaneMessage, payload); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report()
		})
	}
}

// BenchmarkAuthConcurrent64 times 64-byte requests issued by 64
// goroutines at once on one session (ns/op is per request): records then
// carry several envelopes each, so the cipher is paid per batch.
func BenchmarkAuthConcurrent64(b *testing.B) {
	for _, m := range authModes {
		b.Run(m.name, func(b *testing.B) {
			s := benchSession(b, m)
			ctx := context.Background()
			work := make(chan struct{}, 64)
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					payload := make([]byte, 64)
					for range work {
						if _, err := s.Request(ctx, LaneMessage, payload); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			cpu.report()
		})
	}
}

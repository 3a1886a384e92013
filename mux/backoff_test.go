package mux

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

func TestBackoffDoublesToTheCap(t *testing.T) {
	b := NewBackoff(DefaultConfig(), nil)
	b.Jitter = 0
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 15000, 15000}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("attempt %d: %v want %v", i, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after reset: %v", got)
	}
}

func TestBackoffJitterStaysWithinBoundsAndIsSeeded(t *testing.T) {
	cfg := DefaultConfig()
	b1 := NewBackoff(cfg, rand.New(rand.NewPCG(1, 2)))
	b2 := NewBackoff(cfg, rand.New(rand.NewPCG(1, 2)))
	base := NewBackoff(cfg, nil)
	base.Jitter = 0
	var lo, hi bool
	for range 200 {
		d1, d2, d := b1.Next(), b2.Next(), base.Next()
		if d1 != d2 {
			t.Fatal("same seed, different delays")
		}
		if float64(d1) < 0.75*float64(d) || float64(d1) > 1.25*float64(d) {
			t.Fatalf("%v outside ±25%% of %v", d1, d)
		}
		lo = lo || d1 < d
		hi = hi || d1 > d
		if base.attempt > 12 {
			base.Reset()
			b1.Reset()
			b2.Reset()
		}
	}
	if !lo || !hi {
		t.Fatal("jitter never went both ways")
	}
}

func TestRedialWaitsForTheListener(t *testing.T) {
	ca := testConfig(1)
	ca.ReconnectMin, ca.ReconnectMax = 5*time.Millisecond, 20*time.Millisecond
	a, b := newNode(t, ca), newNode(t, testConfig(2))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens yet: dials are refused
	type res struct {
		s   *Session
		err error
	}
	got := make(chan res, 1)
	go func() {
		s, err := a.Redial(context.Background(), addr)
		got <- res{s, err}
	}()
	time.Sleep(30 * time.Millisecond) // let a few attempts fail; correctness does not depend on it
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skip("port taken meanwhile, cannot rebind:", err)
	}
	go b.Serve(ln)
	r := <-got
	if r.err != nil || r.s.Peer() != testID(2) {
		t.Fatalf("redial: %v", r.err)
	}
}

func TestRedialStopsOnRejection(t *testing.T) {
	cb := testConfig(2)
	cb.ClusterName = "elsewhere"
	a, b := newNode(t, testConfig(1)), newNode(t, cb)
	addr := listen(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Redial(ctx, addr)
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != CodeWrongCluster {
		t.Fatalf("got %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := testConfig(1)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Config){
		"zero id":         func(c *Config) { c.NodeID = NodeID{} },
		"role":            func(c *Config) { c.Role = 0 },
		"handshake":       func(c *Config) { c.HandshakeTimeout = 0 },
		"connect":         func(c *Config) { c.ConnectTimeout = 0 },
		"keepalive":       func(c *Config) { c.KeepAliveInterval = -1 },
		"keepalive wait":  func(c *Config) { c.KeepAliveTimeout = 0 },
		"small window":    func(c *Config) { c.StreamWindow = 1 << 10 },
		"frame > window":  func(c *Config) { c.MaxFrame = c.StreamWindow + 1 },
		"tiny message":    func(c *Config) { c.MaxMessage = 10 },
		"streams":         func(c *Config) { c.MaxStreams = 0 },
		"requests":        func(c *Config) { c.MaxRequests = 0 },
		"queued bytes":    func(c *Config) { c.MaxQueuedBytes = 0 },
		"queued total":    func(c *Config) { c.MaxQueuedBytesTotal = c.MaxQueuedBytes - 1 },
		"partial bytes":   func(c *Config) { c.MaxPartialBytes = -1 },
		"partial total":   func(c *Config) { c.MaxPartialBytesTotal = c.MaxPartialBytes - 1 },
		"partial":         func(c *Config) { c.PartialMessageTimeout = 0 },
		"inbound conns":   func(c *Config) { c.MaxInboundConns = 0 },
		"per host":        func(c *Config) { c.MaxInboundConnsPerHost = 0 },
		"per host > all":  func(c *Config) { c.MaxInboundConnsPerHost = c.MaxInboundConns + 1 },
		"client conns":    func(c *Config) { c.MaxClientConns = -1 },
		"client > all":    func(c *Config) { c.MaxClientConns = c.MaxInboundConns + 1 },
		"client per host": func(c *Config) { c.MaxClientConnsPerHost = -1 },
		"client ph > all": func(c *Config) { c.MaxClientConns, c.MaxClientConnsPerHost = 8, 9 },
		"client ph > def": func(c *Config) { c.MaxInboundConns, c.MaxInboundConnsPerHost, c.MaxClientConnsPerHost = 8, 8, 3 },
		"handshakes":      func(c *Config) { c.MaxHandshakes = 0 },
		"hs per host":     func(c *Config) { c.MaxHandshakesPerHost = 0 },
		"hs per host>all": func(c *Config) { c.MaxHandshakesPerHost = c.MaxHandshakes + 1 },
		"first byte":      func(c *Config) { c.FirstByteTimeout = 0 },
		"reconnect":       func(c *Config) { c.ReconnectMin = 0 },
		"reconnect order": func(c *Config) { c.ReconnectMax = c.ReconnectMin / 2 },
		"jitter":          func(c *Config) { c.ReconnectJitter = 1 },
		"grace":           func(c *Config) { c.SupersedeGrace = 0 },
		"codec":           func(c *Config) { c.Codecs = []string{"lz4"} },
		"long cluster":    func(c *Config) { c.ClusterName = string(make([]byte, 256)) },
		"long advertise":  func(c *Config) { c.AdvertiseAddr = string(make([]byte, 256)) },
	}
	for name, mutate := range cases {
		c := testConfig(1)
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

package mux

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Handshake starvation, against real sockets on
// loopback.

// idleHolder keeps n TCP connections to addr open that never send a byte,
// from the local IPs in from (round robin), and reopens each one the
// listener closes, for as long as the test runs: an attacker holding idle
// handshakes.
type idleHolder struct {
	dialled atomic.Int64 // connections opened so far
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
}

func holdIdle(t testing.TB, addr string, from []string, n int) *idleHolder {
	t.Helper()
	h := &idleHolder{done: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i%len(from)])}, Timeout: time.Second}
		h.wg.Go(func() {
			for {
				c, err := d.Dial("tcp", addr)
				if err == nil {
					h.dialled.Add(1)
					h.mu.Lock()
					select {
					case <-h.done:
						h.mu.Unlock()
						c.Close()
						return
					default:
					}
					h.conns[c] = struct{}{}
					h.mu.Unlock()
					_, _ = c.Read(make([]byte, 1)) // until the listener closes it
					h.mu.Lock()
					delete(h.conns, c)
					h.mu.Unlock()
					c.Close()
				}
				select {
				case <-h.done:
					return
				default:
				}
				if err != nil {
					select { // the listener is gone or the host out of ports: not a busy loop
					case <-h.done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

func (h *idleHolder) stop() {
	h.mu.Lock()
	select {
	case <-h.done:
	default:
		close(h.done)
	}
	for c := range h.conns {
		c.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// hosts returns n loopback addresses from 127.0.0.first on.
func hosts(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.%d", first+i)
	}
	return out
}

// inProgress is the number of inbound handshakes n has in progress.
func inProgress(n *Node) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.adm.handshakes)
}

// Item 3. 128 connections that never send a byte, from one host or from
// 128, held open (reopened when closed) against a listener at the default
// limits: a legitimate node still completes every handshake it tries, in
// every mode. Before: MaxHandshakes (128) was full and every legitimate
// handshake was refused at accept.
func TestIdleConnectionsDoNotStarveHandshakes(t *testing.T) {
	modes := []struct {
		name string
		edit func(Config) Config
	}{
		{"open", func(c Config) Config { return c }},
		{"secret", func(c Config) Config { return withSecret(c, memberSecret) }},
		{"mtls", func(c Config) Config { return withTLS(t, c) }},
	}
	attackers := []struct {
		name string
		from []string
	}{
		{"one host", hosts(2, 1)},
		{"128 hosts", hosts(2, 128)},
	}
	for _, m := range modes {
		for _, at := range attackers {
			t.Run(m.name+"/"+at.name, func(t *testing.T) {
				cb := m.edit(testConfig(2))
				cb.HandshakeTimeout = 30 * time.Second // idle connections are not cut by it
				b := newNode(t, cb)
				addr := listen(t, b)
				h := holdIdle(t, addr, at.from, 128)
				// Every idle connection was accepted, and the listener holds
				// as many handshakes as it lets them hold.
				waitFor(t, 10*time.Second, "the attacker's connections accepted", func() bool {
					return h.dialled.Load() >= 128 && inProgress(b) >= heldByIdle(cb, len(at.from))
				})
				a := newNode(t, m.edit(testConfig(1)))
				const tries = 10
				ok := 0
				var last error
				for range tries {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					s, err := a.Dial(ctx, addr)
					cancel()
					if err != nil {
						last = err
						continue
					}
					ok++
					s.Close()
				}
				if ok != tries {
					t.Fatalf("%d of %d legitimate handshakes completed while 128 idle connections were held (last error: %v)", ok, tries, last)
				}
			})
		}
	}
}

// heldByIdle is how many handshakes idle connections from nHosts hosts
// can hold at once under c.
func heldByIdle(c Config, nHosts int) int {
	return min(128, c.MaxHandshakes, nHosts*c.MaxHandshakesPerHost)
}

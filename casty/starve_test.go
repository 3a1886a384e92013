package casty_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Handshake starvation against real members on
// loopback.

// idleHolder keeps n TCP connections to each of addrs open that never send
// a byte, from the local IPs in from (round robin), and reopens each one a
// member closes, until stopped: an attacker holding idle handshakes.
type idleHolder struct {
	dialled atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
}

func holdIdle(t testing.TB, addrs []string, from []string, n int) *idleHolder {
	t.Helper()
	h := &idleHolder{done: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	for _, addr := range addrs {
		for i := range n {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i%len(from)])}, Timeout: time.Second}
			h.wg.Go(func() { h.hold(d, addr) })
		}
	}
	t.Cleanup(h.stop)
	return h
}

func (h *idleHolder) hold(d net.Dialer, addr string) {
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
			_, _ = c.Read(make([]byte, 1)) // until the member closes it
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
			select { // the member is gone or the host out of ports: no busy loop
			case <-h.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
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

// loopbackHosts returns n loopback addresses from 127.0.0.first on.
func loopbackHosts(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.%d", first+i)
	}
	return out
}

// securityModes are the three ways a cluster admits members: open, a
// shared secret, mutual TLS with certificate identity.
func securityModes(t *testing.T) []struct {
	name string
	opts []casty.Option
} {
	ca := newCA(t, t.TempDir(), "cluster")
	return []struct {
		name string
		opts []casty.Option
	}{
		{"open", nil},
		{"secret", secured()},
		{"mtls", []casty.Option{casty.WithTLS(ca.issueWith(t, "member", "casty://member/m"))}},
	}
}

// Item 3. While 128 idle connections are held open against every member,
// from one host or from 128, a new member joins within its JoinTimeout,
// in every mode. Before: MaxHandshakes (128) was full and the new member
// "could not join".
func TestIdleConnectionsDoNotKeepANewMemberOut(t *testing.T) {
	parallel(t)
	for _, mode := range securityModes(t) {
		for _, from := range [][]string{loopbackHosts(2, 1), loopbackHosts(2, 128)} {
			t.Run(fmt.Sprintf("%s/%d hosts", mode.name, len(from)), func(t *testing.T) {
				nodes := startCluster(t, 2, mode.opts...)
				addrs := []string{nodes[0].Addr(), nodes[1].Addr()}
				h := holdIdle(t, addrs, from, 128)
				waitFor(t, 10*time.Second, "the attacker's connections open", func() bool {
					return h.dialled.Load() >= int64(128*len(addrs))
				})
				cfg := fastCluster() // JoinTimeout 10 s
				ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.Membership.JoinTimeout)
				defer cancel()
				joiner, err := casty.Start(ctx, "127.0.0.1:0", append([]casty.Option{casty.WithConfig(cfg),
					casty.Seeds(nodes[0].Addr()), quiet()}, mode.opts...)...)
				if err != nil {
					t.Fatalf("a new member could not join while idle connections were held: %v", err)
				}
				t.Cleanup(func() { closeSys(t, joiner) })
				waitConverged(t, append(nodes, joiner), 3)
			})
		}
	}
}

package main

import (
	"bytes"
	"cmp"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// proxy forwards every connection it accepts to target: the attacker in
// the middle (a relay a member dialled, a slow reader, a sender that
// stops halfway). It can keep every byte it forwards, stop reading from
// the target (the target's answers then wait on a reader that does not
// read), and stop forwarding to the target after a number of bytes per
// connection.
type proxy struct {
	ln     net.Listener
	target string

	capture  bool
	upLimit  int64       // bytes forwarded to the target per connection, then no more (0: no limit)
	holdDown atomic.Bool // stop reading from the target

	up, down     atomic.Int64 // bytes forwarded to the target, and back
	targetClosed atomic.Int64 // connections the target closed
	closedAt     atomic.Int64 // when the target first closed one (UnixNano; 0: never)

	mu       sync.Mutex
	seen     bytes.Buffer // both directions
	seenDown bytes.Buffer // from the target
	pairs    []*pair
	wg       sync.WaitGroup
}

// pair is one proxied connection: from the client, to the target.
type pair struct {
	client, target net.Conn
	closed         chan struct{} // the target closed (or the pair ended)
}

// newProxy listens on 127.0.0.1 and forwards to target; capture keeps
// what it forwards, upLimit (0: none) is how much of each connection it
// forwards to the target.
func newProxy(target string, capture bool, upLimit int64) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, capture: capture, upLimit: upLimit}
	p.wg.Go(p.serve)
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, target: t, closed: make(chan struct{})}
		p.mu.Lock()
		p.pairs = append(p.pairs, pr)
		p.mu.Unlock()
		p.wg.Go(func() { p.forward(pr, true) })
		p.wg.Go(func() { p.forward(pr, false) })
	}
}

// forward copies one direction of pr.
func (p *proxy) forward(pr *pair, up bool) {
	src, dst, count := pr.client, pr.target, &p.up
	if !up {
		src, dst, count = pr.target, pr.client, &p.down
	}
	var sent int64
	buf := make([]byte, 32<<10)
	for {
		for !up && p.holdDown.Load() {
			// A reader that stopped reading: the target's writes fill
			// the socket's buffers, then wait.
			select {
			case <-pr.closed:
				return
			default:
			}
			waitABit()
		}
		want := buf
		if up && p.upLimit > 0 {
			if sent >= p.upLimit {
				<-pr.closed // hold the connection open, forwarding nothing more
				return
			}
			want = buf[:min(int64(len(buf)), p.upLimit-sent)]
		}
		n, rerr := src.Read(want)
		var werr error
		if n > 0 {
			if p.capture {
				p.mu.Lock()
				p.seen.Write(want[:n])
				if !up {
					p.seenDown.Write(want[:n])
				}
				p.mu.Unlock()
			}
			sent += int64(n)
			count.Add(int64(n))
			_, werr = dst.Write(want[:n])
		}
		err := cmp.Or(werr, rerr)
		// The target closed: reading from it, or writing to it, failed.
		targetGone := rerr != nil && !up || werr != nil && up
		if err != nil {
			select {
			case <-pr.closed:
			default:
				if targetGone {
					p.targetClosed.Add(1)
					p.closedAt.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
			pr.end()
			return
		}
	}
}

var endMu sync.Mutex

// end closes both connections of the pair once.
func (pr *pair) end() {
	endMu.Lock()
	defer endMu.Unlock()
	select {
	case <-pr.closed:
		return
	default:
	}
	close(pr.closed)
	pr.client.Close()
	pr.target.Close()
}

// sawBytes reports whether b crossed the proxy (capture on).
func (p *proxy) sawBytes(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(p.seen.Bytes(), b)
}

// livePairs returns the connections still open.
func (p *proxy) livePairs() []*pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*pair
	for _, pr := range p.pairs {
		select {
		case <-pr.closed:
		default:
			out = append(out, pr)
		}
	}
	return out
}

// close ends the proxy and every connection through it.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	pairs := p.pairs
	p.mu.Unlock()
	for _, pr := range pairs {
		pr.end()
	}
	p.wg.Wait()
}

// waitABit is the pace at which a held direction looks again.
func waitABit() { time.Sleep(5 * time.Millisecond) }

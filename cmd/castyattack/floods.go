package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

// Default transport budgets (mux.DefaultConfig; a casty member runs with
// them).
const (
	maxMessage           = 4 * mib
	maxQueuedBytes       = 64 * mib
	maxPartialBytesTotal = 256 * mib
	maxRequests          = 1024
	maxClientConns       = 1024
)

// partialBound is the largest heap growth the partial budgets allow: the
// node's MaxPartialBytesTotal plus one connection's three messages, live,
// twice over (the garbage collector lets the heap grow to twice what is
// live before collecting, GOGC=100: closed connections' buffers are
// garbage until then), plus 32 MiB.
const partialBound = 2*(maxPartialBytesTotal+3*maxMessage) + 32*mib

// floodCompressed: requests of 4 MiB that compress to a few hundred bytes
// (zeros), sent at once to a key held busy, so they wait on the member.
// MaxQueuedBytes refuses what goes past 64 MiB on the connection.
func floodCompressed(ctx context.Context, e *floodEnv) floodCheck {
	// The attacker connects through a proxy that counts what it sends.
	p, err := newProxy(e.victim.addr, false, 0)
	if err != nil {
		return floodCheck{outcome: err.Error()}
	}
	defer p.close()
	att, err := e.h.connect(ctx, p.addr())
	if err != nil {
		return floodCheck{outcome: "attacker: " + err.Error()}
	}
	defer closeSys(att)
	if err := att.WaitMembers(ctx, 3); err != nil {
		return floodCheck{outcome: "attacker: " + err.Error()}
	}
	keys := keysOf(att, Blobs.Name(), e.victim.addr, "busy-", 2)
	if len(keys) < 2 {
		return floodCheck{outcome: "the attacker places no key on the member"}
	}
	busy, opener := keys[0], keys[1]
	gate := randomHex(8)
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = casty.Call(ctx, Blobs.Ref(att, busy), (*Blob).Busy, gate) })
	up0 := p.up.Load()
	data := make([]byte, maxMessage-64<<10)
	var ok, overloaded, other atomic.Int64
	var firstOther atomic.Value
	var puts sync.WaitGroup
	for range e.sz.compressed {
		puts.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, e.sz.busyFor+20*time.Second)
			defer cancel()
			_, err := casty.Call(cctx, Blobs.Ref(att, busy), (*Blob).Put, data)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, casty.ErrOverloaded):
				overloaded.Add(1)
			default:
				other.Add(1)
				firstOther.CompareAndSwap(nil, err.Error())
			}
		})
	}
	// The key stays busy until every request past the budget has been
	// refused (those within it wait behind the busy call), or busyFor.
	within := int64(maxQueuedBytes / len(data))
	for deadline := time.Now().Add(e.sz.busyFor); time.Now().Before(deadline); waitABit() {
		if overloaded.Load()+other.Load() >= int64(e.sz.compressed)-within-1 {
			break
		}
	}
	if _, err := casty.Call(ctx, Blobs.Ref(e.lite, opener), (*Blob).Open, gate); err != nil {
		return floodCheck{outcome: "opening the busy key: " + err.Error()}
	}
	puts.Wait()
	wg.Wait()
	sent := p.up.Load() - up0
	admitted := ok.Load()
	// The budget is per connection: the lite client may have opened
	// more than one to the member (a redial), each with its own.
	p.mu.Lock()
	conns := int64(len(p.pairs))
	p.mu.Unlock()
	pass, note := compressedVerdict(int64(e.sz.compressed), int64(len(data)), conns, admitted, overloaded.Load(), other.Load())
	chk := floodCheck{
		bound: 3 * maxQueuedBytes * conns,
		pass:  pass,
		outcome: fmt.Sprintf("%d requests of 4 MiB in %d KB through %d connection(s): %d run, %d refused ErrOverloaded, %d other errors%s",
			e.sz.compressed, sent>>10, conns, admitted, overloaded.Load(), other.Load(), note),
	}
	if v := firstOther.Load(); v != nil {
		chk.outcome += fmt.Sprintf(" (first: %v)", v)
	}
	return chk
}

// compressedVerdict judges floodCompressed: n requests of size bytes went
// through conns connections to the member; admitted ran, overloaded were
// refused ErrOverloaded, other failed otherwise. What ran must fit the
// connections' MaxQueuedBytes (one request over each, the one that
// crossed it), and nothing may fail otherwise. Past what the connections'
// budgets hold together, some must be refused; within one connection's,
// none may be; within several connections' together (a redial under load
// gives the client a second one) how the requests spread over them
// decides whether one overflowed, so refusals are neither required nor
// ruled out.
func compressedVerdict(n, size, conns, admitted, overloaded, other int64) (pass bool, note string) {
	within := admitted*size <= (maxQueuedBytes+maxMessage)*conns && other == 0
	switch {
	case n*size > maxQueuedBytes*conns:
		return within && overloaded > 0, ""
	case conns == 1:
		return overloaded == 0 && other == 0, ""
	default:
		return within, fmt.Sprintf(" (all within the budgets of the %d connections)", conns)
	}
}

// floodSlowReader: a lite client asks for 3 MiB answers (random bytes,
// which do not compress) on many keys at once through a proxy that stops
// reading from the member. Answers wait for room once the lane's send
// queue holds MaxMessage; those of handlers already running are bounded
// only by MaxRequests × the answer's size (SECURITY.md, "Not yet
// defended").
func floodSlowReader(ctx context.Context, e *floodEnv) floodCheck {
	p, err := newProxy(e.victim.addr, false, 0)
	if err != nil {
		return floodCheck{outcome: err.Error()}
	}
	defer p.close()
	att, err := e.h.connect(ctx, p.addr())
	if err != nil {
		return floodCheck{outcome: "attacker: " + err.Error()}
	}
	defer closeSys(att)
	if err := att.WaitMembers(ctx, 3); err != nil {
		return floodCheck{outcome: "attacker: " + err.Error()}
	}
	keys := keysOf(att, Blobs.Name(), e.victim.addr, "big-", e.sz.bigAnswers)
	down0 := p.down.Load()
	p.holdDown.Store(true)
	stopped := time.Now()
	const answer = 3 * mib
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for _, k := range keys {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, e.sz.slowFor)
			defer cancel()
			if _, err := casty.Call(cctx, Blobs.Ref(att, k), (*Blob).Big, answer); err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	closedAfter := "not within " + e.sz.slowFor.String()
	if at := p.closedAt.Load(); at != 0 {
		closedAfter = fmt.Sprintf("after %v", time.Unix(0, at).Sub(stopped).Round(time.Millisecond))
	}
	p.holdDown.Store(false)
	return floodCheck{
		bound: int64(maxRequests) * answer,
		pass:  true,
		outcome: fmt.Sprintf("%d requests for 3 MiB answers, reader stopped for %v: %d answered, %d given up; %d KB read; the member closed the connection %s",
			len(keys), e.sz.slowFor, ok.Load(), failed.Load(), (p.down.Load()-down0)>>10, closedAfter),
	}
}

// floodPartial: connections that each start a 4 MiB message on every
// lane and never finish them: 12 MiB each, within the connection's
// MaxPartialBytes (16 MiB). Open mode: the attacker writes its own records
// after the handshake, every message but its last byte. With a secret:
// the attacker's mux node sends three 4 MiB requests through a proxy that
// stops forwarding after 12 MiB − 256 KiB.
func floodPartial(ctx context.Context, e *floodEnv) floodCheck {
	var nodes []*mux.Node
	var conns []net.Conn
	var mu sync.Mutex
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		for _, n := range nodes {
			n.Close()
		}
	}()
	var p *proxy
	if e.h.mode.Mode != "open" {
		var err error
		if p, err = newProxy(e.victim.addr, false, 3*maxMessage-256<<10); err != nil {
			return floodCheck{outcome: err.Error()}
		}
		defer p.close()
	}
	payload := make([]byte, maxMessage-1<<10)
	_, _ = rand.Read(payload)
	var reqs sync.WaitGroup
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var dialErrs atomic.Int64
	var firstErr atomic.Value
	var raw []*mux.Session
	for range e.sz.partialConns {
		n, err := e.h.muxNode(func(c *mux.Config) { c.CompressThreshold = maxMessage + 1 })
		if err != nil {
			return floodCheck{outcome: err.Error()}
		}
		nodes = append(nodes, n)
		if p == nil {
			c, err := net.Dial("tcp", e.victim.addr)
			if err != nil {
				dialErrs.Add(1)
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			s, err := n.DialConn(dctx, c)
			dcancel()
			if err != nil {
				dialErrs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				continue
			}
			// Every lane's message but its last byte, in records of
			// 64 KiB: 12 MiB held, within the connection's 16 MiB.
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			chunk := make([]byte, 64<<10)
			var werr error
			for lane := range byte(3) {
				recs := appendRecord(nil, lane, envelopeHeader(1, 1<<40+uint64(lane), maxMessage))
				for left := maxMessage - 1; left > 0 && werr == nil; left -= len(chunk) {
					recs = appendRecord(recs, lane, chunk[:min(left, len(chunk))])
					if len(recs) >= 1<<20 {
						_, werr = c.Write(recs)
						recs = recs[:0]
					}
				}
				if werr == nil {
					_, werr = c.Write(recs)
				}
			}
			if werr != nil {
				raw = append(raw, s) // the member closed it: counted below
				continue
			}
			raw = append(raw, s)
			continue
		}
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := n.Dial(dctx, p.addr())
		dcancel()
		if err != nil {
			dialErrs.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			continue
		}
		for _, l := range []mux.Lane{mux.LaneControl, mux.LaneMessage, mux.LaneReplication} {
			reqs.Go(func() { _, _ = s.Request(rctx, l, payload) })
		}
	}
	// Hold them.
	hold := time.NewTimer(e.sz.partialFor)
	<-hold.C
	closedByMember := 0
	if p != nil {
		closedByMember = int(p.targetClosed.Load())
	} else {
		for _, s := range raw {
			select {
			case <-s.Done():
				closedByMember++
			default:
			}
		}
	}
	cancel()
	if p != nil {
		p.close()
	}
	reqs.Wait()
	out := fmt.Sprintf("%d connections each holding three 4 MiB messages unfinished for %v: %d closed by the member, %d refused at the handshake",
		e.sz.partialConns, e.sz.partialFor, closedByMember, dialErrs.Load())
	if v := firstErr.Load(); v != nil {
		out += fmt.Sprintf(" (first: %v)", v)
	}
	// Past the node's budget, connections must have been closed.
	pass := closedByMember > 0 || int64(e.sz.partialConns)*3*maxMessage <= maxPartialBytesTotal
	return floodCheck{bound: partialBound, pass: pass, outcome: out}
}

// floodIdleSessions: idle client sessions from many client addresses
// (127.0.0.2 on), as many as each address may hold, more than the
// clients' room in all; then a new member must join through the member.
func floodIdleSessions(ctx context.Context, e *floodEnv) floodCheck {
	var nodes []*mux.Node
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	var ok, tooMany, other int
	var firstOther error
	for host := range e.sz.idleHosts {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+host))}
		for range e.sz.idlePerHost {
			n, err := e.h.muxNode(func(c *mux.Config) {
				d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
				c.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
			})
			if err != nil {
				return floodCheck{outcome: err.Error()}
			}
			nodes = append(nodes, n)
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = n.Dial(dctx, e.victim.addr)
			cancel()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, mux.ErrTooManyClients):
				tooMany++
			default:
				other++
				if firstOther == nil {
					firstOther = err
				}
			}
		}
	}
	jctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	sys, took, jerr := e.h.join(jctx, e.victim.addr)
	if jerr == nil {
		closeSys(sys)
	}
	total := e.sz.idleHosts * e.sz.idlePerHost
	want := max(total-maxClientConns, e.sz.idleHosts*(e.sz.idlePerHost-64), 0)
	out := fmt.Sprintf("%d idle client sessions from %d addresses: %d admitted, %d refused too many clients, %d other; a new member joined in %v: %s",
		total, e.sz.idleHosts, ok, tooMany, other, took.Round(time.Millisecond), errText(jerr))
	if firstOther != nil {
		out += fmt.Sprintf(" (first other: %v)", firstOther)
	}
	return floodCheck{
		bound:   256 * mib,
		pass:    jerr == nil && tooMany >= want && other == 0,
		outcome: out,
	}
}

// floodPartialStarted: connections that each start a 4 MiB message on
// every lane with a few KiB — its header, 2 KiB, then a record of 1 KiB —
// and go no further, from as many client addresses as needed. The member
// sizes a lane's buffer for the whole message once its header is in, so
// what it holds is the messages' declared size, not the bytes sent: the
// node's MaxPartialBytesTotal must count that. Open mode only (the
// attacker writes unsealed records by hand; a client-credential holder
// with its own sealing code could do the same).
func floodPartialStarted(ctx context.Context, e *floodEnv) floodCheck {
	var nodes []*mux.Node
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		for _, n := range nodes {
			n.Close()
		}
	}()
	var sessions []*mux.Session
	var failed int
	var firstErr error
	sent := 0
	for i := range e.sz.startedConns {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/50))}
		n, err := e.h.muxNode(nil)
		if err != nil {
			return floodCheck{outcome: err.Error()}
		}
		nodes = append(nodes, n)
		d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", e.victim.addr)
		if err != nil {
			failed++
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		conns = append(conns, c)
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := n.DialConn(dctx, c)
		cancel()
		if err != nil {
			failed++
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		var recs []byte
		for lane := range byte(3) {
			recs = appendRecord(recs, lane, append(envelopeHeader(1, 1<<40+uint64(lane), maxMessage), make([]byte, 2<<10)...))
			recs = appendRecord(recs, lane, make([]byte, 1<<10))
		}
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(recs); err != nil {
			failed++
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		sent += len(recs)
		sessions = append(sessions, s)
	}
	hold := time.NewTimer(e.sz.partialFor)
	<-hold.C
	closed := 0
	for _, s := range sessions {
		select {
		case <-s.Done():
			closed++
		default:
		}
	}
	out := fmt.Sprintf("%d connections each starting a 4 MiB message on 3 lanes (%d KB sent in all), held %v: %d closed by the member, %d failed",
		e.sz.startedConns, sent>>10, e.sz.partialFor, closed, failed)
	if firstErr != nil {
		out += fmt.Sprintf(" (first: %v)", firstErr)
	}
	pass := closed > 0 || int64(e.sz.startedConns)*3*maxMessage <= maxPartialBytesTotal
	return floodCheck{bound: partialBound, pass: pass && failed == 0, outcome: out}
}

package mux

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/wait"
)

// overloaded reports whether err is the peer's CodeOverloaded refusal.
func overloaded(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Code == CodeOverloaded
}

// legitPeer connects a third node to srv's address and returns a function
// that makes one request on lane with payload and checks the echo.
func legitPeer(t *testing.T, addr string, l Lane, payload []byte) func() error {
	t.Helper()
	n := newNode(t, testConfig(3))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := n.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := s.Request(ctx, l, payload)
		if err == nil && !bytes.Equal(got, payload) {
			err = errors.New("wrong answer")
		}
		return err
	}
}

// Requests queued behind a busy handler (large, compressed or not) are
// admitted up to MaxQueuedBytes of decoded payload and refused with
// CodeOverloaded beyond it, without running; a request from another
// connection still runs; the admitted ones all complete.
func TestQueuedRequestBytesAreBounded(t *testing.T) {
	const (
		budget = 1 << 20
		size   = 256 << 10 // zeros: a few hundred bytes compressed
		sent   = 40
		admit  = budget / size
	)
	for _, codecs := range [][]string{{CodecZstd}, {CodecZlib}, nil} {
		t.Run(codecName(codecs), func(t *testing.T) {
			ca, cb := testConfig(1), testConfig(2)
			ca.Codecs, cb.Codecs = codecs, codecs
			cb.MaxQueuedBytes = budget
			release := make(chan struct{})
			var running, peak, runs atomic.Int64
			_, b, sa, sb := connect(t, viaTCP, ca, cb, func(a, b *Node) {
				b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
					if len(p) < size { // a legitimate peer's small request
						return p, nil
					}
					HandOff(ctx)
					runs.Add(1)
					now := running.Add(int64(len(p)))
					for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
					}
					defer running.Add(-int64(len(p)))
					select {
					case <-release:
					case <-ctx.Done():
					}
					return p[:1], nil
				})
			})
			errs := make(chan error, sent)
			for range sent {
				go func() {
					_, err := sa.Request(context.Background(), LaneMessage, make([]byte, size))
					errs <- err
				}()
			}
			for i := range sent - admit {
				var err error
				select {
				case err = <-errs:
				case <-time.After(5 * time.Second):
					close(release)
					t.Fatalf("%d of %d requests refused within 5 s, want %d", i, sent, sent-admit)
				}
				if !overloaded(err) {
					close(release)
					t.Fatalf("refusal %d: got %v, want a RemoteError with CodeOverloaded", i, err)
				}
			}
			legit := legitPeer(t, listen(t, b), LaneMessage, []byte("small"))
			if err := legit(); err != nil {
				close(release)
				t.Fatalf("another peer's request during the flood: %v", err)
			}
			close(release)
			for range admit {
				if err := <-errs; err != nil {
					t.Fatalf("an admitted request failed: %v", err)
				}
			}
			if r := runs.Load(); r != admit {
				t.Fatalf("%d handlers ran, want the %d admitted", r, admit)
			}
			if p := peak.Load(); p > budget {
				t.Fatalf("handlers held %d bytes at once, budget %d", p, budget)
			}
			if p := sb.queuedPeak.Load(); p > budget {
				t.Fatalf("the connection held %d bytes of requests, budget %d", p, budget)
			}
			if got := b.Overload().RefusedBytes; got != sent-admit {
				t.Fatalf("Overload.RefusedBytes = %d, want %d", got, sent-admit)
			}
			waitFor(t, 5*time.Second, "the held bytes released", func() bool { return sb.queued.Load() == 0 })
		})
	}
}

func codecName(codecs []string) string {
	if len(codecs) == 0 {
		return "none"
	}
	return codecs[0]
}

// gatedConn stops passing reads on once shut, until the gate opens: a
// peer that stops reading its connection.
type gatedConn struct {
	net.Conn
	shut atomic.Bool
	gate chan struct{}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if c.shut.Load() {
		<-c.gate
	}
	return c.Conn.Read(b)
}

// A peer that asks for large answers and does not read them makes the
// handlers wait for room (their lane's queue stays within MaxMessage and
// one answer) instead of the answers piling up in the queue; once it
// reads, every admitted request gets its answer and nothing else ran.
// How many handlers run before the queue fills depends on scheduling
// (the log line says): when their answers hold more than MaxQueuedBytes,
// the connection is closed instead (ErrAnswerBudget, the test below) and
// their requests see ErrConnectionLost.
func TestAnswersToASlowReaderWaitForRoom(t *testing.T) {
	const (
		answerSize = 256 << 10
		sent       = 300
		maxMessage = 1 << 20
	)
	answer := make([]byte, answerSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range answer {
		answer[i] = byte(rng.Uint32())
	}
	ca, cb := testConfig(1), testConfig(2)
	ca.MaxMessage, cb.MaxMessage = maxMessage, maxMessage
	ca.KeepAliveInterval, cb.KeepAliveInterval = 0, 0
	cb.KeepAliveTimeout = time.Minute // the write deadline: the peer does read, later
	cb.MaxQueuedBytes = 16 << 20      // answers of up to 64 handlers wait; more close the connection
	ca.CompressThreshold, cb.CompressThreshold = -1, -1
	gc := &gatedConn{gate: make(chan struct{})}
	var openGate sync.Once
	open := func() { openGate.Do(func() { close(gc.gate) }) }
	ca.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		gc.Conn = c
		return gc, err
	}
	var runs atomic.Int64
	_, b, sa, sb := connect(t, viaTCP, ca, cb, func(a, b *Node) {
		b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
			if string(p) != "big" {
				return p, nil
			}
			runs.Add(1)
			return answer, nil
		})
	})
	t.Cleanup(open) // before the nodes close: the reader waits on the gate
	legit := legitPeer(t, listen(t, b), LaneMessage, []byte("small"))
	gc.shut.Store(true)

	var maxQueued atomic.Int64
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			sb.w.mu.Lock()
			n := int64(len(sb.w.q[LaneMessage]) - sb.w.off[LaneMessage])
			sb.w.mu.Unlock()
			if n > maxQueued.Load() {
				maxQueued.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	errs := make(chan error, sent)
	for range sent {
		go func() {
			got, err := sa.Request(context.Background(), LaneMessage, []byte("big"))
			if err == nil && !bytes.Equal(got, answer) {
				err = errors.New("wrong answer")
			}
			errs <- err
		}()
	}
	closed := func() bool {
		select {
		case <-sb.Done():
			return true
		default:
			return false
		}
	}
	handled := func() bool {
		o := b.Overload()
		return runs.Load()+sb.starting.Load()+int64(o.Refused+o.RefusedBytes) == sent || closed()
	}
	if !wait.Until(30*time.Second, handled) {
		o := b.Overload()
		t.Fatalf("after 30s, of %d requests %d ran, %d wait to start and %d were refused (%+v); connection closed: %v",
			sent, runs.Load(), sb.starting.Load(), o.Refused+o.RefusedBytes, o, closed())
	}
	close(stop)
	<-sampled
	if q, bound := maxQueued.Load(), int64(maxMessage+envelopeHeaderSize+answerSize); q > bound {
		t.Fatalf("%d bytes queued for a peer that does not read, want at most %d", q, bound)
	}
	t.Logf("peer not reading: %d of %d handlers ran, %d wait to start, %d refused; "+
		"queued for the socket at most %d bytes; held for requests and answers %d bytes (peak %d)",
		runs.Load(), sent, sb.starting.Load(), b.Overload().Refused+b.Overload().RefusedBytes,
		maxQueued.Load(), sb.queued.Load(), sb.queuedPeak.Load())
	if err := legit(); err != nil {
		t.Fatalf("another peer's request during the flood: %v", err)
	}
	open()
	ended := make([]error, 0, sent)
	for range sent {
		ended = append(ended, <-errs)
	}
	// When more handlers ran before the queue filled than MaxQueuedBytes
	// holds answers of (the test below), or the handlers that waited
	// to start answered faster than a loaded machine's reader took the
	// answers once the gate opened, the connection was closed and their
	// requests see ErrConnectionLost.
	cut := closed()
	if cut && !errors.Is(sb.Err(), ErrAnswerBudget) {
		t.Fatalf("closed with %v, want ErrAnswerBudget", sb.Err())
	}
	ok, refusals, lost := 0, 0, 0
	for _, err := range ended {
		switch {
		case err == nil:
			ok++
		case overloaded(err):
			refusals++
		case cut && errors.Is(err, ErrConnectionLost):
			lost++
		default:
			t.Fatalf("a request ended with %v, want its answer or CodeOverloaded", err)
		}
	}
	t.Logf("%d answered, %d refused, %d lost with the connection closed for its answers (%v)", ok, refusals, lost, cut)
	if !cut && int64(ok) != runs.Load() {
		t.Fatalf("%d answers for %d handlers run", ok, runs.Load())
	}
	waitFor(t, 5*time.Second, "the held bytes released", func() bool { return sb.queued.Load() == 0 })
}

// sendPartial writes the start of an envelope announcing n payload bytes,
// and have of them, on lane l of s, as a peer that never sends the rest.
func sendPartial(s *Session, l Lane, n, have int) {
	b := append(appendEnvelopeHeader(nil, frameMessage, 0, 0, n), make([]byte, have)...)
	_ = s.w.enqueue(nil, byte(l), func(q []byte) []byte { return append(q, b...) }, false)
}

// A peer holding partly received messages on every lane past
// MaxPartialBytes is cut off at once, well before PartialMessageTimeout,
// with ErrPartialBudget; another peer's large requests keep running.
func TestPartialMessagesAreBoundedInBytes(t *testing.T) {
	const (
		maxMessage = 512 << 10
		budget     = 1 << 20
	)
	ca, cb := testConfig(1), testConfig(2)
	ca.MaxMessage, cb.MaxMessage = maxMessage, maxMessage
	cb.MaxPartialBytes = budget
	cb.PartialMessageTimeout = time.Minute
	_, b, sa, sb := connect(t, viaTCP, ca, cb, func(a, b *Node) {
		b.HandleRequests(LaneMessage, echo)
		for l := range Lane(numLanes) {
			b.HandleMessages(l, func(*Session, []byte) {})
		}
	})
	big := make([]byte, 400<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	legit := legitPeer(t, listen(t, b), LaneMessage, big)
	if err := legit(); err != nil {
		t.Fatal(err)
	}
	sendPartial(sa, LaneControl, maxMessage, 400<<10)
	sendPartial(sa, LaneMessage, maxMessage, 400<<10)
	if err := legit(); err != nil {
		t.Fatalf("another peer's request during the flood: %v", err)
	}
	sendPartial(sa, LaneReplication, maxMessage, 400<<10) // 1.2 MiB held in all
	select {
	case <-sb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("partial messages past MaxPartialBytes kept the connection open for 5 s")
	}
	if err := sb.Err(); !errors.Is(err, ErrPartialBudget) {
		t.Fatalf("closed with %v, want ErrPartialBudget", err)
	}
	if got := b.Overload().PartialClosed; got != 1 {
		t.Fatalf("Overload.PartialClosed = %d, want 1", got)
	}
	if err := legit(); err != nil {
		t.Fatalf("another peer's request after the flood: %v", err)
	}
}

// Within the budget, partly received messages on every lane are fine.
func TestPartialMessagesWithinTheBudgetAreKept(t *testing.T) {
	cb := testConfig(2)
	cb.PartialMessageTimeout = time.Minute
	_, _, sa, sb := connect(t, viaTCP, testConfig(1), cb, nil)
	for l := range Lane(numLanes) {
		sendPartial(sa, l, 4<<20, 4<<20-1) // the default budget holds three messages of MaxMessage
	}
	waitFor(t, 5*time.Second, "the partial messages received", func() bool {
		return sb.node.Traffic().BytesIn >= 3*(4<<20)
	})
	if _, err := sa.Ping(context.Background()); err != nil { // read after them
		t.Fatal(err)
	}
	if err := sb.Err(); err != nil {
		t.Fatalf("closed with %v, within the budget", err)
	}
}

// Connections each within MaxPartialBytes cannot add up past
// MaxPartialBytesTotal: the one whose record would take the node past it
// is closed with ErrPartialBudget, the others are kept, and the node's
// count goes back to zero as they close.
func TestPartialMessagesAreBoundedPerNode(t *testing.T) {
	const (
		maxMessage = 512 << 10
		part       = 400 << 10
		total      = 2 << 20
	)
	cb := testConfig(2)
	cb.MaxMessage = maxMessage
	cb.MaxPartialBytes, cb.MaxPartialBytesTotal = 1<<20, total
	cb.PartialMessageTimeout = time.Minute
	b := newNode(t, cb)
	b.HandleRequests(LaneMessage, echo)
	addr := listen(t, b)
	dial := func(id byte) *Session {
		c := testConfig(id)
		c.MaxMessage = maxMessage
		n := newNode(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := n.Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	held := func(want int64) {
		t.Helper()
		waitFor(t, 5*time.Second, "the partial bytes counted", func() bool { return b.partialHeld.Load() == want })
	}
	var kept []*Session
	for i := range 2 { // 1.6 MiB held by two connections
		s := dial(byte(10 + i))
		sendPartial(s, LaneControl, maxMessage, part)
		sendPartial(s, LaneMessage, maxMessage, part)
		held(int64(2 * (i + 1) * (part + envelopeHeaderSize)))
		kept = append(kept, s)
	}
	third := dial(20)
	sendPartial(third, LaneControl, maxMessage, part) // 2.0 MiB: within
	held(5 * (part + envelopeHeaderSize))
	sendPartial(third, LaneMessage, maxMessage, part) // 2.4 MiB: past it
	select {
	case <-third.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a connection taking the node past MaxPartialBytesTotal was kept for 5 s")
	}
	held(4 * (part + envelopeHeaderSize))
	if err := legitPeer(t, addr, LaneMessage, make([]byte, 300<<10))(); err != nil {
		t.Fatalf("another peer's request during the flood: %v", err)
	}
	if got := b.Overload().PartialClosed; got != 1 {
		t.Fatalf("Overload.PartialClosed = %d, want 1", got)
	}
	for _, s := range kept {
		if _, err := s.Ping(context.Background()); err != nil {
			t.Fatalf("a connection within the budget: %v", err)
		}
		s.Close()
	}
	held(0)
}

// TestQueuedBytesFigures measures, with CASTY_FIGURES=1, the heap a flood
// of compressed 4 MiB requests queued behind a busy handler costs at the
// default budgets: CASTY_FIGURES=1 go test -run TestQueuedBytesFigures -v ./mux/
func TestQueuedBytesFigures(t *testing.T) {
	if os.Getenv("CASTY_FIGURES") == "" {
		t.Skip("figures: set CASTY_FIGURES=1")
	}
	const sent = 512
	release := make(chan struct{})
	var runs atomic.Int64
	_, b, sa, sb := connect(t, viaTCP, testConfig(1), testConfig(2), func(a, b *Node) {
		b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
			HandOff(ctx)
			runs.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, nil
		})
	})
	payload := make([]byte, 4<<20) // zeros: about 150 bytes with zstd
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before, sentBytes := heap(), b.Traffic().BytesIn
	errs := make(chan error, sent)
	for range sent {
		go func() {
			_, err := sa.Request(context.Background(), LaneMessage, payload)
			errs <- err
		}()
	}
	waitFor(t, 30*time.Second, "every request run or refused", func() bool {
		return runs.Load()+int64(b.Overload().RefusedBytes) == sent
	})
	after := heap()
	t.Logf("%d compressed requests of 4 MiB (%d bytes received): %d run, %d refused; "+
		"held %d bytes (peak %d); heap %+d bytes (MaxQueuedBytes %d)",
		sent, b.Traffic().BytesIn-sentBytes, runs.Load(), b.Overload().RefusedBytes,
		sb.queued.Load(), sb.queuedPeak.Load(), int64(after)-int64(before), b.cfg.MaxQueuedBytes)
	close(release)
	for range sent {
		<-errs
	}
}

// Connections each within MaxQueuedBytes cannot add up past
// MaxQueuedBytesTotal: past it a request is refused unless its
// connection holds nothing else, so a peer that holds nothing is still
// served.
func TestQueuedRequestBytesAreBoundedPerNode(t *testing.T) {
	const (
		size  = 256 << 10
		conn  = 1 << 20
		total = conn + conn/2
	)
	cb := testConfig(2)
	cb.MaxQueuedBytes, cb.MaxQueuedBytesTotal = conn, total
	b := newNode(t, cb)
	release := make(chan struct{})
	var runs atomic.Int64
	b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
		if len(p) < size {
			return p, nil
		}
		HandOff(ctx)
		runs.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return p[:1], nil
	})
	addr := listen(t, b)
	defer close(release)
	flood := func(id byte, sent int) (admitted, refused int) {
		c := testConfig(id)
		n := newNode(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := n.Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		before := runs.Load()
		errs := make(chan error, sent)
		for range sent {
			go func() {
				_, err := s.Request(context.Background(), LaneMessage, make([]byte, size))
				errs <- err
			}()
		}
		waitFor(t, 5*time.Second, "every request run or refused", func() bool {
			return runs.Load()-before+int64(len(errs)) == int64(sent)
		})
		for range len(errs) {
			if err := <-errs; !overloaded(err) {
				t.Fatalf("got %v, want a request run or refused with CodeOverloaded", err)
			}
			refused++
		}
		return sent - refused, refused
	}
	if a, r := flood(10, 8); a != conn/size || r != 8-conn/size {
		t.Fatalf("first connection: %d admitted, %d refused; want %d and %d", a, r, conn/size, 8-conn/size)
	}
	if a, r := flood(11, 8); a != (total-conn)/size || r != 8-(total-conn)/size {
		t.Fatalf("second connection: %d admitted, %d refused; want %d within the node's budget", a, r, (total-conn)/size)
	}
	if p := b.queuedPeak.Load(); p > total {
		t.Fatalf("the node held %d bytes of requests, MaxQueuedBytesTotal %d", p, total)
	}
	if a, _ := flood(12, 2); a != 1 {
		t.Fatalf("a connection holding nothing: %d admitted past the node's budget, want 1", a)
	}
	if err := legitPeer(t, addr, LaneMessage, []byte("small"))(); err != nil {
		t.Fatalf("another peer's request during the flood: %v", err)
	}
}

// enqueueLane writes b on lane l of s as it is, in the next record.
func enqueueLane(s *Session, l Lane, b []byte) {
	_ = s.w.enqueue(nil, byte(l), func(q []byte) []byte { return append(q, b...) }, false)
}

// A partly received envelope's buffer is sized from its header once its
// second record is in, so it holds the declared size whatever has
// arrived: the budgets count the buffer. Connections that each start a
// 1 MiB message on every lane with 3 KiB cannot make the node hold more
// than MaxPartialBytesTotal plus one connection's MaxPartialBytes. Before,
// only the bytes received were counted: eight connections held 24 MiB of
// buffers against a total of 4 MiB, counted as 72 KiB.
func TestPartialBudgetCountsTheBuffersHeld(t *testing.T) {
	const (
		maxMessage = 1 << 20
		perConn    = 4 << 20
		total      = 4 << 20
		conns      = 8
	)
	cb := testConfig(2)
	cb.MaxMessage = maxMessage
	cb.MaxPartialBytes, cb.MaxPartialBytesTotal = perConn, total
	cb.PartialMessageTimeout = time.Minute
	b := newNode(t, cb)
	b.HandleRequests(LaneMessage, echo)
	addr := listen(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kept := 0
	for i := range conns {
		c := testConfig(byte(10 + i))
		c.MaxMessage = maxMessage
		s, err := newNode(t, c).Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		for l := range Lane(numLanes) {
			enqueueLane(s, l, append(appendEnvelopeHeader(nil, frameMessage, 0, 0, maxMessage), make([]byte, 2<<10)...))
		}
		// Answered once b has read the records before it: the next ones
		// are records of their own.
		if _, err := s.Ping(ctx); err != nil {
			continue
		}
		for l := range Lane(numLanes) {
			enqueueLane(s, l, make([]byte, 1<<10))
		}
		if _, err := s.Ping(ctx); err == nil {
			kept++
		}
	}
	held := int64(kept) * numLanes * (envelopeHeaderSize + maxMessage)
	if held > total+perConn {
		t.Fatalf("%d connections kept, holding %d bytes of partial buffers: more than MaxPartialBytesTotal %d + MaxPartialBytes %d",
			kept, held, total, perConn)
	}
	if got := b.Overload().PartialClosed; got != uint64(conns-kept) {
		t.Fatalf("Overload.PartialClosed = %d, want %d", got, conns-kept)
	}
	if err := legitPeer(t, addr, LaneMessage, make([]byte, 300<<10))(); err != nil {
		t.Fatalf("another peer's request during the flood: %v", err)
	}
}

// Answers of handlers that were all running when their peer stopped
// reading cannot pile up past MaxQueuedBytes: once the answers waiting
// for room on a full lane hold more than the budget, the connection is
// closed with ErrAnswerBudget (counted in Overload.AnswerClosed), which
// frees them; the requests see ErrConnectionLost (indeterminate: their
// handlers ran). Another peer is served. Before, the forty answers of
// 256 KiB (10 MiB against a budget of 1 MiB) waited until the peer read
// or KeepAliveTimeout passed.
func TestAnswersPastTheBudgetCloseTheConnection(t *testing.T) {
	const (
		answerSize = 256 << 10
		sent       = 40
		maxMessage = 1 << 20
	)
	answer := make([]byte, answerSize)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range answer {
		answer[i] = byte(rng.Uint32())
	}
	ca, cb := testConfig(1), testConfig(2)
	ca.MaxMessage, cb.MaxMessage = maxMessage, maxMessage
	ca.KeepAliveInterval, cb.KeepAliveInterval = 0, 0
	cb.KeepAliveTimeout = time.Minute
	cb.MaxQueuedBytes = 1 << 20
	ca.CompressThreshold, cb.CompressThreshold = -1, -1
	gc := &gatedConn{gate: make(chan struct{})}
	var openGate sync.Once
	open := func() { openGate.Do(func() { close(gc.gate) }) }
	ca.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		gc.Conn = c
		return gc, err
	}
	release := make(chan struct{})
	var started atomic.Int64
	_, b, sa, sb := connect(t, viaTCP, ca, cb, func(a, b *Node) {
		b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
			if string(p) != "big" {
				return p, nil
			}
			HandOff(ctx)
			started.Add(1)
			<-release
			return answer, nil
		})
	})
	t.Cleanup(open)
	legit := legitPeer(t, listen(t, b), LaneMessage, []byte("small"))
	gc.shut.Store(true)
	errs := make(chan error, sent)
	for range sent {
		go func() {
			_, err := sa.Request(context.Background(), LaneMessage, []byte("big"))
			errs <- err
		}()
	}
	waitFor(t, 10*time.Second, "every handler running", func() bool { return started.Load() == sent })
	close(release)
	select {
	case <-sb.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%d answers of %d bytes waited for a peer that does not read (%d bytes held, MaxQueuedBytes %d) and the connection stayed open",
			sent, answerSize, sb.queued.Load(), cb.MaxQueuedBytes)
	}
	if err := sb.Err(); !errors.Is(err, ErrAnswerBudget) {
		t.Fatalf("closed with %v, want ErrAnswerBudget", err)
	}
	if got := b.Overload().AnswerClosed; got != 1 {
		t.Fatalf("Overload.AnswerClosed = %d, want 1", got)
	}
	waitFor(t, 5*time.Second, "the held bytes released", func() bool { return sb.queued.Load() == 0 })
	if err := legit(); err != nil {
		t.Fatalf("another peer's request: %v", err)
	}
	open()
	for range sent {
		if err := <-errs; err != nil && !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("a request ended with %v, want its answer or ErrConnectionLost", err)
		}
	}
}

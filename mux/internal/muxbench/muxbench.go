// Package muxbench holds the transport benchmarks shared by the mux
// package's Benchmark functions and the cmd/muxbench table printer. Each
// mux figure has its floor (raw TCP, raw yamux) measured by a sibling
// function so the two can run in the same process, on the same machine,
// at the same time.
package muxbench

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/mux"
	"github.com/hashicorp/yamux"
)

// MsgSize is the size of the small messages (requests, pings).
const MsgSize = 64

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(b *testing.B) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	server = <-acc
	if server == nil {
		b.Fatal("accept failed")
	}
	return client, server
}

// echoFixed echoes MsgSize-byte messages one by one (unbatched).
func echoFixed(rw io.ReadWriter) {
	buf := make([]byte, MsgSize)
	for {
		if _, err := io.ReadFull(rw, buf); err != nil {
			return
		}
		if _, err := rw.Write(buf); err != nil {
			return
		}
	}
}

func pingPong(b *testing.B, c io.ReadWriter) {
	msg := make([]byte, MsgSize)
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// RawTCPPingPong: one MsgSize round trip over loopback TCP per op (floor).
func RawTCPPingPong(b *testing.B) {
	c, s := tcpPair(b)
	defer c.Close()
	defer s.Close()
	go echoFixed(s)
	pingPong(b, c)
}

func yamuxPair(b *testing.B) (cs, ss *yamux.Session, cst, sst net.Conn, closeAll func()) {
	c, s := tcpPair(b)
	yc := yamux.DefaultConfig()
	yc.LogOutput = io.Discard
	cs, _ = yamux.Client(c, yc)
	ss, _ = yamux.Server(s, yc)
	st, err := cs.Open()
	if err != nil {
		b.Fatal(err)
	}
	st.Write([]byte{0}) // make the stream known to the server
	sst, err = ss.Accept()
	if err != nil {
		b.Fatal(err)
	}
	one := make([]byte, 1)
	io.ReadFull(sst, one)
	return cs, ss, st, sst, func() { cs.Close(); ss.Close() }
}

// RawYamuxPingPong: one MsgSize round trip on a yamux stream per op (floor).
func RawYamuxPingPong(b *testing.B) {
	_, _, c, s, closeAll := yamuxPair(b)
	defer closeAll()
	go echoFixed(s)
	pingPong(b, c)
}

// RawYamuxPipelined: MsgSize messages written one Write each on one yamux
// stream without waiting, echoed one by one; reports msg/s (floor of the
// concurrent figure).
func RawYamuxPipelined(b *testing.B) {
	_, _, c, s, closeAll := yamuxPair(b)
	defer closeAll()
	go echoFixed(s)
	var got atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, MsgSize)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	msg := make([]byte, MsgSize)
	start := time.Now()
	var sent int64
	for b.Loop() {
		// Bound the bytes in flight so yamux windows never stall the test.
		for sent-got.Load() > 2048 {
			time.Sleep(5 * time.Microsecond)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	for got.Load() < sent {
		time.Sleep(10 * time.Microsecond)
	}
	b.ReportMetric(float64(sent)/time.Since(start).Seconds(), "msg/s")
	closeAll()
	<-readerDone
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// NewMuxPair returns a session between two mux nodes over loopback TCP,
// the far node echoing requests on the message lane and acking every
// ChunkSize bytes of a stream with one byte.
func NewMuxPair() (s *mux.Session, closeAll func(), err error) {
	ca, cb := mux.DefaultConfig(), mux.DefaultConfig()
	ca.NodeID[0], cb.NodeID[0] = 1, 2
	ca.Logger, cb.Logger = quiet(), quiet()
	na, err := mux.New(ca)
	if err != nil {
		return nil, nil, err
	}
	nb, err := mux.New(cb)
	if err != nil {
		return nil, nil, err
	}
	closeAll = func() { na.Close(); nb.Close() }
	nb.HandleRequests(mux.LaneMessage, func(ctx context.Context, _ *mux.Session, p []byte) ([]byte, error) {
		return p, nil
	})
	nb.HandleStreams(func(_ *mux.Session, st *mux.Stream) {
		defer st.Close()
		ackChunks(st)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	go nb.Serve(ln)
	s, err = na.Dial(context.Background(), ln.Addr().String())
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return s, closeAll, nil
}

// MuxPair is NewMuxPair for benchmarks.
func MuxPair(b *testing.B) (s *mux.Session, closeAll func()) {
	s, closeAll, err := NewMuxPair()
	if err != nil {
		b.Fatal(err)
	}
	return s, closeAll
}

// MuxRequest: one sequential MsgSize request/response per op.
func MuxRequest(b *testing.B) {
	s, closeAll := MuxPair(b)
	defer closeAll()
	msg := make([]byte, MsgSize)
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Request(ctx, mux.LaneMessage, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// MuxConcurrent: requesters goroutines issue requests on one session;
// reports msg/s (requests answered per second).
func MuxConcurrent(b *testing.B, requesters int) {
	s, closeAll := MuxPair(b)
	defer closeAll()
	work := make(chan struct{}, requesters)
	var wg sync.WaitGroup
	ctx := context.Background()
	for range requesters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, MsgSize)
			for range work {
				if _, err := s.Request(ctx, mux.LaneMessage, msg); err != nil {
					panic(err)
				}
			}
		}()
	}
	start := time.Now()
	var n int64
	for b.Loop() {
		work <- struct{}{}
		n++
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msg/s")
}

// ChunkSize is the unit of the bulk benchmarks: the receiver acks every chunk.
const ChunkSize = 16 << 20

// ackChunks reads ChunkSize-byte chunks and acks each with one byte.
func ackChunks(rw io.ReadWriter) {
	buf := make([]byte, 256<<10)
	for {
		left := ChunkSize
		for left > 0 {
			n, err := rw.Read(buf[:min(left, len(buf))])
			left -= n
			if err != nil {
				return
			}
		}
		if _, err := rw.Write([]byte{1}); err != nil {
			return
		}
	}
}

func bulk(b *testing.B, c io.ReadWriter) {
	b.SetBytes(ChunkSize)
	buf := make([]byte, 256<<10)
	ack := make([]byte, 1)
	for b.Loop() {
		for sent := 0; sent < ChunkSize; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := io.ReadFull(c, ack); err != nil {
			b.Fatal(err)
		}
	}
}

// RawTCPBulk: ChunkSize bytes per op over loopback TCP (floor).
func RawTCPBulk(b *testing.B) {
	c, s := tcpPair(b)
	defer c.Close()
	defer s.Close()
	go ackChunks(s)
	bulk(b, c)
}

// MuxStreamBulk: ChunkSize bytes per op over one mux stream.
func MuxStreamBulk(b *testing.B) {
	s, closeAll := MuxPair(b)
	defer closeAll()
	st, err := s.OpenStream(context.Background(), []byte("bulk"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	bulk(b, st)
}

// HOLResult is the latency of small requests measured while a bulk
// stream moves data on the same connection.
type HOLResult struct {
	Requests      int
	P50, P99, Max time.Duration
	Bulk          time.Duration // how long the bulk transfer took
}

// HeadOfLine moves total bytes over a stream while one goroutine issues
// sequential MsgSize requests on the message lane, and returns the
// request latencies. total = 0 measures the latencies alone (the floor),
// for as long as the 0-byte transfer plus minRequests take.
func HeadOfLine(s *mux.Session, total int64, minRequests int) (HOLResult, error) {
	ctx := context.Background()
	done := make(chan error, 1)
	start := time.Now()
	var bulkTook time.Duration
	go func() {
		if total == 0 {
			done <- nil
			return
		}
		st, err := s.OpenStream(ctx, []byte("bulk"))
		if err != nil {
			done <- err
			return
		}
		defer st.Close()
		buf := make([]byte, 256<<10)
		ack := make([]byte, 1)
		for sent := int64(0); sent < total; {
			for c := 0; c < ChunkSize && sent < total; c += len(buf) {
				if _, err := st.Write(buf); err != nil {
					done <- err
					return
				}
				sent += int64(len(buf))
			}
			if _, err := io.ReadFull(st, ack); err != nil {
				done <- err
				return
			}
		}
		bulkTook = time.Since(start)
		done <- nil
	}()
	var lat []time.Duration
	msg := make([]byte, MsgSize)
	var bulkErr error
	finished := false
	for !finished || len(lat) < minRequests {
		t := time.Now()
		if _, err := s.Request(ctx, mux.LaneMessage, msg); err != nil {
			return HOLResult{}, err
		}
		lat = append(lat, time.Since(t))
		if !finished {
			select {
			case bulkErr = <-done:
				finished = true
			default:
			}
		}
	}
	if bulkErr != nil {
		return HOLResult{}, bulkErr
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return HOLResult{Requests: len(lat), P50: q(0.50), P99: q(0.99), Max: lat[len(lat)-1], Bulk: bulkTook}, nil
}

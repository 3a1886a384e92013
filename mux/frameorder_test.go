package mux

import (
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// captureConn records what is written to it.
type captureConn struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (c *captureConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, b...)
	return len(b), nil
}

func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }

// A write round that carries a call and a replication envelope puts the
// replication record first (SPEC.md, section 2), so that a replica's
// acknowledgement reaches the owner ahead of the caller's next request.
func TestWriteRoundFramesReplicationBeforeCalls(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		c := &captureConn{}
		s := &Session{node: &Node{cfg: Config{KeepAliveTimeout: time.Second, MaxMessage: 8 << 20}}}
		w := newConnWriter(s, c, nil)
		w.hold()
		size := 10
		if bulk {
			size = roundChunk + 1 // the chunked path
		}
		fill := func(b byte, n int) func([]byte) []byte {
			return func(dst []byte) []byte {
				for range n {
					dst = append(dst, b)
				}
				return dst
			}
		}
		for _, ch := range []byte{byte(LaneMessage), byte(LaneReplication), chanYamux, byte(LaneControl)} {
			if err := w.enqueue(nil, ch, fill(ch, size), false); err != nil {
				t.Fatal(err)
			}
		}
		w.mu.Lock()
		w.writeRound()
		var order []byte
		for b := c.got; len(b) >= recordHeaderSize; {
			n := int(binary.BigEndian.Uint32(b[1:5]))
			order = append(order, b[0])
			b = b[recordHeaderSize+n:]
		}
		want := []byte{byte(LaneControl), byte(LaneReplication), byte(LaneMessage), chanYamux}
		if string(order) != string(want) {
			t.Fatalf("bulk=%v: records on channels %v, want %v", bulk, order, want)
		}
	}
}

// A sender alone yields once before it writes its round, as gather's
// comment says; one whose yield let another sender append yields again.
func TestALoneSenderYieldsOnceBeforeWriting(t *testing.T) {
	defer func() { yield = runtime.Gosched }()
	for _, company := range []int{0, 1} {
		c := &captureConn{}
		s := &Session{node: &Node{cfg: Config{KeepAliveTimeout: time.Second, MaxMessage: 8 << 20}}}
		w := newConnWriter(s, c, nil)
		yields := 0
		yield = func() {
			if yields++; yields <= company {
				// Another sender appends while this one yields: it joins
				// the round being gathered (a write is in progress).
				if err := w.enqueue(nil, byte(LaneMessage), func(b []byte) []byte { return append(b, 2) }, false); err != nil {
					t.Error(err)
				}
			}
		}
		if err := w.enqueue(nil, byte(LaneMessage), func(b []byte) []byte { return append(b, 1) }, false); err != nil {
			t.Fatal(err)
		}
		if yields != company+1 {
			t.Fatalf("with %d other senders appending: %d yields before the write, want %d", company, yields, company+1)
		}
		c.mu.Lock()
		n := len(c.got)
		c.mu.Unlock()
		if want := recordHeaderSize + company + 1; n != want {
			t.Fatalf("%d bytes written, want one record of the %d senders' bytes (%d)", n, company+1, want)
		}
	}
}

package mux

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// Stream is an ephemeral, flow-controlled byte stream inside a session,
// for bulk transfers and actor streaming. It implements net.Conn. Close
// half-closes: it ends this side's writes (the peer reads io.EOF) while
// reads continue until the peer closes its side too.
type Stream struct {
	s       *Session
	st      *yamux.Stream
	header  []byte
	counter *int
	once    sync.Once
}

var _ net.Conn = (*Stream)(nil)

func newStream(s *Session, st *yamux.Stream, header []byte, counter *int) *Stream {
	return &Stream{s: s, st: st, header: header, counter: counter}
}

// Header returns the header the opener passed to OpenStream.
func (st *Stream) Header() []byte { return st.header }

// Session returns the session carrying the stream.
func (st *Stream) Session() *Session { return st.s }

// Read reads data sent by the peer; io.EOF once the peer closed its side.
func (st *Stream) Read(b []byte) (int, error) { return st.st.Read(b) }

// Write sends b, split into frames of at most Config.MaxFrame bytes, and
// blocks while the peer's credit window is spent.
func (st *Stream) Write(b []byte) (int, error) {
	max := st.s.node.cfg.MaxFrame
	total := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), max)]
		n, err := st.st.Write(chunk)
		total += n
		if err != nil {
			return total, err
		}
		b = b[len(chunk):]
	}
	return total, nil
}

// Close half-closes the stream and releases its MaxStreams slot.
func (st *Stream) Close() error {
	st.once.Do(func() {
		st.s.mu.Lock()
		*st.counter--
		st.s.mu.Unlock()
	})
	return st.st.Close()
}

// LocalAddr returns the connection's local address.
func (st *Stream) LocalAddr() net.Addr { return st.st.LocalAddr() }

// RemoteAddr returns the connection's remote address.
func (st *Stream) RemoteAddr() net.Addr { return st.st.RemoteAddr() }

// SetDeadline sets the read and write deadlines of this stream only.
func (st *Stream) SetDeadline(t time.Time) error { return st.st.SetDeadline(t) }

// SetReadDeadline sets the read deadline of this stream only.
func (st *Stream) SetReadDeadline(t time.Time) error { return st.st.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline of this stream only.
func (st *Stream) SetWriteDeadline(t time.Time) error { return st.st.SetWriteDeadline(t) }

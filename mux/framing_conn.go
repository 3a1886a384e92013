package mux

import (
	"encoding/binary"
	"net"
)

// frameJoiner sits between yamux and the network connection. yamux v0.1.2
// writes every data frame as two Writes, its 12-byte header and then its
// body; frameJoiner holds such a header back and sends it together with
// the body in one Write, halving the syscalls (and TCP segments) per
// frame. Headers without a body (window updates, pings, go-away, empty
// data frames) pass straight through. Only yamux's send loop writes, so
// no lock is needed.
type frameJoiner struct {
	net.Conn
	held []byte // a held header followed by room for the body
}

const yamuxHeaderSize = 12

// Write holds back a data-frame header, or sends it with the body that follows.
func (j *frameJoiner) Write(b []byte) (int, error) {
	if len(j.held) == 0 {
		// version(1) type(1) flags(2) stream(4) length(4); type 0 = data
		if len(b) == yamuxHeaderSize && b[1] == 0 && binary.BigEndian.Uint32(b[8:12]) > 0 {
			j.held = append(j.held[:0], b...)
			return len(b), nil
		}
		return j.Conn.Write(b)
	}
	if len(b) > joinCopyLimit {
		// Copying a large body costs more than the extra syscall saves;
		// net.Buffers uses writev where the connection supports it.
		bufs := net.Buffers{j.held, b}
		j.held = j.held[:0]
		_, err := bufs.WriteTo(j.Conn)
		return len(b), err
	}
	j.held = append(j.held, b...)
	_, err := j.Conn.Write(j.held)
	j.held = j.held[:0]
	return len(b), err
}

// joinCopyLimit is the largest body copied behind its header.
const joinCopyLimit = 16 << 10

// sniffConn remembers the first bytes read from a plaintext connection, so
// a failed handshake can say that the peer was speaking TLS.
type sniffConn struct {
	net.Conn
	first [3]byte
	n     int
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	for i := 0; i < n && c.n < len(c.first); i++ {
		c.first[c.n] = b[i]
		c.n++
	}
	return n, err
}

// sawTLS reports whether the peer's first bytes were a TLS record header
// (content type handshake or alert, protocol major version 3).
func (c *sniffConn) sawTLS() bool {
	return c.n == 3 && (c.first[0] == 0x16 || c.first[0] == 0x15) && c.first[1] == 3
}

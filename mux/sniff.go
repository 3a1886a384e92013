package mux

import (
	"net"
)

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

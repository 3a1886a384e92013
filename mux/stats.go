package mux

import (
	"net"
	"sync/atomic"
)

// Traffic is what a node's sessions carried since the node started: the
// bytes read from and written to their connections, every record counted
// with its header (above TLS: what TLS encrypts, not its overhead), and
// the records (SPEC.md §2) read and written, of every channel, and the
// sealed records that failed to open (RecordsForged: each closed its
// connection with ErrRecordForged).
type Traffic struct {
	BytesIn, BytesOut     uint64
	RecordsIn, RecordsOut uint64
	RecordsForged         uint64
}

// Traffic reports the bytes and records this node's sessions have read
// and written. It costs five atomic loads: metrics may poll it.
func (n *Node) Traffic() Traffic {
	return Traffic{BytesIn: n.traffic.in.Load(), BytesOut: n.traffic.out.Load(),
		RecordsIn: n.traffic.recIn.Load(), RecordsOut: n.traffic.recOut.Load(),
		RecordsForged: n.traffic.forged.Load()}
}

// trafficCounters are a node's Traffic. The byte counts move per read and
// write of a connection (countedConn), the record counts once per record
// read (readLoop) and once per round written (writeRound).
type trafficCounters struct{ in, out, recIn, recOut, forged atomic.Uint64 }

// countedConn counts what passes through a session's connection.
type countedConn struct {
	net.Conn
	c *trafficCounters
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.c.in.Add(uint64(n))
	return n, err
}

func (c countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.c.out.Add(uint64(n))
	return n, err
}

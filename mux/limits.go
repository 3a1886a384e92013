package mux

import (
	"net"
	"sync"
)

// Inbound admission: Serve counts the connections it accepted that are
// still open (in handshake or established), in total and per remote host,
// and the handshakes among them still in progress, and closes a new
// connection at once when one of Config.MaxInboundConns,
// MaxInboundConnsPerHost or MaxHandshakes is reached. A connection's slot
// is released when it closes, whoever closes it (a failed handshake, the
// session's end, Node.Close), because the connection handed to Accept is
// wrapped in an inboundConn.

// admission holds the counts (guarded by Node.mu).
type admission struct {
	conns      int
	perHost    map[string]int
	handshakes int
}

// admit takes a connection and a handshake slot for host, or returns the
// name of the limit that refuses it.
func (n *Node) admit(host string) (refused string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.adm.conns >= n.cfg.MaxInboundConns:
		return "MaxInboundConns"
	case n.adm.perHost[host] >= n.cfg.MaxInboundConnsPerHost:
		return "MaxInboundConnsPerHost"
	case n.adm.handshakes >= n.cfg.MaxHandshakes:
		return "MaxHandshakes"
	}
	if n.adm.perHost == nil {
		n.adm.perHost = make(map[string]int)
	}
	n.adm.conns++
	n.adm.perHost[host]++
	n.adm.handshakes++
	return ""
}

// handshakeDone releases a handshake slot taken by admit.
func (n *Node) handshakeDone() {
	n.mu.Lock()
	n.adm.handshakes--
	n.mu.Unlock()
}

// release returns the connection slot of host.
func (n *Node) release(host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.adm.conns--
	if n.adm.perHost[host]--; n.adm.perHost[host] <= 0 {
		delete(n.adm.perHost, host)
	}
}

// inboundConn returns its admission slot on its first Close.
type inboundConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and releases its slot once.
func (c *inboundConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// remoteHost is the IP address part of conn's remote address (the whole
// address if it has no port).
func remoteHost(conn net.Conn) string {
	addr := conn.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

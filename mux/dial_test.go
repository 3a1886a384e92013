package mux

import (
	"context"
	"net"
	"testing"
)

// With Config.Dial set, Node.Dial opens its connections through it, to
// the address it was given: here a proxy that counts and forwards to TCP.
func TestConfigDialReplacesTCP(t *testing.T) {
	b := newNode(t, testConfig(2))
	addr := listen(t, b)
	ca := testConfig(1)
	var dialled []string
	ca.Dial = func(ctx context.Context, to string) (net.Conn, error) {
		dialled = append(dialled, to)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	a := newNode(t, ca)
	s, err := a.Dial(context.Background(), "elsewhere.test:1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Peer() != testID(2) {
		t.Fatalf("reached %v, want node 2", s.Peer())
	}
	if len(dialled) != 1 || dialled[0] != "elsewhere.test:1" {
		t.Fatalf("Config.Dial called with %q, want once with the address Dial was given", dialled)
	}
}

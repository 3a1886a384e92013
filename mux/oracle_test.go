package mux

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net"
	"testing"
	"time"
)

// An offline oracle in the handshake, against real
// sockets on loopback.

// Item 2. A hello naming a credential its sender does not hold gets the
// same bytes back whatever cluster name it tried and whichever secret the
// listener holds: nothing in the answer depends on the secret (so there
// is nothing to check candidate secrets against offline) nor on whether
// the name was right. Listeners with the same challenge randomness are
// compared, so every byte can be. Before: the right name got a challenge
// carrying the listener's HMAC, keyed by the secret, over inputs the
// sender knows (checking the real secret against it matched), the wrong
// one "the cluster names differ".
func TestHelloNamingACredentialLearnsNothingBeforeItsProof(t *testing.T) {
	other := []byte("another secret of 32 bytes......")
	type answer struct {
		first, final []byte // the listener's answer to the hello, and to a proof made up without the secret
	}
	ask := func(secret []byte, name string) answer {
		b := newNode(t, withSecret(testConfig(2), secret))
		b.authRand = bytes.NewReader(bytes.Repeat([]byte{0x5a}, 1<<10))
		addr := listen(t, b)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		h := hello{versions: supportedVersions, nodeID: testID(9), role: RoleMember, cluster: name,
			creds: 1 << CredentialMember, challenge: [authNonceSize]byte{1, 2, 3}}
		if _, err := c.Write(h.encode()); err != nil {
			t.Fatal(err)
		}
		rec := &recordConn{Conn: c}
		typ, _, err := readHandshake(rec)
		if err != nil {
			t.Fatalf("cluster %q: no answer to the hello: %v", name, err)
		}
		a := answer{first: rec.bytes()}
		if typ == hsChallenge {
			c.Write(frameHandshake(hsProof, make([]byte, sha256.Size)))
			if _, _, err := readHandshake(rec); err == nil {
				a.final = rec.bytes()[len(a.first):]
			}
		}
		return a
	}
	base := ask(memberSecret, "test")
	if base.first[4] != hsChallenge || len(base.first) != hsHeaderSize+1+authNonceSize {
		t.Fatalf("the answer to a hello is %x, want a challenge of a credential and a nonce only", base.first)
	}
	if r, err := decodeReject(base.final[hsHeaderSize:]); base.final[4] != hsReject || err != nil || r.code != CodeUnauthenticated {
		t.Fatalf("the answer to a made-up proof is %x, want reject code %d", base.final, CodeUnauthenticated)
	}
	for _, v := range []struct {
		secret []byte
		name   string
	}{{memberSecret, "a wrong guess"}, {other, "test"}, {other, "a wrong guess"}} {
		got := ask(v.secret, v.name)
		if !bytes.Equal(got.first, base.first) || !bytes.Equal(got.final, base.final) {
			t.Fatalf("cluster %q, another secret %v: the listener answered\n%x %x\nnot\n%x %x",
				v.name, !bytes.Equal(v.secret, memberSecret), got.first, got.final, base.first, base.final)
		}
	}
}

// A dialler that proves the secret is told when only the cluster name is
// wrong, after its proof: the diagnostic goes to credential holders only.
func TestWrongClusterNameIsToldAfterTheProof(t *testing.T) {
	dc, lc := withSecret(testConfig(1), memberSecret), withSecret(testConfig(2), memberSecret)
	dc.ClusterName = "another"
	a, b := newNode(t, dc), newNode(t, lc)
	addr := listen(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.Dial(ctx, addr)
	if c, ok := handshakeCode(err); !ok || c != CodeWrongCluster {
		t.Fatalf("a secret holder with another cluster name: %v, want code %d", err, CodeWrongCluster)
	}
}

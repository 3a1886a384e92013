package castytest_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// A cluster runs on the bubble's virtual clock: three members serve a
// replicated kind, one crashes, and well past RemoveDeadAfter (30 s of
// virtual time, a few ms of CPU) the two left serve every key again.
func TestClusterOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := castytest.NewCluster(t, 3, castytest.Seed(1))
		keys := []string{"a", "b", "c", "d", "e", "f"}
		add := func(via *casty.System, key string) (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return casty.Call(ctx, Tallies.Ref(via, key), (*Tally).Add, 1)
		}
		for _, k := range keys {
			if _, err := add(c.Member(0), k); err != nil {
				t.Fatalf("add %s: %v", k, err)
			}
		}
		c.Crash(2)
		time.Sleep(2 * castytest.TestConfig().SuspicionTimeout)
		time.Sleep(35 * time.Second) // past RemoveDeadAfter (30 s)
		for _, via := range []*casty.System{c.Member(0), c.Member(1)} {
			if n := len(via.Members()); n != 2 {
				t.Fatalf("%s sees %d members past RemoveDeadAfter, want 2", via.Addr(), n)
			}
		}
		for _, k := range keys {
			n, err := add(c.Member(1), k)
			if err != nil {
				t.Fatalf("add %s after the crash: %v", k, err)
			}
			if n != 2 {
				t.Fatalf("add %s after the crash: %d, want 2", k, n)
			}
		}
		t.Logf("virtual time elapsed: %v", time.Since(start))
	})
}

// Blob holds a string; Put answers its length.
type Blob struct{ S string }

func (b *Blob) Put(ctx context.Context, s string) (int, error) { b.S = s; return len(s), nil }

var Blobs = casty.Actor[Blob](casty.Name("castytest.test.Blob"), casty.Replicas(3), casty.Write(casty.Majority))

// putBlobs stores payloads big enough to be compressed (zstd) on their
// way to the owner and to its replicas.
func putBlobs(t *testing.T, c *castytest.Cluster) {
	big := strings.Repeat("casty compresses this ", 1000)
	for i, k := range []string{"x", "y", "z", "w"} {
		if _, err := casty.Call(context.Background(), Blobs.Ref(c.Member(i%c.N()), k), (*Blob).Put, big); err != nil {
			t.Fatal(err)
		}
	}
}

// A bubbled cluster and then an unbubbled one compress payloads in one
// process: neither may meet a zstd coder, a pooled channel or a pooled
// timer of the other (the process aborted when mux shared one zstd
// encoder process-wide).
func TestClusterCompressesOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { putBlobs(t, castytest.NewCluster(t, 3)) })
}

func TestClusterCompressesAfterABubble(t *testing.T) { putBlobs(t, castytest.NewCluster(t, 3)) }

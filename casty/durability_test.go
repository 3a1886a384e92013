package casty_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/casty"
)

// countingDurability counts each key's restores and commits.
type countingDurability struct {
	mu       sync.Mutex
	restores map[string]int
	commits  map[string]int
}

func (d *countingDurability) Restore(_ context.Context, a *actor.Activation) (actor.Session, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.restores[a.Key()]++
	return countingSession{d, a.Key()}, nil
}

func (d *countingDurability) count(key string) (restores, commits int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restores[key], d.commits[key]
}

type countingSession struct {
	d   *countingDurability
	key string
}

func (s countingSession) Commit(context.Context, bool) error {
	s.d.mu.Lock()
	s.d.commits[s.key]++
	s.d.mu.Unlock()
	return nil
}

func (s countingSession) Release() {}

// A System's host takes a Durability (replication's seam): an activation
// restores once; a call commits once, a streaming handler once at its end,
// here and across nodes alike.
func TestDurabilitySeamCommitsAStreamOnce(t *testing.T) {
	for _, clustered := range []bool{false, true} {
		d := &countingDurability{restores: map[string]int{}, commits: map[string]int{}}
		var caller, owner *casty.System
		if clustered {
			nodes := startCluster(t, 2, casty.WithDurability(d))
			caller, owner = nodes[0], nodes[1]
		} else {
			caller = newSys(t, casty.WithDurability(d))
			owner = caller
		}
		key := "seam"
		if clustered {
			key = keyOn(t, owner, caller, Logs.Name())
		}
		ctx := context.Background()
		ref := Logs.Ref(caller, key)
		if n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(50))); err != nil || n != 50 {
			t.Fatalf("clustered %v: upload: %d %v", clustered, n, err)
		}
		if r, c := d.count(key); r != 1 || c != 1 {
			t.Fatalf("clustered %v: after a 50-element upload: %d restores, %d commits; want 1, 1", clustered, r, c)
		}
		n := 0
		for _, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if _, err := casty.Call0(ctx, ref, (*Log).Len); err != nil || n != 50 {
			t.Fatalf("clustered %v: %d streamed, %v", clustered, n, err)
		}
		if r, c := d.count(key); r != 1 || c != 3 {
			t.Fatalf("clustered %v: after a stream and a call: %d restores, %d commits; want 1, 3", clustered, r, c)
		}
	}
}

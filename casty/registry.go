package casty

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
)

// kinds is the process-wide table of declared kinds, by wire name, so a
// node can find the kind a remote call names, and what casty keeps of each
// kind beside the engine's *actor.Kind.
var kinds kindTable

// kindTable maps wire names to kinds. Declarations happen at package
// initialisation and lookups on every remote call, so lookups read an
// immutable map through one atomic load and declarations copy it.
type kindTable struct {
	mu     sync.Mutex // serialises declarations
	byName atomic.Pointer[map[string]*declared]
}

// declared is a kind as casty declared it.
type declared struct {
	k    *actor.Kind
	repl replication
}

func (t *kindTable) add(k *actor.Kind, r replication) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur map[string]*declared
	if p := t.byName.Load(); p != nil {
		cur = *p
	}
	if old, ok := cur[k.Name]; ok {
		return fmt.Errorf("casty: wire name %q is declared twice (%v and %v)", k.Name, old.k.Type, k.Type)
	}
	next := make(map[string]*declared, len(cur)+1)
	maps.Copy(next, cur)
	next[k.Name] = &declared{k: k, repl: r}
	t.byName.Store(&next)
	return nil
}

func (t *kindTable) get(name string) *actor.Kind {
	if p := t.byName.Load(); p != nil {
		if d := (*p)[name]; d != nil {
			return d.k
		}
	}
	return nil
}

// getBytes is get for a name still in a received envelope; it does not
// allocate.
func (t *kindTable) getBytes(name []byte) *actor.Kind {
	if p := t.byName.Load(); p != nil {
		if d := (*p)[string(name)]; d != nil {
			return d.k
		}
	}
	return nil
}

// replicationOf returns how the kind named name keeps its state.
func (t *kindTable) replicationOf(name string) (replication, bool) {
	if p := t.byName.Load(); p != nil {
		if d := (*p)[name]; d != nil {
			return d.repl, true
		}
	}
	return replication{}, false
}

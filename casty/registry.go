package casty

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/pager"
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
	k      *actor.Kind
	repl   replication
	schema *pager.Schema // how its state pages (replicated kinds only)
}

func (t *kindTable) add(k *actor.Kind, r replication, schema *pager.Schema) error {
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
	next[k.Name] = &declared{k: k, repl: r, schema: schema}
	t.byName.Store(&next)
	if r.replicas > 1 {
		var cur map[*actor.Kind]int
		if p := replicatedKinds.Load(); p != nil {
			cur = *p
		}
		nk := make(map[*actor.Kind]int, len(cur)+1)
		maps.Copy(nk, cur)
		nk[k] = r.replicas
		replicatedKinds.Store(&nk)
	}
	return nil
}

// replicatedKinds maps the kinds declared with Replicas > 1 to their
// replica count: routing asks it on every call, by pointer.
var replicatedKinds atomic.Pointer[map[*actor.Kind]int]

// declaredOf returns the kind named name as declared, nil when unknown.
func (t *kindTable) declaredOf(name string) *declared {
	if p := t.byName.Load(); p != nil {
		return (*p)[name]
	}
	return nil
}

// replicated lists the kinds declared with Replicas > 1, by name.
func (t *kindTable) replicated() []*declared {
	var out []*declared
	if p := t.byName.Load(); p != nil {
		for _, d := range *p {
			if d.repl.replicas > 1 {
				out = append(out, d)
			}
		}
	}
	slices.SortFunc(out, func(a, b *declared) int { return strings.Compare(a.k.Name, b.k.Name) })
	return out
}

// replicas returns the replica count of k (1 unless declared otherwise).
func replicasOf(k *actor.Kind) int {
	if p := replicatedKinds.Load(); p != nil {
		if n, ok := (*p)[k]; ok {
			return n
		}
	}
	return 1
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

package casty

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
)

// kinds is the process-wide table of declared kinds, by wire name, so a
// node can find the kind a remote call names.
var kinds kindTable

// kindTable maps wire names to kinds. Declarations happen at package
// initialisation and lookups on every remote call, so lookups read an
// immutable map through one atomic load and declarations copy it.
type kindTable struct {
	mu     sync.Mutex // serialises declarations
	byName atomic.Pointer[map[string]*actor.Kind]
}

func (t *kindTable) add(k *actor.Kind) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur map[string]*actor.Kind
	if p := t.byName.Load(); p != nil {
		cur = *p
	}
	if old, ok := cur[k.Name]; ok {
		return fmt.Errorf("casty: wire name %q is declared twice (%v and %v)", k.Name, old.Type, k.Type)
	}
	next := make(map[string]*actor.Kind, len(cur)+1)
	maps.Copy(next, cur)
	next[k.Name] = k
	t.byName.Store(&next)
	return nil
}

func (t *kindTable) get(name string) *actor.Kind {
	if p := t.byName.Load(); p != nil {
		return (*p)[name]
	}
	return nil
}

// getBytes is get for a name still in a received envelope; it does not
// allocate.
func (t *kindTable) getBytes(name []byte) *actor.Kind {
	if p := t.byName.Load(); p != nil {
		return (*p)[string(name)]
	}
	return nil
}

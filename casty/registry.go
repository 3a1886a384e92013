package casty

import (
	"fmt"
	"sync"

	"github.com/casty-go/casty/actor"
)

// kinds is the process-wide table of declared kinds, by wire name, so a
// node can find the kind a remote call names.
var kinds = kindTable{byName: map[string]*actor.Kind{}}

type kindTable struct {
	mu     sync.RWMutex
	byName map[string]*actor.Kind
}

func (t *kindTable) add(k *actor.Kind) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byName[k.Name]; ok {
		return fmt.Errorf("casty: wire name %q is declared twice (%v and %v)", k.Name, old.Type, k.Type)
	}
	t.byName[k.Name] = k
	return nil
}

func (t *kindTable) get(name string) *actor.Kind {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byName[name]
}

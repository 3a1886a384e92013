package casty

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/wire"
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

// declarations caches the last successful checkDeclarations: declarations
// only ever add, so nothing new declared means nothing new to check.
var declarations struct {
	mu    sync.Mutex
	kinds *map[string]*declared // the kinds table checked
	types int                   // how many types were registered then
}

// checkDeclarations reports every named struct type that a declared
// kind's state, a handler's argument or result, or a registered message
// uses and that is not registered, one error per type, each wrapping
// ErrNotRegistered and saying where to register it. Every system checks
// when it starts: package initialisation is over by then, so the order in
// which files declared kinds and messages cannot matter.
func checkDeclarations() error {
	declarations.mu.Lock()
	defer declarations.mu.Unlock()
	cur := kinds.byName.Load()
	names := wire.Default.Names()
	if cur == declarations.kinds && len(names) == declarations.types && cur != nil {
		return nil
	}
	var errs []error
	reported := map[string]bool{}
	// missing reports te once per type: where it is used, and the line
	// that registers it.
	missing := func(te *wire.TypeError, where string, args ...any) {
		if reported[te.Type] {
			return
		}
		reported[te.Type] = true
		errs = append(errs, &notRegistered{fmt.Sprintf("casty: %s, which is not registered: add var _ = casty.Message[%s]() at package level, in any file",
			fmt.Sprintf(where, args...), te.Type)})
	}
	// handler reports what a handler's argument or result (t) lacks.
	handler := func(kind, method, verb string, t reflect.Type) {
		for _, te := range wire.Default.Unregistered(t, t.String()) {
			if deref(t).String() == te.Type {
				missing(te, "kind %q: handler %s %s %s", kind, method, verb, t)
			} else {
				missing(te, "kind %q: handler %s %s %s, whose %s is %s", kind, method, verb, t, te.Path, te.Type)
			}
		}
	}
	var decl []*declared
	if cur != nil {
		for _, d := range *cur {
			decl = append(decl, d)
		}
	}
	slices.SortFunc(decl, func(a, b *declared) int { return strings.Compare(a.k.Name, b.k.Name) })
	states := map[reflect.Type]bool{}
	for _, d := range decl {
		k := d.k
		states[k.Type] = true
		for _, te := range wire.Default.Unregistered(k.Type, k.Type.String()) {
			missing(te, "kind %q: its state's %s is %s", k.Name, te.Path, te.Type)
		}
		pt := reflect.PointerTo(k.Type)
		for i := range pt.NumMethod() {
			m := k.MethodByName(pt.Method(i).Name)
			if m == nil {
				continue
			}
			if m.Arg != nil {
				handler(k.Name, m.Name, "takes", m.Arg)
			}
			if m.Result != nil {
				handler(k.Name, m.Name, "returns", m.Result)
			}
		}
	}
	for _, name := range names {
		t, _ := wire.Default.TypeOf(name)
		if states[t] {
			continue // a kind's state: checked with its kind
		}
		for _, te := range wire.Default.Unregistered(t, t.String()) {
			missing(te, "message %q: its %s is %s", name, te.Path, te.Type)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	declarations.kinds, declarations.types = cur, len(names)
	return nil
}

// deref is t, or its element when t is a pointer.
func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// notRegistered is one type checkDeclarations found missing.
type notRegistered struct{ msg string }

func (e *notRegistered) Error() string { return e.msg }
func (e *notRegistered) Unwrap() error { return ErrNotRegistered }

package wire

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Registry maps wire names to Go types and back. The zero value is not
// usable; create one with NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

// Default is the process-wide registry that casty.Message and casty.Actor
// register into.
var Default = NewRegistry()

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		byName: make(map[string]reflect.Type),
		byType: make(map[reflect.Type]string),
	}
}

// DefaultName is the wire name a type gets when none is given: its import
// path and type name, e.g. "github.com/acme/shop.Order" (or "main.Order").
func DefaultName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

var timeType = reflect.TypeFor[time.Time]()

// Register validates the struct type t and records it under name (the
// DefaultName when name is empty). Registering the same type under the same
// name again is a no-op; a name already held by another type, or a type
// already registered under another name, fails with ErrDuplicateName.
//
// A named struct type that t uses need not be registered yet: types may be
// registered in any order, each validated when it is registered.
// Unregistered reports those still missing once registration is done.
func (r *Registry) Register(t reflect.Type, name string) (string, error) {
	if t == nil || t.Kind() != reflect.Struct || t.Name() == "" {
		return "", &TypeError{Type: typeString(t), Why: "is not a named struct type", Err: ErrNotSerializable}
	}
	if name == "" {
		name = DefaultName(t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byName[name]; ok {
		if old == t {
			return name, nil
		}
		return "", &TypeError{Type: t.String(), Why: "cannot take wire name " + name + ", already held by " + old.String(), Err: ErrDuplicateName}
	}
	if old, ok := r.byType[t]; ok {
		return "", &TypeError{Type: t.String(), Why: "is already registered as " + old, Err: ErrDuplicateName}
	}
	// A type may refer to itself: it counts as registered while it is checked.
	if err := r.checkLocked(t, name, map[reflect.Type]bool{t: true}, true); err != nil {
		return "", err
	}
	r.byName[name] = t
	r.byType[t] = name
	return name, nil
}

// Validate checks that every exported field of the struct type t can cross
// the wire, naming paths from root. It registers nothing; actor state types
// are validated this way. As in Register, the named struct types t uses
// need not be registered yet (Unregistered).
func (r *Registry) Validate(t reflect.Type, root string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.checkLocked(t, root, map[reflect.Type]bool{}, true)
}

// ValidateValue checks a single argument or result type (not necessarily a
// struct), naming paths from root; a named struct type need not be
// registered yet (Unregistered).
func (r *Registry) ValidateValue(t reflect.Type, root string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.checkLocked(t, root, map[reflect.Type]bool{}, false)
}

// Unregistered returns, for each named struct type reachable from t's
// exported fields (or from t itself, when t is not a struct type: a
// handler's argument or result) that is neither registered nor encodes
// itself, a *TypeError wrapping ErrNotRegistered whose Path says where
// from root it is used; nil when there is none. It walks into registered
// types too, since they were registered before what they use may have
// been. Call it once every registration has run: Casty does when a system
// starts.
func (r *Registry) Unregistered(t reflect.Type, root string) []*TypeError {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*TypeError
	r.unregisteredLocked(t, root, map[reflect.Type]bool{}, t.Kind() == reflect.Struct, &out)
	return out
}

func (r *Registry) unregisteredLocked(t reflect.Type, path string, seen map[reflect.Type]bool, inline bool, out *[]*TypeError) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		suffix := "[]"
		if t.Kind() == reflect.Pointer {
			suffix = ""
		}
		r.unregisteredLocked(t.Elem(), path+suffix, seen, false, out)
	case reflect.Map:
		r.unregisteredLocked(t.Elem(), path+"{}", seen, false, out)
	case reflect.Struct:
		if t == timeType || seen[t] {
			return
		}
		seen[t] = true
		if !inline && t.Name() != "" {
			if customEncoded(t) {
				return
			}
			if _, ok := r.byType[t]; !ok {
				*out = append(*out, &TypeError{Path: path, Type: t.String(), Why: "is not registered", Err: ErrNotRegistered})
				return
			}
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("msgpack") == "-" {
				continue
			}
			name := f.Name
			if tag, _, _ := strings.Cut(f.Tag.Get("msgpack"), ","); tag != "" {
				name = tag
			}
			r.unregisteredLocked(f.Type, path+"."+name, seen, f.Anonymous && f.Type.Kind() == reflect.Struct, out)
		}
	}
}

// NameOf returns the wire name of a registered type.
func (r *Registry) NameOf(t reflect.Type) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n, ok := r.byType[t]
	return n, ok
}

// TypeOf returns the type registered under a wire name.
func (r *Registry) TypeOf(name string) (reflect.Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byName[name]
	return t, ok
}

// checkLocked walks t. inline is true for the root struct, whose fields are
// walked even though the struct itself need not be registered.
func (r *Registry) checkLocked(t reflect.Type, path string, visiting map[reflect.Type]bool, inline bool) error {
	bad := func(why string) error {
		return &TypeError{Path: path, Type: t.String(), Why: why, Err: ErrNotSerializable}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil
	case reflect.Pointer:
		return r.checkLocked(t.Elem(), path, visiting, false)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte: msgpack bin
		}
		return r.checkLocked(t.Elem(), path+"[]", visiting, false)
	case reflect.Array:
		return r.checkLocked(t.Elem(), path+"[]", visiting, false)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return bad("is not serializable: map keys must be strings or integers")
		}
		return r.checkLocked(t.Elem(), path+"{}", visiting, false)
	case reflect.Struct:
		if t == timeType {
			return nil
		}
		if !inline && t.Name() != "" {
			if visiting[t] {
				return nil
			}
			if _, ok := r.byType[t]; ok {
				return nil // validated when it was registered
			}
			// Not registered yet, or it encodes itself (e.g. tracked maps,
			// pagers): checked when it is registered, and Unregistered
			// reports it if it never is.
			return nil
		}
		if visiting[t] && !inline {
			return nil
		}
		visiting[t] = true
		// Every field is checked, so one error names all that are wrong.
		var errs []error
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("msgpack") == "-" {
				continue
			}
			name := f.Name
			if tag, _, _ := strings.Cut(f.Tag.Get("msgpack"), ","); tag != "" {
				name = tag
			}
			err := r.checkLocked(f.Type, path+"."+name, visiting, f.Anonymous && f.Type.Kind() == reflect.Struct)
			if te, ok := err.(*TypeError); ok && te.Fix == "" && te.Err == ErrNotSerializable {
				te.Fix = "to leave the field out, unexport it or tag it `msgpack:\"-\"`"
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	default: // chan, func, interface, complex, uintptr, unsafe.Pointer
		return bad("is not serializable")
	}
}

var (
	marshalerType     = reflect.TypeFor[msgpack.Marshaler]()
	customEncoderType = reflect.TypeFor[msgpack.CustomEncoder]()
)

// customEncoded reports whether t (or *t) implements msgpack's Marshaler or
// CustomEncoder: such a type takes charge of its own encoding.
func customEncoded(t reflect.Type) bool {
	for _, c := range []reflect.Type{t, reflect.PointerTo(t)} {
		if c.Implements(marshalerType) || c.Implements(customEncoderType) {
			return true
		}
	}
	return false
}

func typeString(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	return t.String()
}

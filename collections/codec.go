package collections

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"github.com/casty-go/casty/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// Shards hold encoded bytes, so keys, values and elements need no
// registration: the facade encodes (msgpack, maps made canonical so equal
// values encode alike — a register's CompareAndSwap compares encodings,
// and an item's shard is its encoding's hash) and decodes with the wire
// package's bounded decoder.

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// codec encodes and decodes one type, bounded by maxItem.
type codec[T any] struct {
	what    string // "key", "value", "element"
	maxItem int
	maps    bool // T can hold a map: encodings are made canonical
}

func newCodec[T any](what string, maxItem int) codec[T] {
	return codec[T]{what: what, maxItem: maxItem, maps: holdsMap(reflect.TypeFor[T](), map[reflect.Type]bool{})}
}

func (c codec[T]) encode(v T) (string, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return "", fmt.Errorf("%w: %s of type %v: %v", ErrNotEncodable, c.what, reflect.TypeFor[T](), err)
	}
	if e.buf.Len() > c.maxItem {
		return "", fmt.Errorf("%w: a %s of %d bytes encoded (at most %d)", ErrTooLarge, c.what, e.buf.Len(), c.maxItem)
	}
	if c.maps {
		return string(canonical(e.buf.Bytes())), nil
	}
	return e.buf.String(), nil
}

func (c codec[T]) decode(s string) (T, error) {
	var v T
	if err := wire.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("collections: decoding a %s as %v: %w", c.what, reflect.TypeFor[T](), err)
	}
	return v, nil
}

// checkType reports, naming the type and where in it, a type that cannot
// cross the wire faithfully: channels, functions, unsafe pointers,
// complex numbers, and interfaces (they decode as maps and slices, not as
// what was encoded).
func checkType[T any](what string) error {
	t := reflect.TypeFor[T]()
	if err := check(t, t.String(), map[reflect.Type]bool{}); err != nil {
		return fmt.Errorf("%w: %s type %v: %v", ErrNotEncodable, what, t, err)
	}
	return nil
}

var (
	customEncoder = reflect.TypeFor[msgpack.CustomEncoder]()
	marshaler     = reflect.TypeFor[msgpack.Marshaler]()
)

func check(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Implements(customEncoder) || reflect.PointerTo(t).Implements(customEncoder) ||
		t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		return nil // the type encodes itself
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return fmt.Errorf("%s is a %v", path, t.Kind())
	case reflect.Interface:
		return fmt.Errorf("%s is an interface (it would decode as a generic value)", path)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return check(t.Elem(), path+"[]", seen)
	case reflect.Map:
		if err := check(t.Key(), path+"<key>", seen); err != nil {
			return err
		}
		return check(t.Elem(), path+"[]", seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("msgpack") == "-" {
				continue
			}
			if err := check(f.Type, path+"."+f.Name, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

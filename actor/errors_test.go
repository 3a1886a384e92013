package actor

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/casty-go/casty/wire"
)

// The reasons ErrNotHandler gives for what the typed API of casty cannot
// produce: another type's method, and a method without a handler shape.
func TestErrNotHandlerSaysWhy(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.counter"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fn   any
		want string
	}{
		{"another type's method", (*acc).Block,
			"casty: not a handler: github.com/casty-go/casty/actor.(*acc).Block is a method of github.com/casty-go/casty/actor.acc, not of *actor.counter (kind test.counter)"},
		{"not a handler shape", (*counter).Helper,
			"casty: not a handler: (*actor.counter).Helper has type func(*actor.counter, int) int, which is not a handler shape; handlers are M(ctx) error, M(ctx, Q) error, M(ctx) (R, error), M(ctx, Q) (R, error)"},
		{"not a function", 42, "casty: not a handler: int is not a function (kind test.counter)"},
	} {
		err := k.ErrNotHandler(c.fn)
		if !errors.Is(err, ErrNotAHandler) || !errors.Is(err, ErrUnknownActorType) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s…", c.name, err, c.want)
		}
	}
}

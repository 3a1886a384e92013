package actor_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

type Light struct{ On bool }

func (l *Light) Toggle(ctx context.Context) (bool, error) { l.On = !l.On; return l.On, nil }

// toggle is what a typed call helper generates: an Invoker embedding the
// Envelope, carrying its own result.
type toggle struct {
	actor.Envelope
	on bool
}

func (t *toggle) Invoke(ctx context.Context, state any) (err error) {
	t.on, err = state.(*Light).Toggle(ctx)
	return err
}

func Example() {
	kind, err := actor.NewKind(reflect.TypeFor[Light](), actor.KindOptions{Name: "example.Light"}, wire.NewRegistry(), func() any { return new(Light) })
	if err != nil {
		panic(err)
	}
	host, _ := actor.NewHost(actor.Config{}, nil)
	defer host.Close(context.Background())

	m := kind.MethodFor(reflect.ValueOf((*Light).Toggle).Pointer())
	for range 2 {
		call := &toggle{}
		call.Init(call, m)
		err := host.Ask(context.Background(), kind, "porch", &call.Envelope)
		fmt.Println(call.on, err)
	}
	// Output:
	// true <nil>
	// false <nil>
}

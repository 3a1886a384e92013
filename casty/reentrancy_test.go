package casty_test

import (
	"context"
	"errors"
	"testing"

	"github.com/casty-go/casty/casty"
)

// Hop calls the next key in its route, passing the handler's ctx on.
type Hop struct{ Visits int }

type route struct{ Keys []string }

var _ = casty.Message[route]()

func (h *Hop) Go(ctx context.Context, r route) (int, error) {
	h.Visits++
	if len(r.Keys) == 0 {
		return h.Visits, nil
	}
	next := Hops.Ref(casty.Self(ctx).System(), r.Keys[0])
	return casty.Call(ctx, next, (*Hop).Go, route{Keys: r.Keys[1:]})
}

var Hops = casty.Actor[Hop]()

func TestReentrancy(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	cases := []struct {
		name  string
		start string
		route []string
		fails bool
	}{
		{"A→A", "a", []string{"a"}, true},
		{"A→B→A", "a", []string{"b", "a"}, true},
		{"A→B→C", "a", []string{"b", "c"}, false},
		{"A→B→C→B", "a", []string{"b", "c", "b"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := casty.Call(ctx, Hops.Ref(sys, c.start), (*Hop).Go, route{Keys: c.route})
			if !c.fails {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *casty.ActorFailedError
			if !errors.Is(err, casty.ErrReentrancy) || !errors.As(err, &fe) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

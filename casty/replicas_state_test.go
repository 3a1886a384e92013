package casty_test

import (
	"context"
	"testing"

	"github.com/casty-go/casty/casty"
)

// onlyTransient keeps its state in an unexported field, which is transient.
type onlyTransient struct{ n int }

func (o *onlyTransient) Add(ctx context.Context, d int) (int, error) { o.n += d; return o.n, nil }

// A replicated kind whose state has no exported field would replicate
// nothing: Actor refuses it, naming the kind and what to do.
func TestReplicasOfAStateWithNoExportedFieldIsRefused(t *testing.T) {
	mustPanic(t, "casty_test.NothingReplicated: Replicas(3), but its state has no exported field", func() {
		casty.Actor[onlyTransient](casty.Name("casty_test.NothingReplicated"), casty.Replicas(3), casty.Write(casty.Majority))
	})
}

// Unreplicated, the same type is a valid actor.
var _ = casty.Actor[onlyTransient](casty.Name("casty_test.NothingToReplicate"))

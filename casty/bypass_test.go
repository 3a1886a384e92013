package casty_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/casty-go/casty/casty"
)

// NotInCartError is a business error registered with casty.Message: it
// crosses nodes as itself.
type NotInCartError struct{ Item string }

func (e *NotInCartError) Error() string { return "not in cart: " + e.Item }

var _ = casty.Message[NotInCartError](casty.Name("test.NotInCartError"))

// CartLockedError is a business error whose type is not registered: it
// crosses nodes as its text only.
type CartLockedError struct{ Until string }

func (e *CartLockedError) Error() string { return "cart locked until " + e.Until }

// Cart answers "not in cart" on purpose; its supervisor resets it on any
// failure.
type Cart struct {
	Items  []string
	Misses int
}

func (c *Cart) Add(ctx context.Context, item string) error {
	c.Items = append(c.Items, item)
	return nil
}

// Remove answers a missing item with casty.Answer, after counting it.
func (c *Cart) Remove(ctx context.Context, item string) error {
	i := slices.Index(c.Items, item)
	if i < 0 {
		c.Misses++
		return casty.Answer(&NotInCartError{Item: item})
	}
	c.Items = slices.Delete(c.Items, i, i+1)
	return nil
}

// RemoveStrict returns the same error unmarked: a failure.
func (c *Cart) RemoveStrict(ctx context.Context, item string) error {
	if !slices.Contains(c.Items, item) {
		return &NotInCartError{Item: item}
	}
	return c.Remove(ctx, item)
}

// Lock answers with an unregistered error type.
func (c *Cart) Lock(ctx context.Context) error {
	return casty.Answer(&CartLockedError{Until: "noon"})
}

// Contents returns the items and the misses counted.
func (c *Cart) Contents(ctx context.Context) (Cart, error) { return *c, nil }

var Carts = casty.Actor[Cart](casty.Name("test.Cart"),
	casty.Supervise(func(string, string, error, casty.Failure) casty.Directive { return casty.Reset }))

// checkAnswers runs the bypass scenario on ref: answered errors reach the
// caller as themselves and leave the state (and its changes) alone under a
// Reset supervisor; the same error unmarked is a failure that resets it.
func checkAnswers(t *testing.T, ref casty.Ref[Cart]) {
	t.Helper()
	ctx := context.Background()
	if err := casty.Do(ctx, ref, (*Cart).Add, "apple"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		err := casty.Do(ctx, ref, (*Cart).Remove, "pear")
		var nic *NotInCartError
		if !errors.As(err, &nic) || nic.Item != "pear" || err.Error() != "not in cart: pear" {
			t.Fatalf("answer %d: %#v", i, err)
		}
		var fe *casty.ActorFailedError
		if errors.As(err, &fe) {
			t.Fatalf("answer %d arrived as a failure: %v", i, err)
		}
	}
	c, err := casty.Call0(ctx, ref, (*Cart).Contents)
	if err != nil || !slices.Equal(c.Items, []string{"apple"}) || c.Misses != 3 {
		t.Fatalf("after 3 answers: %+v, %v (want the apple and 3 misses)", c, err)
	}
	// The default is unchanged: unmarked, the error is a failure, and the
	// Reset supervisor wipes the cart.
	err = casty.Do(ctx, ref, (*Cart).RemoveStrict, "pear")
	var fe *casty.ActorFailedError
	var nic *NotInCartError
	if !errors.As(err, &fe) || fe.Directive != casty.Reset || !errors.As(err, &nic) || nic.Item != "pear" {
		t.Fatalf("unmarked: %#v", err)
	}
	if c, err := casty.Call0(ctx, ref, (*Cart).Contents); err != nil || len(c.Items) != 0 || c.Misses != 0 {
		t.Fatalf("after a Reset: %+v, %v (want an empty cart)", c, err)
	}
}

func TestAnswerBypassesTheSupervisorLocally(t *testing.T) {
	checkAnswers(t, Carts.Ref(newSys(t), "cart"))
}

func TestAnswerBypassesTheSupervisorAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 2)
	checkAnswers(t, Carts.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Carts.Name())))
}

// A handler's error of a registered type keeps its type across nodes; one
// of an unregistered type arrives as its text, and the serving member
// logs that once per type, saying how to register it.
func TestUnregisteredErrorTypeIsLogged(t *testing.T) {
	logs := &records{}
	nodes := startCluster(t, 2, casty.WithLogger(slog.New(logs)))
	ctx := context.Background()
	const lost = "casty: a handler's error type is not registered"
	local := Carts.Ref(nodes[0], keyOn(t, nodes[0], nodes[0], Carts.Name()))
	remote := Carts.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Carts.Name()))
	// Locally nothing is lost, and nothing is logged.
	var locked *CartLockedError
	if err := casty.Do0(ctx, local, (*Cart).Lock); !errors.As(err, &locked) || locked.Until != "noon" {
		t.Fatalf("local: %#v", err)
	}
	// A registered type survives, failure or answer.
	var nic *NotInCartError
	if err := casty.Do(ctx, remote, (*Cart).RemoveStrict, "fig"); !errors.As(err, &nic) || nic.Item != "fig" {
		t.Fatalf("registered, failed: %#v", err)
	}
	if err := casty.Do(ctx, remote, (*Cart).Remove, "fig"); !errors.As(err, &nic) || nic.Item != "fig" {
		t.Fatalf("registered, answered: %#v", err)
	}
	if got := logs.matching(lost); len(got) != 0 {
		t.Fatalf("registered types logged as lost: %v", got)
	}
	// An unregistered one arrives as text, and is logged once.
	for i := range 3 {
		err := casty.Do0(ctx, remote, (*Cart).Lock)
		if err == nil || err.Error() != "cart locked until noon" || errors.As(err, &locked) {
			t.Fatalf("unregistered %d: %#v", i, err)
		}
	}
	got := logs.matching(lost)
	if len(got) != 1 {
		t.Fatalf("3 calls logged %d lines, want 1: %v", len(got), got)
	}
	if l := got[0]; l["type"] != "*casty_test.CartLockedError" || l["kind"] != Carts.Name() || l["method"] != "Lock" {
		t.Fatalf("the line does not name the type and handler: %v", l)
	}
}

// Telemetry counts answered calls apart from failures, local or remote.
func TestAnswerIsCountedAsAnswered(t *testing.T) {
	opt, collect := meters(t)
	nodes := startCluster(t, 2, opt)
	ctx := context.Background()
	for _, owner := range nodes {
		ref := Carts.Ref(nodes[0], keyOn(t, owner, nodes[0], Carts.Name()))
		if err := casty.Do(ctx, ref, (*Cart).Remove, "pear"); err == nil {
			t.Fatal("Remove of a missing item succeeded")
		}
	}
	rm := collect()
	for outcome, want := range map[string]int64{"answered": 2, "failed": 0} {
		n, _ := sum(rm, "casty.calls", attribute.String("casty.actor.kind", Carts.Name()), attribute.String("casty.call.outcome", outcome))
		if n != want {
			t.Errorf("calls with outcome %s: %d, want %d", outcome, n, want)
		}
	}
}

// CreditBook is replicated on two members and reset on any failure.
type CreditBook struct{ Refusals, Crashes int }

// Refuse counts a refusal and answers it.
func (l *CreditBook) Refuse(ctx context.Context) error {
	l.Refusals++
	return casty.Answer(&NotInCartError{Item: "credit"})
}

// Crash changes the state, then fails.
func (l *CreditBook) Crash(ctx context.Context) error {
	l.Crashes++
	return errors.New("crash")
}

func (l *CreditBook) Read(ctx context.Context) (CreditBook, error) { return *l, nil }

var CreditBooks = casty.Actor[CreditBook](casty.Name("test.CreditBook"), casty.Replicas(2),
	casty.Supervise(func(string, string, error, casty.Failure) casty.Directive { return casty.Reset }))

// An answer commits the state the handler left, as a nil error does: a
// Reset that follows goes back to it, not to the state before.
func TestAnswerCommitsReplicatedState(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	ref := CreditBooks.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], CreditBooks.Name()))
	var nic *NotInCartError
	if err := casty.Do0(ctx, ref, (*CreditBook).Refuse); !errors.As(err, &nic) {
		t.Fatalf("Refuse: %#v", err)
	}
	var fe *casty.ActorFailedError
	if err := casty.Do0(ctx, ref, (*CreditBook).Crash); !errors.As(err, &fe) || fe.Directive != casty.Reset {
		t.Fatalf("Crash: %#v", err)
	}
	l, err := casty.Call0(ctx, ref, (*CreditBook).Read)
	if err != nil || l.Refusals != 1 || l.Crashes != 0 {
		t.Fatalf("after the Reset: %+v, %v (want the answered refusal kept, the crash rolled back)", l, err)
	}
}

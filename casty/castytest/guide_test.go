package castytest_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Seat is an actor holding who booked one seat.
type Seat struct{ Holder string }

// HolderOf returns who holds the seat ("" when free).
func (s *Seat) HolderOf(ctx context.Context) (string, error) { return s.Holder, nil }

// Assign gives the seat to who, unconditionally.
func (s *Seat) Assign(ctx context.Context, who string) error { s.Holder = who; return nil }

// ClaimIfFree gives the seat to who if it is free, in one handler: the
// check and the act cannot be separated.
func (s *Seat) ClaimIfFree(ctx context.Context, who string) (bool, error) {
	if s.Holder != "" {
		return false, nil
	}
	s.Holder = who
	return true, nil
}

// Booking asks a Desk for a seat.
type Booking struct{ Seat, Who string }

// Desk is a service (its calls run concurrently) that books seats. Its
// Claim is deliberately wrong: it checks the Seat actor in one call and
// acts in another, so two claims can both see the seat free.
type Desk struct {
	// checked is where a claim waits after its check; the example injects
	// a barrier of two so both claims check before either acts.
	checked func()
}

// Claim books b.Seat for b.Who if it is free — wrongly (see Desk).
func (d *Desk) Claim(ctx context.Context, b Booking) (bool, error) {
	seat := Seats.Ref(casty.Self(ctx).System(), b.Seat)
	holder, err := casty.Call0(ctx, seat, (*Seat).HolderOf)
	if err != nil || holder != "" {
		return false, err
	}
	if d.checked != nil {
		d.checked()
	}
	return true, casty.Do(ctx, seat, (*Seat).Assign, b.Who)
}

var (
	_     = casty.Message[Booking](casty.Name("castytest.guide.Booking"))
	Seats = casty.Actor[Seat](casty.Name("castytest.guide.Seat"))
	Desks = casty.Service[Desk](casty.Name("castytest.guide.Desk"))
)

// A claim is a compare-and-set of the seat from "" to the claimant, so the
// register model tells whether the claims' history is possible. Two
// concurrent claims through the Desk both win: no order of two CAS from ""
// lets both succeed, and the checker says so. The fix, ClaimIfFree, passes.
func Example_checkThenAct() {
	ctx := context.Background()
	var checks sync.WaitGroup
	checks.Add(2)
	barrier := func() { checks.Done(); checks.Wait() }
	sys := casty.Local(casty.Inject(Desks, func(d *Desk) { d.checked = barrier }))
	defer sys.Close(ctx)

	// run has alice and bob claim seat at once through call, recording
	// each claim as a CAS of the seat from "" to the claimant.
	run := func(seat string, call func(seat, who string) (bool, error)) castytest.Result {
		h := castytest.NewHistory[castytest.RegisterOp[string], castytest.RegisterResult[string]]()
		var wg sync.WaitGroup
		for client, who := range []string{"alice", "bob"} {
			wg.Go(func() {
				h.Record(client, castytest.CASOp(seat, "", who), func() (castytest.RegisterResult[string], error) {
					ok, err := call(seat, who)
					return castytest.Swapped[string](ok), err
				})
			})
		}
		wg.Wait()
		return castytest.Verify(castytest.RegisterModel(""), h.Ops(), 10*time.Second)
	}

	buggy := run("1A", func(seat, who string) (bool, error) {
		return casty.Call(ctx, Desks.Ref(sys), (*Desk).Claim, Booking{Seat: seat, Who: who})
	})
	fmt.Println("check-then-act across two actors:", buggy.Verdict)

	fixed := run("2B", func(seat, who string) (bool, error) {
		return casty.Call(ctx, Seats.Ref(sys, seat), (*Seat).ClaimIfFree, who)
	})
	fmt.Println("claim inside the seat actor:", fixed.Verdict)
	// Output:
	// check-then-act across two actors: not linearizable
	// claim inside the seat actor: linearizable
}

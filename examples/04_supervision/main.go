// Supervision: a three-strikes policy. The supervisor keeps a failing
// actor's state for its first two consecutive failures and resets it on the
// third; a success in between would clear the count, so the strikes come
// back to back and the totals are read before and after.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/casty-go/casty/casty"
)

// Account accepts deposits; a negative one is refused with an error, which
// is a handler failure the supervisor decides on.
type Account struct {
	Balance int
}

// Deposit adds amount, failing on a negative one.
func (a *Account) Deposit(ctx context.Context, amount int) (int, error) {
	if amount < 0 {
		return a.Balance, fmt.Errorf("refused deposit of %d", amount)
	}
	a.Balance += amount
	return a.Balance, nil
}

// Total returns the balance.
func (a *Account) Total(ctx context.Context) (int, error) { return a.Balance, nil }

var Accounts = casty.Actor[Account]()

// threeStrikes keeps the state for two consecutive failures, resets on the third.
func threeStrikes(kind, key string, err error, f casty.Failure) casty.Directive {
	if f.Failures < 3 {
		return casty.Keep
	}
	return casty.Reset
}

func main() {
	ctx := context.Background()
	sys := casty.Local(casty.WithSupervisor(threeStrikes))
	defer sys.Close(ctx)

	acct := Accounts.Ref(sys, "acct-1")
	for _, amount := range []int{100, 50} {
		if _, err := casty.Call(ctx, acct, (*Account).Deposit, amount); err != nil {
			log.Fatal(err)
		}
	}
	total, _ := casty.Call0(ctx, acct, (*Account).Total)
	fmt.Println("total before failures:", total)

	for strike := 1; strike <= 3; strike++ {
		_, err := casty.Call(ctx, acct, (*Account).Deposit, -1)
		var failed *casty.ActorFailedError
		if !errors.As(err, &failed) {
			log.Fatalf("expected a failure, got %v", err)
		}
		fmt.Printf("strike %d: %q -> %s\n", strike, failed.Message, failed.Directive)
	}
	total, _ = casty.Call0(ctx, acct, (*Account).Total)
	fmt.Println("total after reset:", total)
}

package casty_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/casty-go/casty/casty"
)

// InsufficientFundsError is a business error. Registered as a message, it
// reaches callers on other nodes as itself.
type InsufficientFundsError struct{ Short int }

func (e *InsufficientFundsError) Error() string {
	return fmt.Sprintf("insufficient funds: %d short", e.Short)
}

var _ = casty.Message[InsufficientFundsError](casty.Name("example.InsufficientFundsError"))

type Wallet struct{ Balance int }

func (w *Wallet) Deposit(ctx context.Context, n int) (int, error) {
	w.Balance += n
	return w.Balance, nil
}

// Withdraw answers a withdrawal it refuses: not a failure.
func (w *Wallet) Withdraw(ctx context.Context, n int) (int, error) {
	if n > w.Balance {
		return 0, casty.Answer(&InsufficientFundsError{Short: n - w.Balance})
	}
	w.Balance -= n
	return w.Balance, nil
}

// Wallets reset on any failure: a corrupt wallet is worse than none.
var Wallets = casty.Actor[Wallet](casty.Name("example.Wallet"),
	casty.Supervise(func(string, string, error, casty.Failure) casty.Directive { return casty.Reset }))

// An error returned on purpose, marked with Answer, reaches the caller as
// itself and leaves the actor alone, even under a Reset supervisor.
func ExampleAnswer() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	w := Wallets.Ref(sys, "alice")
	casty.Call(ctx, w, (*Wallet).Deposit, 50)

	_, err := casty.Call(ctx, w, (*Wallet).Withdraw, 80)
	var short *InsufficientFundsError
	if errors.As(err, &short) {
		fmt.Println("refused:", short.Short, "short")
	}
	var failed *casty.ActorFailedError
	fmt.Println("a failure:", errors.As(err, &failed))

	balance, _ := casty.Call(ctx, w, (*Wallet).Withdraw, 20)
	fmt.Println("balance:", balance)
	// Output:
	// refused: 30 short
	// a failure: false
	// balance: 30
}

package declmissing

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/casty-go/casty/casty"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every missing registration is named, once per type, with where it is
// used and the line to add; Start and Connect refuse with
// ErrNotRegistered before opening anything, and Local panics with the same
// message.
func TestMissingRegistrationRefusesToStart(t *testing.T) {
	want := []string{
		`casty: kind "declmissing.Ledger": its state's declmissing.Ledger.Last is declmissing.Stamp, which is not registered: add var _ = casty.Message[declmissing.Stamp]() at package level, in any file`,
		`casty: kind "declmissing.Ledger": handler Balance returns declmissing.Total, whose declmissing.Total.Sum is declmissing.Amount, which is not registered: add var _ = casty.Message[declmissing.Amount]() at package level, in any file`,
		`casty: kind "declmissing.Ledger": handler Batch takes *declmissing.Entry, which is not registered: add var _ = casty.Message[declmissing.Entry]() at package level, in any file`,
		`casty: message "github.com/casty-go/casty/casty/internal/declmissing.Invoice": its declmissing.Invoice.Notes[] is declmissing.Note, which is not registered: add var _ = casty.Message[declmissing.Note]() at package level, in any file`,
	}
	check := func(how string, err error) {
		t.Helper()
		if !errors.Is(err, casty.ErrNotRegistered) {
			t.Fatalf("%s: %v, want ErrNotRegistered", how, err)
		}
		got := strings.Split(err.Error(), "\n")
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, want %d:\n%v", how, len(got), len(want), err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: line %d:\n got %s\nwant %s", how, i, got[i], want[i])
			}
		}
	}
	ctx := context.Background()
	sys, err := casty.Start(ctx, "127.0.0.1:0")
	if sys != nil {
		sys.Close(ctx)
	}
	check("Start", err)
	sys, err = casty.Connect(ctx, []string{"127.0.0.1:1"})
	if sys != nil {
		sys.Close(ctx)
	}
	check("Connect", err)
	refused := err
	func() {
		defer func() {
			if msg, _ := recover().(string); msg != refused.Error() {
				t.Fatalf("Local panicked with %q, want the error Start and Connect return", msg)
			}
		}()
		casty.Local().Close(ctx)
	}()
}

package casty

import (
	"errors"
	"fmt"
	"testing"

	"github.com/casty-go/casty/actor"
)

// A closing member refuses as leaving — so the caller goes to the next
// owner — only the calls its host failed before they ran: never a
// handler's failure or answer that wraps ErrActorUnavailable (a nested
// call's), which ran and must not run again elsewhere.
func TestOnlyUnrunCallsAreRefusedAsLeaving(t *testing.T) {
	closed := fmt.Errorf("%w: system is closed", actor.ErrActorUnavailable)
	for _, c := range []struct {
		err  error
		want bool
	}{
		{closed, true},
		{fmt.Errorf("%w: a/b was shut down with the call queued", actor.ErrActorUnavailable), true},
		{&actor.FailedError{Kind: "a", Key: "b", Method: "M", Message: closed.Error(), Err: closed}, false},
		{fmt.Errorf("wrapped: %w", &actor.FailedError{Err: closed}), false},
		{&actor.AnswerError{Err: closed}, false},
		{errors.New("other"), false},
		{nil, false},
	} {
		if got := unrun(c.err); got != c.want {
			t.Errorf("unrun(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

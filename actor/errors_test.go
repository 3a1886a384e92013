package actor

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// cAnswer adds d to the counter, then answers err.
type cAnswer struct {
	Envelope
	d   int
	err error
}

func (e *cAnswer) Invoke(ctx context.Context, state any) error {
	state.(*counter).N += e.d
	return e.err
}

// An error marked with Answer bypasses the supervisor: it is not asked,
// the state the handler left stands, and the caller gets the answer, as an
// *AnswerError unwrapping to the handler's error. Unmarked, the same error
// is a failure the supervisor resets.
func TestAnswerBypassesTheSupervisor(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.counter"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	h, err := NewHost(Config{Supervisor: func(string, string, error, Failure) Directive { asked.Add(1); return Reset }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Close(ctx)
	}()
	add := k.MethodByName("Add")
	errEmpty := errors.New("empty")
	call := func(d int, err error) error {
		e := &cAnswer{d: d, err: err}
		e.Init(e, add)
		return h.Ask(context.Background(), k, "x", &e.Envelope)
	}
	peek := func() int {
		e := &cAdd{}
		e.Init(e, add)
		if err := h.Ask(context.Background(), k, "x", &e.Envelope); err != nil {
			t.Fatal(err)
		}
		return e.r
	}
	for i := 1; i <= 3; i++ {
		err := call(1, Answer(errEmpty))
		var a *AnswerError
		if !errors.As(err, &a) || a.Err != errEmpty {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	if n := peek(); n != 3 || asked.Load() != 0 {
		t.Fatalf("after 3 answers: state %d (want 3), supervisor asked %d times (want 0)", n, asked.Load())
	}
	// The default is unchanged: unmarked, the error is a failure and the
	// supervisor's Reset discards the state.
	var fe *FailedError
	if err := call(1, errEmpty); !errors.As(err, &fe) || fe.Directive != Reset || fe.Err != errEmpty {
		t.Fatalf("unmarked: %v", err)
	}
	if asked.Load() != 1 {
		t.Fatalf("supervisor asked %d times for one failure", asked.Load())
	}
	if n := peek(); n != 0 {
		t.Fatalf("after a Reset: state %d, want 0", n)
	}
	if Answer(nil) != nil {
		t.Fatal("Answer(nil) is not nil")
	}
}

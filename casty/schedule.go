package casty

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/casty-go/casty/actor"
)

// Schedule is a timer bound to an activation; Cancel stops it. Its ticks
// are messages on the actor's own mailbox: one at a time with the other
// handlers, state committed, failures supervised. It dies with the
// activation, never keeps it alive and never reactivates it.
type Schedule = actor.Schedule

// tickFunc adapts fn to the engine, refusing a receiver of another type.
func tickFunc[T any](ctx context.Context, fn func(*T, context.Context) error) (uintptr, string, func(context.Context, any) error, error) {
	a := actor.FromContext(ctx)
	if a == nil {
		return 0, "", nil, fmt.Errorf("casty: schedule: ctx is not a handler's context")
	}
	if fn == nil {
		return 0, "", nil, fmt.Errorf("casty: schedule: nil function")
	}
	if _, ok := a.State().(*T); !ok {
		return 0, "", nil, fmt.Errorf("casty: schedule: %T's receiver is not the running actor %s", fn, a.Kind().Name)
	}
	ptr := reflect.ValueOf(fn).Pointer()
	name := "tick"
	if f := runtime.FuncForPC(ptr); f != nil {
		name = f.Name()
		if i := strings.LastIndex(name, "."); i >= 0 {
			name = name[i+1:]
		}
	}
	return ptr, name, func(ctx context.Context, state any) error { return fn(state.(*T), ctx) }, nil
}

func schedule[T any](ctx context.Context, after, every time.Duration, fn func(*T, context.Context) error) *Schedule {
	id, name, run, err := tickFunc(ctx, fn)
	if err != nil {
		return actor.Canceled(err)
	}
	if after < 0 || every < 0 {
		return actor.Canceled(fmt.Errorf("casty: schedule: negative delay"))
	}
	return actor.ScheduleFor(ctx, id, name, after, every, run)
}

// Every runs fn on the current actor every `every`, fixed-delay: the next
// tick arms only after the previous one finished, so a slow tick never
// piles ticks up. ctx must be a handler's context and fn's receiver the
// running actor's type (otherwise the returned schedule is inert and Err
// says why). fn may be unexported: ticks never cross the wire. Scheduling
// the same function again replaces the earlier schedule.
func Every[T any](ctx context.Context, every time.Duration, fn func(*T, context.Context) error) *Schedule {
	if every <= 0 {
		return actor.Canceled(fmt.Errorf("casty: Every: period must be positive, got %v", every))
	}
	return schedule(ctx, every, every, fn)
}

// After runs fn on the current actor once, after d. Arguments travel by
// closure. Scheduling the same function again replaces the earlier one.
func After[T any](ctx context.Context, d time.Duration, fn func(*T, context.Context) error) *Schedule {
	return schedule(ctx, d, 0, fn)
}

// Emit queues fn as the very next message to the current actor, after the
// running handler (the "send to self" of the actor model): it has its own
// commit and its own failure. It is dropped if the activation ends first,
// or if the returned schedule is cancelled before fn runs. Like Every and
// After, outside a handler (or for a service) it returns an inert schedule
// whose Err says why.
func Emit[T any](ctx context.Context, fn func(*T, context.Context) error) *Schedule {
	_, name, run, err := tickFunc(ctx, fn)
	if err != nil {
		return actor.Canceled(err)
	}
	return actor.Emit(ctx, name, run)
}

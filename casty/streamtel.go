package casty

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"sync/atomic"

	"github.com/casty-go/casty/actor"
)

// Stream metrics (TELEMETRY.md): a stream the caller opens with Stream,
// Upload or Duplex is counted when it opens and when it ends, with its
// outcome and its elements each way. The elements are counted in the
// stream's own loop and recorded once, at the end: an element pays an
// increment, never an instrument.

// streamObs is one stream being observed; a nil *streamObs observes
// nothing (no meter provider).
type streamObs struct {
	mt   *methodTel
	recv int64        // elements handed to the caller (the caller's goroutine only)
	sent atomic.Int64 // elements taken from the caller's sequence (maybe on a goroutine of casty's)
	err  error        // the first error delivered in-band
}

// startStream counts a stream of k's handler fn opening on sys and
// returns its observation: nil without metrics, or when fn is not one of
// k's handlers (the stream then fails before anything is sent).
func startStream(sys *System, k *actor.Kind, fn any) *streamObs {
	t := sys.telemetry()
	if t == nil || t.meter == nil || k == nil {
		return nil
	}
	mt := t.method(k, reflect.ValueOf(fn).Pointer())
	if mt == nil {
		return nil
	}
	t.streamOpened.Add(context.Background(), 1, mt.opened...)
	return &streamObs{mt: mt}
}

// end records the stream's end: its outcome is err's, or when err is nil
// that of the error delivered in-band, if any (a consumer that stops
// early ends it ok).
func (so *streamObs) end(err error) {
	if so == nil {
		return
	}
	if err == nil {
		err = so.err
	}
	mt, ctx := so.mt, context.Background()
	mt.t.streamEnded.Add(ctx, 1, mt.ended[streamOutcome(err)]...)
	if n := so.sent.Load(); n > 0 {
		mt.t.streamElems.Add(ctx, n, mt.elems[0]...)
	}
	if so.recv > 0 {
		mt.t.streamElems.Add(ctx, so.recv, mt.elems[1]...)
	}
}

// streamOutcome is outcomeIndex for a stream's error. A handler's error
// delivered in-band arrives as itself (not as *ActorFailedError), so an
// error that is none of casty's own is the handler's: failed.
func streamOutcome(err error) int {
	i := outcomeIndex(err)
	if i != len(outcomes)-1 { // not unavailable
		return i
	}
	for _, own := range castyErrors {
		if errors.Is(err, own) {
			return i
		}
	}
	return 1 // failed
}

// castyErrors are the sentinels that say a stream could not run or
// went on: what is not one of them, or recognised by outcomeIndex, came
// from the handler.
var castyErrors = [...]error{ErrActorUnavailable, ErrUnknownActorType, ErrNotAHandler, ErrZeroRef, ErrInvalidKey,
	ErrReentrancy, ErrCallChainTooLong, ErrOverloaded, ErrForbidden, ErrRangeMoving}

// received counts the elements yield hands to the caller, and keeps the
// first error.
func received[E any](so *streamObs, yield func(E, error) bool) func(E, error) bool {
	if so == nil {
		return yield
	}
	return func(v E, err error) bool {
		if err == nil {
			so.recv++
		} else if so.err == nil {
			so.err = err
		}
		return yield(v, err)
	}
}

// sent counts the elements of the caller's sequence.
func sent[E any](so *streamObs, seq iter.Seq2[E, error]) iter.Seq2[E, error] {
	if so == nil || seq == nil {
		return seq
	}
	return func(yield func(E, error) bool) {
		seq(func(v E, err error) bool {
			if err == nil {
				so.sent.Add(1)
			}
			return yield(v, err)
		})
	}
}

package casty_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/casty-go/casty/casty"
)

// Till is the actor of the tests of the errors a caller's mistakes give.
type Till struct{ Items []string }

func (t *Till) Add(ctx context.Context, item string) error {
	t.Items = append(t.Items, item)
	return nil
}

func (t *Till) Count(ctx context.Context) (int, error) { return len(t.Items), nil }

func (t *Till) List(ctx context.Context, from int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, it := range t.Items[min(from, len(t.Items)):] {
			if !yield(it, nil) {
				return
			}
		}
	}
}

func (t *Till) Ingest(ctx context.Context, items iter.Seq2[string, error]) (int, error) {
	for it, err := range items {
		if err != nil {
			return 0, err
		}
		t.Items = append(t.Items, it)
	}
	return len(t.Items), nil
}

func (t *Till) Echo(ctx context.Context, in iter.Seq2[string, error]) iter.Seq2[string, error] {
	return in
}

func (t *Till) Jam(ctx context.Context) error { panic("till jammed") }

func (t *Till) Activate(ctx context.Context) error { return nil }

func (t *Till) drop(ctx context.Context, item string) error { return nil }

var Tills = casty.Actor[Till](casty.Name("test.Till"))

// tillAdd has a handler's signature but is a plain function.
func tillAdd(t *Till, ctx context.Context, item string) error { return nil }

// Each way of passing something that is not a handler fails with
// ErrNotAHandler (still matching ErrUnknownActorType), and the message
// says what was passed and what to pass instead.
func TestNotAHandlerSaysWhy(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Tills.Ref(sys, "t")
	closure := func(t *Till, ctx context.Context, item string) error { return nil }
	for _, c := range []struct {
		name string
		call func() error
		want []string
	}{
		{"nil", func() error { return casty.Do(ctx, ref, nil, "x") },
			[]string{"the func(*casty_test.Till, context.Context, string) error passed is nil (kind test.Till)", "pass a method expression of an exported method of *casty_test.Till, such as (*casty_test.Till).Name"}},
		{"closure", func() error { return casty.Do(ctx, ref, closure, "x") },
			[]string{"casty_test.TestNotAHandlerSaysWhy.func", "is a function literal (a closure), not a method of *casty_test.Till (kind test.Till)"}},
		{"plain function", func() error { return casty.Do(ctx, ref, tillAdd, "x") },
			[]string{"github.com/casty-go/casty/casty_test.tillAdd is a plain function, not a method of *casty_test.Till"}},
		{"unexported method", func() error { return casty.Do(ctx, ref, (*Till).drop, "x") },
			[]string{"(*casty_test.Till).drop is an unexported method: handlers must be exported methods", "export it"}},
		{"lifecycle hook", func() error { return casty.Do0(ctx, ref, (*Till).Activate) },
			[]string{"(*casty_test.Till).Activate is a lifecycle hook", "it cannot be called"}},
		{"streaming handler through Call", func() error {
			_, err := casty.Call(ctx, ref, (*Till).Ingest, nil)
			return err
		}, []string{"(*casty_test.Till).Ingest is a streaming handler: call it with Stream, Upload or Duplex"}},
		{"duplex handler through Stream", func() error {
			var err error
			for _, err = range casty.Stream(ctx, ref, (*Till).Echo, nil) {
			}
			return err
		}, []string{"(*casty_test.Till).Echo does not have the shape this helper calls", "Duplex: M(ctx, iter.Seq2[E, error]) iter.Seq2[F, error]"}},
	} {
		err := c.call()
		if !errors.Is(err, casty.ErrNotAHandler) || !errors.Is(err, casty.ErrUnknownActorType) {
			t.Errorf("%s: %v does not match ErrNotAHandler and ErrUnknownActorType", c.name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "casty: not a handler: ") {
			t.Errorf("%s: %q does not say it is not a handler", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
	if sys.Active() != 0 {
		t.Errorf("%d activations: a refused call activated the actor", sys.Active())
	}
}

// A zero Ref fails with ErrZeroRef and says where a Ref comes from.
func TestZeroRefIsErrZeroRef(t *testing.T) {
	ctx := context.Background()
	var zero casty.Ref[Till]
	errs := map[string]error{"Do": casty.Do(ctx, zero, (*Till).Add, "x")}
	_, errs["Call0"] = casty.Call0(ctx, zero, (*Till).Count)
	for _, err := range casty.Stream(ctx, zero, (*Till).List, 0) {
		errs["Stream"] = err
	}
	// A Ref made for no System is a zero Ref too.
	errs["nil System"] = casty.Do(ctx, Tills.Ref(nil, "t"), (*Till).Add, "x")
	for name, err := range errs {
		if !errors.Is(err, casty.ErrZeroRef) {
			t.Errorf("%s: %v is not ErrZeroRef", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "get one from Kind.Ref(sys, key) or ServiceKind.Ref(sys)") {
			t.Errorf("%s: %q does not say where a Ref comes from", name, err)
		}
	}
}

// An actor's empty key is refused with ErrInvalidKey before anything
// activates; a service's Ref, which has no key, still works.
func TestEmptyKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	err := casty.Do(ctx, Tills.Ref(sys, ""), (*Till).Add, "x")
	if !errors.Is(err, casty.ErrInvalidKey) ||
		!strings.Contains(err.Error(), "the empty string is not the key of any test.Till actor: pass a non-empty key to Kind.Ref") {
		t.Fatalf("empty key: %v", err)
	}
	for _, err = range casty.Stream(ctx, Tills.Ref(sys, ""), (*Till).List, 0) {
	}
	if !errors.Is(err, casty.ErrInvalidKey) {
		t.Fatalf("empty key, Stream: %v", err)
	}
	if sys.Active() != 0 {
		t.Fatalf("%d activations after refused calls", sys.Active())
	}
	if _, err := casty.Call0(ctx, Locators.Ref(sys), (*Locator).Where); err != nil {
		t.Fatalf("a service's Ref has no key and must work: %v", err)
	}
}

// records keeps the log records written, with their attributes.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *records) Enabled(context.Context, slog.Level) bool { return true }
func (l *records) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *records) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{l, as} }
func (l *records) WithGroup(string) slog.Handler         { return l }

// withAttrs is records with attributes added by Logger.With.
type withAttrs struct {
	*records
	as []slog.Attr
}

func (w *withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.as...)
	return w.records.Handle(ctx, r)
}

// matching returns the attributes of the records whose message starts
// with prefix, one map per record.
func (l *records) matching(prefix string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if !strings.HasPrefix(r.Message, prefix) {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

// A handler's panic is logged once with its stack; panics of the same
// handler that follow within actor.PanicLogEvery are held back.
func TestHandlerPanicIsLoggedWithItsStack(t *testing.T) {
	ctx := context.Background()
	logs := &records{}
	sys := newSys(t, casty.WithLogger(slog.New(logs)))
	for i := range 3 {
		err := casty.Do0(ctx, Tills.Ref(sys, "jam"), (*Till).Jam)
		var pe *casty.PanicError
		if !errors.As(err, &pe) || pe.Value != "till jammed" {
			t.Fatalf("panic %d: %v", i, err)
		}
	}
	lines := logs.matching("casty: handler panicked")
	if len(lines) != 1 {
		t.Fatalf("3 panics wrote %d lines, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["kind"] != Tills.Name() || l["key"] != "jam" || l["method"] != "Jam" || l["panic"] != "till jammed" {
		t.Errorf("the line does not name the panic: %v", l)
	}
	if !strings.Contains(l["stack"], "casty_test.(*Till).Jam") {
		t.Errorf("the stack does not show the handler: %q", l["stack"])
	}
}

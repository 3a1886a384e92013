package casty_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"testing"

	"github.com/casty-go/casty/casty"
)

// The errors of the tests that an error means the same wherever the key
// lives.
var (
	// ErrOutOfStock is registered with casty.Errors.
	ErrOutOfStock = errors.New("test.stock: out of stock")
	// ErrShelfEmpty is not.
	ErrShelfEmpty = errors.New("test.stock: shelf empty")
)

var _ = casty.Errors(ErrOutOfStock)

// ShortError is a registered error type, read with errors.As.
type ShortError struct {
	Sku     string
	Missing int
}

func (e *ShortError) Error() string { return fmt.Sprintf("%s: %d short", e.Sku, e.Missing) }

var _ = casty.Message[ShortError](casty.Name("test.ShortError"))

// Stockroom answers and fails with each kind of error a handler may give.
type Stockroom struct{ Calls int }

// Take answers (or, for "failed", fails with) the error named by how.
func (s *Stockroom) Take(ctx context.Context, how string) error {
	s.Calls++
	switch how {
	case "sentinel":
		return casty.Answer(ErrOutOfStock)
	case "wrapped":
		return casty.Answer(fmt.Errorf("sku-1: %w", ErrOutOfStock))
	case "typed":
		return casty.Answer(&ShortError{Sku: "sku-1", Missing: 3})
	case "wrapped typed":
		return casty.Answer(fmt.Errorf("order o-7: %w", &ShortError{Sku: "sku-1", Missing: 3}))
	case "typed and sentinel":
		return casty.Answer(fmt.Errorf("%w (%w)", &ShortError{Sku: "sku-2", Missing: 1}, ErrOutOfStock))
	case "joined":
		return casty.Answer(errors.Join(ErrOutOfStock, casty.ErrTimeout))
	case "failed":
		return fmt.Errorf("sku-1: %w", ErrOutOfStock)
	case "unregistered":
		return casty.Answer(fmt.Errorf("sku-3: %w", ErrShelfEmpty))
	}
	return nil
}

// Feed streams one element, then the error named by how, in-band.
func (s *Stockroom) Feed(ctx context.Context, how string) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		if !yield(1, nil) {
			return
		}
		switch how {
		case "wrapped":
			yield(0, fmt.Errorf("sku-4: %w", ErrOutOfStock))
		case "typed":
			yield(0, &ShortError{Sku: "sku-4", Missing: 2})
		}
	}
}

var Stockrooms = casty.Actor[Stockroom](casty.Name("test.Stockroom"))

// seen is what a caller can tell of an error.
type seen struct {
	text                            string
	outOfStock, shelfEmpty, timeout bool
	short                           ShortError
	failed                          bool
}

func see(err error) seen {
	s := seen{
		outOfStock: errors.Is(err, ErrOutOfStock), shelfEmpty: errors.Is(err, ErrShelfEmpty),
		timeout: errors.Is(err, casty.ErrTimeout),
	}
	if err != nil {
		s.text = err.Error()
	}
	if se := (*ShortError)(nil); errors.As(err, &se) {
		s.short = *se
	}
	if fe := (*casty.ActorFailedError)(nil); errors.As(err, &fe) {
		s.failed = true
		// The key differs between the two refs: compare the rest.
		s.text = fe.Kind + "." + fe.Method + ": " + fe.Message
	}
	return s
}

// The same handler's error, returned or wrapped, answered or failed,
// unary or in a stream, gives a caller on another node what it gives a
// caller on the key's own node: errors.Is finds registered sentinels,
// errors.As registered types, and the text is the handler's. An
// unregistered sentinel is the one difference, and the serving member
// logs it, once.
func TestErrorsMeanTheSameWhereverTheKeyLives(t *testing.T) {
	logs := &records{}
	nodes := startCluster(t, 2, casty.WithLogger(slog.New(logs)))
	ctx := context.Background()
	local := Stockrooms.Ref(nodes[0], keyOn(t, nodes[0], nodes[0], Stockrooms.Name()))
	remote := Stockrooms.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Stockrooms.Name()))
	short := func(sku string, n int) ShortError { return ShortError{Sku: sku, Missing: n} }
	refs := []struct {
		where string
		ref   casty.Ref[Stockroom]
	}{{"here", local}, {"on the other member", remote}}
	for _, c := range []struct {
		how  string
		want seen
	}{
		{"sentinel", seen{text: "test.stock: out of stock", outOfStock: true}},
		{"wrapped", seen{text: "sku-1: test.stock: out of stock", outOfStock: true}},
		{"typed", seen{text: "sku-1: 3 short", short: short("sku-1", 3)}},
		{"wrapped typed", seen{text: "order o-7: sku-1: 3 short", short: short("sku-1", 3)}},
		{"typed and sentinel", seen{text: "sku-2: 1 short (test.stock: out of stock)", short: short("sku-2", 1), outOfStock: true}},
		{"joined", seen{text: "test.stock: out of stock\n" + casty.ErrTimeout.Error(), outOfStock: true, timeout: true}},
		{"failed", seen{text: "test.Stockroom.Take: sku-1: test.stock: out of stock", outOfStock: true, failed: true}},
	} {
		for _, r := range refs {
			if got := see(casty.Do(ctx, r.ref, (*Stockroom).Take, c.how)); got != c.want {
				t.Errorf("%s, key %s:\n got %+v\nwant %+v", c.how, r.where, got, c.want)
			}
		}
	}
	// In-band errors of a stream.
	for _, c := range []struct {
		how  string
		want seen
	}{
		{"wrapped", seen{text: "sku-4: test.stock: out of stock", outOfStock: true}},
		{"typed", seen{text: "sku-4: 2 short", short: short("sku-4", 2)}},
	} {
		for _, r := range refs {
			var last error
			for _, err := range casty.Stream(ctx, r.ref, (*Stockroom).Feed, c.how) {
				last = err
			}
			if got := see(last); got != c.want {
				t.Errorf("stream %s, key %s:\n got %+v\nwant %+v", c.how, r.where, got, c.want)
			}
		}
	}

	// An unregistered sentinel matches locally only, and is logged, once.
	const lost = "casty: a handler's error is not registered"
	if err := casty.Do(ctx, local, (*Stockroom).Take, "unregistered"); !errors.Is(err, ErrShelfEmpty) {
		t.Fatalf("unregistered, locally: %#v", err)
	}
	for range 3 {
		err := casty.Do(ctx, remote, (*Stockroom).Take, "unregistered")
		if got := see(err); got != (seen{text: "sku-3: test.stock: shelf empty"}) {
			t.Fatalf("unregistered, remotely: %+v", got)
		}
	}
	got := logs.matching(lost)
	if len(got) != 1 {
		t.Fatalf("3 calls logged %d lines, want 1: %v", len(got), got)
	}
	if l := got[0]; l["err"] != "test.stock: shelf empty" || l["kind"] != Stockrooms.Name() || l["method"] != "Take" {
		t.Fatalf("the line does not name the error and handler: %v", l)
	}
	for _, l := range logs.matching("casty: a handler's error") {
		if l["err"] == ErrOutOfStock.Error() || l["type"] == "*casty_test.ShortError" {
			t.Fatalf("a registered error logged as lost: %v", l)
		}
	}
}

// incomparable is an error type errors.Is cannot compare.
type incomparable struct{ skus []string }

func (e incomparable) Error() string { return "incomparable" }

// Errors names each sentinel by its text, takes the same one twice, and
// refuses what is no sentinel, or a second sentinel of the same text.
func TestErrorsRegistersSentinelsByText(t *testing.T) {
	if names := casty.Errors(ErrOutOfStock, ErrOutOfStock); len(names) != 2 || names[0] != "test.stock: out of stock" {
		t.Fatalf("registered again: %q", names)
	}
	mustPanic(t, "a nil error is not a sentinel", func() { casty.Errors(nil) })
	mustPanic(t, "casty_test.incomparable is not comparable", func() { casty.Errors(incomparable{}) })
	mustPanic(t, `the text "test.stock: out of stock" is already registered for another error`, func() {
		casty.Errors(errors.New("test.stock: out of stock"))
	})
	mustPanic(t, "the wire name casty.errors is reserved", func() {
		type M struct{ N int }
		casty.Message[M](casty.Name("casty.errors"))
	})
}

package casty_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want %q", want)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want it to contain %q", r, want)
		}
	}()
	f()
}

type BadState struct {
	Name   string
	Orders []struct{ Notify chan string }
}

type BadArg struct{}

func (b *BadArg) Watch(ctx context.Context, f func()) error { return nil }

type BadResult struct{}

func (b *BadResult) Peek(ctx context.Context) (complex128, error) { return 0, nil }

type Plain struct{ N int }

func (p *Plain) Get(ctx context.Context) (int, error) { return p.N, nil }

func TestDeclarationPanicsNameTheProblem(t *testing.T) {
	mustPanic(t, "test.Bad.Orders[].Notify: chan string is not serializable", func() {
		casty.Actor[BadState](casty.Name("test.Bad"))
	})
	mustPanic(t, "test.BadArg.Watch argument: func() is not serializable", func() {
		casty.Actor[BadArg](casty.Name("test.BadArg"))
	})
	mustPanic(t, "test.BadResult.Peek result: complex128 is not serializable", func() {
		casty.Actor[BadResult](casty.Name("test.BadResult"))
	})
	mustPanic(t, "write quorum 4 exceeds replicas 3", func() {
		casty.Actor[Plain](casty.Name("test.P1"), casty.Replicas(3), casty.Write(casty.Quorum(4)))
	})
	mustPanic(t, "replicas must be at least 1", func() {
		casty.Actor[Plain](casty.Name("test.P2"), casty.Replicas(0))
	})
	mustPanic(t, "read quorum 4 exceeds replicas 3", func() {
		casty.Actor[Plain](casty.Name("test.P4"), casty.Replicas(3), casty.Read(casty.Quorum(4)))
	})
	mustPanic(t, "invalid write quorum 0", func() {
		casty.Actor[Plain](casty.Name("test.P5"), casty.Write(casty.Quorum(0)))
	})
	mustPanic(t, "invalid read quorum -3", func() {
		casty.Actor[Plain](casty.Name("test.P6"), casty.Read(casty.Quorum(-3)))
	})
	mustPanic(t, "negative idle timeout", func() {
		casty.Actor[Plain](casty.Name("test.P7"), casty.IdleTimeout(-time.Second))
	})
	mustPanic(t, "concurrency must be at least 1", func() {
		type Idle struct{}
		casty.Service[Idle](casty.Name("test.S0"), casty.Concurrency(0))
	})
	mustPanic(t, "Concurrency is a service option", func() {
		casty.Actor[Plain](casty.Name("test.P3"), casty.Concurrency(4))
	})
	mustPanic(t, "is declared twice", func() {
		casty.Actor[Plain](casty.Name("test.Greeter"))
	})
	mustPanic(t, "is not a struct", func() { casty.Actor[int]() })
	mustPanic(t, "chan int is not serializable", func() {
		type M struct{ C chan int }
		casty.Message[M]()
	})
}

var Replicated = casty.Actor[Plain](casty.Name("test.Replicated"), casty.Replicas(3), casty.Write(casty.Majority), casty.Read(casty.Majority))

func TestReplicatedKindRunsAsSingleCopyLocally(t *testing.T) {
	sys := newSys(t)
	if n, err := casty.Call0(context.Background(), Replicated.Ref(sys, "x"), (*Plain).Get); err != nil || n != 0 {
		t.Fatalf("%d %v", n, err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := casty.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (casty.Config{Actors: casty.ActorConfig{CallTimeout: -1}}).Validate(); err == nil || !strings.Contains(err.Error(), "CallTimeout") {
		t.Fatalf("negative CallTimeout: %v", err)
	}
	if err := (casty.Config{Transport: casty.TransportConfig{ReconnectMin: 20e9}}).Validate(); err == nil {
		t.Fatal("ReconnectMin > ReconnectMax accepted")
	}
	for _, c := range []casty.Config{
		{Membership: casty.MembershipConfig{MaxClientRecords: 5000}},                   // over the default table bound, 4096
		{Membership: casty.MembershipConfig{MaxTableSize: 100, MaxClientRecords: 101}}, // over its own table bound
		{Membership: casty.MembershipConfig{MaxTableSize: 70000}},                      // over 65536
		{Membership: casty.MembershipConfig{MaxClientRecords: -1}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Max") {
			t.Fatalf("table bounds %d / %d accepted: %v", c.Membership.MaxTableSize, c.Membership.MaxClientRecords, err)
		}
	}
	if err := (casty.Config{Membership: casty.MembershipConfig{MaxTableSize: 100, MaxClientRecords: 100}}).Validate(); err != nil {
		t.Fatalf("lite clients may share the whole table: %v", err)
	}
	if table, clients := casty.GossipTableBounds(casty.Config{Membership: casty.MembershipConfig{MaxTableSize: 200, MaxClientRecords: 50}}); table != 200 || clients != 50 {
		t.Fatalf("the membership protocol gets table %d, clients %d; want 200, 50", table, clients)
	}
	if table, clients := casty.GossipTableBounds(casty.DefaultConfig()); table != 4096 || clients != 0 {
		t.Fatalf("defaults reach the membership protocol as table %d, clients %d; want 4096 and 0 (a quarter)", table, clients)
	}
	mustPanic(t, "IdleTimeout must not be negative", func() {
		casty.Local(casty.WithConfig(casty.Config{Actors: casty.ActorConfig{IdleTimeout: -5}}))
	})
}

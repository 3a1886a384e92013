package casty_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/vmihailenco/msgpack/v5"
)

// Order is inspected; its Probe field counts how often the state is encoded.
type Order struct {
	Lines int
	Probe encodeCounter
}

var encodes atomic.Int64

// encodeCounter counts its encodings: change detection encodes the state,
// so a count that stays put proves no event was built.
type encodeCounter struct{}

func (encodeCounter) MarshalMsgpack() ([]byte, error) {
	encodes.Add(1)
	return msgpack.Marshal(nil)
}

func (*encodeCounter) UnmarshalMsgpack([]byte) error { return nil }

func (o *Order) Add(ctx context.Context, n int) (int, error) { o.Lines += n; return o.Lines, nil }
func (o *Order) Peek(ctx context.Context) (int, error)       { return o.Lines, nil }
func (o *Order) Fail(ctx context.Context) error              { return errors.New("no") }
func (o *Order) Bye(ctx context.Context) error               { casty.Self(ctx).Deactivate(); return nil }

var Orders = casty.Actor[Order](casty.Name("shop.Order"), casty.Supervise(func(kind, key string, err error, f casty.Failure) casty.Directive {
	if f.Failures >= 2 {
		return casty.Reset
	}
	return casty.Keep
}))

type recorder struct {
	mu  sync.Mutex
	evs []casty.Event
}

func (r *recorder) add(ev casty.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []casty.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]casty.Event(nil), r.evs...)
}

func describe(ev casty.Event) string {
	switch e := ev.(type) {
	case casty.Activated:
		return "activated"
	case casty.Received:
		return fmt.Sprintf("received %s %v", e.Method, e.Arg)
	case casty.Completed:
		return fmt.Sprintf("completed %s changed=%v %v", e.Method, e.Changed, e.Result)
	case casty.Failed:
		return fmt.Sprintf("failed %s %v %s", e.Method, e.Err, e.Directive)
	case casty.Deactivated:
		return "deactivated " + e.Reason.String()
	case casty.Lag:
		return fmt.Sprintf("lag %d", e.Dropped)
	}
	return fmt.Sprintf("%T", ev)
}

func TestInterceptorSeesLifecycleInOrder(t *testing.T) {
	rec := &recorder{}
	sys := newSys(t, casty.WithInterceptor(rec.add))
	ctx := context.Background()
	ref := Orders.Ref(sys, "order-1")
	casty.Call(ctx, ref, (*Order).Add, 2)
	casty.Call0(ctx, ref, (*Order).Peek)
	casty.Do0(ctx, ref, (*Order).Fail)
	casty.Do0(ctx, ref, (*Order).Fail) // second strike: Reset
	waitFor(t, 5*time.Second, "reset", func() bool { return len(rec.snapshot()) >= 10 })
	casty.Call(ctx, ref, (*Order).Add, 1) // a fresh activation
	casty.Do0(ctx, ref, (*Order).Bye)
	waitFor(t, 5*time.Second, "deactivation", func() bool { return sys.Active() == 0 })

	want := []string{
		"activated",
		"received Add <nil>", "completed Add changed=true <nil>", // no payloads for interceptors
		"received Peek <nil>", "completed Peek changed=false <nil>",
		"received Fail <nil>", "failed Fail no keep",
		"received Fail <nil>", "failed Fail no reset",
		"deactivated reset",
		"activated",
		"received Add <nil>", "completed Add changed=true <nil>",
		"received Bye <nil>", "completed Bye changed=false <nil>",
		"deactivated deactivate",
	}
	evs := rec.snapshot()
	if len(evs) != len(want) {
		for _, e := range evs {
			t.Log(describe(e))
		}
		t.Fatalf("%d events, want %d", len(evs), len(want))
	}
	var seq uint64
	for i, ev := range evs {
		if got := describe(ev); got != want[i] {
			t.Fatalf("event %d: %q, want %q", i, got, want[i])
		}
		info := ev.Info()
		if info.Kind != "shop.Order" || info.Key != "order-1" || info.Node != "" {
			t.Fatalf("event %d info %+v", i, info)
		}
		if _, ok := ev.(casty.Activated); ok {
			seq = 0 // a new activation numbers from 1 again
		}
		seq++
		if info.Seq != seq {
			t.Fatalf("event %d has seq %d, want %d (contiguous per activation)", i, info.Seq, seq)
		}
	}
}

// An interceptor's events carry no payloads, even while a spy that asks for
// them is armed on the same actor.
func TestInterceptorNeverSeesPayloads(t *testing.T) {
	rec := &recorder{}
	sys := newSys(t, casty.WithInterceptor(rec.add))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := sys.Spy(ctx, casty.SpyFilter{Kind: Orders.Name(), Payloads: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := casty.Call(ctx, Orders.Ref(sys, "payloads"), (*Order).Add, 7); err != nil {
		t.Fatal(err)
	}
	var spied []string
	for ev := range events {
		spied = append(spied, describe(ev))
		if _, ok := ev.(casty.Completed); ok {
			break
		}
	}
	if want := []string{"activated", "received Add 7", "completed Add changed=true 7"}; !slices.Equal(spied, want) {
		t.Fatalf("spy with payloads saw %q, want %q", spied, want)
	}
	var seen []string
	for _, ev := range rec.snapshot() {
		seen = append(seen, describe(ev))
	}
	if want := []string{"activated", "received Add <nil>", "completed Add changed=true <nil>"}; !slices.Equal(seen, want) {
		t.Fatalf("interceptor saw %q, want %q", seen, want)
	}
}

func TestInterceptorPanicIsLoggedNotFatal(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	sys := newSys(t, casty.WithLogger(logger), casty.WithInterceptor(func(casty.Event) { panic("metrics bug") }))
	n, err := casty.Call(context.Background(), Orders.Ref(sys, "p"), (*Order).Add, 3)
	if err != nil || n != 3 {
		t.Fatalf("handler failed because of the interceptor: %d %v", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(logs.Bytes(), []byte("interceptor panicked")) {
		t.Fatalf("no log line: %s", logs.String())
	}
}

func TestNothingBuiltWhenUnarmed(t *testing.T) {
	sys := newSys(t)
	ctx := context.Background()
	before := encodes.Load()
	for range 100 {
		casty.Call(ctx, Orders.Ref(sys, "quiet"), (*Order).Add, 1)
	}
	if n := encodes.Load() - before; n != 0 {
		t.Fatalf("the state was encoded %d times with nothing armed", n)
	}
	// Armed, change detection encodes it (twice per call).
	ctx2, cancel := context.WithCancel(ctx)
	if _, err := sys.Spy(ctx2, casty.SpyFilter{}); err != nil {
		t.Fatal(err)
	}
	casty.Call(ctx, Orders.Ref(sys, "quiet"), (*Order).Add, 1)
	if encodes.Load() == before {
		t.Fatal("an armed spy built no event")
	}
	cancel()
	waitFor(t, 5*time.Second, "the spy to disarm", func() bool {
		b := encodes.Load()
		casty.Call(ctx, Orders.Ref(sys, "quiet"), (*Order).Add, 1)
		return encodes.Load() == b
	})
}

func TestSpyFiltersAndPayloads(t *testing.T) {
	sys := newSys(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := sys.Spy(ctx, casty.SpyFilter{Kind: "shop.*", Key: "order-4*", Payloads: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := sys.Spy(ctx, casty.SpyFilter{Key: "order-42"})
	if err != nil {
		t.Fatal(err)
	}
	casty.Call(context.Background(), Orders.Ref(sys, "order-42"), (*Order).Add, 7)
	casty.Call(context.Background(), Orders.Ref(sys, "order-51"), (*Order).Add, 1) // filtered out
	casty.Call(context.Background(), Greeters.Ref(sys, "order-42"), (*Greeter).Greet, "x")
	var got []string
	for ev := range events {
		if ev.Info().Key != "order-42" || ev.Info().Kind != "shop.Order" {
			t.Fatalf("filter let through %+v", ev.Info())
		}
		got = append(got, describe(ev))
		if len(got) == 3 {
			break
		}
	}
	if got[1] != "received Add 7" || got[2] != "completed Add changed=true 7" {
		t.Fatalf("with payloads: %v", got)
	}
	var kinds []string
	for ev := range plain {
		kinds = append(kinds, ev.Info().Kind)
		if r, ok := ev.(casty.Received); ok && r.Arg != nil {
			t.Fatalf("payload leaked to a spy without Payloads: %v", r.Arg)
		}
		if len(kinds) == 6 {
			break
		}
	}
	if kinds[0] != "shop.Order" || kinds[3] != "test.Greeter" {
		t.Fatalf("kinds %v", kinds)
	}
	if _, err := sys.Spy(ctx, casty.SpyFilter{Kind: "[bad"}); err == nil {
		t.Fatal("a malformed glob was accepted")
	}
}

func TestSpyLagAccountsForEveryDrop(t *testing.T) {
	sys := newSys(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := sys.Spy(ctx, casty.SpyFilter{Key: "lag"})
	if err != nil {
		t.Fatal(err)
	}
	// Nobody consumes while 3,000 calls make 3 events each (+1 activation).
	const calls = 3000
	for range calls {
		casty.Call0(context.Background(), Orders.Ref(sys, "lag"), (*Order).Peek)
	}
	total := 1 + 2*calls
	seen, dropped := 0, 0
	var firstSeq, lastSeq uint64
	for ev := range events {
		if l, ok := ev.(casty.Lag); ok {
			dropped += l.Dropped
			continue
		}
		seen++
		if seen == 1 {
			firstSeq = ev.Info().Seq
		}
		if s := ev.Info().Seq; s <= lastSeq {
			t.Fatalf("seq went back: %d after %d", s, lastSeq)
		}
		lastSeq = ev.Info().Seq
		if seen+dropped == total {
			break
		}
	}
	if dropped == 0 || seen+dropped != total || dropped != total-1024 {
		t.Fatalf("seen %d + dropped %d != %d emitted (buffer 1024)", seen, dropped, total)
	}
	// The oldest were dropped: what is left is the newest 1024, in order.
	if firstSeq != uint64(total-1023) || lastSeq != uint64(total) {
		t.Fatalf("kept seqs %d..%d, want the newest %d..%d", firstSeq, lastSeq, total-1023, total)
	}
}

func TestStateOf(t *testing.T) {
	sys := newSys(t)
	ctx := context.Background()
	if _, ok, err := Orders.StateOf(ctx, sys, "nobody"); ok || err != nil {
		t.Fatalf("inactive key: ok %v err %v", ok, err)
	}
	casty.Call(ctx, Orders.Ref(sys, "live"), (*Order).Add, 5)
	st, ok, err := Orders.StateOf(ctx, sys, "live")
	if !ok || err != nil || st.Lines != 5 {
		t.Fatalf("live state %+v ok %v err %v", st, ok, err)
	}
	st.Lines = 99 // a copy: the actor is unaffected
	if n, _ := casty.Call0(ctx, Orders.Ref(sys, "live"), (*Order).Peek); n != 5 {
		t.Fatalf("StateOf handed out the live state: %d", n)
	}
	// While a stream holds its actor, StateOf waits for the handler only,
	// bounded by ctx.
	ref := Logs.Ref(sys, "state")
	casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(5*casty.StreamBuffer)))
	next, stop := iterPull(casty.Stream(ctx, ref, (*Log).Tail, 0))
	next()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, _, err := Logs.StateOf(sctx, sys, "state"); !errors.Is(err, casty.ErrTimeout) {
		t.Fatalf("StateOf during a stream: %v", err)
	}
	stop()
	if l, ok, err := Logs.StateOf(ctx, sys, "state"); !ok || err != nil || len(l.Entries) != 5*casty.StreamBuffer {
		t.Fatalf("after the stream: %d entries ok %v err %v", len(l.Entries), ok, err)
	}
}

func TestDeactivatedReasons(t *testing.T) {
	rec := &recorder{}
	sys := casty.Local(casty.WithInterceptor(rec.add))
	ctx := context.Background()
	casty.Call0(ctx, Lives.Ref(sys, "idle-reason"), (*Life).Visit) // 40 ms idle timeout
	casty.Call0(ctx, Stoppers.Ref(sys, "stop-reason"), (*Stopper).Inc)
	casty.Do0(ctx, Stoppers.Ref(sys, "stop-reason"), (*Stopper).Fail) // Stop
	casty.Call(ctx, Orders.Ref(sys, "drain-reason"), (*Order).Add, 1)
	reasons := func() map[string]string {
		out := map[string]string{}
		for _, ev := range rec.snapshot() {
			if d, ok := ev.(casty.Deactivated); ok {
				out[d.Key] = d.Reason.String()
			}
		}
		return out
	}
	waitFor(t, 5*time.Second, "idle and stop", func() bool { return len(reasons()) == 2 })
	if err := sys.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := reasons()
	want := map[string]string{"idle-reason": "idle", "stop-reason": "stop", "drain-reason": "drain"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: reason %q, want %q", k, got[k], v)
		}
	}
	drainEvents()
}

func TestUnmatchedSpyCostsOtherActorsNothing(t *testing.T) {
	sys := newSys(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := sys.Spy(ctx, casty.SpyFilter{Kind: "nomatch.*"}); err != nil {
		t.Fatal(err)
	}
	before := encodes.Load()
	for range 50 {
		casty.Call(context.Background(), Orders.Ref(sys, "unwatched"), (*Order).Add, 1)
	}
	if n := encodes.Load() - before; n != 0 {
		t.Fatalf("a spy matching no kind made this one encode its state %d times", n)
	}
}

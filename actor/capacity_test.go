package actor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/wire"
)

// closeAtCleanup closes h when the test ends, failing it if the drain
// does not end within 5 s.
func closeAtCleanup(t *testing.T, h *Host) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
	})
}

// capacityHost returns a host holding at most max activations of a
// counter kind, and the keys deactivated on it, in order, with why.
func capacityHost(t *testing.T, max int) (*Kind, *Host, func() []string) {
	t.Helper()
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.capacity"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var gone []string
	h, err := NewHost(Config{MaxActivations: max, Interceptor: func(ev Event) {
		if d, ok := ev.(Deactivated); ok {
			mu.Lock()
			gone = append(gone, d.Key+":"+d.Reason.String())
			mu.Unlock()
		}
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, h)
	return k, h, func() []string {
		mu.Lock()
		defer mu.Unlock()
		g := gone
		gone = nil
		return g
	}
}

// addAsync calls Add on key from a goroutine of its own; the channel gets
// its error, or one saying the count it answered was not want.
func addAsync(h *Host, k *Kind, key string, want int) <-chan error {
	done := make(chan error, 1)
	go func() {
		n, err := askAdd(h, k, key)
		if err == nil && n != want {
			err = fmt.Errorf("%s answered %d, want %d", key, n, want)
		}
		done <- err
	}()
	return done
}

func addOne(t *testing.T, h *Host, k *Kind, key string) (int, error) {
	t.Helper()
	return askAdd(h, k, key)
}

// askAdd adds one to key's counter and returns its count.
func askAdd(h *Host, k *Kind, key string) (int, error) {
	e := &cAdd{d: 1}
	e.Init(e, k.MethodByName("Add"))
	err := h.Ask(context.Background(), k, key, &e.Envelope)
	return e.r, err
}

// waitIdle waits until (k, key)'s mailbox goroutine is gone.
func waitIdle(t *testing.T, h *Host, k *Kind, key string) {
	t.Helper()
	sh := h.shardFor(key)
	sh.mu.RLock()
	a := sh.m[actID{k, key}]
	sh.mu.RUnlock()
	waitFor(t, 5*time.Second, key+" idle", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.evictable()
	})
}

// A full host makes room for a new activation by deactivating its least
// recently used idle one, as an idle timeout would (ReasonIdle), and
// never holds more than its limit.
func TestCapacityEvictsTheLeastRecentlyUsedIdle(t *testing.T) {
	k, h, gone := capacityHost(t, 3)
	for _, key := range []string{"a", "b", "c", "a"} { // b is the oldest now
		if _, err := addOne(t, h, k, key); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, h, k, key)
	}
	if _, err := addOne(t, h, k, "d"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a deactivation", func() bool { return h.Len() == 3 })
	if g := gone(); !slices.Equal(g, []string{"b:idle"}) {
		t.Fatalf("deactivated %v, want [b:idle]", g)
	}
	if n, err := addOne(t, h, k, "a"); err != nil || n != 3 {
		t.Fatalf("a kept its state: %d, %v", n, err)
	}
	waitIdle(t, h, k, "a")
	waitIdle(t, h, k, "d")
	if n, err := addOne(t, h, k, "b"); err != nil || n != 1 {
		t.Fatalf("b starts from zero: %d, %v", n, err)
	}
	if g := gone(); !slices.Equal(g, []string{"c:idle"}) {
		t.Fatalf("then deactivated %v, want [c:idle]", g)
	}
	if h.Len() != 3 {
		t.Fatalf("%d activations, limit 3", h.Len())
	}
}

// With every activation busy a new one is refused at once with
// ErrOverloaded; callers of existing activations are unaffected.
func TestCapacityOverloadedWhenNoneIsIdle(t *testing.T) {
	k, h, _ := capacityHost(t, 1)
	ch, started := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		e := &cWait{release: ch, started: started}
		e.Init(e, k.MethodByName("Add"))
		blocked <- h.Ask(context.Background(), k, "busy", &e.Envelope)
	}()
	<-started
	if _, err := addOne(t, h, k, "new"); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("a new key while full and busy: %v", err)
	}
	close(ch)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	waitIdle(t, h, k, "busy")
	if n, err := addOne(t, h, k, "new"); err != nil || n != 1 {
		t.Fatalf("once idle: %d, %v", n, err)
	}
}

// Callers racing for slots each make room and get their activation while
// idle ones remain (8 callers hold at most 16 activations busy, their
// current one and the one whose mailbox goroutine is finishing), and the
// host never holds more than its limit.
func TestCapacityConcurrentCallersAllSucceed(t *testing.T) {
	k, h, _ := capacityHost(t, 32)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			for j := range 500 {
				if _, err := addOne(t, h, k, fmt.Sprint(i, "-", j)); err != nil {
					errs <- err
					return
				}
				if n := h.Len(); n > 32 {
					errs <- errors.New("over the limit")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// slowBye's Deactivate hook waits for byeGate.
type slowBye struct{ N int }

var byeGate = make(chan chan struct{}, 1)

func (s *slowBye) Add(ctx context.Context, d int) (int, error) { s.N += d; return s.N, nil }

func (s *slowBye) Deactivate(ctx context.Context) error {
	select {
	case gate := <-byeGate:
		<-gate
	default:
	}
	return nil
}

type byeAdd struct{ Envelope }

func (e *byeAdd) Invoke(ctx context.Context, state any) error {
	_, err := state.(*slowBye).Add(ctx, 1)
	return err
}

// A caller making room waits while the activation it deactivates runs
// its Deactivate hook, and fails with ErrActorUnavailable as soon as the
// host closes, without waiting for the hook.
func TestCapacityWaitsForTheEvictionAndCloseWakes(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[slowBye](), KindOptions{Name: "test.slowBye"}, wire.NewRegistry(), func() any { return new(slowBye) })
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(Config{MaxActivations: 1, DrainTimeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(key string) error {
		e := &byeAdd{}
		e.Init(e, k.MethodByName("Add"))
		return h.Ask(context.Background(), k, key, &e.Envelope)
	}
	if err := call("old"); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, h, k, "old")
	gate := make(chan struct{})
	byeGate <- gate
	waiting := make(chan error, 1)
	go func() { waiting <- call("new") }()
	waitFor(t, 5*time.Second, "a caller waiting for a slot", func() bool { return h.room.waiting.Load() == 1 })
	select {
	case err := <-waiting:
		t.Fatalf("returned while old's Deactivate hook runs: %v", err)
	default:
	}
	closed := make(chan error, 1)
	go func() { closed <- h.Close(context.Background()) }()
	if err := <-waiting; !errors.Is(err, ErrActorUnavailable) {
		t.Fatalf("the waiting caller after Close: %v", err)
	}
	close(gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// gatedCommits is a Durability whose commits wait, while held, until
// released: an activation whose handler returned and whose commit still
// runs, as casty's is after the caller's member answered its call early.
type gatedCommits struct {
	held    atomic.Bool
	entered chan string   // the key of a commit that waits
	release chan struct{} // closed: held commits go on
}

func (g *gatedCommits) Restore(context.Context, *Activation) (Session, error) {
	return &gatedSession{g: g}, nil
}

type gatedSession struct{ g *gatedCommits }

func (s *gatedSession) Commit(ctx context.Context, _ bool) error {
	if s.g.held.Load() {
		s.g.entered <- FromContext(ctx).Key()
		<-s.g.release
	}
	return nil
}

func (s *gatedSession) Release() {}

// A call that needs an activation while the only one is settling — its
// handler returned, its commit still runs — waits for that commit and
// then evicts the activation, instead of failing with ErrOverloaded as it
// does when every activation runs a handler
// (TestMaxActivationsOverloadedWhenAllBusy).
func TestMaxActivationsWaitsForASettlingActivation(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.settling"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedCommits{entered: make(chan string, 1), release: make(chan struct{})}
	h, err := NewHost(Config{MaxActivations: 1, Durability: g}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, h)
	var once sync.Once
	releaseAll := func() { once.Do(func() { g.held.Store(false); close(g.release) }) }
	t.Cleanup(releaseAll) // before Close, which waits for a's commit
	if n, err := addOne(t, h, k, "a"); err != nil || n != 1 {
		t.Fatalf("a: %d, %v", n, err)
	}
	g.held.Store(true)
	first := addAsync(h, k, "a", 2)
	if key := <-g.entered; key != "a" {
		t.Fatalf("commit of %q held, want a", key)
	}
	second := addAsync(h, k, "b", 1)
	// Observation window: b must wait for a's commit, not be refused.
	select {
	case err := <-second:
		t.Fatalf("b, while a's commit runs: %v; want it to wait", err)
	case <-time.After(100 * time.Millisecond):
	}
	releaseAll()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("b once a settled: %v", err)
	}
	if n := h.Len(); n != 1 {
		t.Fatalf("%d active, want 1", n)
	}
}

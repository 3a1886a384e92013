package actor

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/wait"
	"github.com/casty-go/casty/wire"
)

type cHeld struct {
	Envelope
	release chan struct{}
}

func (e *cHeld) Invoke(ctx context.Context, state any) error { <-e.release; return nil }

// Lifecycle hears every activation start and end, with the reason, and
// Queued counts the messages waiting behind a running one.
func TestLifecycleHookAndQueued(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.lifecycle"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var heard []string
	h, err := NewHost(Config{Lifecycle: func(kk *Kind, started bool, r Reason) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, kk.Name+" "+map[bool]string{true: "started", false: "ended"}[started]+" "+r.String())
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := k.MethodByName("Add")
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := &cHeld{release: release}
			e.Init(e, add)
			if err := h.Ask(context.Background(), k, "x", &e.Envelope); err != nil {
				t.Error(err)
			}
		}()
	}
	wait.For(t, 5*time.Second, "two messages queued behind the running one", func() bool { return h.Queued() == 2 })
	close(release)
	wg.Wait()
	if n := h.Queued(); n != 0 {
		t.Fatalf("%d queued after the calls returned", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"test.lifecycle started none", "test.lifecycle ended drain"}; !reflect.DeepEqual(heard, want) {
		t.Fatalf("heard %q, want %q", heard, want)
	}
}

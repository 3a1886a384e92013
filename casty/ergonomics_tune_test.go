package casty_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Lingerer idles out after an hour, as declared.
type Lingerer struct{ N int }

func (l *Lingerer) Touch(context.Context) (int, error) { l.N++; return l.N, nil }

var Lingerers = casty.Actor[Lingerer](casty.Name("test.Lingerer"), casty.IdleTimeout(time.Hour))

// Tune sets a kind's idle timeout on one system, from what an operator
// configured; another system in the process keeps the declared one.
func TestTuneIdleTimeoutOnOneSystemOnly(t *testing.T) {
	ctx := context.Background()
	tuned := newSys(t, casty.Tune(Lingerers, casty.IdleTimeout(50*time.Millisecond)))
	declared := newSys(t)
	for _, s := range []*casty.System{tuned, declared} {
		if _, err := casty.Call0(ctx, Lingerers.Ref(s, "a"), (*Lingerer).Touch); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the tuned system to idle the activation out", func() bool { return tuned.Active() == 0 })
	if declared.Active() != 1 {
		t.Fatalf("the untuned system idled out an activation declared to live an hour: %d active", declared.Active())
	}
}

// Options every member must agree on, or that would change what a kind
// is, are refused with an error naming them.
func TestTuneRefusesWhatIsNotPerSystem(t *testing.T) {
	cases := []struct {
		name string
		opt  casty.Option
		want string
	}{
		{"replicas", casty.Tune(Lingerers, casty.Replicas(3)), "Replicas is not tunable"},
		{"name", casty.Tune(Lingerers, casty.Name("x")), "Name is not tunable"},
		{"quorum", casty.Tune(ReplicatedTenants, casty.Write(casty.All)), "Write is not tunable"},
		{"negative", casty.Tune(Lingerers, casty.IdleTimeout(-time.Second)), "must be positive"},
		{"durable", casty.Tune(Sentinels, casty.IdleTimeout(time.Minute)), "durable kind"},
		{"forever on replicated", casty.Tune(ReplicatedTenants, casty.IdleTimeout(casty.Forever)), "durable on this member only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			sys, err := casty.Start(ctx, "127.0.0.1:0", c.opt, quiet())
			if err == nil {
				closeSys(t, sys)
				t.Fatalf("Start accepted %s", c.name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start: %v, want it to say %q", err, c.want)
			}
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
						t.Fatalf("Local: %v, want a panic saying %q", r, c.want)
					}
				}()
				casty.Local(c.opt, quiet()).Close(context.Background())
			}()
		})
	}
	// Forever on a kind that is not replicated is this system's business.
	newSys(t, casty.Tune(Lingerers, casty.IdleTimeout(casty.Forever)))
}

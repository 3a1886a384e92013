// Lifecycle: transient state rebuilt by the Activate hook, idle
// deactivation at a short timeout, explicit deactivation from inside a
// handler, and the hooks' output along the way.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/casty-go/casty/casty"
)

// Session's exported field is state; its unexported cache is transient:
// it starts empty on every activation and Activate rebuilds it.
type Session struct {
	Visits int
	cache  map[string]string
}

// deactivated lets main wait for a deactivation instead of guessing.
var deactivated = make(chan string, 4)

// Activate runs on every activation, before the first message.
func (s *Session) Activate(ctx context.Context) error {
	key := casty.Self(ctx).Key()
	s.cache = map[string]string{"greeting": "welcome back, " + strings.ToUpper(key)}
	fmt.Printf("  [hook] activate %s: cache warmed\n", key)
	return nil
}

// Deactivate runs on idle timeout, explicit deactivation or shutdown.
func (s *Session) Deactivate(ctx context.Context) error {
	key := casty.Self(ctx).Key()
	fmt.Printf("  [hook] deactivate %s after %d visit(s)\n", key, s.Visits)
	deactivated <- key
	return nil
}

// Visit counts a visit and answers from the transient cache.
func (s *Session) Visit(ctx context.Context) (string, error) {
	s.Visits++
	return fmt.Sprintf("%s (visit #%d)", s.cache["greeting"], s.Visits), nil
}

// Logout deactivates the session once this message is done.
func (s *Session) Logout(ctx context.Context) error {
	casty.Self(ctx).Deactivate()
	return nil
}

// Sessions idle out after 200 ms without a message.
var Sessions = casty.Actor[Session](casty.IdleTimeout(200 * time.Millisecond))

func main() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)

	alice := Sessions.Ref(sys, "alice")
	fmt.Println("1. two visits, one activation:")
	for range 2 {
		msg, err := casty.Call0(ctx, alice, (*Session).Visit)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("  ", msg)
	}

	fmt.Println("2. idle for longer than the 200 ms idle timeout:")
	start := time.Now()
	<-deactivated
	fmt.Printf("   deactivated after ~%d00 ms idle\n", time.Since(start).Milliseconds()/100)
	msg, _ := casty.Call0(ctx, alice, (*Session).Visit)
	fmt.Println("  ", msg, "- local state starts over: nothing replicates it")

	fmt.Println("3. explicit deactivation from a handler:")
	if err := casty.Do0(ctx, alice, (*Session).Logout); err != nil {
		log.Fatal(err)
	}
	fmt.Println("   logged out:", <-deactivated)
}

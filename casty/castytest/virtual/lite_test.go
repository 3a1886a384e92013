package virtual_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// Cluster.Lite may start the lite member while another goroutine of the
// bubble uses the cluster: it does not hold the cluster's lock while it
// waits (a goroutine blocked on a mutex would stop the virtual clock, and
// with it the wait).
func TestLiteStartsWhileAnotherGoroutineUsesTheCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := castytest.NewCluster(t, 3, castytest.Seed(1))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				_ = c.N()
				time.Sleep(time.Millisecond)
			}
		}()
		lite := c.Lite()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := casty.Do(ctx, MajorityRegs.Ref(lite, "k"), (*Reg).Set, 1); err != nil {
			t.Fatalf("a write through the lite member: %v", err)
		}
	})
}

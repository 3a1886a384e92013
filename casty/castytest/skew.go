package castytest

import (
	"time"

	"github.com/casty-go/casty/casty"
)

// SkewedClock returns a casty.Option that skews the member it starts:
// its replication clock (casty.WithClock: its HLC's physical clock)
// reads the wall clock plus d, which may be negative. It is Cluster.Skew
// for a member started with casty.Start over real TCP, outside a Cluster:
// a member process of a chaos run (cmd/castychaos) passes it to run with
// a wrong clock. Timers and timeouts keep the real clock.
//
// Members refuse replication requests stamped further ahead of their own
// clock than Config.Replication.MaxClockDrift (default 500 ms): a skew within it is
// tolerated (the HLC orders the member's stamps after every stamp it has
// seen), one beyond it keeps the member from replicating. A test that
// means a large tolerated skew raises MaxClockDrift with it. It is a testing aid: give it to no production member. Members of
// a Cluster take their skew from Cluster.Skew; this option is overridden
// there.
func SkewedClock(d time.Duration) casty.Option {
	return casty.WithClock(func() time.Time { return time.Now().Add(d) })
}

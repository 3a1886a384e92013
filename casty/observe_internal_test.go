package casty

import (
	"testing"
	"time"

	"github.com/casty-go/casty/hlc"
	"github.com/casty-go/casty/pager"
	"github.com/casty-go/casty/replica"
)

// A received message's stamps reach the clock at one reading of the
// physical clock (the greatest of them stands for all), and a stamp the
// clock refuses for being too far ahead does not keep the others from
// counting.
func TestObserveReadsTheClockOncePerMessage(t *testing.T) {
	readings := 0
	clock, err := hlc.New(hlc.Config{Node: [16]byte{1}, MaxDrift: time.Second,
		Physical: func() int64 { readings++; return 1_000_000 }})
	if err != nil {
		t.Fatal(err)
	}
	r := &replicator{clock: clock}
	at := func(wall int64) hlc.Timestamp { return hlc.Timestamp{Wall: wall, Node: [16]byte{2}} }
	m := &replica.Msg{Op: replica.OpAck, Ballot: at(1_000_100), Promised: at(1_000_300), Accepted: at(1_000_200),
		Stamp: pager.Stamp(at(1_000_250))}
	r.observe(m)
	if readings != 1 {
		t.Fatalf("an ack with four stamps read the physical clock %d times, want 1", readings)
	}
	if now := clock.Now(); !m.Promised.Less(now) {
		t.Fatalf("the next stamp %v is not above the greatest received %v", now, m.Promised)
	}

	// A commit whose delta's stamp is an hour ahead: the clock refuses
	// it, and the ballot still counts.
	m = &replica.Msg{Op: replica.OpCommit, Ballot: at(1_000_900), Delta: &pager.Delta{Stamp: pager.Stamp(at(1_000_000 + 3_600_000))}}
	r.observe(m)
	if now := clock.Now(); !m.Ballot.Less(now) || !now.Less(hlc.Timestamp(m.Delta.Stamp)) {
		t.Fatalf("after a message with a stamp beyond MaxDrift the clock is at %v, want above its ballot %v and below the refused stamp", now, m.Ballot)
	}
}

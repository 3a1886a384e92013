package mux

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// A node's Traffic counts what its sessions read and wrote: a 10 KiB
// request and its echo move at least that much each way, on both ends.
func TestTrafficCountsSessionBytes(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		a, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, echo)
		})
		before := a.Traffic()
		payload := make([]byte, 10<<10) // random: compression must not shrink it
		rand.NewChaCha8([32]byte{1}).Read(payload)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := sa.Request(ctx, LaneMessage, payload); err != nil {
			t.Fatal(err)
		}
		after := a.Traffic()
		if out, in := after.BytesOut-before.BytesOut, after.BytesIn-before.BytesIn; out < 10<<10 || in < 10<<10 {
			t.Fatalf("dialler: %d bytes out, %d in for a 10 KiB echo", out, in)
		}
		waitFor(t, 5*time.Second, "the listener's counters", func() bool {
			tb := b.Traffic()
			return tb.BytesIn >= 10<<10 && tb.BytesOut >= 10<<10
		})
	})
}

// A node's Traffic counts the records its sessions read and wrote: each
// of n sequential requests leaves in a record of its own and its answer
// comes back in one, so both ends count at least n each way.
func TestTrafficCountsRecords(t *testing.T) {
	const n = 20
	forEachConn(t, func(t *testing.T, ct connType) {
		a, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, echo)
		})
		before, beforeB := a.Traffic(), b.Traffic()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for range n {
			if _, err := sa.Request(ctx, LaneMessage, []byte("ping")); err != nil {
				t.Fatal(err)
			}
		}
		after := a.Traffic()
		if out, in := after.RecordsOut-before.RecordsOut, after.RecordsIn-before.RecordsIn; out < n || in < n {
			t.Fatalf("dialler: %d records out, %d in for %d requests", out, in, n)
		}
		if after.RecordsOut*recordHeaderSize > after.BytesOut || after.RecordsIn*recordHeaderSize > after.BytesIn {
			t.Fatalf("more records than bytes allow: %+v", after)
		}
		waitFor(t, 5*time.Second, "the listener's counters", func() bool {
			tb := b.Traffic()
			return tb.RecordsIn-beforeB.RecordsIn >= n && tb.RecordsOut-beforeB.RecordsOut >= n
		})
	})
}

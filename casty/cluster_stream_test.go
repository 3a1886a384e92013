package casty_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Pump streams big elements and counts what it produced.
type Pump struct{ Sent int }

var pumped atomic.Int64
var pumpStopped atomic.Bool

func (p *Pump) Big(ctx context.Context, n int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		chunk := strings.Repeat("x", 16<<10)
		for i := range n {
			pumped.Add(1)
			if !yield(chunk+strconv.Itoa(i), nil) {
				pumpStopped.Store(true)
				return
			}
		}
	}
}

var Pumps = casty.Actor[Pump](casty.Name("test.Pump"))

func TestClusterStreamsIntactInOrder(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Logs.Name())
	ref := Logs.Ref(nodes[0], key)
	want := lines(2000)
	n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(want))
	if err != nil || n != 2000 {
		t.Fatalf("remote upload: %d %v", n, err)
	}
	if nodes[0].Active() != 0 || nodes[1].Active() != 1 {
		t.Fatalf("the log ran locally: %d / %d active", nodes[0].Active(), nodes[1].Active())
	}
	var got []string
	for e, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("remote download: %d elements, not intact", len(got))
	}
	i := 0
	for l, err := range casty.Duplex(ctx, ref, (*Log).Lengths, slices.Values(want)) {
		if err != nil {
			t.Fatal(err)
		}
		if l != len(want[i]) {
			t.Fatalf("duplex element %d: %d", i, l)
		}
		i++
	}
	if i != 2000 {
		t.Fatalf("duplex: %d results", i)
	}
	var final error
	var firsts []int
	for v, err := range casty.Stream(ctx, Logs.Ref(nodes[0], key), (*Log).Broken, 0) {
		if err != nil {
			final = err
			break
		}
		firsts = append(firsts, v)
	}
	if !slices.Equal(firsts, []int{0, 1, 2}) || final == nil || final.Error() != "disk on fire" {
		t.Fatalf("remote in-band error: %v then %v", firsts, final)
	}
}

func TestClusterStreamBackpressureAndBreak(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Pumps.Name())
	pumped.Store(0)
	pumpStopped.Store(false)
	consumed := int64(0)
	maxAhead := int64(0)
	for _, err := range casty.Stream(ctx, Pumps.Ref(nodes[0], key), (*Pump).Big, 1000) {
		if err != nil {
			t.Fatal(err)
		}
		consumed++
		time.Sleep(time.Millisecond) // a paced consumer
		if ahead := pumped.Load() - consumed; ahead > maxAhead {
			maxAhead = ahead
		}
		if consumed == 100 {
			break
		}
	}
	// 16 KiB elements through a 256 KiB window: the producer can be only
	// a window (plus what sits in buffers) ahead, never the whole 1000.
	if maxAhead > 64 {
		t.Fatalf("the remote producer ran %d elements ahead of a paced consumer", maxAhead)
	}
	waitFor(t, 5*time.Second, "the remote handler to see its consumer leave", pumpStopped.Load)
	if p := pumped.Load(); p >= 1000 {
		t.Fatalf("the producer ran to the end (%d) after the consumer left", p)
	}
}

func TestClusterOwnerDeathMidStream(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 3)
	ctx := context.Background()
	victim := nodes[2]
	key := keyOn(t, victim, nodes[0], Logs.Name())
	casty.Upload(ctx, Logs.Ref(nodes[0], key), (*Log).Ingest, slices.Values(lines(500)))
	n := 0
	var final error
	for _, err := range casty.Stream(ctx, Logs.Ref(nodes[0], key), (*Log).Forever, 0) {
		if err != nil {
			final = err
			break
		}
		n++
		if n == 50 {
			casty.Crash(victim)
		}
	}
	if !errors.Is(final, casty.ErrActorUnavailable) {
		t.Fatalf("after %d elements the owner died; the loop saw %v", n, final)
	}
}

// A stream opened to a member that never sends its status (the member
// died after accepting it, or the connection broke) may have started its
// handler: the error says so as ErrConnectionLost, indeterminate, not only
// as an unavailable actor.
func TestClusterStreamWithNoStatusIsIndeterminate(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	key := keyOn(t, nodes[1], nodes[0], Logs.Name())
	casty.CutStreamsBeforeStatus(nodes[1])
	var final error
	for _, err := range casty.Stream(ctx, Logs.Ref(nodes[0], key), (*Log).Tail, 0) {
		final = err
		break
	}
	if !errors.Is(final, casty.ErrConnectionLost) || !errors.Is(final, casty.ErrActorUnavailable) {
		t.Fatalf("a stream whose status never came: %v; want ErrConnectionLost and ErrActorUnavailable", final)
	}
	_, err := casty.Upload(ctx, Logs.Ref(nodes[0], key), (*Log).Ingest, slices.Values(lines(3)))
	if !errors.Is(err, casty.ErrConnectionLost) {
		t.Fatalf("an upload whose status never came: %v; want ErrConnectionLost", err)
	}
}

// Uploads and duplexes to another node run the caller's input on a
// goroutine of casty's: a panic there comes back as an error.
func TestClusterStreamInputPanicIsAnError(t *testing.T) {
	nodes := startCluster(t, 2)
	ctx := context.Background()
	ref := Logs.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Logs.Name()))
	if _, err := casty.Upload(ctx, ref, (*Log).Ingest, panicky(3)); err == nil || !strings.Contains(err.Error(), "caller bug") {
		t.Fatalf("upload with a panicking input: %v", err)
	}
	var final error
	for _, err := range casty.Duplex(ctx, ref, (*Log).Lengths, panicky(3)) {
		if err != nil {
			final = err
			break
		}
	}
	if final == nil || !strings.Contains(final.Error(), "caller bug") {
		t.Fatalf("duplex with a panicking input: %v", final)
	}
}

// Streaming: a Log actor with the three streaming handler shapes — Ingest
// (client stream: an upload in, a count out), Tail (server stream: entries
// out) and Lengths (duplex: lines in, lengths out) — then a paced consumer
// that shows backpressure (the producer never runs more than the stream's
// buffer, casty.StreamBuffer, plus the element in hand ahead of the
// consumer) and a break that cancels the handler and frees the actor at
// once.
//
// Run it from the repository root:
//
//	go run ./examples/06_streaming
package main

import (
	"context"
	"fmt"
	"iter"
	"log"
	"slices"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
)

// Log is an append-only log. A streaming handler holds the actor for the
// stream's lifetime and commits its state once, at the end.
type Log struct {
	Entries []string
}

// Ingest appends every uploaded line (client stream) and returns how many.
func (l *Log) Ingest(ctx context.Context, lines iter.Seq2[string, error]) (int, error) {
	n := 0
	for line, err := range lines {
		if err != nil {
			return n, err
		}
		l.Entries = append(l.Entries, line)
		n++
	}
	return n, nil
}

// Tail streams the entries from index since on (server stream).
func (l *Log) Tail(ctx context.Context, since int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, e := range l.Entries[min(since, len(l.Entries)):] {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Lengths answers each line it receives with its length (duplex).
func (l *Log) Lengths(ctx context.Context, lines iter.Seq2[string, error]) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for line, err := range lines {
			if err != nil {
				yield(0, err)
				return
			}
			if !yield(len(line), nil) {
				return
			}
		}
	}
}

// produced counts the elements Numbers has handed to the stream.
var produced atomic.Int64

// Numbers streams from, from+1, … until its consumer leaves; then it
// records that it stopped (committed like any handler's state change).
func (l *Log) Numbers(ctx context.Context, from int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := from; ; i++ {
			produced.Add(1)
			if !yield(i, nil) {
				l.Entries = append(l.Entries, "numbers: stopped when the consumer left")
				return
			}
		}
	}
}

// Size returns the number of entries.
func (l *Log) Size(ctx context.Context) (int, error) { return len(l.Entries), nil }

// Logs is declared once, at package level.
var Logs = casty.Actor[Log](casty.Name("demo.Log"))

func main() {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	app := Logs.Ref(sys, "app:1")

	fmt.Println("1. ingest (client stream):")
	lines := []string{"boot", "listening on :8080", "GET /health 200", "shutdown requested"}
	n, err := casty.Upload(ctx, app, (*Log).Ingest, slices.Values(lines))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("   ingested %d lines\n", n)

	fmt.Println("2. tail from entry 1 (server stream):")
	for entry, err := range casty.Stream(ctx, app, (*Log).Tail, 1) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("   tail: %s\n", entry)
	}

	fmt.Println("3. lengths (duplex: lines in, lengths out):")
	i := 0
	for n, err := range casty.Duplex(ctx, app, (*Log).Lengths, slices.Values(lines)) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("   len(%q) = %d\n", lines[i], n)
		i++
	}

	fmt.Println("4. a paced consumer of an endless stream, then break:")
	const take = 5
	maxAhead := int64(0)
	consumed := int64(0)
	for v, err := range casty.Stream(ctx, app, (*Log).Numbers, 0) {
		if err != nil {
			log.Fatal(err)
		}
		consumed++
		time.Sleep(20 * time.Millisecond) // a slow consumer: the demonstration
		maxAhead = max(maxAhead, produced.Load()-consumed)
		fmt.Printf("   got %d\n", v)
		if consumed == take {
			break // cancels the handler on the actor
		}
	}
	fmt.Printf("   producer ran at most %d elements ahead (buffer %d)\n", maxAhead, casty.StreamBuffer)
	fmt.Printf("   throttled by the consumer: %v\n", maxAhead <= casty.StreamBuffer+2)

	start := time.Now()
	size, err := casty.Call0(ctx, app, (*Log).Size)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("   actor free again after break: %v\n", time.Since(start) < time.Second)
	last := ""
	for e, err := range casty.Stream(ctx, app, (*Log).Tail, size-1) {
		if err != nil {
			log.Fatal(err)
		}
		last = e
	}
	fmt.Printf("   last entry: %q\n", last)
}

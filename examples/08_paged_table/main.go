// Paged table: five members in one process, an actor holding a
// 2,000,000-row, 5-column Arrow table (80 MB) replicated on 3 of them with
// Write(Majority). Editing one cell ships one 16,384-row block of one
// column to each of the other two replicas, not the table; casty.Explain
// says why before anything runs. Then the owner leaves and another member
// reads the edited cell back from the replicas.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/casty-go/casty/arrowpager"
	"github.com/casty-go/casty/casty"
)

const (
	rows = 2_000_000
	cols = 5
	cell = 1_234_567 // the row the example edits, in column c2
)

// Sensor holds a table of readings: one float64 column per sensor.
type Sensor struct {
	Readings arrowpager.Table
}

// Load fills the table with rows x cols readings.
func (s *Sensor) Load(_ context.Context, n int) (int, error) {
	for c := range cols {
		b := array.NewFloat64Builder(memory.DefaultAllocator)
		b.Reserve(n)
		for r := range n {
			b.UnsafeAppend(float64(c)*1e7 + float64(r))
		}
		arr := b.NewFloat64Array()
		b.Release()
		err := s.Readings.SetColumn(arrow.Field{Name: fmt.Sprintf("c%d", c), Type: arrow.PrimitiveTypes.Float64}, arr)
		arr.Release()
		if err != nil {
			return 0, err
		}
	}
	return s.Readings.NumRows(), nil
}

// Correct overwrites one reading in place.
func (s *Sensor) Correct(_ context.Context, v float64) (float64, error) {
	col, _ := s.Readings.ColumnByName("c2")
	vals := col.(*array.Float64).Float64Values()
	old := vals[cell]
	vals[cell] = v
	return old, nil
}

// Reading returns the edited cell.
func (s *Sensor) Reading(context.Context) (float64, error) {
	col, ok := s.Readings.ColumnByName("c2")
	if !ok {
		return 0, fmt.Errorf("empty table")
	}
	return col.(*array.Float64).Value(cell), nil
}

// Sensors keep 3 copies; a commit is acknowledged by 2 of them.
var Sensors = casty.Actor[Sensor](casty.Name("example.Sensor"), casty.Replicas(3), casty.Write(casty.Majority))

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := casty.WithLogger(slog.New(slog.DiscardHandler))

	first, err := casty.Start(ctx, "127.0.0.1:0", quiet)
	if err != nil {
		log.Fatal(err)
	}
	members := []*casty.System{first}
	for range 4 {
		m, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(first.Addr()), quiet)
		if err != nil {
			log.Fatal(err)
		}
		members = append(members, m)
	}
	closed := map[*casty.System]bool{}
	defer func() {
		for _, m := range slices.Backward(members) {
			if !closed[m] {
				m.Close(context.Background())
			}
		}
	}()
	for _, m := range members {
		if err := m.WaitMembers(ctx, 5); err != nil { // placed and synced
			log.Fatal(err)
		}
	}
	fmt.Println("5 members, each replicating on a placement of 5")

	explain, err := casty.Explain[Sensor]()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("casty.Explain[Sensor]():\n%s\n", explain)

	owner, _ := first.OwnerOf(Sensors.Name(), "plant-7")
	var via *casty.System // a member that is not the owner
	for _, m := range members {
		if m.Addr() != owner.Addr {
			via = m
			break
		}
	}
	ref := Sensors.Ref(via, "plant-7")

	before := commitBytes(members)
	n, err := casty.Call(ctx, ref, (*Sensor).Load, rows)
	if err != nil {
		log.Fatal(err)
	}
	loaded := shipped(ctx, members, before)
	fmt.Printf("loaded %d rows x %d columns (%d MB): first commit shipped %d MB to 2 replicas\n",
		n, cols, n*cols*8/1_000_000, (loaded-before)/1_000_000)

	old, err := casty.Call(ctx, ref, (*Sensor).Correct, -1.5)
	if err != nil {
		log.Fatal(err)
	}
	edited := shipped(ctx, members, loaded)
	fmt.Printf("one cell edited (c2[%d]: %v -> -1.5): shipped %d B to 2 replicas\n", cell, old, edited-loaded)
	fmt.Println("one cell shipped under 258 KiB:", edited-loaded <= 258<<10)

	// The owner leaves; the next call activates the actor on another
	// member from the replicas.
	for _, m := range members {
		if m.Addr() == owner.Addr {
			m.Close(ctx)
			closed[m] = true
		}
	}
	v, err := casty.Call0(ctx, ref, (*Sensor).Reading)
	if err != nil {
		log.Fatal(err)
	}
	now, _ := via.OwnerOf(Sensors.Name(), "plant-7")
	fmt.Printf("owner left; the new owner restored c2[%d] = %v from the replicas: %v\n", cell, v, now.Addr != owner.Addr)
}

// shipped returns the commit bytes all members sent, once they stop
// growing past since: the owner answers after a majority, and its message
// to the last replica may still be leaving.
func shipped(ctx context.Context, members []*casty.System, since int64) int64 {
	last, stable := commitBytes(members), 0
	for stable < 5 || last == since {
		select {
		case <-ctx.Done():
			log.Fatal("commit bytes did not settle")
		case <-time.After(20 * time.Millisecond):
		}
		if b := commitBytes(members); b == last {
			stable++
		} else {
			last, stable = b, 0
		}
	}
	return last
}

// commitBytes sums the bytes of commit messages the members sent.
func commitBytes(members []*casty.System) int64 {
	var b int64
	for _, m := range members {
		b += m.Replication().CommitBytes
	}
	return b
}

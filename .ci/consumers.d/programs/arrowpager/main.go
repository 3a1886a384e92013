// Consumer of github.com/casty-go/casty/arrowpager: pages an Arrow table
// with the pager module, changes one row and ships only its block.
package main

import (
	"fmt"
	"os"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/casty-go/casty/arrowpager"
	"github.com/casty-go/casty/pager"
)

// State is an actor's state: one paged table.
type State struct {
	Readings arrowpager.Table
}

func main() {
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	for i := range 40_000 {
		b.Append(float64(i))
	}
	col := b.NewArray()
	var st State
	if err := st.Readings.SetColumn(arrow.Field{Name: "temp", Type: arrow.PrimitiveTypes.Float64}, col); err != nil {
		fail(err)
	}
	col.Release()
	tr, err := pager.NewTracker(reflect.TypeFor[State]())
	if err != nil {
		fail(err)
	}
	replica := pager.NewStore()
	commit := func(wall int64) []string {
		p, err := tr.Prepare(&st, pager.Stamp{Wall: wall})
		if err != nil {
			fail(err)
		}
		var keys []string
		for _, pg := range p.Delta.Pages {
			keys = append(keys, pg.Key)
		}
		if _, err := replica.Apply(p.Delta); err != nil {
			fail(err)
		}
		if err := tr.Commit(p); err != nil {
			fail(err)
		}
		return keys
	}
	commit(1)
	temp, _ := st.Readings.ColumnByName("temp")
	temp.(*array.Float64).Float64Values()[20_000] = -1
	keys := commit(2)
	if !slices.Equal(keys, []string{"Readings/temp/1"}) {
		fail(fmt.Errorf("second delta ships %v, want [Readings/temp/1]", keys))
	}
	fmt.Println("arrowpager consumer: second delta ships", keys)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "arrowpager consumer:", err)
	os.Exit(1)
}

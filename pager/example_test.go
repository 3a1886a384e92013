package pager_test

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/casty-go/casty/pager"
)

// Inventory is an actor's state: exported fields are replicated.
type Inventory struct {
	Revision int
	Owner    string
	Stock    pager.TrackedMap[string, int]
}

func Example() {
	tr, err := pager.NewTracker(reflect.TypeFor[Inventory]())
	if err != nil {
		panic(err)
	}
	replica := pager.NewStore()
	var inv Inventory
	commit := func(wall int64) {
		p, err := tr.Prepare(&inv, pager.Stamp{Wall: wall})
		if err != nil {
			panic(err)
		}
		if p.Delta.Empty() {
			fmt.Println("nothing to send")
		} else {
			var keys []string
			for _, pg := range p.Delta.Pages {
				keys = append(keys, pg.Key)
			}
			fmt.Println("send", keys, "drop", p.Delta.Dropped)
			if _, err := replica.Apply(p.Delta); err != nil {
				_ = tr.Rollback(p)
				return
			}
		}
		_ = tr.Commit(p)
	}

	inv.Owner = "ada"
	inv.Stock.Set("apple", 3)
	commit(1)

	inv.Stock.Set("apple", 2) // one entry touched: one page
	inv.Revision++
	commit(2)

	commit(3) // a handler that changed nothing

	inv.Stock.Delete("apple")
	commit(4)
	// Output:
	// send [Owner Stock/apple] drop []
	// send [Revision Stock/apple] drop []
	// nothing to send
	// send [] drop [Stock/apple]
}

func ExampleExplain() {
	e, err := pager.Explain(reflect.TypeFor[Inventory]())
	if err != nil {
		panic(err)
	}
	fmt.Print(e)
	// Output:
	// FIELD     KEY       TYPE                          REGIME    PAGES
	// Revision  Revision  int                           integral  1 page, compared by value, re-encoded when changed
	// Owner     Owner     string                        integral  1 page, compared by value, re-encoded when changed
	// Stock     Stock     pager.TrackedMap[string,int]  tracked   1 page per entry (Stock/<key>)
}

func ExampleStore_Apply() {
	replica := pager.NewStore()
	s1, s2, s3 := pager.Stamp{Wall: 1}, pager.Stamp{Wall: 2}, pager.Stamp{Wall: 3}
	_, _ = replica.Apply(pager.Delta{Stamp: s1, Pages: []pager.Page{{Key: "Owner", Data: []byte{0xa3, 'a', 'd', 'a'}}}})

	// An owner that missed commit s1 computes over the zero basis: stale.
	_, err := replica.Apply(pager.Delta{Stamp: s2})
	fmt.Println(errors.Is(err, pager.ErrStaleOwner))

	// A delta over s2, which this replica never saw: it asks for everything.
	_, err = replica.Apply(pager.Delta{Basis: s2, Stamp: s3})
	fmt.Println(errors.Is(err, pager.ErrNeedFull))

	// The full page set heals it.
	published, err := replica.Apply(pager.Delta{Basis: s2, Stamp: s3, Full: true})
	fmt.Println(published, err, replica.Stamp() == s3, replica.Len())
	// Output:
	// true
	// true
	// true <nil> true 0
}

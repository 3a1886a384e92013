package pager

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// Since over the keys of any run of commits takes a copy at the run's
// basis to exactly the store's pages and stamp, and only such a copy.
func TestSinceSumsTheCommitsItSkips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		owner, behind := NewStore(), NewStore()
		clock := int64(0)
		next := func() Stamp { clock++; return stamp(clock) }
		commit := func(label string) []string {
			d := Delta{Basis: owner.Stamp(), Stamp: next()}
			var keys []string
			for i, n := 0, rapid.IntRange(0, 4).Draw(rt, label+"n"); i < n; i++ {
				k := fmt.Sprintf("F/%d", rapid.IntRange(0, 5).Draw(rt, label+"k"))
				if rapid.Bool().Draw(rt, label+"drop") {
					d.Dropped = append(d.Dropped, k)
				} else {
					d.Pages = append(d.Pages, Page{Key: k, Data: []byte(fmt.Sprint(clock, i))})
				}
				keys = append(keys, k)
			}
			if _, err := owner.Apply(d); err != nil {
				rt.Fatal(err)
			}
			return keys
		}
		// Both copies share a history, then the owner runs on alone.
		for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "shared"); i < n; i++ {
			commit("s")
		}
		if _, err := behind.Apply(Delta{Basis: Stamp{}, Stamp: owner.Stamp(), Full: true, Pages: owner.Pages()}); err != nil && owner.Stamp() != (Stamp{}) {
			rt.Fatal(err)
		}
		basis := owner.Stamp()
		var keys []string
		for i, n := 0, rapid.IntRange(1, 6).Draw(rt, "skipped"); i < n; i++ {
			keys = append(keys, commit("o")...)
		}
		d := owner.Since(basis, keys)
		if d.Stamp != owner.Stamp() || d.Basis != basis {
			rt.Fatalf("Since at %v on %v, want %v on %v", d.Stamp, d.Basis, owner.Stamp(), basis)
		}
		// A copy at another stamp refuses it and keeps what it held.
		if basis != (Stamp{}) {
			other := NewStore()
			if _, err := other.Apply(Delta{Basis: Stamp{}, Stamp: next(), Pages: []Page{{Key: "F/0", Data: []byte("x")}}}); err != nil {
				rt.Fatal(err)
			}
			if _, err := other.Apply(d); err == nil {
				rt.Fatalf("a copy at %v accepted a delta on basis %v", other.Stamp(), basis)
			}
		}
		if err := applyAll(behind, d.Split(64)); err != nil {
			rt.Fatalf("the copy at the basis refused: %v", err)
		}
		if behind.Stamp() != owner.Stamp() || !reflect.DeepEqual(behind.Pages(), owner.Pages()) {
			rt.Fatalf("after Since the copy holds %v at %v, the owner %v at %v", behind.Pages(), behind.Stamp(), owner.Pages(), owner.Stamp())
		}
	})
}

package pager

import (
	"reflect"
	"testing"
)

// FuzzDecodeDelta feeds arbitrary bytes to the network decoder and applies
// whatever decodes to a store and a restore: errors are fine, panics are not.
func FuzzDecodeDelta(f *testing.F) {
	seed := []Delta{
		{Stamp: stamp(1), Pages: []Page{pg("Count", "\x01"), pg("Scores/a", "\x02")}},
		{Stamp: stamp(3), Basis: stamp(2), Full: true, Part: 1, Parts: 2, Dropped: []string{"Name"}},
		{Stamp: stamp(2), Basis: stamp(1), Pages: []Page{{Key: "Blob/len", Data: []byte("3"), Stamp: stamp(1)}}},
	}
	for _, d := range seed {
		b, err := d.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0x81, 0xa5, 'S', 't', 'a', 'm', 'p', 0xc4, 0x03, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelta(b)
		if err != nil {
			return
		}
		s := NewStore()
		if _, err := s.Apply(d); err != nil {
			return
		}
		tr, err := NewTracker(reflect.TypeFor[testState]())
		if err != nil {
			t.Fatal(err)
		}
		var st testState
		_ = tr.Restore(&st, s.Stamp(), s.Pages())
	})
}

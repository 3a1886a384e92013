package replica

import (
	"reflect"
	"testing"

	"github.com/casty-go/casty/pager"
)

// FuzzDecode: any bytes decode to a valid message or an error wrapping
// ErrCorrupt, never a panic; a decoded message re-encodes and decodes to
// the same message, and a replica answers it without panicking. AckStatus
// never panics either, and reads what Decode reads from an acknowledgement.
func FuzzDecode(f *testing.F) {
	seeds := []*Msg{
		{Op: OpPrepare, Kind: "shop.Cart", Key: "c-1", Ballot: ballot(5, 1), Version: 3},
		{Op: OpPromise, Kind: "k", Key: "x", Ballot: ballot(5, 1), Promised: ballot(5, 1), Accepted: ballot(2, 2), Stamp: stamp(3, 2), Voter: true},
		{Op: OpCommit, Kind: "k", Key: "x", Ballot: ballot(5, 1), Delta: &pager.Delta{Basis: stamp(3, 2), Stamp: stamp(6, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1, 2}}}, Dropped: []string{"W"}}},
		{Op: OpCommit, Kind: "k", Key: "x", Ballot: ballot(5, 1), Delta: &pager.Delta{Stamp: stamp(6, 1), Pages: []pager.Page{{Key: "V", Data: []byte{3}}}}, Answer: []byte{0, 0, 0, 0, 0, 0, 0, 7, 0x91}},
		{Op: OpConfirm, Kind: "k", Key: "x", Ballot: ballot(5, 1), Accepted: ballot(5, 1), Stamp: stamp(6, 1), Answer: []byte{0, 0, 0, 0, 0, 0, 0, 8, 0x91}},
		{Op: OpAck, Kind: "k", Key: "x", Ballot: ballot(5, 1), Status: StatusNeedFull, Stamp: stamp(6, 1)},
		{Op: OpAck, Kind: "k", Key: "x", Ballot: ballot(5, 1), Status: StatusNeedFull, Stamp: stamp(6, 1),
			Have: &pager.Listing{Stamp: stamp(4, 1), Pages: []pager.PageInfo{{Key: "A", Stamp: stamp(2, 1), Size: 9}, {Key: "B", Stamp: stamp(4, 1), Size: 1}}}},
		{Op: OpAck, Version: 9, Digest: 77, Kind: "k", Key: "x", Ballot: ballot(5, 1), Stamp: stamp(6, 1), Voter: true},
		{Op: OpFetch, Kind: "k", Key: "x", Ballot: ballot(5, 1), Stamp: stamp(3, 2), Have: &pager.Listing{Stamp: stamp(1, 1), Pages: []pager.PageInfo{{Key: "V", Stamp: stamp(1, 1), Size: 2}}}},
		{Op: OpSync, Kind: "k", Version: 4, Ranges: []Range{{Start: 10, End: 20}}},
		{Op: OpSynced, Kind: "k", Ranges: []Range{{Start: 10, End: 20}}, More: true, Records: []Record{{Key: "x", Accepted: ballot(2, 2), Stamp: stamp(3, 2), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}}},
	}
	for _, m := range seeds {
		b, err := m.Encode()
		if err != nil {
			f.Fatal(err)
		}
		if got, err := Decode(b); err != nil || !reflect.DeepEqual(got, m) {
			f.Fatalf("seed %v does not round-trip: %v\n%+v\n%+v", m.Op, err, m, got)
		}
		f.Add(b)
	}
	dirty := *seeds[len(seeds)-1] // a Msg with lists in it, decoded over each time
	dirty.Reason, dirty.Facts, dirty.Answer, dirty.Have = "stale", []byte{1}, []byte{2}, seeds[6].Have
	used, err := seeds[2].Encode() // a commit with a page and a drop, decoded into the Scratch first
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := AckStatus(b)
		m, err := Decode(b)
		into := dirty
		errInto := DecodeInto(&into, b)
		if (err == nil) != (errInto == nil) {
			t.Fatalf("Decode: %v; DecodeInto: %v", err, errInto)
		}
		var sc Scratch
		if _, err := sc.Decode(used); err != nil {
			t.Fatal(err)
		}
		inScratch, errScratch := sc.Decode(b)
		if (err == nil) != (errScratch == nil) {
			t.Fatalf("Decode: %v; Scratch.Decode: %v", err, errScratch)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(m, &into) {
			t.Fatalf("DecodeInto over a used Msg differs from Decode:\n%+v\n%+v", m, into)
		}
		if !reflect.DeepEqual(m, inScratch) {
			t.Fatalf("Scratch.Decode over a used Scratch differs from Decode:\n%+v\n%+v", m, inScratch)
		}
		if m.Op == OpAck && (!ok || st != m.Status) {
			t.Fatalf("AckStatus = %v, %v; the decoded acknowledgement's status is %v", st, ok, m.Status)
		}
		if m.Op != OpAck && ok {
			t.Fatalf("AckStatus read a status from a %v", m.Op)
		}
		b2, err := m.Encode()
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		m2, err := Decode(b2)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
		r := NewReplica(nil)
		if reply := r.Handle(m, 1024); reply == nil {
			t.Fatal("no reply")
		}
	})
}

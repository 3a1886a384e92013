package core

import (
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func samplePeer(b byte) Peer { return Peer{ID: NodeID{b, 1}, Addr: "10.0.0.1:7001", Role: RoleMember} }

// sampleMessages has one well-formed message per kind (the fuzz corpus).
func sampleMessages() []*Message {
	p, q := samplePeer(1), samplePeer(2)
	rec := Member{ID: q.ID, Addr: q.Addr, Incarnation: 3, Status: Suspect}
	id := idOf(rec)
	return []*Message{
		{Kind: KindJoin, From: p},
		{Kind: KindForwardJoin, From: p, Subject: q, TTL: 6},
		{Kind: KindJoinAccept, From: p},
		{Kind: KindNeighbor, From: p, Flag: true},
		{Kind: KindNeighborReply, From: p, Flag: true},
		{Kind: KindDisconnect, From: p, Flag: true},
		{Kind: KindShuffle, From: p, Subject: p, TTL: 3, Peers: []Peer{p, q}},
		{Kind: KindShuffleReply, From: p, Peers: []Peer{q}},
		{Kind: KindGossip, From: p, Round: 4, Members: []Member{rec}},
		{Kind: KindIHave, From: p, IDs: []MsgID{id, id}},
		{Kind: KindPrune, From: p},
		{Kind: KindGraft, From: p, IDs: []MsgID{id}},
		{Kind: KindSyncDigest, From: p, Digest: 0xdeadbeef, Flag: true},
		{Kind: KindSync, From: p, Members: []Member{rec, {ID: p.ID, Addr: p.Addr, Status: Dead}}, Ages: []uint32{0, 1500}, Flag: true},
		{Kind: KindPing, From: p},
		{Kind: KindPong, From: p},
		{Kind: KindPing, From: p, Digest: 0x0123456789abcdef},             // an admission probe: the nonce
		{Kind: KindPong, From: p, Digest: 0x0123456789abcdef, Flag: true}, // its answer from a leaving node
	}
}

func TestWireRoundTripEveryKind(t *testing.T) {
	for _, m := range sampleMessages() {
		got, err := DecodeMessage(EncodeMessage(m))
		if err != nil {
			t.Fatalf("%v: %v", m.Kind, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("%v: round trip\n got %+v\nwant %+v", m.Kind, got, m)
		}
	}
}

func TestWireRoundTripProperty(t *testing.T) {
	peer := rapid.Custom(func(t *rapid.T) Peer {
		var id NodeID
		id[0] = byte(rapid.IntRange(1, 255).Draw(t, "id"))
		return Peer{ID: id, Addr: rapid.StringMatching(`[a-z0-9.:]{1,40}`).Draw(t, "addr"), Role: Role(rapid.IntRange(0, 1).Draw(t, "role"))}
	})
	rapid.Check(t, func(t *rapid.T) {
		m := &Message{Kind: KindSync, From: peer.Draw(t, "from"), Flag: rapid.Bool().Draw(t, "flag")}
		n := rapid.IntRange(1, 20).Draw(t, "n")
		for range n {
			p := peer.Draw(t, "p")
			m.Members = append(m.Members, Member{ID: p.ID, Addr: p.Addr, Role: p.Role,
				Incarnation: rapid.Uint64().Draw(t, "inc"), Status: Status(rapid.IntRange(0, 3).Draw(t, "st"))})
			m.Ages = append(m.Ages, rapid.Uint32().Draw(t, "age"))
		}
		allZero := true
		for _, a := range m.Ages {
			allZero = allZero && a == 0
		}
		if allZero {
			m.Ages = nil
		}
		got, err := DecodeMessage(EncodeMessage(m))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, m)
		}
	})
}

func TestWireRejectsBadInput(t *testing.T) {
	good := EncodeMessage(&Message{Kind: KindShuffle, From: samplePeer(1), Subject: samplePeer(1), TTL: 3, Peers: []Peer{samplePeer(2)}})
	unknownKind := append([]byte(nil), good...)
	unknownKind[1] = 200
	badVersion := append([]byte(nil), good...)
	badVersion[0] = 9
	trailing := append(append([]byte(nil), good...), 0)
	// a shuffle whose peer count claims 60 peers but carries one
	hugeCount := EncodeMessage(&Message{Kind: KindShuffle, From: samplePeer(1), Subject: samplePeer(1), TTL: 3, Peers: []Peer{samplePeer(2)}})
	idx := len(hugeCount) - (minPeerSize + len(samplePeer(2).Addr)) - 1
	hugeCount[idx] = 60
	overSample := make([]Peer, MaxSample+1)
	for i := range overSample {
		overSample[i] = samplePeer(byte(i + 1))
	}
	tooMany := EncodeMessage(&Message{Kind: KindShuffle, From: samplePeer(1), Subject: samplePeer(1), TTL: 3, Peers: overSample})
	badStatus := EncodeMessage(&Message{Kind: KindGossip, From: samplePeer(1), Members: []Member{{ID: NodeID{3}, Addr: "x:1"}}})
	badStatus[len(badStatus)-2] = 7 // status byte of the only record
	cases := map[string][]byte{
		"empty":           nil,
		"unknown kind":    unknownKind,
		"bad version":     badVersion,
		"trailing bytes":  trailing,
		"forged count":    hugeCount,
		"oversized peers": tooMany,
		"truncated":       good[:len(good)-3],
		"unknown status":  badStatus,
		"zero sender":     EncodeMessage(&Message{Kind: KindJoin, From: Peer{Addr: "x:1"}}),
		"gossip w/o rec":  EncodeMessage(&Message{Kind: KindGossip, From: samplePeer(1)}),
		"ihave w/o ids":   EncodeMessage(&Message{Kind: KindIHave, From: samplePeer(1)}),
	}
	for name, b := range cases {
		if _, err := DecodeMessage(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

// fuzzKind fuzzes the decoder with frames of one kind: the corpus is that
// kind's sample; the fuzzer mutates everything after the kind byte.
func fuzzKind(f *testing.F, k Kind) {
	for _, m := range sampleMessages() {
		if m.Kind == k {
			f.Add(EncodeMessage(m)[2:])
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := append([]byte{WireVersion, byte(k)}, body...)
		m, err := DecodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := DecodeMessage(EncodeMessage(m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoding a decoded message changed it: %v", err)
		}
		// a decoded message never breaks a node
		n, _ := NewNode(samplePeer(9), nil)
		n.Start(testEpoch)
		n.Step(testEpoch, m)
	})
}

func FuzzDecodeJoin(f *testing.F)          { fuzzKind(f, KindJoin) }
func FuzzDecodeForwardJoin(f *testing.F)   { fuzzKind(f, KindForwardJoin) }
func FuzzDecodeJoinAccept(f *testing.F)    { fuzzKind(f, KindJoinAccept) }
func FuzzDecodeNeighbor(f *testing.F)      { fuzzKind(f, KindNeighbor) }
func FuzzDecodeNeighborReply(f *testing.F) { fuzzKind(f, KindNeighborReply) }
func FuzzDecodeDisconnect(f *testing.F)    { fuzzKind(f, KindDisconnect) }
func FuzzDecodeShuffle(f *testing.F)       { fuzzKind(f, KindShuffle) }
func FuzzDecodeShuffleReply(f *testing.F)  { fuzzKind(f, KindShuffleReply) }
func FuzzDecodeGossip(f *testing.F)        { fuzzKind(f, KindGossip) }
func FuzzDecodeIHave(f *testing.F)         { fuzzKind(f, KindIHave) }
func FuzzDecodePrune(f *testing.F)         { fuzzKind(f, KindPrune) }
func FuzzDecodeGraft(f *testing.F)         { fuzzKind(f, KindGraft) }
func FuzzDecodeSyncDigest(f *testing.F)    { fuzzKind(f, KindSyncDigest) }
func FuzzDecodeSync(f *testing.F)          { fuzzKind(f, KindSync) }
func FuzzDecodePing(f *testing.F)          { fuzzKind(f, KindPing) }
func FuzzDecodePong(f *testing.F)          { fuzzKind(f, KindPong) }

// FuzzDecodeMessage fuzzes whole frames, the kind byte included.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(EncodeMessage(m))
	}
	f.Add([]byte{WireVersion, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodeMessage(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}

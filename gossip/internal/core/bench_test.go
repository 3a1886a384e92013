package core

import (
	"testing"
	"time"
)

func benchTable(n int) *Message {
	m := &Message{Kind: KindSync, From: samplePeer(1), Flag: true}
	for i := range n {
		m.Members = append(m.Members, Member{ID: NodeID{byte(i >> 8), byte(i), 1}, Addr: "10.0.0.1:7001", Incarnation: uint64(i % 3)})
	}
	return m
}

// BenchmarkDecodeSync1000 decodes a 1000-member anti-entropy table; the
// floor is copying the same bytes.
func BenchmarkDecodeSync1000(b *testing.B) {
	frame := EncodeMessage(benchTable(1000))
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeMessage(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloorCopySync1000(b *testing.B) {
	frame := EncodeMessage(benchTable(1000))
	dst := make([]byte, len(frame))
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		copy(dst, frame)
	}
}

// BenchmarkStepGossip measures one Node handling a duplicate-free stream of
// payloads (apply + forward) at a 1000-member table.
func BenchmarkStepGossip(b *testing.B) {
	n, _ := NewNode(samplePeer(200), nil)
	now := time.Unix(0, 0)
	n.Start(now)
	for _, m := range benchTable(1000).Members { // members this node verified
		n.table.Apply(m, now)
	}
	for i := range 5 {
		n.Step(now, &Message{Kind: KindNeighbor, From: Peer{ID: NodeID{250, byte(i)}, Addr: "n:1"}, Flag: true})
	}
	inc := uint64(10)
	from := Peer{ID: NodeID{250, 0}, Addr: "n:1"}
	for b.Loop() {
		inc++
		n.Step(now, &Message{Kind: KindGossip, From: from, Members: []Member{{ID: NodeID{0, 5, 1}, Addr: "10.0.0.1:7001", Incarnation: inc}}})
	}
}

// BenchmarkStepForgedSync1000 measures a fresh node handling a SYNC that
// names 1000 members it never met (the forged-table attack, SPEC.md
// Admission): each record is held, 64 are probed, none is adopted.
func BenchmarkStepForgedSync1000(b *testing.B) {
	m := &Message{Kind: KindSync, From: samplePeer(1)}
	for i := range 1000 {
		m.Members = append(m.Members, Member{ID: NodeID{0xfa, byte(i >> 8), byte(i)}, Addr: "10.0.0.2:7001"})
	}
	now := time.Unix(0, 0)
	for b.Loop() {
		b.StopTimer()
		n, _ := NewNode(samplePeer(200), nil)
		n.Start(now)
		b.StartTimer()
		out := n.Step(now, m)
		if len(out.Events) != 0 || n.Unverified() != 1000 {
			b.Fatalf("events %d, unverified %d", len(out.Events), n.Unverified())
		}
	}
}

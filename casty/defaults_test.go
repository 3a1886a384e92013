package casty_test

import (
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// The defaults are the documented ones (each Config field's comment, and
// README.md's "Limits"): changing one is a decision to make here, not an
// accident. The layers below have defaults of their own, which must agree
// with the system's.
func TestDefaultsAreTheDocumentedOnes(t *testing.T) {
	c := casty.DefaultConfig()
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"CallTimeout", c.CallTimeout, 10 * time.Second},
		{"IdleTimeout", c.IdleTimeout, 300 * time.Second},
		{"DrainTimeout", c.DrainTimeout, 10 * time.Second},
		{"MaxActivations", c.MaxActivations, 1_000_000},
		{"ReplicationTimeout", c.ReplicationTimeout, 5 * time.Second},
		{"HandoffTimeout", c.HandoffTimeout, 10 * time.Second},
		{"ReplicationBatch", c.ReplicationBatch, 256 << 10},
		{"MaxFrame", c.MaxFrame, 256 << 10},
		{"MaxMessage", c.MaxMessage, 4 << 20},
		{"StreamWindow", c.StreamWindow, 256 << 10},
		{"MaxStreams", c.MaxStreams, 1024},
		{"HandshakeTimeout", c.HandshakeTimeout, 5 * time.Second},
		{"ConnectTimeout", c.ConnectTimeout, 5 * time.Second},
		// 1 s / 3 s, not 15 s / 5 s: a stopped member is suspected
		// within 4 s (Config.KeepAliveInterval).
		{"KeepAliveInterval", c.KeepAliveInterval, time.Second},
		{"KeepAliveTimeout", c.KeepAliveTimeout, 3 * time.Second},
		{"ReconnectMin", c.ReconnectMin, 100 * time.Millisecond},
		{"ReconnectMax", c.ReconnectMax, 15 * time.Second},
		{"CompressThreshold", c.CompressThreshold, 4096},
		{"ActiveView", c.ActiveView, 5},
		{"PassiveView", c.PassiveView, 30},
		{"ActiveWalk", c.ActiveWalk, 6},
		{"PassiveWalk", c.PassiveWalk, 3},
		{"ShuffleInterval", c.ShuffleInterval, 10 * time.Second},
		{"ShuffleActive", c.ShuffleActive, 3},
		{"ShufflePassive", c.ShufflePassive, 4},
		{"SuspicionTimeout", c.SuspicionTimeout, 5 * time.Second},
		{"AntiEntropyInterval", c.AntiEntropyInterval, 30 * time.Second},
		{"TombstoneTTL", c.TombstoneTTL, 60 * time.Second},
		{"MemberReconnectInterval", c.MemberReconnectInterval, 30 * time.Second},
		{"MemberReconnectTimeout", c.MemberReconnectTimeout, 24 * time.Hour},
		{"GraftTimeout", c.GraftTimeout, 500 * time.Millisecond},
		{"JoinTimeout", c.JoinTimeout, 10 * time.Second},
		{"Shards", c.Shards, 32},
	} {
		if d.got != d.want {
			t.Errorf("%s = %v, want %v", d.name, d.got, d.want)
		}
	}

	g := gossip.DefaultConfig()
	if g.ActiveViewSize != c.ActiveView || g.PassiveViewSize != c.PassiveView ||
		g.ActiveRandomWalkLength != c.ActiveWalk || g.PassiveRandomWalkLength != c.PassiveWalk ||
		g.ShuffleInterval != c.ShuffleInterval || g.ShuffleActive != c.ShuffleActive || g.ShufflePassive != c.ShufflePassive ||
		g.SuspicionTimeout != c.SuspicionTimeout || g.AntiEntropyInterval != c.AntiEntropyInterval ||
		g.TombstoneTTL != c.TombstoneTTL || g.GraftTimeout != c.GraftTimeout || g.JoinTimeout != c.JoinTimeout ||
		g.ReconnectInterval != c.MemberReconnectInterval || g.ReconnectTimeout != c.MemberReconnectTimeout {
		t.Errorf("gossip defaults %+v disagree with the system's", *g)
	}
	// One exception: casty's KeepAliveTimeout is shorter than mux's,
	// because casty's membership suspects a peer on it (Config.KeepAliveTimeout).
	m := mux.DefaultConfig()
	if m.HandshakeTimeout != c.HandshakeTimeout || m.ConnectTimeout != c.ConnectTimeout ||
		m.KeepAliveInterval != c.KeepAliveInterval || m.KeepAliveTimeout < c.KeepAliveTimeout ||
		m.MaxFrame != c.MaxFrame || m.MaxMessage != c.MaxMessage || m.StreamWindow != c.StreamWindow ||
		m.MaxStreams != c.MaxStreams || m.CompressThreshold != c.CompressThreshold ||
		m.ReconnectMin != c.ReconnectMin || m.ReconnectMax != c.ReconnectMax {
		t.Errorf("mux defaults disagree with the system's: %+v", m)
	}
}

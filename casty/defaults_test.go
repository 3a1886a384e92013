package casty_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
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
	m := mux.DefaultConfig()
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"Actors.CallTimeout", c.Actors.CallTimeout, 10 * time.Second},
		{"Actors.IdleTimeout", c.Actors.IdleTimeout, 300 * time.Second},
		{"Actors.DrainTimeout", c.Actors.DrainTimeout, 10 * time.Second},
		{"Actors.MaxActivations", c.Actors.MaxActivations, 1_000_000},
		{"Actors.MaxSpies", c.Actors.MaxSpies, 64},
		{"Replication.Timeout", c.Replication.Timeout, 5 * time.Second},
		{"Replication.HandoffTimeout", c.Replication.HandoffTimeout, 10 * time.Second},
		{"Replication.RemoveDeadAfter", c.Replication.RemoveDeadAfter, 30 * time.Second},
		{"Replication.RepairInterval", c.Replication.RepairInterval, 30 * time.Second},
		{"Replication.StateTombstoneTTL", c.Replication.StateTombstoneTTL, time.Hour},
		{"Replication.MaxClockDrift", c.Replication.MaxClockDrift, 500 * time.Millisecond},
		{"Replication.Batch", c.Replication.Batch, 256 << 10},
		{"Replication.MaxBytes", c.Replication.MaxBytes, 0},
		{"Transport.MaxFrame", c.Transport.MaxFrame, 256 << 10},
		{"Transport.MaxMessage", c.Transport.MaxMessage, 4 << 20},
		{"Transport.StreamWindow", c.Transport.StreamWindow, 256 << 10},
		{"Transport.MaxStreams", c.Transport.MaxStreams, 1024},
		{"Transport.HandshakeTimeout", c.Transport.HandshakeTimeout, 5 * time.Second},
		{"Transport.ConnectTimeout", c.Transport.ConnectTimeout, 5 * time.Second},
		// 1 s / 3 s, not 15 s / 5 s: a stopped member is suspected
		// within 4 s (TransportConfig.KeepAliveInterval).
		{"Transport.KeepAliveInterval", c.Transport.KeepAliveInterval, time.Second},
		{"Transport.KeepAliveTimeout", c.Transport.KeepAliveTimeout, 3 * time.Second},
		{"Transport.ReconnectMin", c.Transport.ReconnectMin, 100 * time.Millisecond},
		{"Transport.ReconnectMax", c.Transport.ReconnectMax, 15 * time.Second},
		{"Transport.CompressThreshold", c.Transport.CompressThreshold, 4096},
		// The transport's limits and budgets are mux's own (next test).
		{"Transport.MaxRequests", c.Transport.MaxRequests, m.MaxRequests},
		{"Transport.MaxQueuedBytes", c.Transport.MaxQueuedBytes, m.MaxQueuedBytes},
		{"Transport.MaxQueuedBytesTotal", c.Transport.MaxQueuedBytesTotal, m.MaxQueuedBytesTotal},
		{"Transport.MaxPartialBytes", c.Transport.MaxPartialBytes, m.MaxPartialBytes},
		{"Transport.MaxPartialBytesTotal", c.Transport.MaxPartialBytesTotal, m.MaxPartialBytesTotal},
		{"Transport.PartialMessageTimeout", c.Transport.PartialMessageTimeout, m.PartialMessageTimeout},
		{"Transport.MaxInboundConns", c.Transport.MaxInboundConns, m.MaxInboundConns},
		{"Transport.MaxInboundConnsPerHost", c.Transport.MaxInboundConnsPerHost, m.MaxInboundConnsPerHost},
		{"Transport.MaxClientConns", c.Transport.MaxClientConns, m.MaxClientConns},
		{"Transport.MaxClientConnsPerHost", c.Transport.MaxClientConnsPerHost, m.MaxClientConnsPerHost},
		{"Transport.MaxHandshakes", c.Transport.MaxHandshakes, m.MaxHandshakes},
		{"Transport.MaxHandshakesPerHost", c.Transport.MaxHandshakesPerHost, m.MaxHandshakesPerHost},
		{"Transport.FirstByteTimeout", c.Transport.FirstByteTimeout, m.FirstByteTimeout},
		{"Membership.ActiveViewSize", c.Membership.ActiveViewSize, 5},
		{"Membership.PassiveViewSize", c.Membership.PassiveViewSize, 30},
		{"Membership.ActiveRandomWalkLength", c.Membership.ActiveRandomWalkLength, 6},
		{"Membership.PassiveRandomWalkLength", c.Membership.PassiveRandomWalkLength, 3},
		{"Membership.ShuffleInterval", c.Membership.ShuffleInterval, 10 * time.Second},
		{"Membership.ShuffleActive", c.Membership.ShuffleActive, 3},
		{"Membership.ShufflePassive", c.Membership.ShufflePassive, 4},
		{"Membership.SuspicionTimeout", c.Membership.SuspicionTimeout, 5 * time.Second},
		{"Membership.AntiEntropyInterval", c.Membership.AntiEntropyInterval, 30 * time.Second},
		{"Membership.TombstoneTTL", c.Membership.TombstoneTTL, 60 * time.Second},
		{"Membership.ReconnectInterval", c.Membership.ReconnectInterval, 30 * time.Second},
		{"Membership.ReconnectTimeout", c.Membership.ReconnectTimeout, 24 * time.Hour},
		{"Membership.GraftTimeout", c.Membership.GraftTimeout, 500 * time.Millisecond},
		{"Membership.JoinTimeout", c.Membership.JoinTimeout, 10 * time.Second},
		{"Membership.MaxTableSize", c.Membership.MaxTableSize, 4096},
		{"Membership.MaxClientRecords", c.Membership.MaxClientRecords, 0},
		{"Shards", c.Shards, 32},
	} {
		if d.got != d.want {
			t.Errorf("%s = %v, want %v", d.name, d.got, d.want)
		}
	}

}

// The transport knobs are mux's own: each TransportConfig field is the
// mux.Config field of the same name and type, and defaults to its value,
// so the defaults are defined once, in mux. One exception: casty's
// KeepAliveTimeout is shorter than mux's, because casty's membership
// suspects a peer on it (TransportConfig.KeepAliveTimeout).
func TestDefaultTransportConfigIsMuxs(t *testing.T) {
	c := reflect.ValueOf(casty.DefaultTransportConfig())
	m := reflect.ValueOf(mux.DefaultConfig())
	for i := range c.NumField() {
		f := c.Type().Field(i)
		mf, ok := m.Type().FieldByName(f.Name)
		if !ok {
			t.Errorf("TransportConfig.%s is not a mux.Config field", f.Name)
			continue
		}
		if mf.Type != f.Type {
			t.Errorf("TransportConfig.%s is a %v, mux.Config's a %v", f.Name, f.Type, mf.Type)
			continue
		}
		got, want := c.Field(i).Interface(), m.FieldByName(f.Name).Interface()
		if f.Name == "KeepAliveTimeout" {
			if got != 3*time.Second || want != 5*time.Second {
				t.Errorf("TransportConfig.KeepAliveTimeout defaults to %v (want 3 s), mux's to %v (want 5 s)", got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("TransportConfig.%s defaults to %v, mux's to %v", f.Name, got, want)
		}
	}
}

// Each group's constructor gives the group DefaultConfig holds, so a
// program that builds one group alone gets the same defaults.
func TestDefaultGroupsAreDefaultConfigs(t *testing.T) {
	c := casty.DefaultConfig()
	if g := casty.DefaultActorConfig(); g != c.Actors {
		t.Errorf("DefaultActorConfig %+v, DefaultConfig().Actors %+v", g, c.Actors)
	}
	if g := casty.DefaultReplicationConfig(); g != c.Replication {
		t.Errorf("DefaultReplicationConfig %+v, DefaultConfig().Replication %+v", g, c.Replication)
	}
	if g := casty.DefaultTransportConfig(); g != c.Transport {
		t.Errorf("DefaultTransportConfig %+v, DefaultConfig().Transport %+v", g, c.Transport)
	}
	if g := casty.DefaultMembershipConfig(); g != c.Membership {
		t.Errorf("DefaultMembershipConfig %+v, DefaultConfig().Membership %+v", g, c.Membership)
	}
}

// The membership knobs are gossip's own: each MembershipConfig field is
// the gossip.Config field of the same name and type, and defaults to its
// value, so the defaults are defined once, in gossip.
func TestDefaultMembershipConfigIsGossips(t *testing.T) {
	m := reflect.ValueOf(casty.DefaultMembershipConfig())
	g := reflect.ValueOf(gossip.DefaultConfig()).Elem()
	for i := range m.NumField() {
		f := m.Type().Field(i)
		gf, ok := g.Type().FieldByName(f.Name)
		if !ok {
			t.Errorf("MembershipConfig.%s is not a gossip.Config field", f.Name)
			continue
		}
		if gf.Type != f.Type {
			t.Errorf("MembershipConfig.%s is a %v, gossip.Config's a %v", f.Name, f.Type, gf.Type)
			continue
		}
		if got, want := m.Field(i).Interface(), g.FieldByName(f.Name).Interface(); got != want {
			t.Errorf("MembershipConfig.%s defaults to %v, gossip's to %v", f.Name, got, want)
		}
	}
}

// A zero field takes its default, group by group; a set one is kept.
func TestConfigWithDefaultsFillsZeroFields(t *testing.T) {
	if got := casty.ConfigWithDefaults(casty.Config{}); got != casty.DefaultConfig() {
		t.Fatalf("the zero Config filled is %+v, want DefaultConfig %+v", got, casty.DefaultConfig())
	}
	c := casty.Config{
		Actors:      casty.ActorConfig{CallTimeout: time.Minute},
		Replication: casty.ReplicationConfig{Timeout: time.Minute, MaxBytes: 1 << 20},
		Transport:   casty.TransportConfig{MaxMessage: 8 << 20, MaxRequests: 16, FirstByteTimeout: time.Second},
		Membership:  casty.MembershipConfig{ReconnectInterval: time.Minute, MaxClientRecords: 7},
		Shards:      3,
	}
	want := casty.DefaultConfig()
	want.Actors.CallTimeout = time.Minute
	want.Replication.Timeout, want.Replication.MaxBytes = time.Minute, 1<<20
	want.Transport.MaxMessage, want.Transport.MaxRequests, want.Transport.FirstByteTimeout = 8<<20, 16, time.Second
	want.Membership.ReconnectInterval, want.Membership.MaxClientRecords = time.Minute, 7
	want.Shards = 3
	if got := casty.ConfigWithDefaults(c); got != want {
		t.Fatalf("filled %+v, want %+v", got, want)
	}
}

// Validate names a bad field by its path in Config; a group's own
// Validate names it within the group's type.
func TestConfigValidateNamesThePath(t *testing.T) {
	for _, tc := range []struct {
		c    casty.Config
		path string
	}{
		{casty.Config{Actors: casty.ActorConfig{IdleTimeout: -1}}, "Actors.IdleTimeout"},
		{casty.Config{Actors: casty.ActorConfig{MaxSpies: -1}}, "Actors.MaxSpies"},
		{casty.Config{Replication: casty.ReplicationConfig{Timeout: -1}}, "Replication.Timeout"},
		{casty.Config{Replication: casty.ReplicationConfig{MaxBytes: -1}}, "Replication.MaxBytes"},
		{casty.Config{Transport: casty.TransportConfig{KeepAliveTimeout: -1}}, "Transport.KeepAliveTimeout"},
		{casty.Config{Transport: casty.TransportConfig{ReconnectMin: 20 * time.Second}}, "Transport.ReconnectMin"},
		{casty.Config{Transport: casty.TransportConfig{MaxFrame: 8 << 20}}, "Transport.MaxFrame"},
		{casty.Config{Transport: casty.TransportConfig{MaxQueuedBytes: -1}}, "Transport.MaxQueuedBytes"},
		{casty.Config{Transport: casty.TransportConfig{FirstByteTimeout: -1}}, "Transport.FirstByteTimeout"},
		{casty.Config{Transport: casty.TransportConfig{MaxPartialBytes: 512 << 20}}, "Transport.MaxPartialBytesTotal"},
		{casty.Config{Transport: casty.TransportConfig{MaxInboundConnsPerHost: 5000}}, "Transport.MaxInboundConnsPerHost"},
		{casty.Config{Transport: casty.TransportConfig{MaxClientConns: 100, MaxClientConnsPerHost: 101}}, "Transport.MaxClientConnsPerHost"},
		{casty.Config{Membership: casty.MembershipConfig{ReconnectTimeout: -1}}, "Membership.ReconnectTimeout"},
		{casty.Config{Membership: casty.MembershipConfig{MaxClientRecords: 5000}}, "Membership.MaxClientRecords"},
		{casty.Config{Shards: -1}, "Shards"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Validate of a bad %s: %v", tc.path, err)
		}
	}
	for _, tc := range []struct {
		v    interface{ Validate() error }
		path string
	}{
		{casty.ActorConfig{CallTimeout: -1}, "ActorConfig.CallTimeout"},
		{casty.ReplicationConfig{Timeout: -1}, "ReplicationConfig.Timeout"},
		{casty.TransportConfig{ReconnectMin: time.Minute, ReconnectMax: time.Second}, "TransportConfig.ReconnectMin"},
		{casty.TransportConfig{MaxHandshakes: 4}, "TransportConfig.MaxHandshakesPerHost"},
		{casty.TransportConfig{MaxQueuedBytesTotal: 1 << 20}, "TransportConfig.MaxQueuedBytesTotal"},
		{casty.MembershipConfig{MaxTableSize: 100, MaxClientRecords: 101}, "MembershipConfig.MaxClientRecords"},
	} {
		err := tc.v.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Validate of a bad %s: %v", tc.path, err)
		}
	}
	for _, v := range []interface{ Validate() error }{
		casty.DefaultActorConfig(), casty.DefaultReplicationConfig(), casty.DefaultTransportConfig(),
		casty.DefaultMembershipConfig(), casty.ActorConfig{}, casty.MembershipConfig{}, casty.TransportConfig{},
		casty.TransportConfig{MaxInboundConns: 8, MaxInboundConnsPerHost: 8, MaxClientConns: 4, MaxClientConnsPerHost: 2},
	} {
		if err := v.Validate(); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}

// Every error of Validate matches ErrInvalidConfig and names the field by
// its path, a membership field gossip refuses included.
func TestConfigErrorsMatchErrInvalidConfig(t *testing.T) {
	for _, tc := range []struct {
		c    casty.Config
		want string
	}{
		{casty.Config{Replication: casty.ReplicationConfig{Timeout: -1}}, "casty: invalid config: Replication.Timeout must not be negative, got -1ns"},
		{casty.Config{Transport: casty.TransportConfig{MaxFrame: 8 << 20}}, "casty: invalid config: Transport.MaxFrame 8388608 exceeds Transport.MaxMessage 4194304"},
		{casty.Config{Transport: casty.TransportConfig{MaxPartialBytes: 512 << 20}}, "casty: invalid config: Transport.MaxPartialBytesTotal must be >= MaxPartialBytes"},
		{casty.Config{Membership: casty.MembershipConfig{ActiveViewSize: 1000}}, "casty: invalid config: Membership.ActiveViewSize = 1000"},
	} {
		err := tc.c.Validate()
		if !errors.Is(err, casty.ErrInvalidConfig) || err.Error() != tc.want {
			t.Errorf("Validate: %v (matches ErrInvalidConfig: %v), want %q", err, errors.Is(err, casty.ErrInvalidConfig), tc.want)
		}
	}
	_, err := casty.Start(context.Background(), "127.0.0.1:0", casty.WithConfig(casty.Config{Actors: casty.ActorConfig{CallTimeout: -1}}))
	if !errors.Is(err, casty.ErrInvalidConfig) {
		t.Errorf("Start with a negative Actors.CallTimeout: %v, want ErrInvalidConfig", err)
	}
}

// Each Config group holds only durations and counts, zero meaning the
// default and negative refused: what withDefaults and Validate assume of
// every field (a field of another type needs its own handling there).
func TestConfigGroupsHoldOnlyDurationsAndCounts(t *testing.T) {
	for _, g := range []any{casty.ActorConfig{}, casty.ReplicationConfig{}, casty.TransportConfig{}, casty.MembershipConfig{}} {
		typ := reflect.TypeOf(g)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type != reflect.TypeFor[time.Duration]() && f.Type != reflect.TypeFor[int]() {
				t.Errorf("%s.%s is a %s: neither a duration nor a count", typ.Name(), f.Name, f.Type)
			}
		}
	}
}

package casty

import (
	"maps"
	"testing"

	"github.com/casty-go/casty/ring"
)

// A leaver whose address a live member advertises now (a process
// restarted there) has no address in the view: its process is gone, and
// syncs that asked it dialled the node that took its place, round after
// round. A leaver whose address nobody took keeps it: it hands off.
func TestALeaverReplacedOnItsAddressHasNone(t *testing.T) {
	old, other, newcomer := ring.NodeID{1}, ring.NodeID{2}, ring.NodeID{3}
	v := &view{
		addrs: map[ring.NodeID]string{newcomer: "10.0.0.1:7000"},
		left:  map[ring.NodeID]string{old: "10.0.0.1:7000", other: "10.0.0.2:7000"},
	}
	v.dropReplacedLeavers()
	want := map[ring.NodeID]string{other: "10.0.0.2:7000"}
	if !maps.Equal(v.left, want) {
		t.Fatalf("leavers after the restart: %v, want %v", v.left, want)
	}
}

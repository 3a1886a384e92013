package sim

import "testing"

// casty's bounds on a sync's waits (casty/replication_sync.go), in
// simulated ms: a member that keeps answering unsynced is waited for as
// long as a member that is down waits to be removed (behindWait:
// RemoveDeadAfter and two rounds more; RemoveAfter here), a left-out
// newcomer's copies for two rounds (unsyncedWait).
const (
	castyBehindWait = defaultRemoveAfter + 2*roundTimeout
	castyCopiesWait = 2 * roundTimeout
)

// boundedWaits returns cfg with casty's bounds on the waits of a sync.
func boundedWaits(cfg Config) Config {
	cfg.UnsyncedWait, cfg.CopiesWait = castyBehindWait, castyCopiesWait
	return cfg
}

// casty does not wait for ever for a member of a previous set that keeps
// answering unsynced, nor for a left-out newcomer's copies
// (replica/SPEC.md, "Known gaps"): with its bounds modelled, the
// configurations that lean on those waits stay linearizable, with kills
// held to what a quorum survives and without that guard. The bounds are
// exercised: syncs stop waiting in these runs. (TestOldSyncRulesLoseWrites
// shows shorter bounds losing writes.)
func TestLinearizableWithCastysBoundedWaits(t *testing.T) {
	cut := 0
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"newcomers under restarts", newcomersUnderRestarts},
		{"leaves with a pause", leavesWithAPause},
		{"newcomers under leaves", newcomersUnderLeaves},
	} {
		for _, unguarded := range []bool{false, true} {
			name := c.name
			if unguarded {
				name += ", unguarded kills"
			}
			t.Run(name, func(t *testing.T) {
				cfg := boundedWaits(c.cfg)
				cfg.UnguardedKills = unguarded
				cut += runSeeds(t, cfg, 150).WaitsCut
			})
		}
	}
	if cut == 0 {
		t.Fatal("no sync ever stopped waiting: the bounds were not exercised")
	}
	t.Logf("syncs stopped waiting %d times", cut)
}

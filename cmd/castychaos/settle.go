package main

import (
	"context"
	"fmt"
	"time"

	"github.com/casty-go/casty/casty"
)

// settleBound bounds the wait, after every fault is healed, for the
// cluster to settle (settle) before the final reads.
const settleBound = 90 * time.Second

// settle waits, after every fault is healed, until the cluster is whole
// again, so the final reads judge the state it settled in rather than a
// state still moving: the lite member sees every member; with replicas
// > 1, every member reports (PlacementStatus) the same agreed placement
// version with all n members placed, no range still syncing and no sync
// waiting for a removed member; every key the workloads use has an owner
// and no replica down on the lite member's view; and a read of each key
// (every workload's probe) succeeds. It reports what it saw, or what was
// still missing when bound passed.
func settle(ctx context.Context, sys *casty.System, n, replicas int, keys []kindKey, ws []workload, bound time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	start := time.Now()
	var why string
	for {
		version, missing := settled(ctx, sys, n, replicas, keys, ws)
		if missing == "" {
			what := fmt.Sprintf("%d members", n)
			if replicas > 1 {
				what += fmt.Sprintf(" report placement version %d with all %d placed, nothing syncing or waiting", version, n)
			}
			return fmt.Sprintf("settled %.1fs after healing: %s; every one of the %d keys has its replicas up and answers a read", time.Since(start).Seconds(), what, len(keys)), nil
		}
		why = missing
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return "", fmt.Errorf("not settled %s after healing: %s", bound, why)
		}
	}
}

// settled checks settle's conditions once and says what is missing ("" when
// nothing is).
func settled(ctx context.Context, sys *casty.System, n, replicas int, keys []kindKey, ws []workload) (uint64, string) {
	if got := len(sys.Members()); got != n {
		return 0, fmt.Sprintf("the lite member sees %d members, want %d", got, n)
	}
	var version uint64
	if replicas > 1 {
		v, missing := placementWhole(ctx, sys, n)
		if missing != "" {
			return 0, missing
		}
		version = v
	}
	want := min(replicas, n)
	for _, kk := range keys {
		pl, ok := sys.Placement(kk.kind, kk.key, 0)
		switch {
		case !ok:
			return 0, "no placement (local mode)"
		case pl.Owner.ID == "":
			return 0, fmt.Sprintf("%s %s has no owner", kk.kind, kk.key)
		case len(pl.Down) > 0:
			return 0, fmt.Sprintf("%s %s has replicas down: %v", kk.kind, kk.key, pl.Down)
		case len(pl.Replicas) != want:
			return 0, fmt.Sprintf("%s %s has %d replicas, want %d", kk.kind, kk.key, len(pl.Replicas), want)
		}
	}
	for _, w := range ws {
		if err := w.probe(ctx); err != nil {
			return 0, fmt.Sprintf("%s: %v", w.name(), err)
		}
	}
	return version, ""
}

// placementWhole reports whether all n members report (PlacementStatus) the
// same agreed placement version with all n placed, no range still syncing
// and no sync waiting for a removed member: every copy is where the
// placement puts it. It returns that version, or what is missing.
func placementWhole(ctx context.Context, sys *casty.System, n int) (uint64, string) {
	var version uint64
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	reports, err := sys.PlacementStatus(cctx)
	cancel()
	if err != nil {
		return 0, fmt.Sprintf("PlacementStatus: %v", err)
	}
	if len(reports) != n {
		return 0, fmt.Sprintf("%d members reported their placement, want %d", len(reports), n)
	}
	for i, r := range reports {
		switch {
		case r.Err != "":
			return 0, fmt.Sprintf("member %s: %s", r.Member.Addr, r.Err)
		case r.Placed != n:
			return 0, fmt.Sprintf("member %s acts on placement version %d of %d members, want %d", r.Member.Addr, r.Version, r.Placed, n)
		case r.Syncing && len(r.Waiting) > 0:
			return 0, fmt.Sprintf("member %s is still syncing ranges (placement version %d), waiting for removed or departed members %v", r.Member.Addr, r.Version, r.Waiting)
		case r.Syncing:
			return 0, fmt.Sprintf("member %s is still syncing ranges (placement version %d), waiting for no removed member", r.Member.Addr, r.Version)
		case len(r.Waiting) > 0:
			return 0, fmt.Sprintf("member %s has syncs waiting for removed or departed members %v", r.Member.Addr, r.Waiting)
		case i > 0 && r.Version != version:
			return 0, fmt.Sprintf("members act on placement versions %d and %d", version, r.Version)
		}
		version = r.Version
	}
	return version, ""
}

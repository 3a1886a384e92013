package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// removeDeadAfter is the members' Config.Replication.RemoveDeadAfter: how long a
// majority must have seen a member dead before the placement of
// replicated kinds drops it. Short, so a fault held a few seconds longer
// (-hold) outlasts it and the member is removed while down or cut off.
const removeDeadAfter = 3 * time.Second

// maxHoldFactor bounds -hold: at most this many RemoveDeadAfters.
const maxHoldFactor = 10

// holdRange is how long the nemesis holds each fault: a duration drawn
// uniformly from [min, max]. Its flag syntax is "1s..3s", or one
// duration for a fixed hold.
type holdRange struct{ min, max time.Duration }

func (h *holdRange) String() string {
	if h.min == h.max {
		return h.min.String()
	}
	return h.min.String() + ".." + h.max.String()
}

func (h *holdRange) Set(s string) error {
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		hi = lo
	}
	a, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return err
	}
	b, err := time.ParseDuration(strings.TrimSpace(hi))
	if err != nil {
		return err
	}
	switch {
	case a <= 0:
		return fmt.Errorf("hold %s: must be positive", s)
	case b < a:
		return fmt.Errorf("hold %s: the upper bound is below the lower", s)
	case b > maxHoldFactor*removeDeadAfter:
		return fmt.Errorf("hold %s: at most %s (%d × Replication.RemoveDeadAfter %s)", s, maxHoldFactor*removeDeadAfter, maxHoldFactor, removeDeadAfter)
	}
	h.min, h.max = a, b
	return nil
}

// draw picks a hold from the range.
func (h holdRange) draw(rng *rand.Rand) time.Duration {
	if h.max <= h.min {
		return h.min
	}
	return h.min + time.Duration(rng.Int64N(int64(h.max-h.min)))
}

// defaultHold is 1–3 s: shorter than RemoveDeadAfter, so a fault ends
// before the majority removes its member.
var defaultHold = holdRange{min: time.Second, max: 3 * time.Second}

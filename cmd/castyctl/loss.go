package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/casty-go/casty/casty"
)

// waiting prints, for each live full member, the syncs of replicated
// kinds that wait for removed members (casty.System.PlacementStatus).
func (o *options) waiting(ctx context.Context, args []string) error {
	fs := o.flags("waiting")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("waiting takes no arguments")
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	rows, err := sys.PlacementStatus(rctx)
	if err != nil {
		return operatorRole(err)
	}
	if o.json {
		return o.printJSON(rows)
	}
	t := newTable(o.stdout, "ADDRESS", "ID", "VERSION", "LOST", "KIND", "RANGES", "WAITING FOR")
	waiting := map[string]bool{}
	for _, r := range rows {
		if r.Err != "" {
			t.row(r.Member.Addr, r.Member.ID, "?", "?", "-", "-", "error: "+r.Err)
			continue
		}
		version, lost := fmt.Sprint(r.Version), fmt.Sprint(r.LostMembers)
		if len(r.Waiting) == 0 {
			t.row(r.Member.Addr, r.Member.ID, version, lost, "-", "-", "-")
		}
		for _, w := range r.Waiting {
			t.row(r.Member.Addr, r.Member.ID, version, lost, w.Kind, fmt.Sprint(w.Ranges), strings.Join(w.Members, ","))
			for _, id := range w.Members {
				waiting[id] = true
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(waiting) == 0 {
		_, err = fmt.Fprintln(o.stdout, "no sync waits for a removed or departed member")
		return err
	}
	_, err = fmt.Fprintf(o.stdout, "%d member(s) awaited (removed as dead, or departed before their handoff ended): until they come back, no owner serves the keys of those ranges;\n"+
		"if they never will, castyctl accept-loss -yes ID... gives their copies up (writes only they held are lost)\n", len(waiting))
	return err
}

// acceptLossResult is what accept-loss prints with -json.
type acceptLossResult struct {
	Accepted []string     `json:"accepted"` // the member ids whose copies were given up
	Via      casty.Member `json:"via"`      // the full member that ran AcceptLoss
}

// acceptLoss has a full member accept the loss of removed members' copies
// (casty.System.AcceptLossVia).
func (o *options) acceptLoss(ctx context.Context, args []string) error {
	fs := o.flags("accept-loss")
	yes := fs.Bool("yes", false, "confirm: the writes only these members held are lost for good")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("accept-loss takes the ids of the removed or departed members whose copies to give up (castyctl waiting lists them)")
	}
	if !*yes {
		return usagef("accept-loss gives up for good the copies held by %s: writes only they held are lost; "+
			"run it only for members that will never come back with their state, and confirm with -yes", strings.Join(pos, ", "))
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	via, err := sys.AcceptLossVia(rctx, pos...)
	switch {
	case errors.Is(err, casty.ErrNotRemoved):
		return fmt.Errorf("refused: only a member taken out of the placement (removed as dead, or left) can be given up (castyctl waiting lists the members syncs wait for): %w", err)
	case err != nil:
		return operatorRole(err)
	}
	if o.json {
		return o.printJSON(acceptLossResult{Accepted: pos, Via: via})
	}
	for _, id := range pos {
		if _, err := fmt.Fprintf(o.stdout, "accepted the loss of %s's copies (through %s %s)\n", id, via.Addr, via.ID); err != nil {
			return err
		}
	}
	return nil
}

// operatorRole explains casty.ErrForbidden: the credential castyctl
// joined with lacks the operator role.
func operatorRole(err error) error {
	if errors.Is(err, casty.ErrForbidden) {
		return fmt.Errorf("forbidden: this needs the operator role (-operator-secret-file, or -tls-identity with a casty://role/operator certificate): %w", err)
	}
	return err
}

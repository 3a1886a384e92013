package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/inspect"
)

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }
func (t *table) flush() error        { return t.tw.Flush() }

// members prints the member table as a full member sees it, this tool's
// own record left out, and lite members that left (earlier castyctl runs
// among them) unless -all.
func (o *options) members(ctx context.Context, args []string) error {
	fs := o.flags("members")
	all := fs.Bool("all", false, "also list the lite members that left")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("members takes no arguments")
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	_, table, err := sys.MemberTableVia(rctx)
	if err != nil {
		// No full member could say (one of a release without the
		// request): this lite member's own table, which misses members
		// that stopped answering before it joined.
		fmt.Fprintf(o.stderr, "castyctl members: %v; showing this tool's own view\n", err)
		table = sys.MemberTable()
	}
	rows := []inspect.MemberStatus{}
	for _, m := range table {
		if m.ID != sys.ID() && (*all || !m.Lite || m.State != "left") {
			rows = append(rows, m)
		}
	}
	if o.json {
		return o.printJSON(rows)
	}
	t := newTable(o.stdout, "ADDRESS", "ID", "ROLE", "STATE", "FOR", "INCARNATION")
	for _, m := range rows {
		role := "member"
		if m.Lite {
			role = "lite"
		}
		t.row(m.Addr, m.ID, role, m.State, age(m.For), fmt.Sprint(m.Incarnation))
	}
	return t.flush()
}

// age prints how long a record has held its state: tenths of a second
// under a minute, whole seconds above.
func age(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// ring prints the ownership of the key space, or one key's placement.
func (o *options) ring(ctx context.Context, args []string) error {
	fs := o.flags("ring")
	replicas := fs.Int("replicas", 1, "the kind's replica `count` (replicated kinds live on the placement)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 && len(pos) != 2 {
		return usagef("ring takes no arguments, or KIND KEY")
	}
	if *replicas < 1 {
		return usagef("-replicas must be at least 1")
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	if len(pos) == 2 {
		p, _ := sys.Placement(pos[0], pos[1], *replicas)
		if o.json {
			return o.printJSON(p)
		}
		if p.Owner.ID == "" {
			return fmt.Errorf("%s/%s: no live member can serve it (replicas: %d, down: %d)", p.Kind, p.Key, len(p.Replicas), len(p.Down))
		}
		down := map[string]bool{}
		for _, id := range p.Down {
			down[id] = true
		}
		t := newTable(o.stdout, "ROLE", "ADDRESS", "ID", "STATE")
		for _, m := range p.Replicas {
			role, state := "replica", "up"
			if m.ID == p.Owner.ID {
				role = "owner"
			}
			if down[m.ID] {
				state = "down"
			}
			t.row(role, m.Addr, m.ID, state)
		}
		if err := t.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(o.stdout, "point %016x\n", p.Point)
		return err
	}
	rows := sys.Ownership(*replicas)
	if o.json {
		return o.printJSON(rows)
	}
	t := newTable(o.stdout, "ADDRESS", "ID", "RANGES", "SHARE", "HELD")
	for _, r := range rows {
		t.row(r.Member.Addr, r.Member.ID, fmt.Sprint(r.Ranges), fmt.Sprintf("%.1f%%", 100*r.Share), fmt.Sprint(r.Held))
	}
	return t.flush()
}

// state prints the live state of one actor as JSON.
func (o *options) state(ctx context.Context, args []string) error {
	fs := o.flags("state")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("state takes KIND KEY")
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	st, ok, err := sys.StateOf(rctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if !ok {
		return exitError{exitNotFound, fmt.Errorf("%s/%s is not active", pos[0], pos[1])}
	}
	return o.printJSON(jsonable(st))
}

// jsonable turns decoded msgpack (which may hold maps with non-string
// keys) into values encoding/json takes.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// spyEvent is one event as spy prints it in JSON.
type spyEvent struct {
	Time      time.Time `json:"time"`
	Node      string    `json:"node"`
	Event     string    `json:"event"`
	Kind      string    `json:"kind,omitempty"`
	Key       string    `json:"key,omitempty"`
	Seq       uint64    `json:"seq,omitempty"`
	Method    string    `json:"method,omitempty"`
	Duration  string    `json:"duration,omitempty"`
	Changed   bool      `json:"changed,omitempty"`
	Arg       any       `json:"arg,omitempty"`
	Result    any       `json:"result,omitempty"`
	Err       string    `json:"err,omitempty"`
	Directive string    `json:"directive,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Dropped   int       `json:"dropped,omitempty"`
	Member    string    `json:"member,omitempty"`
}

func describe(ev casty.Event) spyEvent {
	i := ev.Info()
	e := spyEvent{Time: i.Time, Node: i.Node, Kind: i.Kind, Key: i.Key, Seq: i.Seq}
	switch ev := ev.(type) {
	case casty.Activated:
		e.Event = "activated"
	case casty.Received:
		e.Event, e.Method, e.Arg = "received", ev.Method, jsonable(ev.Arg)
	case casty.Completed:
		e.Event, e.Method, e.Duration, e.Changed, e.Result = "completed", ev.Method, ev.Duration.String(), ev.Changed, jsonable(ev.Result)
	case casty.Failed:
		e.Event, e.Method, e.Duration, e.Directive = "failed", ev.Method, ev.Duration.String(), ev.Directive.String()
		if ev.Err != nil {
			e.Err = ev.Err.Error()
		}
	case casty.Deactivated:
		e.Event, e.Reason = "deactivated", ev.Reason.String()
	case casty.Lag:
		e.Event, e.Dropped = "lag", ev.Dropped
	case casty.Gap:
		e.Event, e.Member = "gap", ev.Member
	default:
		e.Event = fmt.Sprintf("%T", ev)
	}
	return e
}

// line is the event as one human-readable line.
func (e spyEvent) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-21s  %-11s", e.Time.Format("15:04:05.000"), e.Node, e.Event)
	if e.Kind != "" {
		fmt.Fprintf(&b, "  %s/%s", e.Kind, e.Key)
	}
	if e.Method != "" {
		b.WriteString("." + e.Method)
	}
	add := func(k string, v any) { fmt.Fprintf(&b, "  %s=%v", k, v) }
	payload := func(k string, v any) {
		if v != nil {
			j, _ := json.Marshal(v)
			add(k, string(j))
		}
	}
	payload("arg", e.Arg)
	if e.Duration != "" {
		add("took", e.Duration)
	}
	if e.Changed {
		add("changed", true)
	}
	payload("result", e.Result)
	if e.Err != "" {
		add("err", fmt.Sprintf("%q", e.Err))
	}
	if e.Directive != "" {
		add("directive", e.Directive)
	}
	if e.Reason != "" {
		add("reason", e.Reason)
	}
	if e.Dropped != 0 {
		add("dropped", e.Dropped)
	}
	if e.Member != "" {
		add("member", e.Member)
	}
	return b.String()
}

// spy tails the cluster's lifecycle events.
func (o *options) spy(ctx context.Context, args []string) error {
	fs := o.flags("spy")
	kind := fs.String("kind", "", "kind `glob` (path.Match); empty matches all")
	key := fs.String("key", "", "key `glob` (path.Match); empty matches all")
	payloads := fs.Bool("payloads", false, "include arguments and results")
	count := fs.Int("n", 0, "stop after `N` events (0: until interrupted)")
	dur := fs.Duration("for", 0, "stop after this `duration` (0: until interrupted)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("spy takes no arguments (select with -kind and -key)")
	}
	sys, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer o.release(sys)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *dur > 0 {
		sctx, cancel = context.WithTimeout(sctx, *dur)
		defer cancel()
	}
	events, err := sys.Spy(sctx, casty.SpyFilter{Kind: *kind, Key: *key, Payloads: *payloads, Scope: casty.ScopeCluster})
	if err != nil {
		return err
	}
	if o.spyReady != nil {
		o.spyReady()
	}
	enc := json.NewEncoder(o.stdout)
	n := 0
	for ev := range events {
		e := describe(ev)
		if o.json {
			err = enc.Encode(e)
		} else {
			_, err = fmt.Fprintln(o.stdout, e.line())
		}
		if err != nil {
			return err
		}
		if n++; *count > 0 && n >= *count {
			break
		}
	}
	return nil
}

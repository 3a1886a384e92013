package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// callTimeout bounds each workload call: a call to a stopped or cut-off
// owner ends as indeterminate after it.
const callTimeout = 2 * time.Second

// workload is one kind of traffic and the check that judges it.
type workload interface {
	name() string
	// op runs one operation of client, choosing with rng.
	op(ctx context.Context, client int, rng *rand.Rand)
	// probe reads every key once, outside the checked history: settle
	// waits until it succeeds.
	probe(ctx context.Context) error
	// final reads the end state, after every fault is healed, and
	// judges the run.
	final(ctx context.Context) row
}

// probeKeys reads each of n keys with read, each call bounded by
// callTimeout, and returns the first failure.
func probeKeys(ctx context.Context, n int, read func(ctx context.Context, i int) error) error {
	for i := range n {
		if _, err := call(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, read(ctx, i) }); err != nil {
			return err
		}
	}
	return nil
}

func (w *registerWorkload) probe(ctx context.Context) error {
	return probeKeys(ctx, w.keys, func(ctx context.Context, i int) error {
		_, err := casty.Call0(ctx, w.kinds.registers.Ref(w.sys, fmt.Sprint("reg-", i)), (*Register).Get)
		return err
	})
}

func (w *setWorkload) probe(ctx context.Context) error {
	return probeKeys(ctx, setKeys, func(ctx context.Context, i int) error {
		_, err := casty.Call0(ctx, w.kinds.sets.Ref(w.sys, fmt.Sprint("set-", i)), (*Set).All)
		return err
	})
}

func (w *counterWorkload) probe(ctx context.Context) error {
	return probeKeys(ctx, counterKeys, func(ctx context.Context, i int) error {
		_, err := casty.Call0(ctx, w.kinds.counters.Ref(w.sys, fmt.Sprint("ctr-", i)), (*Counter).Get)
		return err
	})
}

func (w *ledgerWorkload) probe(ctx context.Context) error {
	return probeKeys(ctx, 1, func(ctx context.Context, _ int) error {
		_, err := casty.Call0(ctx, w.ref(), (*Ledger).Audit)
		return err
	})
}

// row is a workload's line in the summary.
type row struct {
	workload                       string
	ops, ok, failed, indeterminate int64
	lost                           int64
	linearizable                   string // "yes", "no", "unknown", or "-" when not checked
	pass                           bool
	detail                         string
	failures                       string // the definite failures' errors, counted, "" when none
}

// tally counts a workload's outcomes, and each definite failure's error
// (so a person can tell what failed).
type tally struct {
	ops, ok, failed, indeterminate atomic.Int64

	mu    sync.Mutex
	fails map[string]int
}

// maxFailureKinds bounds the distinct errors a tally keeps.
const maxFailureKinds = 8

// outcome classifies err and counts it: nil is ok, castytest.Indeterminate
// is indeterminate, anything else a definite failure.
func (t *tally) outcome(err error) outcomeKind {
	t.ops.Add(1)
	switch {
	case err == nil:
		t.ok.Add(1)
		return done
	case castytest.Indeterminate(err):
		t.indeterminate.Add(1)
		return unknown
	default:
		t.failed.Add(1)
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		t.mu.Lock()
		if t.fails == nil {
			t.fails = map[string]int{}
		}
		if _, ok := t.fails[msg]; ok || len(t.fails) < maxFailureKinds {
			t.fails[msg]++
		}
		t.mu.Unlock()
		return failed
	}
}

func (t *tally) row(name string) row {
	r := row{workload: name, ops: t.ops.Load(), ok: t.ok.Load(), failed: t.failed.Load(), indeterminate: t.indeterminate.Load()}
	t.mu.Lock()
	var parts []string
	for msg, n := range t.fails {
		parts = append(parts, fmt.Sprintf("%d× %s", n, msg))
	}
	t.mu.Unlock()
	slices.Sort(parts)
	r.failures = strings.Join(parts, "; ")
	return r
}

type outcomeKind int

const (
	done outcomeKind = iota
	unknown
	failed
)

// call runs f with the per-call timeout.
func call[R any](ctx context.Context, f func(ctx context.Context) (R, error)) (R, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return f(ctx)
}

// retryFinal runs f until it succeeds or ctx ends: the end-of-run reads
// happen after healing, while keys may still be moving.
func retryFinal[R any](ctx context.Context, f func(ctx context.Context) (R, error)) (R, error) {
	return retryWithin(ctx, callTimeout, f)
}

// retryWithin is retryFinal with each attempt bounded by per instead of
// callTimeout.
func retryWithin[R any](ctx context.Context, per time.Duration, f func(ctx context.Context) (R, error)) (R, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, per)
		r, err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// uniqueValue is client's seq-th value: positive and never repeated.
func uniqueValue(client int, seq int64) int64 { return int64(client+1)*1_000_000_000 + seq }

// ---- register ----

type registerOp = castytest.RegisterOp[int64]
type registerResult = castytest.RegisterResult[int64]

// registerWorkload reads, writes and compares-and-sets a few registers,
// records every call and checks the history with porcupine.
type registerWorkload struct {
	kinds   kinds
	sys     *casty.System
	keys    int // registers
	logDir  string
	history *castytest.History[registerOp, registerResult]
	t       tally
	seq     []atomic.Int64 // per client
	lastSeen
	// relay is the share of operations sent through a member (Relay)
	// rather than called from the lite member; relayed and early count
	// them, and those during which the member answered a call early.
	relay          float64
	relayed, early atomic.Int64
}

func newRegisterWorkload(k kinds, sys *casty.System, keys, clients int, relay float64, logDir string) *registerWorkload {
	return &registerWorkload{kinds: k, sys: sys, keys: keys, logDir: logDir, seq: make([]atomic.Int64, clients),
		history: castytest.NewHistory[registerOp, registerResult](), relay: relay}
}

// viaRelay runs op through a member's Relay and returns the register's
// answer with an error classed as the member saw its call: indeterminate
// (casty.ErrActorUnavailable wrapped) or a definite failure.
func (w *registerWorkload) viaRelay(ctx context.Context, op RelayOp) (RelayResult, error) {
	res, err := call(ctx, func(ctx context.Context) (RelayResult, error) {
		return casty.Call(ctx, w.kinds.relays.Ref(w.sys), (*Relay).Do, op)
	})
	if err != nil {
		return res, err
	}
	w.relayed.Add(1)
	if res.Early {
		w.early.Add(1)
	}
	switch res.Outcome {
	case relayUnknown:
		return res, fmt.Errorf("%w: the relaying member's call: %s", casty.ErrActorUnavailable, res.Err)
	case relayFailed:
		return res, errors.New("castychaos: the relaying member's call failed: " + res.Err)
	}
	return res, nil
}

type lastKey struct {
	client int
	key    string
}

func (w *registerWorkload) name() string { return "register" }

func (w *registerWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	key := fmt.Sprint("reg-", rng.IntN(w.keys))
	ref := w.kinds.registers.Ref(w.sys, key)
	relay := w.relay > 0 && rng.Float64() < w.relay
	switch rng.IntN(3) {
	case 0:
		p := w.history.Begin(client, castytest.ReadOp[int64](key))
		v, err := call(ctx, func(ctx context.Context) (int64, error) {
			if relay {
				res, err := w.viaRelay(ctx, RelayOp{Key: key, Kind: relayGet})
				return res.Value, err
			}
			return casty.Call0(ctx, ref, (*Register).Get)
		})
		w.end(p, castytest.Read(v), err)
		if err == nil {
			w.remember(client, key, v)
		}
	case 1:
		v := uniqueValue(client, w.seq[client].Add(1))
		p := w.history.Begin(client, castytest.WriteOp(key, v))
		_, err := call(ctx, func(ctx context.Context) (struct{}, error) {
			if relay {
				_, err := w.viaRelay(ctx, RelayOp{Key: key, Kind: relaySet, Value: v})
				return struct{}{}, err
			}
			return struct{}{}, casty.Do(ctx, ref, (*Register).Set, v)
		})
		w.end(p, castytest.Written[int64](), err)
		if err == nil {
			w.remember(client, key, v)
			w.kinds.acks.acked(w.kinds.registers.Name(), key)
		}
	default:
		old, v := w.recall(client, key), uniqueValue(client, w.seq[client].Add(1))
		p := w.history.Begin(client, castytest.CASOp(key, old, v))
		ok, err := call(ctx, func(ctx context.Context) (bool, error) {
			if relay {
				res, err := w.viaRelay(ctx, RelayOp{Key: key, Kind: relayCAS, Old: old, Value: v})
				return res.OK, err
			}
			return casty.Call(ctx, ref, (*Register).CAS, Swap{Old: old, New: v})
		})
		w.end(p, castytest.Swapped[int64](ok), err)
		if err == nil && ok {
			w.kinds.acks.acked(w.kinds.registers.Name(), key)
		}
	}
}

func (w *registerWorkload) end(p castytest.Pending[registerOp, registerResult], out registerResult, err error) {
	endRegisterOp(&w.t, p, out, err)
}

// endRegisterOp counts a register operation's outcome in t and ends its
// pending record as the outcome says: returned, unknown or failed.
func endRegisterOp(t *tally, p castytest.Pending[registerOp, registerResult], out registerResult, err error) {
	switch t.outcome(err) {
	case done:
		p.Return(out, nil)
	case unknown:
		p.Unknown()
	default:
		p.Fail()
	}
}

// lastSeen is the last value each client saw or wrote in each register,
// which its next compare-and-set expects.
type lastSeen struct {
	mu   sync.Mutex
	last map[lastKey]int64
}

func (l *lastSeen) remember(client int, key string, v int64) {
	l.mu.Lock()
	if l.last == nil {
		l.last = map[lastKey]int64{}
	}
	l.last[lastKey{client, key}] = v
	l.mu.Unlock()
}

func (l *lastSeen) recall(client int, key string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[lastKey{client, key}]
}

// final reads every register once more, then checks the history. Lost
// counts reads that returned the initial value 0 although a write or a
// successful CAS to that register (never of 0) had been acknowledged
// before the read was called: the register forgot an acknowledged write.
func (w *registerWorkload) final(ctx context.Context) row {
	for i := range w.keys {
		key := fmt.Sprint("reg-", i)
		ref := w.kinds.registers.Ref(w.sys, key)
		p := w.history.Begin(len(w.seq), castytest.ReadOp[int64](key)) // a client of its own
		v, err := retryFinal(ctx, func(ctx context.Context) (int64, error) { return casty.Call0(ctx, ref, (*Register).Get) })
		w.end(p, castytest.Read(v), err)
	}
	r := w.t.row(w.name())
	ops := w.history.Ops()
	res := judgeRegisters(&r, ops)
	r.detail = fmt.Sprintf("%d operations on %d registers checked (%d indeterminate, %d of them reads, which constrain nothing); %d reads saw the initial value after an acknowledged write; %d ran through a member (Relay), %d of them while it answered a call early",
		res.Ops, w.keys, res.Indeterminate, res.LeftOut, r.lost, w.relayed.Load(), w.early.Load())
	r.detail += undecided(res, ops, w.logDir+"/register.html")
	return r
}

// judgeRegisters judges a history of registers whose initial value is 0
// and that are never written 0: it sets r's lost (reads that returned 0
// although a write or a successful CAS to that register had been
// acknowledged before the read was called), linearizable (porcupine's
// verdict, within 60 s) and pass, and returns porcupine's result.
func judgeRegisters(r *row, ops []castytest.Op[registerOp, registerResult]) castytest.Result {
	firstAck := map[string]time.Duration{}
	for _, op := range ops {
		acked := !op.Indeterminate && (op.Input.Kind == castytest.RegisterWrite || op.Input.Kind == castytest.RegisterCAS && op.Output.OK)
		if t, seen := firstAck[op.Input.Key]; acked && (!seen || op.Return < t) {
			firstAck[op.Input.Key] = op.Return
		}
	}
	for _, op := range ops {
		if t, seen := firstAck[op.Input.Key]; seen && !op.Indeterminate && op.Input.Kind == castytest.RegisterRead &&
			op.Output.Value == 0 && op.Call > t {
			r.lost++
		}
	}
	res := castytest.Verify(castytest.RegisterModel[int64](0), ops, 60*time.Second)
	switch res.Verdict {
	case castytest.Linearizable:
		r.linearizable = "yes"
	case castytest.NotLinearizable:
		r.linearizable = "no"
	default:
		r.linearizable = "unknown"
	}
	r.pass = res.Ok() && r.lost == 0
	return res
}

// undecided says, for a history not found linearizable, which registers
// were and which were not (or could not be decided), and writes
// porcupine's visualisation to html; "" for a linearizable history.
func undecided(res castytest.Result, ops []castytest.Op[registerOp, registerResult], html string) string {
	if res.Ok() {
		return ""
	}
	out := "; each register on its own: " + verifyEach(ops)
	if err := res.WriteHTML(html); err == nil {
		out += "; visualisation: " + html
	}
	return out
}

// verifyEach checks each register's history on its own, all at once and
// each within 60 s, and says which were decided which way: when the
// whole history is not found linearizable, it tells the registers that
// were from those that were not, or could not be decided.
func verifyEach(ops []castytest.Op[registerOp, registerResult]) string {
	byKey := map[string][]castytest.Op[registerOp, registerResult]{}
	for _, op := range ops {
		byKey[op.Input.Key] = append(byKey[op.Input.Key], op)
	}
	keys := slices.Sorted(maps.Keys(byKey))
	results := make([]castytest.Result, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { results[i] = castytest.Verify(castytest.RegisterModel[int64](0), byKey[k], 60*time.Second) })
	}
	wg.Wait()
	yes := 0
	var others []string
	for i, k := range keys {
		res := results[i]
		if res.Ok() {
			yes++
			continue
		}
		others = append(others, fmt.Sprintf("%s %s (%d operations, %d indeterminate)", k, res.Verdict, res.Ops, res.Indeterminate))
	}
	out := fmt.Sprintf("%d of %d linearizable", yes, len(keys))
	if len(others) > 0 {
		out += ", " + strings.Join(others, ", ")
	}
	return out
}

// ---- set ----

const setKeys = 2

// setWorkload adds unique elements to grow-only sets; at the end every
// acknowledged add must be present, and nothing never added.
type setWorkload struct {
	kinds kinds
	sys   *casty.System
	t     tally
	seq   []atomic.Int64
	mu    sync.Mutex
	acked map[string][]int64
	tried map[string]map[int64]bool
}

func newSetWorkload(k kinds, sys *casty.System, clients int) *setWorkload {
	return &setWorkload{kinds: k, sys: sys, seq: make([]atomic.Int64, clients), acked: map[string][]int64{}, tried: map[string]map[int64]bool{}}
}

func (w *setWorkload) name() string { return "set" }

func (w *setWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	key := fmt.Sprint("set-", rng.IntN(setKeys))
	e := uniqueValue(client, w.seq[client].Add(1))
	w.mu.Lock()
	if w.tried[key] == nil {
		w.tried[key] = map[int64]bool{}
	}
	w.tried[key][e] = true
	w.mu.Unlock()
	_, err := call(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, casty.Do(ctx, w.kinds.sets.Ref(w.sys, key), (*Set).Add, e)
	})
	if w.t.outcome(err) == done {
		w.mu.Lock()
		w.acked[key] = append(w.acked[key], e)
		w.mu.Unlock()
		w.kinds.acks.acked(w.kinds.sets.Name(), key)
	}
}

func (w *setWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable, r.pass = "-", true
	var acked, unexpected int64
	for i := range setKeys {
		key := fmt.Sprint("set-", i)
		all, err := retryFinal(ctx, func(ctx context.Context) ([]int64, error) {
			return casty.Call0(ctx, w.kinds.sets.Ref(w.sys, key), (*Set).All)
		})
		if err != nil {
			r.pass, r.detail = false, fmt.Sprintf("final read of %s failed: %v", key, err)
			return r
		}
		have := map[int64]bool{}
		for _, e := range all {
			have[e] = true
			if !w.tried[key][e] {
				unexpected++
			}
		}
		for _, e := range w.acked[key] {
			acked++
			if !have[e] {
				r.lost++
			}
		}
	}
	r.pass = r.lost == 0 && unexpected == 0
	r.detail = fmt.Sprintf("%d acknowledged adds, %d missing at the end, %d elements never added", acked, r.lost, unexpected)
	return r
}

// ---- counter ----

const counterKeys = 2

// counterWorkload increments counters; the final value must lie within
// [acknowledged, acknowledged + indeterminate] increments.
type counterWorkload struct {
	kinds kinds
	sys   *casty.System
	t     tally
	acked [counterKeys]atomic.Int64
	indet [counterKeys]atomic.Int64
}

func (w *counterWorkload) name() string { return "counter" }

func (w *counterWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	i := rng.IntN(counterKeys)
	key := fmt.Sprint("ctr-", i)
	ref := w.kinds.counters.Ref(w.sys, key)
	_, err := call(ctx, func(ctx context.Context) (int64, error) { return casty.Call(ctx, ref, (*Counter).Add, 1) })
	switch w.t.outcome(err) {
	case done:
		w.acked[i].Add(1)
		w.kinds.acks.acked(w.kinds.counters.Name(), key)
	case unknown:
		w.indet[i].Add(1)
	}
}

func (w *counterWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable, r.pass = "-", true
	for i := range counterKeys {
		key := fmt.Sprint("ctr-", i)
		v, err := retryFinal(ctx, func(ctx context.Context) (int64, error) {
			return casty.Call0(ctx, w.kinds.counters.Ref(w.sys, key), (*Counter).Get)
		})
		if err != nil {
			r.pass, r.detail = false, fmt.Sprintf("final read of %s failed: %v", key, err)
			return r
		}
		lo, hi := w.acked[i].Load(), w.acked[i].Load()+w.indet[i].Load()
		if v < lo {
			r.lost += lo - v
		}
		if v < lo || v > hi {
			r.pass = false
		}
		r.detail += fmt.Sprintf("%s = %d, want [%d, %d]; ", key, v, lo, hi)
	}
	r.detail = strings.TrimSuffix(r.detail, "; ")
	return r
}

// ---- ledger ----

// ledgerWorkload moves money between the accounts of one Ledger actor and
// audits it: the total must always be ledgerTotal, and the transfers it
// counts at the end must lie within [acknowledged, acknowledged +
// indeterminate] applied transfers.
type ledgerWorkload struct {
	kinds   kinds
	sys     *casty.System
	t       tally
	applied atomic.Int64
	indet   atomic.Int64
	mu      sync.Mutex
	badSums []int64
}

func (w *ledgerWorkload) name() string { return "ledger" }

// ledgerKey is the ledger workload's one actor.
const ledgerKey = "ledger-0"

func (w *ledgerWorkload) ref() casty.Ref[Ledger] { return w.kinds.ledgers.Ref(w.sys, ledgerKey) }

func (w *ledgerWorkload) op(ctx context.Context, client int, rng *rand.Rand) {
	if rng.IntN(5) == 0 {
		a, err := call(ctx, func(ctx context.Context) (Audit, error) { return casty.Call0(ctx, w.ref(), (*Ledger).Audit) })
		if w.t.outcome(err) == done && a.Total != ledgerTotal {
			w.mu.Lock()
			w.badSums = append(w.badSums, a.Total)
			w.mu.Unlock()
		}
		return
	}
	t := Transfer{From: account(rng.IntN(ledgerAccounts)), To: account(rng.IntN(ledgerAccounts)), Amount: 1 + rng.Int64N(100)}
	rc, err := call(ctx, func(ctx context.Context) (Receipt, error) { return casty.Call(ctx, w.ref(), (*Ledger).Transfer, t) })
	switch w.t.outcome(err) {
	case done:
		if rc.Applied {
			w.applied.Add(1)
			w.kinds.acks.acked(w.kinds.ledgers.Name(), ledgerKey)
		}
	case unknown:
		w.indet.Add(1)
	}
}

func (w *ledgerWorkload) final(ctx context.Context) row {
	r := w.t.row(w.name())
	r.linearizable = "-"
	a, err := retryFinal(ctx, func(ctx context.Context) (Audit, error) { return casty.Call0(ctx, w.ref(), (*Ledger).Audit) })
	if err != nil {
		r.detail = fmt.Sprintf("final audit failed: %v", err)
		return r
	}
	w.mu.Lock()
	bad := append(w.badSums, []int64{}...)
	w.mu.Unlock()
	if a.Total != ledgerTotal {
		bad = append(bad, a.Total)
	}
	lo, hi := w.applied.Load(), w.applied.Load()+w.indet.Load()
	if a.Transfers < lo {
		r.lost = lo - a.Transfers
	}
	r.pass = len(bad) == 0 && a.Transfers >= lo && a.Transfers <= hi
	r.detail = fmt.Sprintf("total %d (want %d; %d audits saw another); %d transfers applied, want [%d, %d]", a.Total, ledgerTotal, len(bad), a.Transfers, lo, hi)
	return r
}

var errNoWorkload = errors.New("castychaos: no workload selected")

package virtual_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
	"github.com/casty-go/casty/ring"
	"github.com/vmihailenco/msgpack/v5"
)

// A workload is one collection's part of a run, a small self-contained
// unit: start opens it and starts its clients (inside the bubble, before
// the schedule); final reads back what check needs (inside the bubble,
// once the schedule has ended, the clients have stopped and the cluster
// has settled or given up); check judges it (after the bubble, where
// porcupine's timeout is real time). A new collection's workload is one
// more type and one more entry in workloads (queuelock_test.go holds the
// queue's and the lock's).
type workload interface {
	name() string
	start(r *rig)
	final(r *rig, deadline time.Time)
	check(j judge) verdict
}

// judge is what a check is told of the run.
type judge struct {
	// vis is the file where a history checker may write a visualisation
	// of a failing history.
	vis string
	// settled: the cluster settled after the schedule. A read that never
	// answers then fails the seed; in a cluster that did not (its syncs
	// wait for the copies of members removed as dead, as casty's safety
	// rule has them, until an operator accepts the loss) it leaves what
	// it would have read unverified.
	settled bool
}

// verdict is a workload's outcome for one seed.
type verdict struct {
	summary      string   // one line: what the clients did and what was found
	failures     []string // each a broken guarantee: any fails the seed
	unverified   []string // reads that never answered in an unsettled cluster
	inconclusive bool     // a checker could not decide in its time (not a failure)
}

// unanswered records reads that never answered: a failure if the cluster
// settled, writes left unverified if not.
func (v *verdict) unanswered(j judge, what string) {
	if j.settled {
		v.failures = append(v.failures, what)
	} else {
		v.unverified = append(v.unverified, what)
	}
}

// workloads are the workloads every seed runs, fresh, the costliest check
// (porcupine's) last: all of them, or those CASTY_COLLECTION_WORKLOADS
// names (comma-separated: set, counter, map, queue, lock, register), to
// replay one alone.
func workloads() []workload {
	all := []workload{&setLoad{}, &counterLoad{}, &mapLoad{}, &queueLoad{}, &lockLoad{}, newRegisterLoad()}
	only := os.Getenv("CASTY_COLLECTION_WORKLOADS")
	if only == "" {
		return all
	}
	names := strings.Split(only, ",")
	return slices.DeleteFunc(all, func(l workload) bool { return !slices.Contains(names, l.name()) })
}

// outcomes sorts a workload's writes by what their callers were told:
// acknowledged, indeterminate (castytest.Indeterminate: it may or may not
// have taken effect), or refused definitely (it took none).
type outcomes[K comparable, V any] struct {
	mu                    sync.Mutex
	acked, maybe, refused map[K]V
	when                  map[K][2]time.Duration // an acknowledged write's call and return, in schedule time
	why                   map[string]int         // refusals, by message
}

// note records the outcome of the write of k (v) called at began and
// returned at ended, in schedule time (rig.since).
func (o *outcomes[K, V]) note(k K, v V, began, ended time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.acked == nil {
		o.acked, o.maybe, o.refused, o.why = map[K]V{}, map[K]V{}, map[K]V{}, map[string]int{}
		o.when = map[K][2]time.Duration{}
	}
	switch {
	case err == nil:
		o.acked[k] = v
		o.when[k] = [2]time.Duration{began, ended}
	case castytest.Indeterminate(err):
		o.maybe[k] = v
	default:
		o.refused[k] = v
		o.why[short(err)]++
	}
}

// at lists at most 10 of ks with when each was acknowledged, in
// schedule time, to set beside the schedule.
func (o *outcomes[K, V]) at(ks []K) string {
	var b strings.Builder
	for i, k := range ks {
		if i == 10 {
			fmt.Fprintf(&b, " … (%d in all)", len(ks))
			break
		}
		w := o.when[k]
		fmt.Fprintf(&b, " %v (%v–%v)", k, w[0].Round(time.Millisecond), w[1].Round(time.Millisecond))
	}
	return "[" + strings.TrimPrefix(b.String(), " ") + "]"
}

// counts renders the outcomes' sizes.
func (o *outcomes[K, V]) counts() string {
	return fmt.Sprintf("%d acknowledged, %d indeterminate, %d refused", len(o.acked), len(o.maybe), len(o.refused))
}

// short is an error's message cut to a line's worth.
func short(err error) string {
	s := err.Error()
	return s[:min(len(s), 120)]
}

// errNote renders err as a note for a message, or nothing.
func errNote(err error) string {
	if err == nil {
		return ""
	}
	return "; last error: " + short(err)
}

// upTo lists at most 10 of xs, sorted, for a failure message.
func upTo[T any](xs []T) string {
	if len(xs) > 10 {
		return fmt.Sprintf("%v … (%d in all)", xs[:10], len(xs))
	}
	return fmt.Sprint(xs)
}

// unique is client's i-th unique value: never 0 (an unset register's
// value) and never the same for two operations of a run.
func unique(client, i int) int { return (client+1)*1_000_000 + i }

// shardOf is the shard of a collection of collections.DefaultShards
// shards that item lives on, by the collections' own rule: the hash of its
// msgpack encoding (ring.HashString) modulo the shard count. Only the
// diagnosis of missing items relies on it, and the set's check verifies it
// against the order Items lists elements in (shard by shard).
func shardOf(item any) int {
	b, err := msgpack.Marshal(item)
	if err != nil {
		panic(err)
	}
	return int(ring.HashString(string(b)) % collections.DefaultShards)
}

// deadShards remembers the shards a read-back gave up on, so that the
// other items of a shard left waiting (in a cluster that did not settle)
// fail at once instead of each waiting out the deadline again.
type deadShards struct {
	mu   sync.Mutex
	dead map[int]error
}

// retry is retry for a read of item, unless item's shard was given up on.
func (d *deadShards) retry(deadline time.Time, item any, read func(context.Context) error) error {
	sh := shardOf(item)
	d.mu.Lock()
	err, gone := d.dead[sh]
	d.mu.Unlock()
	if gone {
		return err
	}
	if err = retry(deadline, read); err != nil { // only once the deadline has passed
		d.mu.Lock()
		if d.dead == nil {
			d.dead = map[int]error{}
		}
		d.dead[sh] = err
		d.mu.Unlock()
	}
	return err
}

// diagnose tells why acknowledged items of a sharded collection read as
// absent. A read (Read(One)) is answered by the shard's owner from its
// activation without asking the replicas, so an activation left over
// from before the owner lost and regained the key answers from a stale
// state until it next writes: its commit is then refused (its ballot is
// below the replicas' promise) and the activation discarded. So diagnose
// writes a probe item of its own (never one of missing) to each shard of
// missing, through write, and reads missing again through read: an item
// read now was in the replicas all along (stale), one still absent is
// lost (gone).
func diagnose[T comparable](missing []T, write func(context.Context, T) error, read func(context.Context, T) (bool, error)) (stale, gone []T, err error) {
	deadline := time.Now().Add(readBackWithin)
	shards := map[int]bool{}
	for _, v := range missing {
		shards[shardOf(v)] = true
	}
	var probe T
	for sh := range shards {
		for i := 0; ; i++ {
			if p, ok := any(fmt.Sprintf("probe-%d", i)).(T); ok {
				probe = p
			} else if p, ok := any(-1 - i).(T); ok {
				probe = p
			}
			if shardOf(probe) == sh {
				break
			}
		}
		if e := retry(deadline, func(ctx context.Context) error { return write(ctx, probe) }); e != nil {
			err = e
		}
	}
	for _, v := range missing {
		var in bool
		e := retry(deadline, func(ctx context.Context) (err error) {
			in, err = read(ctx, v)
			return err
		})
		switch {
		case e != nil:
			err = e
		case in:
			stale = append(stale, v)
		default:
			gone = append(gone, v)
		}
	}
	return stale, gone, err
}

// diagnosis renders diagnose's findings.
func diagnosis[T any](stale, gone []T, err error) string {
	return fmt.Sprintf("after a probe write to each of their shards, %d read back (a stale read: %s) and %d are still absent (lost: %s)%s",
		len(stale), upTo(stale), len(gone), upTo(gone), errNote(err))
}

// ---- Set ----------------------------------------------------------------

// setLoad: clients Add unique elements. Afterwards every acknowledged Add
// is Contained and listed by Items, and nothing listed was never added
// (or was refused definitely).
type setLoad struct {
	sets   *opener[*collections.Set[int]]
	adds   outcomes[int, struct{}]
	notNew atomic.Int64 // acknowledged Adds that answered "present already"

	missing   []int // acknowledged, and Contains says no
	unread    []int // acknowledged, and Contains never answered
	readErr   error
	listed    map[int]bool
	order     []int // as Items listed them
	listErr   error
	refusedIn []int // refused definitely, and Contains says yes
	// Of missing, once a write to each of their shards has fenced any
	// stale activation: stale those read now, gone those still absent.
	stale, gone []int
	diagErr     error
}

func (l *setLoad) name() string { return "set" }

func (l *setLoad) start(r *rig) {
	l.sets = newOpener(r.t, func(sys *casty.System) (*collections.Set[int], error) {
		return collections.NewSet[int](sys, "virtual-set")
	})
	r.clients(func(ctx context.Context, client, i int) {
		s, ok := l.sets.on(r.via(client, i))
		if !ok {
			return
		}
		v := unique(client, i)
		began := r.since()
		added, err := s.Add(ctx, v)
		if err == nil && !added {
			l.notNew.Add(1)
		}
		l.adds.note(v, struct{}{}, began, r.since(), err)
	})
}

func (l *setLoad) final(r *rig, deadline time.Time) {
	s, ok := l.sets.on(r.lite)
	if !ok {
		return
	}
	var mu sync.Mutex
	var dead deadShards
	contains := func(refused bool) func(int) {
		return func(v int) {
			var in bool
			err := dead.retry(deadline, v, func(ctx context.Context) (err error) {
				in, err = s.Contains(ctx, v)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && !refused:
				l.unread, l.readErr = append(l.unread, v), err
			case err == nil && !refused && !in:
				l.missing = append(l.missing, v)
			case err == nil && refused && in:
				l.refusedIn = append(l.refusedIn, v)
			}
		}
	}
	inParallel(slices.Sorted(maps.Keys(l.adds.acked)), contains(false))
	inParallel(slices.Sorted(maps.Keys(l.adds.refused)), contains(true))
	l.listErr = retry(deadline, func(ctx context.Context) error {
		l.listed, l.order = map[int]bool{}, nil
		for v, err := range s.Items(ctx) {
			if err != nil {
				return err
			}
			l.listed[v] = true
			l.order = append(l.order, v)
		}
		return nil
	})
	slices.Sort(l.missing)
	slices.Sort(l.unread)
	slices.Sort(l.refusedIn)
	// Reads of a lost element's shard may have been answered by a stale
	// activation: l.stale and l.gone tell.
	if len(l.missing) > 0 {
		l.stale, l.gone, l.diagErr = diagnose(l.missing,
			func(ctx context.Context, probe int) error { _, err := s.Add(ctx, probe); return err },
			func(ctx context.Context, v int) (bool, error) { return s.Contains(ctx, v) })
	}
}

func (l *setLoad) check(j judge) verdict {
	var v verdict
	if len(l.missing) > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d acknowledged Adds missing (Contains says no), acknowledged at (schedule time) %s; %s",
			len(l.missing), l.adds.at(l.missing), diagnosis(l.stale, l.gone, l.diagErr)))
	}
	if len(l.unread) > 0 {
		v.unanswered(j, fmt.Sprintf("%d acknowledged Adds could not be read back within %v: %s; last error: %v", len(l.unread), readBackWithin, upTo(l.unread), l.readErr))
	}
	if len(l.refusedIn) > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d Adds refused definitely took effect: %s", len(l.refusedIn), upTo(l.refusedIn)))
	}
	var unlisted, stray []int
	if l.listErr != nil {
		v.unanswered(j, fmt.Sprintf("Items failed for %v: %v", readBackWithin, l.listErr))
	} else {
		for x := range l.adds.acked {
			if !l.listed[x] {
				unlisted = append(unlisted, x)
			}
		}
		for x := range l.listed {
			if _, ok := l.adds.acked[x]; ok {
				continue
			}
			if _, ok := l.adds.maybe[x]; !ok {
				stray = append(stray, x)
			}
		}
		slices.Sort(unlisted)
		slices.Sort(stray)
		for i := 1; i < len(l.order); i++ {
			if shardOf(l.order[i-1]) > shardOf(l.order[i]) {
				v.failures = append(v.failures, fmt.Sprintf("Items lists %d before %d, whose shards by the test's shardOf are %d and %d: shardOf no longer follows the collections' sharding",
					l.order[i-1], l.order[i], shardOf(l.order[i-1]), shardOf(l.order[i])))
				break
			}
		}
		if len(unlisted) > 0 {
			v.failures = append(v.failures, fmt.Sprintf("%d acknowledged Adds not listed by Items: %s", len(unlisted), upTo(unlisted)))
		}
		if len(stray) > 0 {
			v.failures = append(v.failures, fmt.Sprintf("Items lists %d elements never added (or refused): %s", len(stray), upTo(stray)))
		}
	}
	v.summary = fmt.Sprintf("Adds %s (%d acknowledged as present already); Items lists %d; %d missing, %d unlisted, %d unread, %d stray",
		l.adds.counts(), l.notNew.Load(), len(l.listed), len(l.missing), len(unlisted), len(l.unread), len(stray))
	if len(l.adds.why) > 0 {
		v.summary += fmt.Sprintf("; refusals: %v", l.adds.why)
	}
	if len(l.adds.acked) == 0 {
		v.failures = append(v.failures, "no Add was acknowledged: the workload proves nothing")
	}
	return v
}

// ---- Counter --------------------------------------------------------------

// counterLoad: clients Add 1 to a counter of 8 stripes. Afterwards Get is
// at least the acknowledged adds and at most those plus the indeterminate
// ones.
type counterLoad struct {
	counters              *opener[*collections.Counter]
	acked, maybe, refused atomic.Int64
	got                   int64
	err                   error
}

func (l *counterLoad) name() string { return "counter" }

func (l *counterLoad) start(r *rig) {
	l.counters = newOpener(r.t, func(sys *casty.System) (*collections.Counter, error) {
		return collections.NewCounter(sys, "virtual-counter", collections.Shards(8))
	})
	r.clients(func(ctx context.Context, client, i int) {
		c, ok := l.counters.on(r.via(client, i))
		if !ok {
			return
		}
		switch err := c.Add(ctx, 1); {
		case err == nil:
			l.acked.Add(1)
		case castytest.Indeterminate(err):
			l.maybe.Add(1)
		default:
			l.refused.Add(1)
		}
	})
}

func (l *counterLoad) final(r *rig, deadline time.Time) {
	c, ok := l.counters.on(r.lite)
	if !ok {
		l.err = errors.New("not opened")
		return
	}
	l.err = retry(deadline, func(ctx context.Context) (err error) {
		l.got, err = c.Get(ctx)
		return err
	})
}

func (l *counterLoad) check(j judge) verdict {
	acked, maybe := l.acked.Load(), l.maybe.Load()
	got := fmt.Sprint(l.got)
	if l.err != nil {
		got = "no answer"
	}
	v := verdict{summary: fmt.Sprintf("Adds %d acknowledged, %d indeterminate, %d refused; Get = %s (want %d to %d)",
		acked, maybe, l.refused.Load(), got, acked, acked+maybe)}
	switch {
	case l.err != nil:
		v.unanswered(j, fmt.Sprintf("Get failed for %v: %v", readBackWithin, l.err))
	case l.got < acked:
		v.failures = append(v.failures, fmt.Sprintf("Get = %d after %d acknowledged adds: %d lost", l.got, acked, acked-l.got))
	case l.got > acked+maybe:
		v.failures = append(v.failures, fmt.Sprintf("Get = %d after %d acknowledged and %d indeterminate adds: %d counted that were refused or never made", l.got, acked, maybe, l.got-acked-maybe))
	}
	if acked == 0 {
		v.failures = append(v.failures, "no Add was acknowledged: the workload proves nothing")
	}
	return v
}

// ---- Register -------------------------------------------------------------

// registerLoad: clients Get, Set and CompareAndSwap eight registers read
// with a majority (collections.Read(casty.Majority)), recorded in a
// history that porcupine checks against castytest.RegisterModel. A swap
// expects the value its client last saw in that register, so swaps win
// and lose under contention; an unset register reads as the model's 0,
// and a swap from 0 is CompareAndSwapUnset (no client ever writes 0).
type registerLoad struct {
	names []string
	regs  map[string]*opener[*collections.Register[int]]
	h     *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]
}

func newRegisterLoad() *registerLoad {
	l := &registerLoad{regs: map[string]*opener[*collections.Register[int]]{}}
	for i := range 8 {
		l.names = append(l.names, fmt.Sprintf("virtual-register-%d", i))
	}
	return l
}

func (l *registerLoad) name() string { return "register" }

// finalClient numbers the final reads' client in the history.
const finalClient = 99

func (l *registerLoad) start(r *rig) {
	for _, name := range l.names {
		l.regs[name] = newOpener(r.t, func(sys *casty.System) (*collections.Register[int], error) {
			return collections.NewRegister[int](sys, name, collections.Read(casty.Majority))
		})
	}
	l.h = castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
	seen := make([]map[string]int, clientsPerLoad) // per client: the value it last saw in each register
	for i := range seen {
		seen[i] = map[string]int{}
	}
	r.clients(func(ctx context.Context, client, i int) {
		key := l.names[(client+i)%len(l.names)]
		reg, ok := l.regs[key].on(r.via(client, i))
		if !ok {
			return
		}
		v := unique(client, i)
		switch (client + i) % 3 {
		case 0:
			got, err := l.get(ctx, client, key, reg)
			if err == nil {
				seen[client][key] = got
			}
		case 1:
			if _, err := l.h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
				return castytest.Written[int](), reg.Set(ctx, v)
			}); err == nil {
				seen[client][key] = v
			}
		default:
			old := seen[client][key]
			res, err := l.h.Record(client, castytest.CASOp(key, old, v), func() (castytest.RegisterResult[int], error) {
				var ok bool
				var err error
				if old == 0 {
					ok, err = reg.CompareAndSwapUnset(ctx, v)
				} else {
					ok, err = reg.CompareAndSwap(ctx, old, v)
				}
				return castytest.Swapped[int](ok), err
			})
			if err == nil && res.OK {
				seen[client][key] = v
			}
		}
	})
}

// get records a Get of key by client; an unset register reads 0.
func (l *registerLoad) get(ctx context.Context, client int, key string, reg *collections.Register[int]) (int, error) {
	res, err := l.h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
		v, _, err := reg.Get(ctx)
		return castytest.Read(v), err
	})
	return res.Value, err
}

func (l *registerLoad) final(r *rig, _ time.Time) {
	// What every register holds now, read through the lite member and
	// recorded in the history like any read.
	for _, key := range l.names {
		reg, ok := l.regs[key].on(r.lite)
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = l.get(ctx, finalClient, key, reg)
		cancel()
	}
}

func (l *registerLoad) check(j judge) verdict {
	ops := l.h.Ops()
	res := castytest.Verify(castytest.RegisterModel(0), ops, castytest.CheckTimeout)
	swaps, won := 0, 0
	for _, op := range ops {
		if op.Input.Kind == castytest.RegisterCAS && !op.Indeterminate {
			swaps++
			if op.Output.OK {
				won++
			}
		}
	}
	v := verdict{summary: fmt.Sprintf("%d operations (%d indeterminate, %d of them reads left out), %d swaps answered, %d won: %s",
		res.Ops, res.Indeterminate, res.LeftOut, swaps, won, res.Verdict)}
	switch res.Verdict {
	case castytest.NotLinearizable:
		where := "visualisation: " + j.vis
		if err := res.WriteHTML(j.vis); err != nil {
			where = "writing the visualisation failed: " + err.Error()
		}
		v.failures = append(v.failures, fmt.Sprintf("the history of %d operations is not linearizable; %s", res.Ops, where))
	case castytest.Unknown:
		v.inconclusive = true
	}
	if res.Ops-res.Indeterminate == 0 {
		v.failures = append(v.failures, "no operation was answered: the workload proves nothing")
	}
	return v
}

// ---- Map ------------------------------------------------------------------

// mapLoad: clients Put unique keys. Afterwards every acknowledged Put
// reads back its value, an indeterminate one its value or nothing, and a
// refused one nothing.
type mapLoad struct {
	maps *opener[*collections.Map[string, int]]
	puts outcomes[string, int]

	mu        sync.Mutex
	lost      []string // acknowledged, and absent
	wrong     []string // present with another value
	unread    []string // acknowledged, and Get never answered
	readErr   error
	refusedIn []string // refused definitely, and present
	// Of lost, once a write to each of their shards has fenced any stale
	// activation: stale those read now, gone those still absent.
	stale, gone []string
	diagErr     error
}

func (l *mapLoad) name() string { return "map" }

func (l *mapLoad) start(r *rig) {
	l.maps = newOpener(r.t, func(sys *casty.System) (*collections.Map[string, int], error) {
		return collections.NewMap[string, int](sys, "virtual-map")
	})
	r.clients(func(ctx context.Context, client, i int) {
		m, ok := l.maps.on(r.via(client, i))
		if !ok {
			return
		}
		k, v := fmt.Sprintf("c%d-%d", client, i), unique(client, i)
		began := r.since()
		err := m.Put(ctx, k, v)
		l.puts.note(k, v, began, r.since(), err)
	})
}

func (l *mapLoad) final(r *rig, deadline time.Time) {
	m, ok := l.maps.on(r.lite)
	if !ok {
		return
	}
	type want struct {
		k       string
		v       int
		outcome int // 0 acknowledged, 1 indeterminate, 2 refused
	}
	var all []want
	for k, v := range l.puts.acked {
		all = append(all, want{k, v, 0})
	}
	for k, v := range l.puts.maybe {
		all = append(all, want{k, v, 1})
	}
	for k, v := range l.puts.refused {
		all = append(all, want{k, v, 2})
	}
	var dead deadShards
	inParallel(all, func(w want) {
		var got int
		var in bool
		err := dead.retry(deadline, w.k, func(ctx context.Context) (err error) {
			got, in, err = m.Get(ctx, w.k)
			return err
		})
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case err != nil:
			if w.outcome == 0 {
				l.unread, l.readErr = append(l.unread, w.k), err
			}
		case in && got != w.v:
			l.wrong = append(l.wrong, fmt.Sprintf("%s=%d (put %d)", w.k, got, w.v))
		case !in && w.outcome == 0:
			l.lost = append(l.lost, w.k)
		case in && w.outcome == 2:
			l.refusedIn = append(l.refusedIn, w.k)
		}
	})
	slices.Sort(l.lost)
	slices.Sort(l.wrong)
	slices.Sort(l.unread)
	slices.Sort(l.refusedIn)
	if len(l.lost) > 0 {
		l.stale, l.gone, l.diagErr = diagnose(l.lost,
			func(ctx context.Context, probe string) error { return m.Put(ctx, probe, 0) },
			func(ctx context.Context, k string) (bool, error) { _, in, err := m.Get(ctx, k); return in, err })
	}
}

func (l *mapLoad) check(j judge) verdict {
	v := verdict{summary: fmt.Sprintf("Puts %s; %d missing, %d wrong, %d unread, %d refused present",
		l.puts.counts(), len(l.lost), len(l.wrong), len(l.unread), len(l.refusedIn))}
	if len(l.puts.why) > 0 {
		v.summary += fmt.Sprintf("; refusals: %v", l.puts.why)
	}
	if len(l.lost) > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d acknowledged Puts missing (Get says absent), acknowledged at (schedule time) %s; %s", len(l.lost), l.puts.at(l.lost), diagnosis(l.stale, l.gone, l.diagErr)))
	}
	if len(l.wrong) > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d keys read another value than put: %s", len(l.wrong), upTo(l.wrong)))
	}
	if len(l.unread) > 0 {
		v.unanswered(j, fmt.Sprintf("%d acknowledged Puts could not be read back within %v: %s; last error: %v", len(l.unread), readBackWithin, upTo(l.unread), l.readErr))
	}
	if len(l.refusedIn) > 0 {
		v.failures = append(v.failures, fmt.Sprintf("%d Puts refused definitely took effect: %s", len(l.refusedIn), upTo(l.refusedIn)))
	}
	if len(l.puts.acked) == 0 {
		v.failures = append(v.failures, "no Put was acknowledged: the workload proves nothing")
	}
	return v
}

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/collections"
)

// Register is the register workload's actor: one int64 value, read,
// written and compared-and-set. The workload never writes 0, the initial
// value, so reading 0 after an acknowledged write proves the write lost.
type Register struct{ Value int64 }

// Get returns the value.
func (r *Register) Get(ctx context.Context) (int64, error) { return r.Value, nil }

// Set writes v.
func (r *Register) Set(ctx context.Context, v int64) error { r.Value = v; return nil }

// CAS sets c.New when the value is c.Old, and reports whether it did.
func (r *Register) CAS(ctx context.Context, c Swap) (bool, error) {
	if r.Value != c.Old {
		return false, nil
	}
	r.Value = c.New
	return true, nil
}

// Swap is Register.CAS's argument.
type Swap struct{ Old, New int64 }

// Set is the set workload's actor: a grow-only set of int64.
type Set struct{ Elems []int64 }

// Add inserts e (kept sorted, without duplicates).
func (s *Set) Add(ctx context.Context, e int64) error {
	if i, found := slices.BinarySearch(s.Elems, e); !found {
		s.Elems = slices.Insert(s.Elems, i, e)
	}
	return nil
}

// All returns every element, ascending.
func (s *Set) All(ctx context.Context) ([]int64, error) { return s.Elems, nil }

// Counter is the counter workload's actor.
type Counter struct{ Value int64 }

// Add adds d and returns the new value.
func (c *Counter) Add(ctx context.Context, d int64) (int64, error) {
	c.Value += d
	return c.Value, nil
}

// Get returns the value.
func (c *Counter) Get(ctx context.Context) (int64, error) { return c.Value, nil }

// Ledger is the ledger workload's actor: accounts whose total never
// changes, since every transfer moves money inside the one actor. A
// transfer touches two entries of a TrackedMap, and replication ships
// pages, so a commit is two pages that must land together.
type Ledger struct {
	Balances casty.TrackedMap[string, int64]
	// Opened is set by the first call; Transfers counts applied transfers.
	Opened    bool
	Transfers int64
}

// Ledger constants: ledgerAccounts accounts of ledgerOpening each.
const (
	ledgerAccounts = 8
	ledgerOpening  = 1000
	ledgerTotal    = ledgerAccounts * ledgerOpening
)

func account(i int) string { return "acct-" + strconv.Itoa(i) }

func (l *Ledger) open() {
	if l.Opened {
		return
	}
	l.Opened = true
	for i := range ledgerAccounts {
		l.Balances.Set(account(i), ledgerOpening)
	}
}

// Transfer moves t.Amount from t.From to t.To when t.From holds that
// much; the receipt says whether it did and how many transfers the ledger
// has applied.
func (l *Ledger) Transfer(ctx context.Context, t Transfer) (Receipt, error) {
	l.open()
	from, _ := l.Balances.Get(t.From)
	if from < t.Amount || t.From == t.To {
		return Receipt{Transfers: l.Transfers}, nil
	}
	to, _ := l.Balances.Get(t.To)
	l.Balances.Set(t.From, from-t.Amount)
	l.Balances.Set(t.To, to+t.Amount)
	l.Transfers++
	return Receipt{Applied: true, Transfers: l.Transfers}, nil
}

// Audit returns the total of all balances and the transfers applied.
func (l *Ledger) Audit(ctx context.Context) (Audit, error) {
	l.open()
	a := Audit{Transfers: l.Transfers}
	for _, v := range l.Balances.All() {
		a.Total += v
	}
	return a, nil
}

// Transfer is Ledger.Transfer's argument.
type Transfer struct {
	From, To string
	Amount   int64
}

// Receipt is Ledger.Transfer's result.
type Receipt struct {
	Applied   bool
	Transfers int64
}

// Audit is Ledger.Audit's result.
type Audit struct{ Total, Transfers int64 }

// Relay runs a register operation on the member it lands on (a service:
// any member, in turn). The register workload sends part of its calls
// through it, so that members — replicas of the registers, two in five
// for five members and three copies — make calls too: a call from a
// replica is answered by its own copy when its vote decides the commit
// (replica/SPEC.md, "Early answers"), which a lite member's call never is.
type Relay struct{}

// Do runs op against the register and reports its outcome as the member
// saw it; the relay's own call fails only as calls fail (time, network).
func (*Relay) Do(ctx context.Context, op RelayOp) (RelayResult, error) {
	sys := casty.Self(ctx).System()
	ref := relayRegisters.Ref(sys, op.Key)
	early := sys.Replication().EarlyAnswers
	var res RelayResult
	var err error
	switch op.Kind {
	case relayGet:
		res.Value, err = casty.Call0(ctx, ref, (*Register).Get)
	case relaySet:
		err = casty.Do(ctx, ref, (*Register).Set, op.Value)
	default:
		res.OK, err = casty.Call(ctx, ref, (*Register).CAS, Swap{Old: op.Old, New: op.Value})
	}
	res.Early = sys.Replication().EarlyAnswers > early
	switch {
	case err == nil:
	case castytest.Indeterminate(err):
		res.Outcome, res.Err = relayUnknown, err.Error()
	default:
		res.Outcome, res.Err = relayFailed, err.Error()
	}
	return res, nil
}

// relayRegisters is the register kind the relays call (declare sets it).
var relayRegisters *casty.Kind[Register]

// RelayOp is Relay.Do's argument: Kind is relayGet, relaySet or relayCAS.
type RelayOp struct {
	Key        string
	Kind       int8
	Value, Old int64
}

// RelayResult is Relay.Do's result: the register's answer and the
// outcome's class (relayOK, relayUnknown, relayFailed) with its error.
type RelayResult struct {
	Value   int64
	OK      bool
	Outcome int8
	Err     string
	// Early says the member answered some call early while this one ran
	// (its ReplicationStats.EarlyAnswers rose): most likely this one.
	Early bool
}

const (
	relayGet int8 = iota
	relaySet
	relayCAS
)

const (
	relayOK int8 = iota
	relayUnknown
	relayFailed
)

var (
	_ = casty.Message[RelayOp](casty.Name("castychaos.RelayOp"))
	_ = casty.Message[RelayResult](casty.Name("castychaos.RelayResult"))
	_ = casty.Message[Swap](casty.Name("castychaos.Swap"))
	_ = casty.Message[Transfer](casty.Name("castychaos.Transfer"))
	_ = casty.Message[Audit](casty.Name("castychaos.Audit"))
	_ = casty.Message[Receipt](casty.Name("castychaos.Receipt"))
)

// kinds are the workloads' actor kinds, declared once per process by
// declare with the run's replication settings (the same in every
// process: the controller passes -replicas to its members).
type kinds struct {
	registers *casty.Kind[Register]
	relays    *casty.ServiceKind[Relay]
	sets      *casty.Kind[Set]
	counters  *casty.Kind[Counter]
	ledgers   *casty.Kind[Ledger]
	// coll are the collection workloads' options and shard kinds.
	coll collKinds
	// acks, set in the controller, hears of every acknowledged write
	// (the close fault waits for one); nil in member processes.
	acks *ackFeed
}

// keys lists the actors the named workloads use, regs registers.
func (k kinds) keys(workloads []string, regs int) []kindKey {
	var out []kindKey
	for _, w := range workloads {
		switch w {
		case "register":
			for i := range regs {
				out = append(out, kindKey{k.registers.Name(), fmt.Sprint("reg-", i)})
			}
		case "set":
			for i := range setKeys {
				out = append(out, kindKey{k.sets.Name(), fmt.Sprint("set-", i)})
			}
		case "counter":
			for i := range counterKeys {
				out = append(out, kindKey{k.counters.Name(), fmt.Sprint("ctr-", i)})
			}
		case "ledger":
			out = append(out, kindKey{k.ledgers.Name(), ledgerKey})
		case "cset":
			out = append(out, k.coll.shardKeys(k.coll.kind, "set/"+csetName, collections.DefaultShards)...)
		case "ccounter":
			out = append(out, k.coll.shardKeys(k.coll.kind, "counter/"+ccounterName, collections.DefaultShards)...)
		case "cqueue":
			out = append(out, kindKey{k.coll.kind, "queue/" + cqueueName})
		case "clock":
			out = append(out, kindKey{k.coll.kind, "lock/" + clockName})
		case "cregister":
			for i := range regs {
				out = append(out, kindKey{k.coll.regKind, "register/" + cregName(i)})
			}
		}
	}
	return out
}

// declare declares the kinds with replicas copies and majority quorums
// (One for a single copy).
func declare(replicas int) kinds {
	q := casty.One
	if replicas > 1 {
		q = casty.Majority
	}
	opts := func(name string) []casty.KindOption {
		return []casty.KindOption{casty.Name(name), casty.Replicas(replicas), casty.Write(q), casty.Read(q), casty.IdleTimeout(casty.Forever)}
	}
	relayRegisters = casty.Actor[Register](opts("castychaos.Register")...)
	return kinds{
		registers: relayRegisters,
		relays:    casty.Service[Relay](casty.Name("castychaos.Relay")),
		sets:      casty.Actor[Set](opts("castychaos.Set")...),
		counters:  casty.Actor[Counter](opts("castychaos.Counter")...),
		ledgers:   casty.Actor[Ledger](opts("castychaos.Ledger")...),
		coll:      declareCollections(replicas),
	}
}

// collKinds are the collection workloads' options, as every process
// declares them: replicas copies, majority writes (one copy with one
// replica), reads from the owner — and majority reads for the register
// workload — and the shard kinds those triples name.
type collKinds struct {
	opts, regOpts []collections.Option
	// kind and regKind are the shard kinds' names, as the collections
	// package doc names them: "casty.collections.Shard[<triple>]".
	kind, regKind string
}

// declareCollections declares the collection workloads' replication
// triples (collections.Declare: in every process, before it starts, like
// a kind; the default r3,wmajority,rone and the r3,wmajority,rmajority
// the register workload reads with are declared by the package already).
func declareCollections(replicas int) collKinds {
	opts := []collections.Option{collections.Replicas(replicas), collections.Write(casty.Majority)}
	regOpts := append(slices.Clone(opts), collections.Read(casty.Majority))
	return collKinds{
		opts: opts, regOpts: regOpts,
		kind:    "casty.collections.Shard[" + collections.Declare(opts...).String() + "]",
		regKind: "casty.collections.Shard[" + collections.Declare(regOpts...).String() + "]",
	}
}

// shardKeys are the keys of a sharded collection's shard actors: its
// type and name, then "/" and the shard's number (collections/base.go).
func (collKinds) shardKeys(kind, prefix string, shards int) []kindKey {
	out := make([]kindKey, shards)
	for i := range out {
		out[i] = kindKey{kind, prefix + "/" + strconv.Itoa(i)}
	}
	return out
}

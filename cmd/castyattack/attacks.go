package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/mux"
)

var discard = slog.New(slog.DiscardHandler)

// logs is the logger option of the harness's own nodes: their warnings,
// kept for a failed row's report (h.warns).
func (h *harness) logs() casty.Option { return casty.WithLogger(h.warns.logger()) }

// sizes are how hard the attacks push: the defaults reproduce the attacks
// as found; quick ones are what the package's test runs.
type sizes struct {
	idlePerMember  int           // idle TCP connections held against each member (starvation)
	compressed     int           // compressed 4 MiB requests sent behind a busy key
	busyFor        time.Duration // how long the busy key is held at most
	bigAnswers     int           // requests for 3 MiB answers from a reader that stopped reading
	slowFor        time.Duration // how long the slow reader holds them
	partialConns   int           // connections holding partial messages
	partialFor     time.Duration // how long they hold them (less than KeepAliveTimeout: a sender whose writes are stuck answers no ping)
	startedConns   int           // connections that start messages on every lane and stop
	idleHosts      int           // client addresses holding idle sessions
	idlePerHost    int           // idle sessions per address
	legitKeys      int           // keys the legitimate caller cycles over
	claimCalls     int           // calls to a new member's keys after a stranger claimed its id
	joinTrials     int           // new members joined, one after another, while connections are held idle
	relayMarkerLen int
}

var defaultSizes = sizes{
	idlePerMember: 128, compressed: 64, busyFor: 10 * time.Second,
	bigAnswers: 64, slowFor: 5 * time.Second,
	partialConns: 50, partialFor: 2 * time.Second, startedConns: 100,
	idleHosts: 17, idlePerHost: 64, legitKeys: 100, claimCalls: 16, relayMarkerLen: 48, joinTrials: 5,
}

var quickSizes = sizes{
	idlePerMember: 32, compressed: 20, busyFor: 10 * time.Second,
	bigAnswers: 8, slowFor: 2 * time.Second,
	partialConns: 4, partialFor: time.Second, startedConns: 24,
	idleHosts: 1, idlePerHost: 66, legitKeys: 10, claimCalls: 8, relayMarkerLen: 48, joinTrials: 1,
}

// result is one row of the table.
type result struct {
	group        string // relay, hello, starve, claim, flood
	attack, mode string
	pass         bool
	outcome      string
	budget       string
	mem          []mem // before, peak, after (floods)
	legit        *legitStats
	warnings     []string // a failed flood's: the last warnings of its members and the harness's nodes
}

// legitStats is what a legitimate caller saw during a flood.
type legitStats struct {
	ok, failed int
	firstErr   error
	p50, p99   time.Duration
}

const mib = 1 << 20

// keysOf returns n keys of kind that the member at addr owns, as sys
// places them.
func keysOf(sys *casty.System, kind, addr, prefix string, n int) []string {
	keys := make([]string, 0, n)
	for i := 0; len(keys) < n && i < 100_000; i++ {
		k := fmt.Sprint(prefix, i)
		if m, ok := sys.OwnerOf(kind, k); ok && m.Addr == addr {
			keys = append(keys, k)
		}
	}
	return keys
}

// legitCaller calls Touch on keys, one call at a time, until stopped.
type legitCaller struct {
	stop chan struct{}
	wg   sync.WaitGroup
	lat  []time.Duration
	st   legitStats
}

func startLegit(lite *casty.System, keys []string) *legitCaller {
	l := &legitCaller{stop: make(chan struct{})}
	l.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			_, err := casty.Call0(ctx, Blobs.Ref(lite, keys[i%len(keys)]), (*Blob).Touch)
			took := time.Since(start)
			cancel()
			if err != nil {
				l.st.failed++
				if l.st.firstErr == nil {
					l.st.firstErr = err
				}
				continue
			}
			l.st.ok++
			l.lat = append(l.lat, took)
		}
	})
	return l
}

func (l *legitCaller) finish() *legitStats {
	close(l.stop)
	l.wg.Wait()
	slices.Sort(l.lat)
	if n := len(l.lat); n > 0 {
		l.st.p50, l.st.p99 = l.lat[n/2], l.lat[min(n-1, n*99/100)]
	}
	return &l.st
}

// floodEnv is what a flood gets: a three-member cluster, its victim (the
// first member) and the legitimate caller's lite client.
type floodEnv struct {
	h      *harness
	procs  []*proc
	victim *proc
	lite   *casty.System
	sz     sizes
}

// floodCheck is a flood's verdict on what it did, before memory is
// judged.
type floodCheck struct {
	outcome string
	pass    bool
	// bound is the largest peak heap growth the documented budget
	// allows.
	bound int64
}

// harnessStall is how long the harness process itself may go without
// running before a failed flood row is judged unmeasured: its own nodes
// (the legitimate client, the attacker) then neither send nor read, and
// the members close their connections after KeepAliveInterval +
// KeepAliveTimeout (4 s) of silence, whatever the victim does.
const harnessStall = 2 * time.Second

// flood runs a flood row (floodOnce) and runs it again, once, when it
// failed while the harness process itself stalled (a loaded machine, its
// garbage collector): such a failure says nothing of the victim. The
// rerun's outcome says so.
func (h *harness) flood(ctx context.Context, name, budget string, sz sizes, run func(ctx context.Context, e *floodEnv) floodCheck) result {
	st := watchStalls()
	r := h.floodOnce(ctx, name, budget, sz, run)
	if stalled := st.end(); !r.pass && stalled > harnessStall {
		first := r.outcome
		st = watchStalls()
		r = h.floodOnce(ctx, name, budget, sz, run)
		r.outcome += fmt.Sprintf(" [run again: the first run failed while the harness process stalled %v (%s)]", stalled.Round(time.Millisecond), first)
		if stalled := st.end(); !r.pass && stalled > harnessStall {
			r.outcome += fmt.Sprintf(" [the harness stalled %v in this run too]", stalled.Round(time.Millisecond))
		}
	}
	return r
}

// stallWatch measures how long the harness process went without running
// a goroutine that asked to: the longest gap past its period between the
// ticks of a ticker.
type stallWatch struct {
	stop, done chan struct{}
	worst      time.Duration
}

func watchStalls() *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	const period = 50 * time.Millisecond
	go func() {
		defer close(w.done)
		t := time.NewTicker(period)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				// The time the tick is taken, not when it was due: a
				// process that did not run sees the gap.
				now := time.Now()
				w.worst = max(w.worst, now.Sub(last)-period)
				last = now
			}
		}
	}()
	return w
}

// end stops the watch and returns the longest stall it saw.
func (w *stallWatch) end() time.Duration {
	close(w.stop)
	<-w.done
	return w.worst
}

// floodOnce starts a cluster, measures the victim's memory before, during
// (peak) and after run while a legitimate lite client calls the victim's
// keys, and judges: run's own verdict, the legitimate calls all
// succeeded, the peak heap growth within the budget's bound, and memory
// given back after (within bound/4 + 32 MiB of before).
func (h *harness) floodOnce(ctx context.Context, name, budget string, sz sizes, run func(ctx context.Context, e *floodEnv) floodCheck) (r result) {
	r = result{attack: name, mode: h.modeName(), budget: budget}
	h.warns.take() // an earlier row's
	if h.mode.Mode == "secret" {
		r.mode = "secret (attacker: client credential)"
	}
	procs, lite, err := h.cluster(ctx, 3)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer stopAll(procs)
	defer closeSys(lite)
	defer func() {
		if !r.pass {
			r.warnings = floodWarnings(h, procs)
		}
	}()
	e := &floodEnv{h: h, procs: procs, victim: procs[0], lite: lite, sz: sz}
	keys := keysOf(lite, Blobs.Name(), e.victim.addr, "legit-", sz.legitKeys)
	// Activate the legitimate keys before measuring.
	for _, k := range keys {
		if _, err := casty.Call0(ctx, Blobs.Ref(lite, k), (*Blob).Touch); err != nil {
			r.outcome = "setup: legitimate call: " + err.Error()
			return r
		}
	}
	before, err := e.victim.settled(ctx)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	e.victim.resetPeak()
	l := startLegit(lite, keys)
	chk := run(ctx, e)
	r.legit = l.finish()
	peak := e.victim.peak()
	// After: once the member has given back what the flood made it hold
	// (within bound/4 + 32 MiB of before), or 10 s after the flood.
	var after mem
	for start := time.Now(); ; {
		after, err = e.victim.settled(ctx)
		if err != nil {
			r.outcome = chk.outcome + "; after: " + err.Error()
			return r
		}
		if after.heap-before.heap <= chk.bound/4+32*mib || time.Since(start) > 10*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.mem = []mem{before, peak, after}
	r.outcome = chk.outcome
	r.pass = chk.pass
	grew := peak.heap - before.heap
	if r.legit.failed > 0 {
		r.pass = false
		r.outcome += fmt.Sprintf("; %d legitimate calls failed (first: %v)", r.legit.failed, r.legit.firstErr)
	}
	if r.legit.ok == 0 {
		r.pass = false
		r.outcome += "; no legitimate call succeeded"
	}
	if grew > chk.bound {
		r.pass = false
		r.outcome += fmt.Sprintf("; heap grew %d MiB, past the budget's %d MiB", grew/mib, chk.bound/mib)
	}
	if kept := after.heap - before.heap; kept > chk.bound/4+32*mib {
		r.pass = false
		r.outcome += fmt.Sprintf("; heap still %d MiB above before", kept/mib)
	}
	return r
}

func (h *harness) modeName() string {
	switch h.mode.Mode {
	case "secret":
		return "secret"
	case "authonly":
		return "secret, auth-only"
	case "mtls":
		return "mTLS + identity"
	}
	return "open"
}

// attackRelay: member a joins through an address that relays to member b
// (a stale seed address, an address a JOIN advertised). The relay passes
// the handshake through, so b welcomes it as a; then it reads what a and
// b say, and injects a request of its own. Sealed: it reads nothing and
// its request closes the connection. Auth-only, the control: it reads the
// replicated note in the clear and b answers its request.
func (h *harness) attackRelay(ctx context.Context, sz sizes) result {
	r := result{attack: "relayed handshake", mode: h.modeName()}
	b, err := h.start(ctx, "member-0")
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer b.stop()
	c, err := h.start(ctx, "member-1", b.addr)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer c.stop()
	relay, err := newProxy(b.addr, true, 0)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer relay.close()
	a, err := h.start(ctx, "member-2", relay.addr())
	if err != nil {
		r.outcome = "setup: a joining through the relay: " + err.Error()
		return r
	}
	defer a.stop()
	lite, err := h.connect(ctx, c.addr)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer closeSys(lite)
	if err := lite.WaitMembers(ctx, 3); err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	if len(relay.livePairs()) == 0 {
		r.outcome = "setup: no connection of a's through the relay is live"
		return r
	}
	// Notes a owns are replicated to b: over the relayed connection.
	// Three of them, on three keys: a record may cut a note in two, and
	// a batch of several may be compressed.
	var markers [][]byte
	var keys []string
	// The lite client places replicated keys on a once its placement
	// has a: wait for it (10 s at most).
	for deadline := time.Now().Add(10 * time.Second); len(keys) < 3 && time.Now().Before(deadline); waitABit() {
		keys = keysOf(lite, Notes.Name(), a.addr, "note-", 3)
	}
	if len(keys) < 3 {
		r.outcome = "setup: the lite client places no note key on a"
		return r
	}
	up0 := relay.up.Load()
	for _, k := range keys {
		marker := []byte("confidential:" + randomHex(sz.relayMarkerLen/2))
		markers = append(markers, marker)
		if _, err := casty.Call(ctx, Notes.Ref(lite, k), (*Note).Set, string(marker)); err != nil {
			r.outcome = "setup: the replicated write: " + err.Error()
			return r
		}
	}
	// Wait for the copies to b to cross the relay (they may follow the
	// majority's answer).
	need := int64(len(markers) * len(markers[0]))
	deadline := time.Now().Add(5 * time.Second)
	for relay.up.Load()-up0 < need && time.Now().Before(deadline) {
		waitABit()
	}
	crossed := relay.up.Load() - up0
	if crossed < need {
		r.outcome = fmt.Sprintf("inconclusive: the writes' replication did not cross the relay (%d bytes)", crossed)
		return r
	}
	// Read in the clear: 16 characters of a note's random part, anywhere.
	read := false
	for _, m := range markers {
		for i := len("confidential:"); i+16 <= len(m); i += 8 {
			read = read || relay.sawBytes(m[i:i+16])
		}
	}

	// Inject a request of the relay's own into b's side: a plain record
	// followed by 16 bytes where a sealed record's tag goes, shaped as a
	// second record, so b has whole records whichever format it reads.
	const injectedID = 0xC0FFEE
	payload := []byte("injected by the relay")
	env := append(envelopeHeader(1, injectedID, len(payload)), payload...)
	inject := appendRecord(nil, byte(mux.LaneMessage), env)
	inject = appendRecord(inject, byte(mux.LaneMessage), envelopeHeader(1, injectedID+1, 1)[:11])
	pr := relay.livePairs()[0]
	down0 := relay.down.Load()
	if _, err := pr.target.Write(inject); err != nil {
		r.outcome = "inject: " + err.Error()
		return r
	}
	answered := func() bool {
		return relay.sawBytes(responseHeader(2, injectedID)) || relay.sawBytes(responseHeader(3, injectedID))
	}
	start := time.Now()
	var closed bool
	for time.Since(start) < 3*time.Second && !answered() {
		select {
		case <-pr.closed:
			closed = true
		default:
		}
		if closed {
			break
		}
		waitABit()
	}
	closedIn := time.Since(start)
	served := answered()
	_ = down0
	// a and b keep working: a reconnects if the connection was closed.
	_, afterErr := casty.Call(ctx, Notes.Ref(lite, keys[0]), (*Note).Set, "after")
	if h.mode.sealed() {
		r.budget = "sealed records"
		r.pass = !read && !served && closed && afterErr == nil
		r.outcome = fmt.Sprintf("%d B of replication relayed, a note read in the clear: %v; injected request served: %v, b closed the connection: %v (%v); a writes again: %v",
			crossed, read, served, closed, closedIn.Round(time.Millisecond), errText(afterErr))
	} else {
		r.budget = "none (auth-only, documented)"
		r.attack += " (control)"
		r.pass = read && served
		r.outcome = fmt.Sprintf("as documented for auth-only: a note read in the clear: %v; injected request answered: %v", read, served)
	}
	return r
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// envelopeHeader is mux's envelope header (mux/SPEC.md §4): length,
// type, flags, id.
func envelopeHeader(typ uint8, id uint64, n int) []byte {
	h := binary.BigEndian.AppendUint32(nil, uint32(n))
	h = append(h, typ, 0)
	return binary.BigEndian.AppendUint64(h, id)
}

// responseHeader is the start of an answer's envelope header to id: type
// and flags, then the id.
func responseHeader(typ uint8, id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{typ, 0}, id)
}

// appendRecord appends a plain record (mux/SPEC.md §2): channel, length,
// bytes.
func appendRecord(out []byte, ch byte, b []byte) []byte {
	out = append(out, ch)
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

// attackHello: a hello naming the member credential, from a node that
// does not hold the cluster secret, with the right and a wrong cluster
// name. Both get the same answer, of the same length, with nothing of the
// member in it; a holder of the secret with a wrong name is told.
func (h *harness) attackHello(ctx context.Context) result {
	r := result{attack: "hello naming a credential it does not hold", mode: h.modeName(), budget: "-"}
	m, err := h.start(ctx, "member-0")
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer m.stop()
	id, err := parseNodeID(m.id)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	type answer struct {
		err  string
		code mux.HandshakeCode
		got  []byte
	}
	try := func(secret []byte, cluster string) (answer, error) {
		p, err := newProxy(m.addr, true, 0)
		if err != nil {
			return answer{}, err
		}
		defer p.close()
		n, err := h.muxNode(func(c *mux.Config) {
			c.Role, c.ClientSecret, c.ClusterSecret, c.ClusterName = mux.RoleMember, nil, secret, cluster
		})
		if err != nil {
			return answer{}, err
		}
		defer n.Close()
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, derr := n.Dial(dctx, p.addr())
		if derr == nil {
			s.Close()
			return answer{}, errors.New("the handshake succeeded")
		}
		var he *mux.HandshakeError
		a := answer{err: derr.Error()}
		if errors.As(derr, &he) {
			a.code, a.err = he.Code, he.Message
		}
		p.close()
		p.mu.Lock()
		a.got = bytes.Clone(p.seenDown.Bytes())
		p.mu.Unlock()
		return a, nil
	}
	wrong := make([]byte, 32)
	_, _ = rand.Read(wrong)
	right, err1 := try(wrong, h.mode.Cluster)
	other, err2 := try(wrong, "not-"+h.mode.Cluster)
	holder, err3 := try(h.secret("cluster"), "not-"+h.mode.Cluster)
	if err := errors.Join(err1, err2, err3); err != nil {
		r.outcome = err.Error()
		return r
	}
	// What the member sent: its node id is not in it (it was in the old
	// challenge).
	leaks := bytes.Contains(right.got, id[:]) || bytes.Contains(other.got, id[:])
	same := right.err == other.err && right.code == other.code && len(right.got) == len(other.got)
	r.pass = same && !leaks && right.code == mux.CodeUnauthenticated && holder.code == mux.CodeWrongCluster
	r.outcome = fmt.Sprintf("right and wrong cluster name: same answer %v (%s %q; %d and %d B from the member), member id in it: %v; a holder of the secret with a wrong name is told (%s)",
		same, right.code, right.err, len(right.got), len(other.got), leaks, holder.code)
	return r
}

func parseNodeID(s string) (mux.NodeID, error) {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != len(mux.NodeID{}) {
		return mux.NodeID{}, fmt.Errorf("node id %q: %v", s, err)
	}
	return mux.NodeID(b), nil
}

// lists waits until sys's member table lists a member at addr (or, with
// want false, no longer does), for 10 s at most; it reports whether it
// did.
func lists(ctx context.Context, sys *casty.System, addr string, want bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		has := slices.ContainsFunc(sys.Members(), func(m casty.Member) bool { return m.Addr == addr })
		if has == want {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holdIdle keeps n TCP connections open against each address from
// 127.0.0.1, saying nothing, each reopened as soon as the member closes
// it; it returns how many it opened and a stop function.
func holdIdle(addrs []string, n int) (*atomic.Int64, func()) {
	var dialled atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	for _, a := range addrs {
		for range n {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := net.DialTimeout("tcp", a, time.Second)
					if err != nil {
						waitABit()
						continue
					}
					dialled.Add(1)
					mu.Lock()
					open[c] = struct{}{}
					mu.Unlock()
					var b [1]byte
					_, _ = c.Read(b[:]) // until the member closes it, or stop
					mu.Lock()
					delete(open, c)
					mu.Unlock()
					c.Close()
				}
			})
		}
	}
	return &dialled, func() {
		close(stop)
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// attackStarvation: idle TCP connections from one host against every
// member, reopened as soon as closed; a new member must still join.
func (h *harness) attackStarvation(ctx context.Context, sz sizes) result {
	r := result{attack: fmt.Sprintf("handshake starvation: %d idle conns per member, one host", sz.idlePerMember), mode: h.modeName(),
		budget: "MaxHandshakesPerHost 8, FirstByteTimeout 2s"}
	procs, lite, err := h.cluster(ctx, 2)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer stopAll(procs)
	defer closeSys(lite)
	joinOnce := func() (time.Duration, error) {
		jctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		sys, took, err := h.join(jctx, procs[0].addr)
		if err != nil {
			return took, err
		}
		listed := lists(jctx, lite, sys.Addr(), true)
		closeSys(sys)
		if !listed {
			return took, errors.New("joined, but the lite client's member table does not list it")
		}
		if !lists(ctx, lite, sys.Addr(), false) {
			return took, errors.New("the joiner left, but the lite client still lists it after 10 s")
		}
		return took, nil
	}
	calm, err := joinOnce()
	if err != nil {
		r.outcome = "setup: a join without the attack: " + err.Error()
		return r
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dialled, stop := holdIdle([]string{procs[0].addr, procs[1].addr}, sz.idlePerMember)
	for dialled.Load() < int64(2*sz.idlePerMember) && wctx.Err() == nil {
		waitABit()
	}
	var took []time.Duration
	for range sz.joinTrials {
		t, err := joinOnce()
		if err != nil {
			stop()
			r.outcome = fmt.Sprintf("a new member did not join after %v: %v", t.Round(time.Millisecond), err)
			return r
		}
		took = append(took, t)
	}
	stop()
	slices.Sort(took)
	r.pass = true
	r.outcome = fmt.Sprintf("%d of %d new members joined: join time p50 %v, max %v (%v without the attack); %d idle connections opened",
		len(took), sz.joinTrials, took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond),
		calm.Round(time.Millisecond), dialled.Load())
	return r
}

// zeroSource makes every dial nonce 0, the one that wins the tie-break.
type zeroSource struct{}

func (zeroSource) Uint64() uint64 { return 0 }

// attackClaim: in an open cluster, a stranger claims a member's node id
// right after it joined, at every other member, with the dial nonce that
// wins the tie-break. The other members' calls to its keys must reach it.
func (h *harness) attackClaim(ctx context.Context, sz sizes) result {
	r := result{attack: "claim a new member's node id", mode: h.modeName(), budget: "-"}
	procs, lite, err := h.cluster(ctx, 3)
	if err != nil {
		r.outcome = "setup: " + err.Error()
		return r
	}
	defer stopAll(procs)
	defer closeSys(lite)
	newcomer := procs[2]
	id, err := parseNodeID(newcomer.id)
	if err != nil {
		r.outcome = err.Error()
		return r
	}
	var intercepted atomic.Int64
	stranger, err := h.muxNode(func(c *mux.Config) {
		c.NodeID, c.Role, c.AdvertiseAddr = id, mux.RoleMember, "127.0.0.1:1"
		c.Rand = mrand.New(zeroSource{})
	})
	if err != nil {
		r.outcome = err.Error()
		return r
	}
	defer stranger.Close()
	stranger.HandleRequests(mux.LaneMessage, func(context.Context, *mux.Session, []byte) ([]byte, error) {
		intercepted.Add(1)
		return nil, errors.New("intercepted")
	})
	// The other members' sessions to the new member are live: each has
	// called one of its keys.
	warm := keysOf(lite, Blobs.Name(), newcomer.addr, "warm-", 1)
	for i, p := range procs[:2] {
		from := keysOf(lite, Blobs.Name(), p.addr, fmt.Sprint("warm-from-", i, "-"), 1)
		if len(warm) == 0 || len(from) == 0 {
			r.outcome = "setup: the lite client places no key on a member"
			return r
		}
		if _, err := casty.Call(ctx, Blobs.Ref(lite, from[0]), (*Blob).Via, warm[0]); err != nil {
			r.outcome = "setup: a call from a member to the new member: " + err.Error()
			return r
		}
	}
	// Each claim is refused (code 5: the real member, asked over its live
	// session, did not make the connection), or, where the tie-break
	// already keeps the live session, accepted and drained unused.
	var claims []string
	allRefused := true
	for _, p := range procs[:2] {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := stranger.Dial(dctx, p.addr)
		cancel()
		var he *mux.HandshakeError
		switch {
		case errors.As(err, &he):
			claims = append(claims, "refused ("+he.Code.String()+")")
			allRefused = allRefused && he.Code == mux.CodeIdentity
		case err != nil:
			claims = append(claims, "failed: "+err.Error())
			allRefused = false
		default:
			t := time.NewTimer(10 * time.Second)
			select {
			case <-s.Done():
				claims = append(claims, "accepted, then closed (the live session kept)")
			case <-t.C:
				claims = append(claims, "accepted and kept open")
				allRefused = false
			}
			t.Stop()
		}
	}
	reached := 0
	for i := range sz.claimCalls {
		via := procs[i%2]
		from := keysOf(lite, Blobs.Name(), via.addr, fmt.Sprint("via-", i, "-"), 1)
		to := keysOf(lite, Blobs.Name(), newcomer.addr, fmt.Sprint("claimed-", i, "-"), 1)
		if len(from) == 0 || len(to) == 0 {
			continue // counted as not reached
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := casty.Call(cctx, Blobs.Ref(lite, from[0]), (*Blob).Via, to[0])
		cancel()
		if err == nil && out == newcomer.addr {
			reached++
		}
	}
	r.pass = allRefused && reached == sz.claimCalls && intercepted.Load() == 0
	r.outcome = fmt.Sprintf("stranger's claims: %s; %d of %d members' calls to the new member's keys reached it, %d reached the stranger",
		strings.Join(claims, ", "), reached, sz.claimCalls, intercepted.Load())
	return r
}

// floodWarnings returns what the flood's members (the victim first) and
// the harness's own nodes logged at level Warn or above, the last lines
// of each, each line naming its node.
func floodWarnings(h *harness, procs []*proc) []string {
	var out []string
	for i, p := range procs {
		who := "member " + p.addr
		if i == 0 {
			who = "victim " + p.addr
		}
		for _, l := range p.warns.take() {
			out = append(out, who+": "+l)
		}
	}
	for _, l := range h.warns.take() {
		out = append(out, "harness: "+l)
	}
	return out
}

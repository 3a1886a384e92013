package casty_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/replica"
)

// Blob is a replicated state whose one integral field can be made larger
// than a page may be.
type Blob struct {
	Data []byte
	N    int
}

func (b *Blob) Grow(_ context.Context, n int) (int, error) {
	b.Data = make([]byte, n)
	b.N++
	return b.N, nil
}

func (b *Blob) Get(context.Context) (int, error) { return b.N, nil }

var Blobs = casty.Actor[Blob](casty.Name("test.Blob"), casty.Replicas(3), casty.Write(casty.Majority))

// pageLimit is the limit a replicated kind's pages are held to: a page
// and the replication envelope around it (64 KiB at most) must fit one
// message (Config.Transport.MaxMessage, 4 MiB by default).
const pageLimit = 4<<20 - 64<<10

// checkTooLarge asserts err is a *CommitTooLargeError naming the limit and
// the Data page.
func checkTooLarge(t *testing.T, via string, err error) {
	t.Helper()
	var big *casty.CommitTooLargeError
	if !errors.As(err, &big) {
		t.Fatalf("%s: a 5 MiB page: %v (%T), want *casty.CommitTooLargeError", via, err, err)
	}
	if big.Limit != pageLimit || big.Page != "Data" || big.Size <= pageLimit {
		t.Fatalf("%s: %+v, want page Data over the %d-byte limit", via, big, pageLimit)
	}
	for _, s := range []string{strconv.Itoa(pageLimit), `"Data"`} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %q does not name %s", via, err, s)
		}
	}
}

// TestCommitOverThePageLimitIsATypedError: a handler that leaves a page
// over the pager's MaxPageSize gets *CommitTooLargeError, locally and
// across nodes, the connection stays up, and the key serves its last
// committed state afterwards.
func TestCommitOverThePageLimitIsATypedError(t *testing.T) {
	nodes := startReplicated(t, 3, casty.WithConfig(pagedConfig()))
	ctx := context.Background()
	owner, other := ownerAndOther(t, nodes, Blobs.Name(), "b")
	if n, err := casty.Call(ctx, Blobs.Ref(other, "b"), (*Blob).Grow, 1024); err != nil || n != 1 {
		t.Fatalf("first commit: %d, %v", n, err)
	}

	_, err := casty.Call(ctx, Blobs.Ref(owner, "b"), (*Blob).Grow, 5<<20)
	checkTooLarge(t, "called on the owner", err)
	if n, err := casty.Call0(ctx, Blobs.Ref(owner, "b"), (*Blob).Get); err != nil || n != 1 {
		t.Fatalf("after the refused commit the owner serves N=%d, %v; want the committed 1", n, err)
	}

	// Across nodes the error names the limit and the page (its type is
	// TestCommitTooLargeErrorCrossesTheWire's business).
	_, err = casty.Call(ctx, Blobs.Ref(other, "b"), (*Blob).Grow, 5<<20)
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(pageLimit)) || !strings.Contains(err.Error(), `"Data"`) {
		t.Fatalf("called through another member: %v, want an error naming the %d-byte limit and the Data page", err, pageLimit)
	}

	// The connection the error travelled on still carries calls, and the
	// key goes on from its last committed state.
	if n, err := casty.Call(ctx, Blobs.Ref(other, "b"), (*Blob).Grow, 2048); err != nil || n != 2 {
		t.Fatalf("after two refused commits: %d, %v; want N=2", n, err)
	}
	for _, s := range nodes {
		if got := len(s.Members()); got != 3 {
			t.Fatalf("%s sees %d members after the refused commits", s.Addr(), got)
		}
	}
}

// TestReplicaAnswersGarbageWithAnErrorAndKeepsItsState: requests on the
// replication lane that are not replication messages, or are but make no
// sense, get an error reply; the replica's copy of an actor is unchanged
// and the cluster serves it.
func TestReplicaAnswersGarbageWithAnErrorAndKeepsItsState(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		if n, err := casty.Call(ctx, Ledgers.Ref(nodes[0], "g"), (*Ledger).Add, 1); err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	replicasAgree(t, nodes, Ledgers.Name(), "g") // the target's copy, as complete as it gets
	target := nodes[1]
	before, _ := casty.ReplicaState(target, Ledgers.Name(), "g")
	statsBefore := target.Replication()

	encode := func(m *replica.Msg) []byte {
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte{'R'}, b...)
	}
	valid := encode(&replica.Msg{Op: replica.OpCommit, Kind: Ledgers.Name(), Key: "g"})
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := map[string][]byte{
		"prefix alone":              {'R'},
		"0xff bytes":                append([]byte{'R'}, []byte(strings.Repeat("\xff", 64))...),
		"a truncated message":       valid[:len(valid)/2],
		"a commit without a delta":  valid,
		"an answer as a request":    encode(&replica.Msg{Op: replica.OpAck, Kind: Ledgers.Name(), Key: "g"}),
		"a huge declared array":     append([]byte{'R', 0xdd, 0x7f, 0xff, 0xff, 0xff}, 0x01),
		"a huge declared byte blob": append([]byte{'R', 0x81, 0xa1, 'd', 0xc6, 0x7f, 0xff, 0xff, 0xff}, 0x01),
	}
	for i := range 20 {
		b := make([]byte, 1+rng.IntN(200))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		garbage["random #"+strconv.Itoa(i)] = append([]byte{'R'}, b...)
	}
	for name, payload := range garbage {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := casty.ReplicationRequest(rctx, nodes[0], target, payload)
		cancel()
		if err != nil {
			t.Fatalf("%s: the request failed (%v); want an error reply", name, err)
		}
		if len(resp) < 1 || resp[0] != 'R' {
			t.Fatalf("%s: reply %q, want 'R' and a message", name, resp)
		}
		m, err := replica.Decode(resp[1:])
		if err != nil {
			t.Fatalf("%s: undecodable reply: %v", name, err)
		}
		if m.Status != replica.StatusCorrupt || m.Reason == "" {
			t.Fatalf("%s: reply %v %q, want %v with a reason", name, m.Status, m.Reason, replica.StatusCorrupt)
		}
	}
	// An unknown lane prefix fails the request; the session goes on.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := casty.ReplicationRequest(rctx, nodes[0], target, []byte("Zgarbage"))
	cancel()
	if err == nil {
		t.Fatal("an unknown replication request was answered as if it made sense")
	}

	if after, ok := casty.ReplicaState(target, Ledgers.Name(), "g"); !ok || after != before {
		t.Fatalf("the replica's copy of g went from %s to %s (held %v)", before, after, ok)
	}
	if st := target.Replication(); st.Keys != statsBefore.Keys || st.Bytes != statsBefore.Bytes {
		t.Fatalf("garbage changed what the replica holds: %+v -> %+v", statsBefore, st)
	}
	for _, via := range nodes {
		if n, err := casty.Call0(ctx, Ledgers.Ref(via, "g"), (*Ledger).Get); err != nil || n != 5 {
			t.Fatalf("g through %s after the garbage: %d, %v; want 5", via.Addr(), n, err)
		}
	}
	if n, err := casty.Call(ctx, Ledgers.Ref(target, "g"), (*Ledger).Add, 1); err != nil || n != 6 {
		t.Fatalf("a commit after the garbage: %d, %v; want 6", n, err)
	}
}

// TestReplicationStatsGrowWithState: every member reports the keys it
// holds a copy of and their bytes, and both grow with replicated state.
func TestReplicationStatsGrowWithState(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	total := func() (keys, bytes int) {
		for _, s := range nodes {
			st := s.Replication()
			keys += st.Keys
			bytes += st.Bytes
		}
		return keys, bytes
	}
	k0, b0 := total()
	const n = 10
	for i := range n {
		key := "s" + strconv.Itoa(i)
		if _, err := casty.Call(ctx, Ledgers.Ref(nodes[i%3], key), (*Ledger).Add, 1); err != nil {
			t.Fatalf("add to %s: %v", key, err)
		}
		replicasAgree(t, nodes, Ledgers.Name(), key)
	}
	k1, b1 := total()
	// Each key is on 3 members, at least a majority of them (Write(Majority)
	// lets one miss a commit).
	if k1-k0 < 2*n || k1-k0 > 3*n || b1 <= b0 {
		t.Fatalf("after %d new keys on 3 replicas each: keys %d -> %d, bytes %d -> %d; want %d to %d more keys and more bytes", n, k0, k1, b0, b1, 2*n, 3*n)
	}
	for range 100 {
		if _, err := casty.Call(ctx, Ledgers.Ref(nodes[0], "s0"), (*Ledger).Add, 1000); err != nil {
			t.Fatal(err)
		}
	}
	replicasAgree(t, nodes, Ledgers.Name(), "s0")
	k2, b2 := total()
	if k2 != k1 || b2 <= b1 {
		t.Fatalf("after a key's history grew by 100 entries: keys %d -> %d, bytes %d -> %d; want the same keys, more bytes", k1, k2, b1, b2)
	}
	for _, s := range nodes {
		if st := s.Replication(); st.Keys == 0 || st.Bytes == 0 {
			t.Fatalf("%s holds %+v, want copies of the keys", s.Addr(), st)
		}
	}
}

// TestCommitTooLargeErrorCrossesTheWire: a remote caller gets the same
// *CommitTooLargeError a local one does.
func TestCommitTooLargeErrorCrossesTheWire(t *testing.T) {
	nodes := startReplicated(t, 3, casty.WithConfig(pagedConfig()))
	ctx := context.Background()
	_, other := ownerAndOther(t, nodes, Blobs.Name(), "w")
	_, err := casty.Call(ctx, Blobs.Ref(other, "w"), (*Blob).Grow, 5<<20)
	checkTooLarge(t, "called through another member", err)
}

// TestPageJustUnderTheLimitFitsAMessage: a page the pager accepts (under
// MaxPageSize) must also fit a replication message (MaxMessage, 4 MiB like
// MaxPageSize): the commit either succeeds or is refused with
// *CommitTooLargeError, and the key goes on serving.
func TestPageJustUnderTheLimitFitsAMessage(t *testing.T) {
	nodes := startReplicated(t, 3)
	ctx := context.Background()
	_, other := ownerAndOther(t, nodes, Blobs.Name(), "edge")
	if n, err := casty.Call(ctx, Blobs.Ref(other, "edge"), (*Blob).Grow, 1024); err != nil || n != 1 {
		t.Fatalf("first commit: %d, %v", n, err)
	}
	want := 2
	// Just under the pager's own default (4 MiB), which a page plus the
	// envelope would not fit in a message.
	if _, err := casty.Call(ctx, Blobs.Ref(other, "edge"), (*Blob).Grow, 4<<20-20); err != nil {
		var big *casty.CommitTooLargeError
		if !errors.As(err, &big) {
			t.Fatalf("a page just under the page limit: %v, want success or *casty.CommitTooLargeError", err)
		}
		want = 1
	}
	if n, err := casty.Call0(ctx, Blobs.Ref(other, "edge"), (*Blob).Get); err != nil || n != want {
		t.Fatalf("after the commit: N=%d, %v; want %d", n, err, want)
	}
}

// TestReplicatedStateLimit: with Config.Replication.MaxBytes, new replicated
// actors are refused with ErrReplicaFull (definite, and so not
// ErrQuorumUnavailable) once the replicas are at the limit, locally and
// across nodes; the actors already held keep committing; the usage is
// visible in System.Replication.
func TestReplicatedStateLimit(t *testing.T) {
	cfg := replicationConfig()
	cfg.Replication.MaxBytes = 16 << 10
	nodes := startReplicated(t, 3, casty.WithConfig(cfg))
	ctx := context.Background()
	var held []string
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		k := "limit-" + strconv.Itoa(i)
		if _, err := casty.Call(ctx, Blobs.Ref(nodes[i%3], k), (*Blob).Grow, 64); err != nil {
			full = err
			break
		}
		held = append(held, k)
	}
	if !errors.Is(full, casty.ErrReplicaFull) || errors.Is(full, casty.ErrQuorumUnavailable) {
		t.Fatalf("after %d actors: %v, want ErrReplicaFull (and not ErrQuorumUnavailable)", len(held), full)
	}
	if len(held) == 0 {
		t.Fatal("the limit refused the first actor")
	}
	// Refused from every member, whoever owns the key.
	for _, n := range nodes {
		if _, err := casty.Call(ctx, Blobs.Ref(n, "limit-new"), (*Blob).Grow, 64); !errors.Is(err, casty.ErrReplicaFull) {
			t.Fatalf("a new actor via %s: %v, want ErrReplicaFull", n.Addr(), err)
		}
	}
	// The actors already held keep committing.
	for _, k := range held[:min(len(held), 5)] {
		if _, err := casty.Call(ctx, Blobs.Ref(nodes[1], k), (*Blob).Grow, 128); err != nil {
			t.Fatalf("a held actor %s: %v", k, err)
		}
	}
	over := false
	for _, n := range nodes {
		st := n.Replication()
		if st.Limit != cfg.Replication.MaxBytes || st.Usage < st.Bytes {
			t.Fatalf("%s: %+v", n.Addr(), st)
		}
		over = over || st.Usage >= st.Limit
	}
	if !over {
		t.Fatal("no member reports usage at its limit")
	}
}

package casty_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/replica"
)

// A member sent replication of a kind its program does not declare says
// so, once per kind: it stores what it is sent but never syncs that kind,
// so it holds no vote for keys written before it joined — a replica short
// that used to go unnoticed.
func TestAMemberSentAnUndeclaredKindSaysSoOnce(t *testing.T) {
	rec := &logLines{}
	logger := casty.WithLogger(slog.New(rec))
	a := startNode(t, nil, logger)
	b := startNode(t, []string{a.Addr()}, logger)
	waitConverged(t, []*casty.System{a, b}, 2)
	warned := func() int {
		n := 0
		for _, m := range rec.casty() {
			if strings.Contains(m, "does not declare") {
				n++
			}
		}
		return n
	}
	var target *casty.System
	send := func(kind string) {
		t.Helper()
		b, err := (&replica.Msg{Op: replica.OpPrepare, Kind: kind, Key: "k"}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := casty.ReplicationRequest(ctx, a, target, append([]byte{'R'}, b...)); err != nil {
			t.Fatal(err)
		}
	}
	target = b
	send(Ledgers.Name())
	if n := warned(); n != 0 {
		t.Fatalf("a declared kind warned %d times", n)
	}
	send("test.DeclaredNowhere")
	send("test.DeclaredNowhere")
	if n := warned(); n != 1 {
		t.Fatalf("two messages of one undeclared kind warned %d times, want once", n)
	}
	send("test.AlsoDeclaredNowhere")
	if n := warned(); n != 2 {
		t.Fatalf("a second undeclared kind: %d warnings in all, want 2", n)
	}
}

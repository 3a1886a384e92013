package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// On a cluster with secrets, castyctl joins and reads state only with the
// operator secret (-operator-secret-file).
func TestCastyctlOperatorSecret(t *testing.T) {
	member := []byte("member secret of 32 bytes.......")
	operator := []byte("operator secret of 32 bytes.....")
	nodes := startCluster(t, 2, casty.WithClusterSecret(member), casty.WithOperatorSecret(operator))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := casty.Call(ctx, Counters.Ref(nodes[1], "sec"), (*Counter).Add, "x"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "operator.secret")
	if err := os.WriteFile(file, append(operator, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl(t, nodes[0].Addr(), "-timeout", "2s", "state", Counters.Name(), "sec"); code != exitUnreachable {
		t.Fatalf("without the secret: exit %d (%s), want %d", code, errOut, exitUnreachable)
	}
	code, out, errOut := ctl(t, nodes[0].Addr(), "-operator-secret-file", file, "state", Counters.Name(), "sec")
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || st["N"] != 1.0 {
		t.Fatalf("with the secret: exit %d, %v, %v: %s%s", code, st, err, out, errOut)
	}
}

package casty_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestHelperNode is not a test: run by TestProcessKilledWithSIGKILL as a
// separate process, it starts a member, prints its address and serves
// until killed.
func TestHelperNode(t *testing.T) {
	seed := os.Getenv("CASTY_HELPER_SEED")
	if seed == "" {
		t.Skip("runs only as the child process of TestProcessKilledWithSIGKILL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sys, err := casty.Start(ctx, "127.0.0.1:0", casty.WithConfig(fastCluster()), casty.Seeds(seed), quiet())
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", sys.Addr())
	select {} // until SIGKILL
}

func TestProcessKilledWithSIGKILL(t *testing.T) {
	parallel(t)
	if testing.Short() {
		t.Skip("starts a child process; skipped with -short")
	}
	nodes := startCluster(t, 2)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNode$", "-test.v")
	cmd.Env = append(os.Environ(), "CASTY_HELPER_SEED="+nodes[0].Addr())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var child string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			child = a
			break
		}
		if strings.HasPrefix(sc.Text(), "ERROR") {
			t.Fatal(sc.Text())
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	waitConverged(t, nodes, 3)
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprint("proc-", i)
		if m, _ := nodes[0].OwnerOf(Wheres.Name(), k); m.Addr == child {
			key = k
		}
	}
	ctx := context.Background()
	out1, err := casty.Call0(ctx, Wheres.Ref(nodes[0], key), (*Where).Hit)
	if err != nil || !strings.HasPrefix(out1, child+"#") {
		t.Fatalf("call to the child's key: %q %v", out1, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, nodes, 2)
	out2, err := casty.Call0(ctx, Wheres.Ref(nodes[1], key), (*Where).Hit)
	if err != nil || strings.HasPrefix(out2, child) || !strings.HasSuffix(out2, "#1") {
		t.Fatalf("after SIGKILL of its owner: %q %v (want a fresh activation on a survivor)", out2, err)
	}
}

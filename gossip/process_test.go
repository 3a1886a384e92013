package gossip

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHelperMember is not a test: run by TestSocketSIGKILLThreeProcesses as
// a separate process, it starts one agent on the address it is given,
// prints that address and serves until killed (or until its parent goes
// away and its stdin closes).
func TestHelperMember(t *testing.T) {
	seed := os.Getenv("GOSSIP_HELPER_SEED")
	if seed == "" {
		t.Skip("runs only as a child process of TestSocketSIGKILLThreeProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("GOSSIP_HELPER_ID"))
	id := NodeID{0xbb, byte(n)}
	tr, err := ListenMux(os.Getenv("GOSSIP_HELPER_ADDR"), muxConfig(id))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if _, err := Start(Peer{ID: id, Addr: tr.Addr()}, socketConfig(seed), tr); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("ADDR", tr.Addr())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Seven members in this process and three in processes of their own, each
// on its own 127.0.0.x address; the three are killed with SIGKILL at once
// (no leave, sockets torn down by the kernel). Every survivor marks each of
// them DEAD exactly once and keeps every survivor ALIVE.
func TestSocketSIGKILLThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes; skipped with -short")
	}
	var nodes []*socketNode
	for i := range 7 {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].tr.Addr()}
		}
		nodes = append(nodes, startSocketNodeAt(t, fmt.Sprintf("127.0.0.%d:0", 2+i), NodeID{0xaa, byte(i + 1)}, seeds...))
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, s := range nodes {
			wg.Go(s.close)
		}
		wg.Wait()
	})
	var children []*exec.Cmd
	var ids []NodeID
	for i := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMember$", "-test.v")
		cmd.Env = append(os.Environ(), "GOSSIP_HELPER_SEED="+nodes[0].tr.Addr(),
			fmt.Sprintf("GOSSIP_HELPER_ID=%d", i+1), fmt.Sprintf("GOSSIP_HELPER_ADDR=127.0.0.%d:0", 9+i))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
		sc := bufio.NewScanner(out)
		addr := ""
		for addr == "" && sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				addr = a
			} else if strings.HasPrefix(sc.Text(), "ERROR") {
				t.Fatal(sc.Text())
			}
		}
		if addr == "" {
			t.Fatalf("child %d printed no address", i)
		}
		go io.Copy(io.Discard, out)
		children = append(children, cmd)
		ids = append(ids, NodeID{0xbb, byte(i + 1)})
	}
	everyone := append([]NodeID(nil), ids...)
	for _, s := range nodes {
		everyone = append(everyone, s.agent.Self().ID)
	}
	eventually(t, 20*time.Second, "10 members across 4 processes converge", func() bool {
		return allSee(nodes, everyone, isStatus(Alive))
	})
	for _, c := range children {
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	survivorsSeeDeadOnce(t, 20*time.Second, nodes, ids)
}

package muxtransport

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
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
	id := gossip.NodeID{0xbb, byte(n)}
	tr, _, err := listen(os.Getenv("GOSSIP_HELPER_ADDR"), muxConfig(id))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	if _, err := gossip.Start(gossip.Peer{ID: id, Addr: tr.Addr()}, socketConfig(seed), tr); err != nil {
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
	nodes := startSocketNodes(t, 7, 2)
	var children []*exec.Cmd
	var ids []gossip.NodeID
	for i := range 3 {
		cmd, id := startChildMember(t, nodes[0].tr.Addr(), i+1, fmt.Sprintf("127.0.0.%d:0", 9+i))
		children = append(children, cmd)
		ids = append(ids, id)
	}
	everyone := append([]gossip.NodeID(nil), ids...)
	for _, s := range nodes {
		everyone = append(everyone, s.agent.Self().ID)
	}
	waitFor(t, 20*time.Second, "10 members across 4 processes converge", func() bool {
		return allSee(nodes, everyone, isStatus(gossip.Alive))
	})
	for _, c := range children {
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	survivorsSeeDeadOnce(t, 20*time.Second, nodes, ids)
}

// startChildMember runs TestHelperMember in a process of its own: an agent
// with id {0xbb, n} on addr, joining through seed. It returns once the child
// printed its address; the child is killed when the test ends.
func startChildMember(t *testing.T, seed string, n int, addr string) (*exec.Cmd, gossip.NodeID) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMember$", "-test.v")
	cmd.Env = append(os.Environ(), "GOSSIP_HELPER_SEED="+seed,
		fmt.Sprintf("GOSSIP_HELPER_ID=%d", n), "GOSSIP_HELPER_ADDR="+addr)
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
	got := ""
	for got == "" && sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			got = a
		} else if strings.HasPrefix(sc.Text(), "ERROR") {
			t.Fatal(sc.Text())
		}
	}
	if got == "" {
		t.Fatalf("child %d printed no address", n)
	}
	go io.Copy(io.Discard, out)
	return cmd, gossip.NodeID{0xbb, byte(n)}
}

// A member frozen with SIGSTOP keeps its connections open but answers no
// keepalive: its neighbours' failed keepalives raise the suspicion, which
// becomes DEAD. Thawed with SIGCONT, it learns it was declared dead and
// rejoins at a higher incarnation: ALIVE everywhere again.
func TestSocketSIGSTOPFailsKeepalivesThenRefutes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process; skipped with -short")
	}
	nodes := startSocketNodes(t, 3, 20)
	child, id := startChildMember(t, nodes[0].tr.Addr(), 7, "127.0.0.23:0")
	waitFor(t, 20*time.Second, "the child to be ALIVE everywhere", func() bool {
		return allSee(nodes, []gossip.NodeID{id}, isStatus(gossip.Alive))
	})
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the frozen child to be DEAD everywhere", func() bool {
		return allSee(nodes, []gossip.NodeID{id}, isStatus(gossip.Dead))
	})
	if err := child.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the thawed child to be ALIVE at a higher incarnation", func() bool {
		return allSee(nodes, []gossip.NodeID{id}, func(m gossip.Member) bool { return m.Status == gossip.Alive && m.Incarnation > 0 })
	})
}

//go:build unix

package examples

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one running process of an example: its stdout lines arrive on
// lines, in order, and the channel closes when it exits.
type proc struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr bytes.Buffer  // read it after wait
	done   chan struct{} // the stdout reader ended
	once   sync.Once
	err    error // Wait's
}

// startProc starts bin with args; Cleanup stops it (SIGTERM, then SIGKILL
// after 10 s) and waits for it and its reader.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), lines: make(chan string, 64), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// expect returns the next line holding want, failing the test if the
// process exits or a minute passes first.
func (p *proc) expect(t *testing.T, want string) string {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				err := p.wait()
				t.Fatalf("%v exited (%v) before printing %q; stderr:\n%s", p.cmd.Args, err, want, p.stderr.String())
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline.C:
			t.Fatalf("%v did not print %q within a minute", p.cmd.Args, want)
		}
	}
}

// wait waits for the process to exit, at most a minute (then kills it),
// and returns how it ended.
func (p *proc) wait() error {
	p.once.Do(func() {
		kill := time.AfterFunc(time.Minute, func() { _ = p.cmd.Process.Kill() })
		defer kill.Stop()
		for range p.lines { // drain, so the reader can finish
		}
		<-p.done
		p.err = p.cmd.Wait()
	})
	return p.err
}

// stop asks the process to end, as a deployment stops it (SIGTERM), and
// waits for it.
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // fails if it already exited
	return p.wait()
}

// buildExample builds the example in dir into a temporary directory and
// returns the binary's path.
func buildExample(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./"+dir).CombinedOutput(); err != nil {
		t.Fatalf("go build ./%s: %v\n%s", dir, err, out)
	}
	return bin
}

// 13_processes with real processes: three members, each its own process,
// and a client process, started as its doc comment says.
func TestProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	bin := buildExample(t, "13_processes")
	first := startProc(t, bin, "-role", "member", "-listen", "127.0.0.1:0")
	seed := strings.TrimPrefix(first.expect(t, "member ready at "), "member ready at ")
	members := []*proc{first}
	for range 2 {
		m := startProc(t, bin, "-role", "member", "-listen", "127.0.0.1:0", "-seeds", seed)
		m.expect(t, "member ready at ")
		members = append(members, m)
	}

	client := startProc(t, bin, "-role", "client", "-seeds", seed, "-members", "3")
	for _, want := range []string{
		"client sees 3 members",
		"30 keys, each answered by its owner's process: true",
		"the client hosts 0 activations",
	} {
		client.expect(t, want)
	}
	if err := client.wait(); err != nil {
		t.Fatalf("client: %v\n%s", err, client.stderr.String())
	}

	// Each member leaves gracefully on SIGTERM, as a deployment stops it,
	// and exits 0.
	for _, m := range slices.Backward(members) {
		if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		m.expect(t, "member left: ")
		if err := m.wait(); err != nil {
			t.Fatalf("member after SIGTERM: %v\n%s", err, m.stderr.String())
		}
	}
}

// 05_replicated_inventory starts its own member processes: it closes one
// gracefully, replaces it, kills another, and reads every write back. It
// exits 0 once its remaining members have left.
func TestReplicatedInventory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	demo := startProc(t, buildExample(t, "05_replicated_inventory"))
	for _, want := range []string{
		"3 member processes; the demo joined as a lite member",
		"received 390 units of 20 SKUs",
		"member left: ", // the deploy's graceful close
		"deploy: a member left gracefully, its replacement joined; the lite member routes to 3",
		"machine failure: the warehouse's owner was killed",
		"after a graceful close and a kill: stock intact: true, 20 of 20 prices intact: true",
		"shipped 1 of sku-00: stock 9",
		"member left: ", "member left: ", // the cleanup's
	} {
		demo.expect(t, want)
	}
	if err := demo.wait(); err != nil {
		t.Fatalf("demo: %v\n%s", err, demo.stderr.String())
	}
}

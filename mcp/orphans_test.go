package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(s[i+1:], " Z")
}

// waitGone polls /proc until none of pids is alive, or fails naming those
// that are.
func waitGone(t *testing.T, what string, within time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: pids %v still alive after %s (of %v)", what, left, within, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forkerPids asks a connected forker for its own and its grandchild's pid.
func forkerPids(t *testing.T, m *Manager, name string) (child, grandchild int) {
	t.Helper()
	res, err := m.CallTool(context.Background(), name+"__pids", nil)
	if err != nil {
		t.Fatalf("CallTool pids: %v", err)
	}
	if _, err := fmt.Sscanf(text(t, res), "%d %d", &child, &grandchild); err != nil || child == 0 || grandchild == 0 {
		t.Fatalf("pids: got %q (%v); want two pids", text(t, res), err)
	}
	return child, grandchild
}

// requirePIDNamespaces skips where the kernel refuses PID namespaces, where
// grandchildren cannot be contained; CI runs as root and must have them.
func requirePIDNamespaces(t *testing.T) {
	t.Helper()
	if _, err := pidNamespaceAttr(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PID namespaces unavailable: %v", err)
		}
		t.Skipf("PID namespaces unavailable: %v", err)
	}
}

func TestCloseKillsGrandchildren(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    map[string]string
		needNS bool
	}{
		{"same group", nil, false},
		// A grandchild that leaves the group escapes group signals; only
		// the namespace catches it.
		{"setsid", map[string]string{"FORKER_SETSID": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.needNS {
				requirePIDNamespaces(t)
			}
			m := NewManager(fastOptions(nil))
			defer m.Close()
			connect(t, m, stdioSpec(t, "forker", "forker", tc.env))
			child, grandchild := forkerPids(t, m, "forker")
			if st, _ := m.State("forker"); st.PID != child {
				t.Fatalf("State.PID: got %d; want the host pid %d", st.PID, child)
			}
			if !alive(child) || !alive(grandchild) {
				t.Fatalf("before Close: child %d alive %v, grandchild %d alive %v; want both", child, alive(child), grandchild, alive(grandchild))
			}
			m.Close()
			waitGone(t, "after Close", 5*time.Second, child, grandchild)
		})
	}
}

// helperEnv makes TestHelperManagerProcess act as a manager process.
const helperEnv = "PATCHBAY_MCP_HELPER_MANAGER"

// TestKill9OfManagerLeavesNoOrphans runs a manager in another process (this
// test binary again), SIGKILLs it, and checks that its connectors and their
// grandchildren die with it.
func TestKill9OfManagerLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	requirePIDNamespaces(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperManagerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir(), binDirEnv+"="+binDir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "PIDS ") {
				lines <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("helper manager printed no pids within 30s")
	}
	var forker, grandchild, echo int
	if _, err := fmt.Sscanf(line, "PIDS %d %d %d", &forker, &grandchild, &echo); err != nil {
		t.Fatalf("helper output %q: %v", line, err)
	}
	for _, p := range []int{forker, grandchild, echo} {
		if !alive(p) {
			t.Fatalf("pid %d from %q is not running before the kill", p, line)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, "after kill -9 of the manager (connector, grandchild, connector)", 10*time.Second, forker, grandchild, echo)
}

// TestHelperManagerProcess is not a test: it is the manager process that
// TestKill9OfManagerLeavesNoOrphans starts and kills. It connects forker and
// echo, prints "PIDS <forker> <grandchild> <echo>" and waits for stdin to
// close.
func TestHelperManagerProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9OfManagerLeavesNoOrphans")
	}
	m := NewManager(fastOptions(nil))
	defer m.Close()
	specs := []Spec{
		{Name: "forker", Command: binDir + "/forker", Dir: dir},
		{Name: "echo", Command: binDir + "/echo", Dir: dir},
	}
	connect(t, m, specs...)
	forker, grandchild := forkerPids(t, m, "forker")
	st, _ := m.State("echo")
	fmt.Printf("PIDS %d %d %d\n", forker, grandchild, st.PID)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

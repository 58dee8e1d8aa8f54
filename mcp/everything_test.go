package mcp

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"patchbay/mcp/install/installtest"
)

// everythingDir is the npm project pinning @modelcontextprotocol/server-everything.
func everythingDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "everything")
}

// ensureEverything installs the pinned server-everything with `npm ci` when
// its node_modules is missing (installtest.NPMCI), and returns the absolute
// path of node and of the package's bin script. Without node/npm or
// network it skips locally and fails in CI.
func ensureEverything(t testing.TB) (node, script string) {
	t.Helper()
	dir := everythingDir(t)
	script = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	fail := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		fail("server-everything: node not found: %v", err)
	}
	if err := installtest.NPMCI(dir, script); err != nil {
		fail("server-everything: %v", err)
	}
	return node, script
}

// everythingTools are tools the pinned version is known to expose.
var everythingTools = []string{"echo", "get-sum", "get-env", "get-tiny-image", "trigger-long-running-operation"}

func checkEverything(t *testing.T, m *Manager, name string) {
	t.Helper()
	have := map[string]bool{}
	for _, d := range m.ToolDefs() {
		have[d.Name] = true
	}
	for _, tool := range everythingTools {
		if !have[ToolName(name, tool)] {
			t.Errorf("tools of %s: missing %s; got %v", name, tool, toolNames(m.ToolDefs()))
		}
	}
	res, err := m.CallTool(context.Background(), ToolName(name, "echo"), map[string]any{"message": "hi there"})
	if err != nil {
		t.Fatalf("CallTool echo: %v", err)
	}
	if res.IsError || !strings.Contains(text(t, res), "hi there") {
		t.Fatalf("echo: got %q (isError %v); want it to contain %q", text(t, res), res.IsError, "hi there")
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	node, script := ensureEverything(t)
	m := newTestManager(t, nil)
	connect(t, m, Spec{Name: "everything", Transport: TransportStdio, Command: node, Args: []string{script, "stdio"}, Dir: t.TempDir()})
	checkEverything(t, m, "everything")
	if st, _ := m.State("everything"); st.PID == 0 {
		t.Errorf("state: got PID 0; want the node process id")
	}
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything in streamableHttp mode on a
// free port and returns its MCP endpoint once it accepts connections.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	node, script := ensureEverything(t)
	port := freePort(t)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Dir = t.TempDir()
	cmd.Env = BuildStdioEnv(map[string]string{"PORT": fmt.Sprint(port)}, cmd.Dir)
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server-everything: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		select {
		case <-exited:
			t.Fatalf("server-everything exited before listening: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything not listening on %s after 20s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	url := startEverythingHTTP(t)
	m := newTestManager(t, nil)
	connect(t, m, Spec{Name: "everything", Transport: TransportStreamableHTTP, URL: url})
	checkEverything(t, m, "everything")
}

// lockedBuf is a strings.Builder safe to read while a process writes it.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

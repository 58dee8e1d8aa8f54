package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bwrapManager returns a manager whose connectors run under bubblewrap. It
// skips only if bwrap is not installed; a bwrap that cannot sandbox here
// is a failure.
func bwrapManager(t *testing.T) *Manager {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed (Debian package bubblewrap)")
	}
	if err := bwrapUsable(); err != nil {
		t.Fatalf("bwrap is installed but cannot sandbox: %v", err)
	}
	o := fastOptions(nil)
	o.Runner = BwrapRunner{}
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	return m
}

// call calls a tool and returns its text and whether it was a tool error.
func call(t *testing.T, m *Manager, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := m.CallTool(context.Background(), tool, args)
	if err != nil {
		t.Fatalf("CallTool %s: %v", tool, err)
	}
	return text(t, res), res.IsError
}

func TestBwrapRunnerServesEcho(t *testing.T) {
	t.Parallel()
	m := bwrapManager(t)
	connect(t, m, stdioSpec(t, "echo", "echo", nil))
	if got, isErr := call(t, m, "echo__echo", map[string]any{"text": "sandboxed"}); isErr || got != "sandboxed" {
		t.Fatalf("echo: got %q (error %v); want %q", got, isErr, "sandboxed")
	}
	m.Close()
	if st, _ := m.State("echo"); st.Phase != PhaseStopped {
		t.Fatalf("after Close: got %s; want stopped", st.Phase)
	}
}

func TestBwrapRunnerSeesOnlyItsOwnDir(t *testing.T) {
	t.Parallel()
	m := bwrapManager(t)
	spec := stdioSpec(t, "fs", "fsprobe", nil)
	own := filepath.Join(spec.Dir, "own.txt")
	other := filepath.Join(t.TempDir(), "other.txt")
	for _, f := range []string{own, other} {
		if err := os.WriteFile(f, []byte("content of "+filepath.Base(f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	connect(t, m, spec)

	if got, isErr := call(t, m, "fs__read", map[string]any{"path": own}); isErr || got != "content of own.txt" {
		t.Errorf("read own dir: got %q (error %v); want its content", got, isErr)
	}
	if got, isErr := call(t, m, "fs__read", map[string]any{"path": other}); !isErr {
		t.Errorf("read another temp dir: got %q; want an error", got)
	}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		if got, isErr := call(t, m, "fs__read", map[string]any{"path": "/etc/shadow"}); !isErr {
			t.Errorf("read /etc/shadow: got %d bytes; want an error", len(got))
		}
	}

	written := filepath.Join(spec.Dir, "written.txt")
	if got, isErr := call(t, m, "fs__write", map[string]any{"path": written, "text": "hi"}); isErr {
		t.Errorf("write own dir: %s", got)
	} else if b, err := os.ReadFile(written); err != nil || string(b) != "hi" {
		t.Errorf("file written in the sandbox, read on the host: got %q, %v; want %q", b, err, "hi")
	}
	if got, isErr := call(t, m, "fs__write", map[string]any{"path": "/usr/patchbay-sandbox-probe", "text": "x"}); !isErr {
		t.Errorf("write /usr: got %q; want an error", got)
		os.Remove("/usr/patchbay-sandbox-probe")
	}
	status, _ := call(t, m, "fs__read", map[string]any{"path": "/proc/self/status"})
	if !strings.Contains(status, "CapEff:\t0000000000000000") {
		t.Errorf("capabilities in the sandbox: want none; status:\n%s", status)
	}
}

func TestBwrapRunnerEnvIsExactlySpecEnv(t *testing.T) {
	t.Setenv("PATCHBAY_SECRET_KEY", "canary-0b7e")
	m := bwrapManager(t)
	spec := stdioSpec(t, "fs", "fsprobe", map[string]string{"FOO": "bar baz"})
	spec.Secrets = map[string]string{"API_KEY": "own-secret"}
	connect(t, m, spec)

	got, _ := call(t, m, "fs__env", nil)
	lines := strings.Split(got, "\n")
	slices.Sort(lines)
	want := []string{"API_KEY=own-secret", "FOO=bar baz", "HOME=" + spec.Dir, "LANG=C.UTF-8", "PATH=" + BasePath}
	if !slices.Equal(lines, want) {
		t.Fatalf("env in the sandbox: got %q; want %q", lines, want)
	}
	// The secret is passed through a pipe, not on bwrap's command line,
	// which every user on the host can read.
	st, _ := m.State("fs")
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.PID))
	if err != nil {
		t.Fatalf("read bwrap's cmdline: %v", err)
	}
	if strings.Contains(string(cmdline), "own-secret") {
		t.Fatalf("bwrap's command line carries the secret: %q", cmdline)
	}
}

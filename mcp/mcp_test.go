package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"patchbay"
)

// binDir holds the test MCP servers, built once per test binary.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// binDirEnv hands the built servers to a helper process re-executing this
// test binary (see TestKill9OfManagerLeavesNoOrphans), so it does not build
// them again.
const binDirEnv = "PATCHBAY_MCP_TEST_BINDIR"

func run(m *testing.M) int {
	if dir := os.Getenv(binDirEnv); dir != "" {
		binDir = dir
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "patchbay-mcpservers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + "/"}
	for _, s := range []string{"echo", "slowstart", "crashafter", "listchanged", "hang", "stderrnoise", "envdump", "forker", "fsprobe"} {
		args = append(args, "patchbay/testdata/mcpservers/"+s)
	}
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build test servers:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// recorder keeps every state change for assertions on transitions.
type recorder struct {
	mu  sync.Mutex
	all []State
}

func (r *recorder) add(s State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, s)
}

func (r *recorder) phases(server string) []Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Phase
	for _, s := range r.all {
		if s.Server == server {
			out = append(out, s.Phase)
		}
	}
	return out
}

func (r *recorder) find(server string, p Phase) (State, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.all {
		if s.Server == server && s.Phase == p {
			return s, true
		}
	}
	return State{}, false
}

func fastOptions(rec *recorder) Options {
	o := Options{
		ConnectTimeout:  10 * time.Second,
		CallTimeout:     10 * time.Second,
		PingInterval:    100 * time.Millisecond,
		PingTimeout:     300 * time.Millisecond,
		PingFailures:    2,
		BackoffBase:     50 * time.Millisecond,
		BackoffMax:      400 * time.Millisecond,
		StableAfter:     time.Minute,
		CrashLoopCount:  3,
		CrashLoopWindow: time.Minute,
		StopGrace:       300 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if rec != nil {
		o.OnStateChange = rec.add
	}
	return o
}

func newTestManager(t *testing.T, rec *recorder) *Manager {
	t.Helper()
	m := NewManager(fastOptions(rec))
	t.Cleanup(func() { m.Close() })
	return m
}

func stdioSpec(t *testing.T, name, bin string, env map[string]string) Spec {
	t.Helper()
	return Spec{Name: name, Transport: TransportStdio, Command: filepath.Join(binDir, bin), Dir: t.TempDir(), Env: env}
}

// waitState polls until the named connector's state satisfies ok.
func waitState(t *testing.T, m *Manager, name string, within time.Duration, ok func(State) bool) State {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, found := m.State(name)
		if found && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got state %+v; want a matching state within %s", name, st, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isReady(s State) bool { return s.Phase == PhaseReady }

func connect(t *testing.T, m *Manager, specs ...Spec) {
	t.Helper()
	if err := m.ConnectAll(context.Background(), specs); err != nil {
		t.Fatalf("ConnectAll: %v", err)
	}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(defs []ToolDef) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

// groupMembers lists the pids whose process group is pgid.
func groupMembers(pgid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid, pgrp int
		if _, err := fmt.Sscanf(s[i+1:], " %s %d %d", &state, &ppid, &pgrp); err != nil {
			continue
		}
		if pgrp == pgid && state != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func TestConnectListAndCall(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	connect(t, m, stdioSpec(t, "echo", "echo", nil))

	got := toolNames(m.ToolDefs())
	want := []string{"echo__echo", "echo__search", "echo__sleep"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools: got %v; want %v", got, want)
	}
	res, err := m.CallTool(context.Background(), "echo__echo", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := text(t, res); got != "hello" {
		t.Fatalf("echo: got %q; want %q", got, "hello")
	}
	if _, err := m.CallTool(context.Background(), "nope__echo", nil); patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Fatalf("unknown connector: got %v; want not_found", err)
	}
}

func TestBuildStdioEnv(t *testing.T) {
	got := BuildStdioEnv(map[string]string{"FOO": "bar", "BAD=KEY": "x"}, "/srv/conn")
	want := []string{"FOO=bar", "HOME=/srv/conn", "LANG=C.UTF-8", "PATH=" + BasePath}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v; want %v", got, want)
	}
	got = BuildStdioEnv(map[string]string{"HOME": "/elsewhere"}, "/srv/conn")
	if !slices.Contains(got, "HOME=/srv/conn") {
		t.Fatalf("declared HOME overrode the connector dir: %v", got)
	}
}

func TestChildEnvironmentIsOnlyDeclared(t *testing.T) {
	t.Setenv("PATCHBAY_SECRET_KEY", "canary-6c1f")
	m := newTestManager(t, nil)
	spec := stdioSpec(t, "envdump", "envdump", map[string]string{"FOO": "bar"})
	spec.Secrets = map[string]string{"API_KEY": "own-secret"}
	connect(t, m, spec)

	st, _ := m.State("envdump")
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.PID))
	if err != nil {
		t.Fatalf("read environ: %v", err)
	}
	got := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	slices.Sort(got)
	want := []string{"API_KEY=own-secret", "FOO=bar", "HOME=" + spec.Dir, "LANG=C.UTF-8", "PATH=" + BasePath}
	if !slices.Equal(got, want) {
		t.Fatalf("/proc/%d/environ: got %v; want %v", st.PID, got, want)
	}
	if strings.Contains(string(raw), "canary-6c1f") {
		t.Fatalf("Patchbay's canary reached the child")
	}

	res, err := m.CallTool(context.Background(), "envdump__env", nil)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if strings.Contains(text(t, res), "PATCHBAY_SECRET_KEY") {
		t.Fatalf("child sees PATCHBAY_SECRET_KEY: %s", text(t, res))
	}
}

func TestCrashRestartsWithNewProcess(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	m := newTestManager(t, rec)
	connect(t, m, stdioSpec(t, "crashy", "crashafter", map[string]string{"CRASH_AFTER": "1"}))
	first, _ := m.State("crashy")

	if _, err := m.CallTool(context.Background(), "crashy__work", nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	st := waitState(t, m, "crashy", 10*time.Second, func(s State) bool { return s.Phase == PhaseReady && s.PID != first.PID })
	if st.PID == 0 || st.PID == first.PID {
		t.Fatalf("pid after restart: got %d; want a new pid (was %d)", st.PID, first.PID)
	}
	phases := rec.phases("crashy")
	i := slices.Index(phases, PhaseRestarting)
	if i < 0 || !slices.Contains(phases[i:], PhaseReady) {
		t.Fatalf("transitions: got %v; want restarting then ready", phases)
	}
	rs, _ := rec.find("crashy", PhaseRestarting)
	if rs.Attempt != 1 || !strings.Contains(rs.LastError, "exit code 3") || !strings.Contains(rs.LastError, "boom") {
		t.Fatalf("restarting state: got %+v; want attempt 1 with exit code and stderr", rs)
	}
}

func TestCrashLoopEndsFailed(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	m := newTestManager(t, rec)
	err := m.ConnectAll(context.Background(), []Spec{stdioSpec(t, "loop", "crashafter", map[string]string{"CRASH_AFTER": "0"})})
	if err == nil {
		t.Fatalf("ConnectAll: got nil; want an error for the crash loop")
	}
	st := waitState(t, m, "loop", 10*time.Second, func(s State) bool { return s.Phase == PhaseFailed })
	for _, want := range []string{"crash loop", "exit code 3", "boom at startup"} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("LastError: got %q; want it to contain %q", st.LastError, want)
		}
	}
	if n := strings.Count(strings.Join(phasesToStrings(rec.phases("loop")), ","), "restarting"); n != 2 {
		t.Errorf("restarts before failing: got %d; want 2", n)
	}
	states := m.States()
	if len(states) != 1 || states[0].Phase != PhaseFailed {
		t.Fatalf("States: got %+v; want the failed connector listed", states)
	}
}

func phasesToStrings(ps []Phase) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p))
	}
	return out
}

func TestHungServerIsRestarted(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	m := newTestManager(t, rec)
	connect(t, m, stdioSpec(t, "hang", "hang", nil))
	first, _ := m.State("hang")

	if _, err := m.CallTool(context.Background(), "hang__hang", nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	st := waitState(t, m, "hang", 10*time.Second, func(s State) bool { return s.Phase == PhaseReady && s.PID != first.PID })
	rs, ok := rec.find("hang", PhaseRestarting)
	if !ok || !strings.Contains(rs.LastError, "ping") {
		t.Fatalf("restarting state: got %+v; want a ping failure", rs)
	}
	if len(groupMembers(first.PID)) != 0 {
		t.Fatalf("hung process group %d still has members", first.PID)
	}
	_ = st
}

func TestSlowCallIsNotAHang(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	m := newTestManager(t, rec)
	connect(t, m, stdioSpec(t, "slow", "echo", nil))
	first, _ := m.State("slow")

	// The call lasts ten ping intervals and more than three ping timeouts.
	res, err := m.CallTool(context.Background(), "slow__sleep", map[string]any{"ms": 1000})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if got := text(t, res); got != "slept" {
		t.Fatalf("sleep: got %q; want %q", got, "slept")
	}
	st, _ := m.State("slow")
	if st.Phase != PhaseReady || st.PID != first.PID {
		t.Fatalf("state after slow call: got %+v; want ready with pid %d", st, first.PID)
	}
	if got := rec.phases("slow"); !slices.Equal(got, []Phase{PhaseReady}) {
		t.Fatalf("transitions: got %v; want only ready", got)
	}
}

func TestListChangedRefreshesTools(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	connect(t, m, stdioSpec(t, "lc", "listchanged", nil))
	if got := toolNames(m.ToolDefs()); !slices.Equal(got, []string{"lc__add"}) {
		t.Fatalf("tools: got %v; want [lc__add]", got)
	}
	if _, err := m.CallTool(context.Background(), "lc__add", nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(toolNames(m.ToolDefs()), "lc__extra") {
		if time.Now().After(deadline) {
			t.Fatalf("tools: got %v; want lc__extra after list_changed", toolNames(m.ToolDefs()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCallToolHonoursCancel(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	connect(t, m, stdioSpec(t, "c", "echo", nil))

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := m.CallTool(ctx, "c__sleep", map[string]any{"ms": 20000})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool: got %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("CallTool returned after %s; want promptly after cancel", d)
	}

	t.Run("per-call timeout", func(t *testing.T) {
		o := fastOptions(nil)
		o.CallTimeout = 200 * time.Millisecond
		m2 := NewManager(o)
		defer m2.Close()
		connect(t, m2, stdioSpec(t, "c", "echo", nil))
		_, err := m2.CallTool(context.Background(), "c__sleep", map[string]any{"ms": 20000})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CallTool: got %v; want context.DeadlineExceeded", err)
		}
	})

	res, err := m.CallTool(context.Background(), "c__echo", map[string]any{"text": "still here"})
	if err != nil || text(t, res) != "still here" {
		t.Fatalf("after cancel: got %v, %v; want the server still answering", res, err)
	}
}

func TestStderrIsBoundedAndRedacted(t *testing.T) {
	t.Parallel()
	const secret = "sk-canary-91b2f7"
	m := newTestManager(t, nil)
	spec := stdioSpec(t, "noise", "stderrnoise", nil)
	spec.Secrets = map[string]string{"NOISE_SECRET": secret}
	connect(t, m, spec)
	if _, err := m.CallTool(context.Background(), "noise__noise", nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(m.Stderr("noise"), "noise-done call") {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never showed the end of the call's burst")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := m.Stderr("noise")
	if len(got) > StderrLimit {
		t.Errorf("stderr kept: got %d bytes; want at most %d", len(got), StderrLimit)
	}
	if strings.Contains(got, secret) {
		t.Errorf("stderr contains the secret")
	}
	if !strings.Contains(got, "secret="+redactedMark) {
		t.Errorf("stderr: want the secret replaced by %s", redactedMark)
	}
}

func TestStderrRingRedactsSplitSecret(t *testing.T) {
	r := newStderrRing(32, []string{"TOPSECRET"})
	for _, chunk := range []string{"a=TOP", "SEC", "RET\n", strings.Repeat("y", 40), "TOPSE"} {
		r.Write([]byte(chunk))
		if strings.Contains(r.String(), "TOP") && !strings.Contains(r.String(), redactedMark) {
			t.Fatalf("after %q: got %q; want no partial secret", chunk, r.String())
		}
	}
	r.Close()
	if got := r.String(); len(got) > 32 || strings.Contains(got, "TOPSECRET") {
		t.Fatalf("got %q; want at most 32 bytes without the secret", got)
	}
	r2 := newStderrRing(100, []string{"TOPSECRET"})
	r2.Write([]byte("a=TOP"))
	r2.Write([]byte("SECRET b\n"))
	r2.Close()
	if got, want := r2.String(), "a="+redactedMark+" b\n"; got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
}

func TestUserViewUnionAndNamespacing(t *testing.T) {
	t.Parallel()
	global := newTestManager(t, nil)
	connect(t, global, stdioSpec(t, "websearch", "echo", nil), stdioSpec(t, "hidden", "echo", nil))
	user := newTestManager(t, nil)
	connect(t, user, stdioSpec(t, "mysearch", "echo", nil))

	granted := []string{"websearch"}
	view := NewUserView(global, granted, user)
	granted[0] = "hidden" // the view holds a snapshot

	names := toolNames(view.ToolDefs())
	for _, want := range []string{"websearch__search", "mysearch__search"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools: got %v; want %s", names, want)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "hidden__") {
			t.Errorf("tools: got %s; want non-granted globals invisible", n)
		}
	}
	for _, tc := range []struct{ tool, want string }{
		{"websearch__search", "echo results for q1"},
		{"mysearch__search", "echo results for q1"},
	} {
		res, err := view.CallTool(context.Background(), tc.tool, map[string]any{"q": "q1"})
		if err != nil || text(t, res) != tc.want {
			t.Errorf("%s: got %v, %v; want %q", tc.tool, res, err, tc.want)
		}
	}
	_, err := view.CallTool(context.Background(), "hidden__search", nil)
	if patchbay.ErrorCode(err) != patchbay.ENOTFOUND {
		t.Errorf("non-granted call: got %v; want not_found", err)
	}
	for _, s := range view.States() {
		if s.Server == "hidden" {
			t.Errorf("States: non-granted global listed")
		}
	}
	if n := len(view.States()); n != 2 {
		t.Errorf("States: got %d; want 2", n)
	}
}

func TestCloseLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	m := NewManager(fastOptions(nil))
	connect(t, m, stdioSpec(t, "parent", "echo", map[string]string{"SPAWN_CHILD": "1"}))
	st, _ := m.State("parent")
	deadline := time.Now().Add(5 * time.Second)
	for len(groupMembers(st.PID)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("group %d: got members %v; want the server and its child", st.PID, groupMembers(st.PID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Close()
	// Without a PID namespace the last SIGKILL is sent as Close returns, so
	// the child may take a moment to go.
	deadline = time.Now().Add(5 * time.Second)
	for got := groupMembers(st.PID); len(got) != 0; got = groupMembers(st.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("after Close: group %d has members %v; want none", st.PID, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Close() // safe twice
	if s, _ := m.State("parent"); s.Phase != PhaseStopped {
		t.Fatalf("state after Close: got %s; want stopped", s.Phase)
	}
	if err := m.ConnectAll(context.Background(), []Spec{stdioSpec(t, "late", "echo", nil)}); err == nil {
		t.Fatalf("ConnectAll after Close: got nil; want an error")
	}
}

func TestConnectAllIsolatesBrokenAndSlowServers(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	broken := stdioSpec(t, "broken", "echo", nil)
	broken.Command = "no-such-connector-command"
	specs := []Spec{
		broken,
		stdioSpec(t, "slow", "slowstart", map[string]string{"SLOW_MS": "4000"}),
		stdioSpec(t, "good1", "echo", nil),
		stdioSpec(t, "good2", "echo", nil),
		stdioSpec(t, "good3", "envdump", nil),
	}
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- m.ConnectAll(context.Background(), specs) }()

	for _, name := range []string{"good1", "good2", "good3"} {
		waitState(t, m, name, 3*time.Second, isReady)
	}
	if st, _ := m.State("slow"); st.Phase != PhaseStarting {
		t.Fatalf("slow: got %s; want still starting while the good ones are ready", st.Phase)
	}
	st := waitState(t, m, "broken", 3*time.Second, func(s State) bool { return s.Phase == PhaseFailed })
	if !strings.Contains(st.LastError, "command not found") {
		t.Fatalf("broken LastError: got %q; want command not found", st.LastError)
	}
	t.Logf("good servers ready after %s", time.Since(start))

	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "broken") || strings.Contains(err.Error(), "good1") {
		t.Fatalf("ConnectAll: got %v; want an error naming only broken", err)
	}
	waitState(t, m, "slow", 5*time.Second, isReady)
}

package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fakeClock is an Options.Now that moves only when told, so uptime can be
// made long without waiting for it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (r *recorder) attempts(server string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, s := range r.all {
		if s.Server == server && s.Phase == PhaseRestarting {
			out = append(out, s.Attempt)
		}
	}
	return out
}

func TestAttemptsResetOnlyAfterStableUptime(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o := fastOptions(rec)
	o.Now = clock.Now
	o.StableAfter = time.Minute
	o.CrashLoopCount = 100 // the clock barely moves; only StableAfter is under test
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	connect(t, m, stdioSpec(t, "crashy", "crashafter", map[string]string{"CRASH_AFTER": "1"}))

	// crash makes the ready server exit after up of (fake) uptime and waits
	// for its replacement.
	crash := func(up time.Duration) {
		t.Helper()
		before, _ := m.State("crashy")
		clock.Advance(up)
		if _, err := m.CallTool(context.Background(), "crashy__work", nil); err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		waitState(t, m, "crashy", 10*time.Second, func(s State) bool { return s.Phase == PhaseReady && s.PID != before.PID })
	}
	crash(0)
	crash(time.Second)
	crash(o.StableAfter - time.Second)
	if got, want := rec.attempts("crashy"), []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("attempts for crashes within StableAfter: got %v; want %v", got, want)
	}
	crash(o.StableAfter)
	crash(0)
	if got, want := rec.attempts("crashy"), []int{1, 2, 3, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("attempts after StableAfter of uptime: got %v; want %v", got, want)
	}
}

// A hung server that ignores stdin closing and SIGTERM takes two stop
// graces to stop; the state must say restarting meanwhile, not ready.
func TestStateLeavesReadyBeforeOldProcessStops(t *testing.T) {
	t.Parallel()
	o := fastOptions(nil)
	o.StopGrace = time.Hour
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	connect(t, m, stdioSpec(t, "hang", "hang", nil))
	first, _ := m.State("hang")
	// Spare the hour of grace when the test fails (runs before Close); on
	// success the test kills it itself, and the pid may be reused after.
	t.Cleanup(func() {
		if t.Failed() {
			syscall.Kill(first.PID, syscall.SIGKILL)
		}
	})
	if _, err := m.CallTool(context.Background(), "hang__hang", nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	waitState(t, m, "hang", 10*time.Second, func(s State) bool { return s.Phase == PhaseRestarting })
	if !alive(first.PID) {
		t.Fatalf("hung process %d already gone; want restarting reported while it is being stopped", first.PID)
	}
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitState(t, m, "hang", 10*time.Second, func(s State) bool { return s.Phase == PhaseReady && s.PID != first.PID })
}

// flakyRemote is an MCP server on a fixed local address that can go down
// (listener and every connection closed) or hang (requests wait without an
// answer), and come back.
type flakyRemote struct {
	t       *testing.T
	addr    string
	handler http.Handler

	mu      sync.Mutex
	srv     *http.Server
	release chan struct{} // non-nil while hung
}

func newFlakyRemote(t *testing.T, transport Transport) *flakyRemote {
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("search"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("remote results"), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyRemote{t: t, addr: ln.Addr().String()}
	if transport == TransportSSE {
		f.handler = server.NewSSEServer(s)
	} else {
		f.handler = server.NewStreamableHTTPServer(s)
	}
	f.serve(ln)
	t.Cleanup(f.down)
	return f
}

func (f *flakyRemote) serve(ln net.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srv = &http.Server{Handler: http.HandlerFunc(f.gate)}
	go f.srv.Serve(ln)
}

// gate holds requests while the server hangs; streams opened before keep
// flowing, as with a server whose workers are stuck.
func (f *flakyRemote) gate(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
	}
	f.handler.ServeHTTP(w, r)
}

func (f *flakyRemote) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
}

func (f *flakyRemote) hang() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.release = make(chan struct{})
}

// up ends a hang, or listens on the same address again after down (Go
// listeners set SO_REUSEADDR, so the port is free once the old one closed).
func (f *flakyRemote) up() {
	f.mu.Lock()
	if f.release != nil {
		close(f.release)
		f.release = nil
	}
	running := f.srv != nil
	f.mu.Unlock()
	if running {
		return
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatalf("listen again on %s: %v", f.addr, err)
	}
	f.serve(ln)
}

func TestRemoteServerOutageIsReconnected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		transport Transport
		path      string
		outage    string
		// noticed is what LastError must say: a closed SSE stream is
		// noticed by the transport, everything else by the health ping.
		noticed string
	}{
		{TransportStreamableHTTP, "/mcp", "down", "ping"},
		{TransportStreamableHTTP, "/mcp", "hang", "ping"},
		{TransportSSE, "/sse", "down", "connection lost"},
		{TransportSSE, "/sse", "hang", "ping"},
	} {
		t.Run(string(tc.transport)+"/"+tc.outage, func(t *testing.T) {
			t.Parallel()
			remote := newFlakyRemote(t, tc.transport)
			rec := &recorder{}
			o := fastOptions(rec)
			// An outage lasts many backoffs; for a remote server it never
			// counts as a crash loop, however low the limit.
			o.CrashLoopCount = 2
			m := NewManager(o)
			t.Cleanup(func() { m.Close() })
			connect(t, m, Spec{Name: "remote", Transport: tc.transport, URL: "http://" + remote.addr + tc.path})
			if got, isErr := call(t, m, "remote__search", nil); isErr || got != "remote results" {
				t.Fatalf("before the outage: got %q (error %v)", got, isErr)
			}

			if tc.outage == "down" {
				remote.down()
			} else {
				remote.hang()
			}
			st := waitState(t, m, "remote", 10*time.Second, func(s State) bool { return s.Phase == PhaseRestarting })
			if !strings.Contains(st.LastError, tc.noticed) {
				t.Errorf("restarting state: got LastError %q; want it to mention %q", st.LastError, tc.noticed)
			}
			if _, err := m.CallTool(context.Background(), "remote__search", nil); !errors.Is(err, ErrNotReady) {
				t.Errorf("CallTool during the outage: got %v; want ErrNotReady", err)
			}
			if tc.outage == "down" {
				// Refused connections fail fast, so the attempts pile up
				// past the crash-loop limit; a hung server's attempts each
				// take ConnectTimeout.
				waitState(t, m, "remote", 10*time.Second, func(s State) bool { return s.Attempt > o.CrashLoopCount })
			}

			remote.up()
			waitState(t, m, "remote", 10*time.Second, isReady)
			if got, isErr := call(t, m, "remote__search", nil); isErr || got != "remote results" {
				t.Fatalf("after the outage: got %q (error %v)", got, isErr)
			}
			phases := rec.phases("remote")
			i := slices.Index(phases, PhaseRestarting)
			if i < 0 || !slices.Contains(phases[i:], PhaseReady) || slices.Contains(phases, PhaseFailed) {
				t.Fatalf("transitions: got %v; want ready, restarting, ready and never failed", phases)
			}
		})
	}
}

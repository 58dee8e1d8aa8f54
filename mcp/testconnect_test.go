package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestTestConnectListsToolsAndLeavesNothing(t *testing.T) {
	t.Parallel()
	var pid int
	var dir string
	runner := recordingRunner{LocalRunner{}, &pid, &dir}
	spec := Spec{Name: "echo", Command: filepath.Join(binDir, "echo"), Env: map[string]string{"SPAWN_CHILD": "1"}, Dir: "/nonexistent-not-used"}
	defs, err := TestConnect(context.Background(), spec, runner, 10*time.Second)
	if err != nil {
		t.Fatalf("TestConnect: %v", err)
	}
	if got, want := toolNames(defs), []string{"echo__echo", "echo__search", "echo__sleep"}; !slices.Equal(got, want) {
		t.Fatalf("tools: got %v; want %v", got, want)
	}
	if pid == 0 {
		t.Fatal("runner was not used")
	}
	if left := groupMembers(pid); len(left) != 0 {
		t.Fatalf("processes left in group %d: %v", pid, left)
	}
	if dir == "/nonexistent-not-used" || !strings.Contains(dir, "patchbay-testconnect-") {
		t.Fatalf("process ran in %q; want a fresh scratch directory", dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("scratch directory %s: got stat error %v; want it removed", dir, err)
	}
}

type recordingRunner struct {
	r   Runner
	pid *int
	dir *string
}

func (r recordingRunner) Start(ctx context.Context, spec Spec) (Process, error) {
	*r.dir = spec.Dir
	p, err := r.r.Start(ctx, spec)
	if err == nil {
		*r.pid = p.Pid()
	}
	return p, err
}

func TestTestConnectErrors(t *testing.T) {
	t.Parallel()
	unauthorized := func(code int) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "go away", code)
		}))
		t.Cleanup(ts.Close)
		return ts.URL + "/mcp"
	}
	for _, tc := range []struct {
		name string
		spec Spec
		want string
		is   error
	}{
		{"not found", Spec{Name: "x", Command: "no-such-command-patchbay"}, "command not found: no-such-command-patchbay", nil},
		{"not found path", Spec{Name: "x", Command: "/nonexistent/bin/srv"}, "command not found: /nonexistent/bin/srv", nil},
		{"exit", Spec{Name: "x", Command: filepath.Join(binDir, "crashafter"), Env: map[string]string{"CRASH_AFTER": "0"}},
			"exited with code 3: crashafter: boom at startup", nil},
		{"timeout", Spec{Name: "x", Command: filepath.Join(binDir, "slowstart"), Env: map[string]string{"SLOW_MS": "5000"}},
			"timed out after 300ms", ErrTimeout},
		{"401", Spec{Name: "x", Transport: TransportStreamableHTTP, URL: unauthorized(http.StatusUnauthorized)}, "auth failed: HTTP 401", ErrAuthFailed},
		{"403", Spec{Name: "x", Transport: TransportStreamableHTTP, URL: unauthorized(http.StatusForbidden)}, "auth failed: HTTP 403", ErrAuthFailed},
		{"sse 401", Spec{Name: "x", Transport: TransportSSE, URL: unauthorized(http.StatusUnauthorized)}, "auth failed: HTTP 401", ErrAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			defs, err := TestConnect(context.Background(), tc.spec, nil, 300*time.Millisecond)
			if err == nil {
				t.Fatalf("TestConnect: got tools %v; want error %q", toolNames(defs), tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error: got %q; want prefix %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q: not errors.Is %v", err, tc.is)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s; want it bounded by the timeout and stop grace", d)
			}
		})
	}
}

func TestTestConnectRemote(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("search"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	spec := Spec{Name: "remote", Transport: TransportStreamableHTTP, URL: ts.URL + "/mcp",
		TokenSource: func(context.Context) (string, error) { return "tok", nil }}
	defs, err := TestConnect(context.Background(), spec, nil, 5*time.Second)
	if err != nil || len(defs) != 1 || defs[0].Name != "remote__search" {
		t.Fatalf("TestConnect: got %v, %v; want [remote__search]", toolNames(defs), err)
	}
}

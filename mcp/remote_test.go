package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func TestStreamableHTTPConnectorSendsBearer(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("remote", "1")
	s.AddTool(mcp.NewTool("search"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("remote results"), nil
	})
	var unauthorized atomic.Int64
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" || r.Header.Get("X-Static") != "yes" {
			unauthorized.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // registered before the manager, so it closes after it

	m := newTestManager(t, nil)
	connect(t, m, Spec{
		Name:        "remote",
		Transport:   TransportStreamableHTTP,
		URL:         ts.URL + "/mcp",
		Headers:     map[string]string{"X-Static": "yes"},
		TokenSource: func(context.Context) (string, error) { return "tok-1", nil },
	})
	res, err := m.CallTool(context.Background(), "remote__search", nil)
	if err != nil || text(t, res) != "remote results" {
		t.Fatalf("CallTool: got %v, %v; want remote results", res, err)
	}
	if n := unauthorized.Load(); n != 0 {
		t.Fatalf("requests without the bearer/header: got %d; want 0", n)
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	o := Options{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second, Rand: func() float64 { return 1 }}.withDefaults()
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, time.Second}, {30, time.Second}} {
		if got := o.backoff(tc.attempt); got != tc.want {
			t.Errorf("backoff(%d) with full jitter: got %s; want %s", tc.attempt, got, tc.want)
		}
	}
	o.Rand = func() float64 { return 0 }
	if got := o.backoff(1); got != 50*time.Millisecond {
		t.Errorf("backoff(1) with no jitter: got %s; want 50ms", got)
	}
}

package mcp

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// BenchmarkManagerOverheadInProcess isolates what the manager adds to a
// call (name split, session lookup, per-call timeout, error wrapping) by
// putting a session over mcp-go's in-process transport, where a round trip
// costs microseconds instead of a pipe and a process: "bare" calls the
// same client directly. ns/op and allocs/op differences are the overhead.
//
//	go test -run '^$' -bench ManagerOverheadInProcess -benchmem -count=3 ./mcp/
func BenchmarkManagerOverheadInProcess(b *testing.B) {
	srv := server.NewMCPServer("inproc", "1")
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}

	// A manager holding one session whose connection is that client; its
	// supervisor is not running, so nothing else competes.
	m := NewManager(benchOptions())
	s := newSession(Spec{Name: "inproc"}, m.opts)
	s.cur.Store(&conn{client: c, lost: make(chan struct{})})
	m.sessions["inproc"] = s
	args := map[string]any{"text": "hello"}

	b.Run("manager", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := m.CallTool(ctx, "inproc__echo", args); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := mcp.CallToolRequest{}
				req.Params.Name = "echo"
				req.Params.Arguments = args
				if _, err := c.CallTool(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

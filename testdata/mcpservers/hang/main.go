// Command hang is a test MCP server whose tool "hang" answers once and
// then makes the server stop reading its input for good, so nothing (ping
// included) is answered again. It also ignores SIGTERM.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var hung atomic.Bool

// stuckReader passes input through until hung, then blocks forever.
type stuckReader struct{ r io.Reader }

func (s stuckReader) Read(p []byte) (int, error) {
	if hung.Load() {
		select {}
	}
	n, err := s.r.Read(p)
	if hung.Load() {
		select {}
	}
	return n, err
}

func main() {
	signal.Ignore(syscall.SIGTERM)
	s := server.NewMCPServer("hang", "1")
	s.AddTool(mcp.NewTool("hang"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hung.Store(true)
		return mcp.NewToolResultText("hanging from now on"), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	_ = server.NewStdioServer(s).Listen(context.Background(), stuckReader{os.Stdin}, os.Stdout)
}

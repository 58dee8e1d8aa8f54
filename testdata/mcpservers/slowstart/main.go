// Command slowstart is a test MCP server that sleeps SLOW_MS (default
// 2000) milliseconds before serving a single tool, echo.
package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	ms, err := strconv.Atoi(os.Getenv("SLOW_MS"))
	if err != nil {
		ms = 2000
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	s := server.NewMCPServer("slowstart", "1")
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	_ = server.ServeStdio(s)
}

// Command fsprobe is a test MCP server for sandbox tests. Its tool "read"
// returns the content of a path, "write" writes text to a path, and "env"
// returns its environment one VAR=value per line. A failure comes back as a
// tool error carrying the OS error, so tests can tell "denied" from "absent".
package main

import (
	"context"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("fsprobe", "1")
	s.AddTool(mcp.NewTool("read", mcp.WithString("path")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, err := os.ReadFile(req.GetString("path", ""))
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(string(b)), nil
	})
	s.AddTool(mcp.NewTool("write", mcp.WithString("path"), mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := os.WriteFile(req.GetString("path", ""), []byte(req.GetString("text", "")), 0o600); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("ok"), nil
	})
	s.AddTool(mcp.NewTool("env"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Join(os.Environ(), "\n")), nil
	})
	_ = server.ServeStdio(s)
}

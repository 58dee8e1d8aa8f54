// Command listchanged is a test MCP server whose tool "add" registers a
// new tool "extra", which sends notifications/tools/list_changed.
package main

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("listchanged", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(mcp.NewTool("extra"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("extra"), nil
		})
		return mcp.NewToolResultText("added"), nil
	})
	_ = server.ServeStdio(s)
}

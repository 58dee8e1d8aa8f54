// Command envdump is a test MCP server whose tool "env" returns its
// environment, one VAR=value per line.
package main

import (
	"context"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("envdump", "1")
	s.AddTool(mcp.NewTool("env"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Join(os.Environ(), "\n")), nil
	})
	_ = server.ServeStdio(s)
}

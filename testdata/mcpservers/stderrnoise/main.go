// Command stderrnoise is a test MCP server that floods stderr (well past
// 64 KiB) and prints the value of NOISE_SECRET there, at start and on each
// call of its tool "noise", ending each burst with a "noise-done" line.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func burst(tag string) {
	line := strings.Repeat("x", 100)
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(os.Stderr, "%s %d %s\n", tag, i, line)
		if i%500 == 0 {
			fmt.Fprintf(os.Stderr, "token is %s!\n", os.Getenv("NOISE_SECRET"))
		}
	}
	fmt.Fprintf(os.Stderr, "secret=%s\nnoise-done %s\n", os.Getenv("NOISE_SECRET"), tag)
}

func main() {
	burst("start")
	s := server.NewMCPServer("stderrnoise", "1")
	s.AddTool(mcp.NewTool("noise"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		burst("call")
		return mcp.NewToolResultText("noisy"), nil
	})
	_ = server.ServeStdio(s)
}

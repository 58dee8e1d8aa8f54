// Command crashafter is a test MCP server that exits with code 3 after
// CRASH_AFTER tool calls (-n flag also accepted). With 0 it exits at once,
// before answering initialize, which makes a crash loop.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	n := flag.Int("n", -1, "exit after n calls")
	flag.Parse()
	if *n < 0 {
		v, err := strconv.Atoi(os.Getenv("CRASH_AFTER"))
		if err != nil {
			v = 1
		}
		*n = v
	}
	if *n == 0 {
		fmt.Fprintln(os.Stderr, "crashafter: boom at startup")
		os.Exit(3)
	}
	var calls atomic.Int64
	s := server.NewMCPServer("crashafter", "1")
	s.AddTool(mcp.NewTool("work"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if calls.Add(1) >= int64(*n) {
			go func() {
				// Let the reply go out first, then die mid-session.
				time.Sleep(20 * time.Millisecond)
				fmt.Fprintln(os.Stderr, "crashafter: boom")
				os.Exit(3)
			}()
		}
		return mcp.NewToolResultText("done"), nil
	})
	_ = server.ServeStdio(s)
}

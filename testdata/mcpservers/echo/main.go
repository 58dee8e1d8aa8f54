// Command echo is a test MCP server with tools echo, search and sleep.
// With SPAWN_CHILD=1 it also starts a long-lived child in its process group,
// so tests can check that stopping it leaves no orphans.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if os.Getenv("ECHO_IDLE_CHILD") == "1" {
		// A sleeping loop, not select{}: the runtime kills a program whose
		// goroutines are all blocked forever.
		for {
			time.Sleep(time.Hour)
		}
	}
	if os.Getenv("SPAWN_CHILD") == "1" {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "ECHO_IDLE_CHILD=1")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn child:", err)
			os.Exit(1)
		}
	}
	s := server.NewMCPServer("echo", "1")
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("search", mcp.WithString("q")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo results for " + req.GetString("q", "")), nil
	})
	s.AddTool(mcp.NewTool("sleep", mcp.WithNumber("ms")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		d := time.Duration(req.GetInt("ms", 0)) * time.Millisecond
		select {
		case <-time.After(d):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
